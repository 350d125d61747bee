//! The shared-memory transport: a segment per communicator (or hierarchy
//! group) holding one cyclic queue per process, the queue protocol with its
//! memory ordering, waiting, and the channel the collectives use to stream
//! fragments through the queues, or — single copy — offers of whole buffers
//! that readers pull with CMA.  Uses only the boundary layer (`ompi`).

pub mod bootstrap;
pub mod calibrate;
pub mod channel;
pub mod cma;
pub mod layout;
pub mod learned_path;
pub mod pair;
pub mod queue;
pub mod scratch;
pub mod segment;
pub mod single;
pub mod single_state;
pub mod stores;
pub mod tree;
pub mod trials;
pub mod wait;
