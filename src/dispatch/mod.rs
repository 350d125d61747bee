//! One collective call, from Open MPI's entry to its return: decode it once
//! (`ompi::call`), take the one decision (`state::CommState::route`), then run
//! it flat over the communicator's shared-memory channel (`flat`), up and
//! down its hierarchy (`hierarchical`), or hand it, unchanged, to the
//! component below sharm.

mod flat;
mod hierarchical;
mod state;

pub use state::CommState;

use crate::ompi::call::Args;
use crate::ompi::ffi::{self, Call, Comm, Module};
use state::Route;

/// # Safety
/// `call` must be a call Open MPI made on the communicator of `st`, with the
/// application's (validated) arguments.
pub unsafe fn collective(st: &mut CommState, module: Module, comm: Comm, call: &Call) -> i32 {
    let Some(args) = Args::decode(call, st.size) else {
        return module.prev(comm, call);
    };
    let ok = match st.route(module, comm, &args) {
        Route::Done => true,
        Route::Fallback => return module.prev(comm, call),
        Route::Flat(sh) => flat::run(sh, &args),
        Route::Hierarchical(plan) => hierarchical::run(plan, comm, &args),
    };
    if ok {
        ffi::success()
    } else {
        ffi::error()
    }
}
