//! One collective call: decide whether sharm serves it (see `comm`), then run
//! the algorithm, or hand the call, unchanged, to the component below.

use crate::coll::gather::RootSide;
use crate::coll::reduce::Reduction;
use crate::coll::{allgather, alltoall, barrier, bcast, gather, reduce, reduce_scatter, scan};
use crate::hier::chain::{self as hier, Chain};
use crate::ompi::dtype::{self, ReduceLayout};
use crate::ompi::ffi::{self, Call, Comm, Dtype, Module, Op};
use crate::ompi::payload::TypedBuf;
use crate::ompi::stats::{self, Coll};
use crate::shm::channel::{CommState, Decision};

fn status(ok: bool) -> i32 {
    if ok {
        ffi::success()
    } else {
        ffi::error()
    }
}

/// # Safety
/// `call` must be a call Open MPI made on the communicator of `st`, with the
/// application's (validated) arguments.
pub unsafe fn collective(st: &mut CommState, module: Module, comm: Comm, call: &Call) -> i32 {
    let Some(coll) = Coll::from_raw(call.coll) else {
        return module.prev(comm, call);
    };
    match coll {
        Coll::Barrier => match st.decide(module, comm, coll, None, |_, _| None) {
            Decision::Serve(sh) => {
                barrier::barrier(sh);
                ffi::success()
            }
            Decision::Nothing => ffi::success(),
            Decision::Fallback(_) => module.prev(comm, call),
        },
        Coll::Bcast => bcast_call(st, module, comm, call),
        Coll::Reduce
        | Coll::Allreduce
        | Coll::Scan
        | Coll::Exscan
        | Coll::ReduceScatterBlock
        | Coll::ReduceScatter => reduction_call(st, module, comm, call, coll),
        _ => movement_call(st, module, comm, call, coll),
    }
}

/// Bcast over the communicator's hierarchy, when it has one (None: not
/// hierarchical, continue with the flat path).
unsafe fn hier_bcast(st: &mut CommState, module: Module, comm: Comm, call: &Call) -> Option<i32> {
    let me = st.rank;
    let plan = st.hierarchy(module, comm)?;
    let buf = TypedBuf::new(call.rbuf.cast(), call.rcount, Dtype(call.rdtype));
    let bytes = buf.bytes();
    stats::served(Coll::Bcast);
    if bytes == 0 {
        return Some(ffi::success());
    }
    let mut chain = Chain {
        me,
        groups: &mut plan.chain,
        reaches_top: plan.reaches_top,
    };
    let (root, alg) = (call.root as usize, plan.params.bcast);
    let ok = match dtype::movement(buf.info(), buf.dtype.contiguous(buf.count)) {
        dtype::Movement::Contiguous { offset } => {
            let data = std::slice::from_raw_parts_mut(buf.buf.offset(offset), bytes);
            hier::bcast(comm, &mut chain, root, alg, data)
        }
        dtype::Movement::Packed => {
            let mut packed = vec![0u8; bytes];
            if me == root {
                let Some(mut src) = buf.source() else {
                    return Some(ffi::error());
                };
                src.read(0, packed.as_mut_ptr(), bytes);
            }
            let ok = hier::bcast(comm, &mut chain, root, alg, &mut packed);
            if me != root {
                let Some(mut sink) = buf.sink() else {
                    return Some(ffi::error());
                };
                sink.write(0, packed.as_ptr(), bytes);
            }
            ok
        }
    };
    Some(status(ok))
}

