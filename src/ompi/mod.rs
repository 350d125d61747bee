//! The boundary with Open MPI: the flat C ABI of the glue (`ffi`), the MCA
//! parameters (`params`), logging through opal_output (`log`), the MPI_T
//! counters (`stats`), the `auto` decision rules (`rules`), and typed views of the application's buffers
//! (`dtype`, `payload`).  Nothing here knows about shared memory or
//! algorithms; every other layer reaches Open MPI only through this one.

pub mod builtin_rules;
pub mod call;
pub mod combine;
pub mod dtype;
pub mod ffi;
pub mod log;
pub mod p2p;
pub mod params;
pub mod payload;
pub mod rules;
pub mod stats;
