//! The collective exchanges a segment's creation needs, among the processes
//! that will share it: the component below sharm for a whole communicator,
//! point-to-point messages for a hierarchy's group (see `hier::chain`).

use crate::ompi::ffi::{Comm, Module};

/// What a segment's creation needs from the processes that will share it.
pub trait Bootstrap {
    /// Every process gets index 0's bytes.
    fn bcast_bytes(&self, buf: &mut [u8]) -> bool;
    /// Every process learns the minimum of `value`.
    fn agree_min(&self, value: i32) -> Option<i32>;
}

/// Bootstrap of a whole communicator through the component below sharm.
pub struct PrevComponent {
    pub module: Module,
    pub comm: Comm,
}

impl Bootstrap for PrevComponent {
    fn bcast_bytes(&self, buf: &mut [u8]) -> bool {
        self.module.bcast_bytes(buf, 0, self.comm)
    }
    fn agree_min(&self, value: i32) -> Option<i32> {
        self.module.agree_min(value, self.comm)
    }
}
