//! One collective call, from Open MPI's entry to its return: decode it once
//! (`ompi::call`), take the one decision (`state::CommState::route`), then run
//! it flat over the communicator's shared-memory channel (`flat`), up and
//! down its hierarchy (`hierarchical`), or hand it, unchanged, to the
//! component below sharm.  Barriers, the small calls of every other
//! blocking collective, and every Alltoallv, whose route the communicator
//! settled when its channel was set up, skip the decoding and the decision
//! (`express::run`, and `express::run_counted` for the calls with counts
//! per process).

mod express;
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
    if let Some(rc) = express::run(st, call) {
        return rc;
    }
    if let Some(rc) = express::run_counted(st, call) {
        return rc;
    }
    let served = Args::decode(call, st.size, |args| {
        let ok = match st.route(module, comm, args) {
            Route::Done => true,
            Route::Fallback => return None,
            Route::Flat(sh) => flat::run(sh, args),
            Route::Hierarchical(plan) => hierarchical::run(plan, comm, args),
        };
        Some(if ok { ffi::success() } else { ffi::error() })
    });
    match served.flatten() {
        Some(rc) => rc,
        None => module.prev(comm, call),
    }
}
