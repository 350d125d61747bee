//! The collectives over the shared-memory transport, one module per
//! operation family.  Each takes a ready channel (`shm::channel::Shared`)
//! and typed buffers; the decision to serve a call is taken above, in
//! `dispatch`.

pub mod allgather;
pub mod allreduce;
pub mod alltoall;
pub mod barrier;
pub mod bcast;
pub mod gather;
pub mod pair;
pub mod reduce;
pub mod reduce_scatter;
pub mod reduction;
pub mod scan;
pub mod single_copy;
pub mod single_copy_reduce;
pub mod small;
