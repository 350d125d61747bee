//! sharm: an Open MPI `coll` component whose collectives run over a
//! per-communicator shared-memory queue system (the coll/sharm design).
//!
//! Map of the crate, one folder per layer; imports point downwards only
//! (checked by `tests/layers.rs`):
//! * [`ompi`]: the boundary with Open MPI (the C side lives in `ompi-glue/`):
//!   ffi, parameters, logging, MPI_T counters, typed buffers.
//! * [`shm`]: the shared-memory transport: segment, queues, waits, channel.
//! * [`coll`]: the collectives over the transport, one module per family.
//! * [`hier`]: the hierarchy (paper 004) and the network algorithms; uses
//!   `shm` and `coll` for the groups inside a node.
//! * `dispatch`: one call: decode, decide, run, or hand over.
//!
//! This file holds the entry points Open MPI calls (through the glue).

use std::ffi::c_void;

pub mod coll;
mod dispatch;
pub mod hier;
pub mod kernels;
pub mod ompi;
pub mod shm;

use dispatch::CommState;
use ompi::ffi::{self, Comm, Module};

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
    ompi::stats::read(index.max(0) as usize)
}

unsafe extern "C" fn entry_collective(
    state: *mut c_void,
    module: *mut c_void,
    comm: *mut c_void,
    call: *const ffi::Call,
) -> i32 {
    dispatch::collective(
        &mut *state.cast::<CommState>(),
        Module(module),
        Comm(comm),
        &*call,
    )
}