/// Reduce / Allreduce over the communicator's hierarchy, when it has one and
/// the operation is commutative on a contiguous datatype (None: continue
/// with the flat path, or hand over).
unsafe fn hier_reduction(
    st: &mut CommState,
    module: Module,
    comm: Comm,
    call: &Call,
    coll: Coll,
) -> Option<i32> {
    if !matches!(coll, Coll::Reduce | Coll::Allreduce) {
        return None;
    }
    let me = st.rank;
    let (dt, op) = (Dtype(call.rdtype), Op(call.op));
    let plan = st.hierarchy(module, comm)?;
    if !op.commutative() {
        return None;
    }
    let info = dt.info();
    let layout = ReduceLayout::classify(&info, call.rcount, op.intrinsic(), usize::MAX).ok()?;
    stats::served(coll);
    let span = layout.span(layout.count);
    if span == 0 {
        return Some(ffi::success());
    }
    let own: *const u8 = if call.sbuf == ffi::in_place() {
        call.rbuf.cast()
    } else {
        call.sbuf.cast()
    };
    let mut acc = std::slice::from_raw_parts(own, span).to_vec();
    let mut tmp = vec![0u8; span];
    let mut ops = hier::Operands {
        layout,
        dtype: dt,
        op,
        acc: &mut acc,
        tmp: &mut tmp,
    };
    let mut chain = Chain {
        me,
        groups: &mut plan.chain,
        reaches_top: plan.reaches_top,
    };
    let (ok, result_here) = if coll == Coll::Reduce {
        let root = call.root as usize;
        (
            hier::reduce(comm, &mut chain, root, plan.params.reduce, &mut ops),
            me == root,
        )
    } else {
        (
            hier::allreduce(
                comm,
                &mut chain,
                plan.params.allreduce,
                plan.params.reduce,
                &mut ops,
            ),
            true,
        )
    };
    if ok && result_here {
        layout.copy_to_user(call.rbuf.cast(), acc.as_ptr(), layout.count);
    }
    Some(status(ok))
}

unsafe fn bcast_call(st: &mut CommState, module: Module, comm: Comm, call: &Call) -> i32 {
    if let Some(rc) = hier_bcast(st, module, comm, call) {
        return rc;
    }
    let buf = TypedBuf::new(call.rbuf.cast(), call.rcount, Dtype(call.rdtype));
    let bytes = dtype::message_bytes(buf.info(), buf.count);
    match st.decide(module, comm, Coll::Bcast, bytes, |_, _| None) {
        Decision::Nothing => ffi::success(),
        Decision::Fallback(_) => module.prev(comm, call),
        Decision::Serve(sh) => {
            let root = call.root as usize;
            let payload = if sh.me == root {
                buf.source()
            } else {
                buf.sink()
            };
            // A convertor allocation failing is the only way to get None.
            let Some(mut payload) = payload else {
                return ffi::error();
            };
            bcast::bcast(sh, &mut payload, buf.bytes(), root);
            ffi::success()
        }
    }
}

/// The application's count array of a v-variant (p entries).
unsafe fn counts<'a>(ptr: *const i32, p: usize) -> &'a [i32] {
    if ptr.is_null() {
        &[]
    } else {
        std::slice::from_raw_parts(ptr, p)
    }
}

unsafe fn reduction_call(
    st: &mut CommState,
    module: Module,
    comm: Comm,
    call: &Call,
    coll: Coll,
) -> i32 {
    if let Some(rc) = hier_reduction(st, module, comm, call, coll) {
        return rc;
    }
    let p = st.size;
    let (dt, op) = (Dtype(call.rdtype), Op(call.op));
    let info = dt.info();
    // Elements per result slice (Reduce_scatter), and in all.
    let slices: Vec<usize> = match coll {
        Coll::ReduceScatterBlock => vec![call.rcount.max(0) as usize; p],
        Coll::ReduceScatter => counts(call.rcounts, p)
            .iter()
            .map(|&c| c.max(0) as usize)
            .collect(),
        _ => Vec::new(),
    };
    let total = if slices.is_empty() {
        call.rcount.max(0) as usize
    } else {
        slices.iter().sum()
    };
    let Ok(total_i32) = i32::try_from(total) else {
        return module.prev(comm, call);
    };
    let bytes = dtype::message_bytes(&info, total_i32);
    let intrinsic = op.intrinsic();
    let mut layout = None;
    let decision = st.decide(
        module,
        comm,
        coll,
        bytes,
        |_, f| match ReduceLayout::classify(&info, total_i32, intrinsic, f) {
            Ok(l) => {
                layout = Some(l);
                None
            }
            Err(why) => Some(format!("{why} ({} with {})", dt.name(), op.name())),
        },
    );
    match decision {
        Decision::Nothing => ffi::success(),
        Decision::Fallback(_) => module.prev(comm, call),
        Decision::Serve(sh) => {
            let in_place = call.sbuf == ffi::in_place();
            let red = Reduction {
                own: if in_place {
                    call.rbuf as *const u8
                } else {
                    call.sbuf.cast()
                },
                rbuf: call.rbuf.cast(),
                in_place,
                layout: layout.expect("classified when served"),
                dtype: dt,
                op,
                commutative: op.commutative(),
            };
            match coll {
                Coll::Reduce => reduce::reduce(sh, &red, call.root as usize),
                Coll::Allreduce => reduce::allreduce(sh, &red),
                Coll::Scan => scan::scan(sh, &red, true),
                Coll::Exscan => scan::scan(sh, &red, false),
                _ => {
                    if !reduce_scatter::reduce_scatter_op(sh, &red, &slices) {
                        return ffi::error();
                    }
                }
            }
            ffi::success()
        }
    }
}

