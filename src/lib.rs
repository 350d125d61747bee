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

pub mod bcast;
pub mod comm;
pub mod dtype;
mod ffi;
pub mod layout;
mod log;
mod params;
pub mod queue;
pub mod reduce;
pub mod segment;
mod stats;
pub mod tree;
pub mod wait;

use comm::{CommState, Decision};
use ffi::{Comm, Convertor, Dtype, Module, Op, ReduceArgs};
use stats::Coll;

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
    bcast: entry_bcast,
    reduce: entry_reduce,
    allreduce: entry_allreduce,
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

unsafe extern "C" fn entry_bcast(
    state: *mut c_void,
    module: *mut c_void,
    buf: *mut c_void,
    count: i32,
    dtype: *mut c_void,
    root: i32,
    comm: *mut c_void,
) -> i32 {
    let st = &mut *state.cast::<CommState>();
    let (module, comm, dt) = (Module(module), Comm(comm), Dtype(dtype));
    let info = dt.info();
    let bytes = dtype::message_bytes(&info, count);
    match st.decide(module, comm, Coll::Bcast, bytes, |_, _| None) {
        Decision::Nothing => ffi::success(),
        Decision::Fallback(_) => module.prev_bcast(buf, count, dt, root, comm),
        Decision::Serve(sh) => {
            let bytes = bytes.unwrap_or(0) as usize;
            let me_root = sh.me == root as usize;
            let mut payload = match dtype::movement(&info, dt.contiguous(count)) {
                dtype::Movement::Contiguous { offset } => {
                    bcast::Payload::Contiguous(buf.cast::<u8>().offset(offset))
                }
                dtype::Movement::Packed => match Convertor::new(me_root, dt, count, buf.cast()) {
                    Some(c) => bcast::Payload::Packed(c),
                    // Cannot happen short of memory exhaustion; all processes
                    // already committed to the shared-memory path.
                    None => return ffi::error(),
                },
            };
            bcast::bcast(sh, &mut payload, bytes, root as usize);
            ffi::success()
        }
    }
}

/// Shared decision logic of Reduce and Allreduce.
fn reduction<'a>(
    st: &'a mut CommState,
    module: Module,
    comm: Comm,
    coll: Coll,
    a: &ReduceArgs,
) -> (Decision<'a>, Option<reduce::Reduction>) {
    let info = a.dtype.info();
    let bytes = dtype::message_bytes(&info, a.count);
    let intrinsic = a.op.intrinsic();
    let mut layout = None;
    let decision = st.decide(
        module,
        comm,
        coll,
        bytes,
        |_, f| match dtype::ReduceLayout::classify(&info, a.count, intrinsic, f) {
            Ok(l) => {
                layout = Some(l);
                None
            }
            Err(why) => Some(format!("{why} ({} with {})", a.dtype.name(), a.op.name())),
        },
    );
    let in_place = a.sbuf == ffi::in_place();
    let red = layout.map(|layout| reduce::Reduction {
        own: if in_place {
            a.rbuf as *const u8
        } else {
            a.sbuf.cast()
        },
        rbuf: a.rbuf.cast(),
        in_place,
        layout,
        dtype: a.dtype,
        op: a.op,
        commutative: a.op.commutative(),
    });
    (decision, red)
}

#[allow(clippy::too_many_arguments)]
unsafe extern "C" fn entry_reduce(
    state: *mut c_void,
    module: *mut c_void,
    sbuf: *const c_void,
    rbuf: *mut c_void,
    count: i32,
    dtype: *mut c_void,
    op: *mut c_void,
    root: i32,
    comm: *mut c_void,
) -> i32 {
    let st = &mut *state.cast::<CommState>();
    let (module, comm) = (Module(module), Comm(comm));
    let args = ReduceArgs {
        sbuf,
        rbuf,
        count,
        dtype: Dtype(dtype),
        op: Op(op),
    };
    match reduction(st, module, comm, Coll::Reduce, &args) {
        (Decision::Nothing, _) => ffi::success(),
        (Decision::Serve(sh), Some(red)) => {
            reduce::reduce(sh, &red, root as usize);
            ffi::success()
        }
        _ => module.prev_reduce(&args, root, comm),
    }
}

unsafe extern "C" fn entry_allreduce(
    state: *mut c_void,
    module: *mut c_void,
    sbuf: *const c_void,
    rbuf: *mut c_void,
    count: i32,
    dtype: *mut c_void,
    op: *mut c_void,
    comm: *mut c_void,
) -> i32 {
    let st = &mut *state.cast::<CommState>();
    let (module, comm) = (Module(module), Comm(comm));
    let args = ReduceArgs {
        sbuf,
        rbuf,
        count,
        dtype: Dtype(dtype),
        op: Op(op),
    };
    match reduction(st, module, comm, Coll::Allreduce, &args) {
        (Decision::Nothing, _) => ffi::success(),
        (Decision::Serve(sh), Some(red)) => {
            reduce::allreduce(sh, &red);
            ffi::success()
        }
        _ => module.prev_allreduce(&args, comm),
    }
}
