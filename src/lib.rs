//! sharm: an Open MPI `coll` component whose collectives run over a
//! per-communicator shared-memory queue system (the coll/sharm design).
//!
//! Map of the crate:
//! * [`layout`], [`queue`], [`wait`], [`tree`], [`dtype`]: pure Rust, unit
//!   tested without MPI: segment geometry, the queue protocol, waiting,
//!   k-nomial trees, datatype decisions.
//! * [`segment`]: the POSIX shared-memory object behind a communicator.
//! * [`comm`]: per-communicator state and the serve-or-fall-back decision.
//! * [`bcast`], [`reduce`]: the algorithms.
//! * `ffi`, `log`, `stats`, `params`: the boundary with Open MPI (the C side
//!   lives in `ompi-glue/`).
//!
//! This file holds the entry points Open MPI calls (through the glue).

use std::ffi::c_void;

pub mod allgather;
pub mod alltoall;
pub mod barrier;
pub mod bcast;
pub mod comm;
pub mod dtype;
mod ffi;
pub mod gather;
pub mod hier;
mod hier_plan;
pub mod hierarchy;
pub mod layout;
mod log;
mod params;
pub mod payload;
pub mod queue;
pub mod reduce;
pub mod reduce_scatter;
pub mod scan;
pub mod schedule;
pub mod segment;
mod serve;
mod stats;
pub mod topology;
pub mod tree;
pub mod wait;

use comm::CommState;
use ffi::{Comm, Module};

/// Storage of the component struct Open MPI looks up by name.  The glue
/// copies its C template in here at load time (`on_load`); 4096 bytes is
/// checked against the C struct's size by a `_Static_assert` in the glue.
#[repr(C, align(64))]
pub struct ComponentStorage([u8; 4096]);

#[no_mangle]
#[allow(non_upper_case_globals)]
pub static mut mca_coll_sharm_component: ComponentStorage = ComponentStorage([0; 4096]);

static ENTRIES: ffi::Entries = ffi::Entries {
    comm_query: entry_comm_query,
    comm_free: entry_comm_free,
    collective: entry_collective,
    counter: entry_counter,
};

/// Runs when the shared object is loaded, before Open MPI reads the component.
extern "C" fn on_load() {
    // SAFETY: runs once, single-threaded, before anyone reads the storage.
    unsafe {
        let storage = std::ptr::addr_of_mut!(mca_coll_sharm_component);
        ffi::sharm_glue_component_init(
            storage.cast(),
            std::mem::size_of::<ComponentStorage>(),
            &ENTRIES,
        );
    }
}

#[used]
#[link_section = ".init_array"]
static ON_LOAD: extern "C" fn() = on_load;

unsafe extern "C" fn entry_comm_query(comm: *mut c_void, priority: *mut i32) -> *mut c_void {
    match CommState::query(Comm(comm)) {
        Some((state, prio)) => {
            *priority = prio;
            Box::into_raw(Box::new(state)).cast()
        }
        None => std::ptr::null_mut(),
    }
}

unsafe extern "C" fn entry_comm_free(state: *mut c_void) {
    if !state.is_null() {
        drop(Box::from_raw(state.cast::<CommState>()));
    }
}

unsafe extern "C" fn entry_counter(index: i32) -> u64 {
    stats::read(index.max(0) as usize)
}

unsafe extern "C" fn entry_collective(
    state: *mut c_void,
    module: *mut c_void,
    comm: *mut c_void,
    call: *const ffi::Call,
) -> i32 {
    serve::collective(
        &mut *state.cast::<CommState>(),
        Module(module),
        Comm(comm),
        &*call,
    )
}