unsafe fn movement_call(
    st: &mut CommState,
    module: Module,
    comm: Comm,
    call: &Call,
    coll: Coll,
) -> i32 {
    let (p, me) = (st.size, st.rank);
    let root = call.root as usize;
    let (sdt, rdt) = (Dtype(call.sdtype), Dtype(call.rdtype));
    let in_place = |ptr: *const std::ffi::c_void| ptr == ffi::in_place();
    let send_in_place = in_place(call.sbuf);
    let bytes_of = |count: i32, dt: Dtype| dtype::message_bytes(&dt.info(), count);
    // A size every process knows (None for the v-variants whose counts only
    // some processes know): p times one block, or the sum of all blocks.
    let global = match coll {
        Coll::Gather => (if me == root {
            bytes_of(call.rcount, rdt)
        } else {
            bytes_of(call.scount, sdt)
        })
        .and_then(|b| b.checked_mul(p as u64)),
        Coll::Scatter => (if me == root {
            bytes_of(call.scount, sdt)
        } else {
            bytes_of(call.rcount, rdt)
        })
        .and_then(|b| b.checked_mul(p as u64)),
        Coll::Allgather | Coll::Alltoall => (if send_in_place {
            bytes_of(call.rcount, rdt)
        } else {
            bytes_of(call.scount, sdt)
        })
        .and_then(|b| b.checked_mul(p as u64)),
        Coll::Allgatherv => {
            let elements: i64 = counts(call.rcounts, p)
                .iter()
                .map(|&c| i64::from(c.max(0)))
                .sum();
            rdt.info().size.checked_mul(elements as u64)
        }
        _ => None,
    };
    let sh = match st.decide(module, comm, coll, global, |_, _| None) {
        Decision::Nothing => return ffi::success(),
        Decision::Fallback(_) => return module.prev(comm, call),
        Decision::Serve(sh) => sh,
    };
    let send = TypedBuf::new(call.sbuf.cast(), call.scount, sdt);
    let recv = TypedBuf::new(call.rbuf.cast(), call.rcount, rdt);
    let side =
        |buf: *const std::ffi::c_void, count: i32, cs: *const i32, ds: *const i32, dt: Dtype| {
            RootSide {
                whole: TypedBuf::new(buf.cast(), count, dt),
                count,
                counts: (!cs.is_null()).then(|| (counts(cs, p), counts(ds, p))),
            }
        };
    let ok = match coll {
        Coll::Gather | Coll::Gatherv => {
            let own = (!send_in_place).then_some(send);
            gather::gather(
                sh,
                own,
                &side(call.rbuf, call.rcount, call.rcounts, call.rdispls, rdt),
                root,
            )
        }
        Coll::Scatter | Coll::Scatterv => {
            let own = (!in_place(call.rbuf)).then_some(recv);
            gather::scatter(
                sh,
                own,
                &side(call.sbuf, call.scount, call.scounts, call.sdispls, sdt),
                root,
            )
        }
        Coll::Allgather | Coll::Allgatherv => {
            let own = (!send_in_place).then_some(send);
            allgather::allgather(
                sh,
                own,
                &side(call.rbuf, call.rcount, call.rcounts, call.rdispls, rdt),
                coll == Coll::Allgather,
            )
        }
        _ => {
            let send_side = side(call.sbuf, call.scount, call.scounts, call.sdispls, sdt);
            let recv_side = side(call.rbuf, call.rcount, call.rcounts, call.rdispls, rdt);
            alltoall::alltoall(
                sh,
                (!send_in_place).then_some(&send_side),
                &recv_side,
                coll == Coll::Alltoall,
            )
        }
    };
    status(ok)
}
