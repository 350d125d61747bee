//! Runs a served call up and down the communicator's hierarchy of groups
//! (`hier::chain`): Bcast, and Reduce/Allreduce with commutative operations.
//! The routing decision (`state`) has already checked the size limit, the
//! element size against the groups' fragments, and the operation.

use crate::dispatch::state::Prepared;
use crate::hier::chain::{self, Chain, Operands};
use crate::hier::plan::HierPlan;
use crate::ompi::call::{Args, Coll, ReductionArgs};
use crate::ompi::dtype;
use crate::ompi::ffi::Comm;
use crate::ompi::payload::TypedBuf;

/// Runs `args`; false when a transfer or a convertor failed.
pub fn run(plan: &mut HierPlan, comm: Comm, args: &Args, prepared: Prepared) -> bool {
    match args {
        Args::Bcast { buf, root } => bcast(plan, comm, buf, *root),
        Args::Reduction(r) => reduction(plan, comm, r, prepared),
        _ => unreachable!("the route sends only Bcast and reductions here"),
    }
}

fn bcast(plan: &mut HierPlan, comm: Comm, buf: &TypedBuf, root: usize) -> bool {
    let me = plan.me;
    let bytes = buf.bytes();
    let alg = plan.params.bcast;
    let mut chain = Chain {
        me,
        groups: &mut plan.chain,
        reaches_top: plan.reaches_top,
    };
    match dtype::movement(buf.info(), buf.dtype.contiguous(buf.count)) {
        dtype::Movement::Contiguous { offset } => {
            // SAFETY: a contiguous buffer of `bytes` bytes at its true lower
            // bound, the application's for the duration of the call.
            let data = unsafe { std::slice::from_raw_parts_mut(buf.buf.offset(offset), bytes) };
            chain::bcast(comm, &mut chain, root, alg, data)
        }
        dtype::Movement::Packed => {
            // The network path moves whole byte ranges: pack, move, unpack,
            // through the same convertor streams as the flat path.
            let mut packed = vec![0u8; bytes];
            if me == root {
                let Some(mut src) = buf.source() else {
                    return false;
                };
                // SAFETY: `packed` holds the whole stream.
                unsafe { src.read(0, packed.as_mut_ptr(), bytes) };
            }
            let ok = chain::bcast(comm, &mut chain, root, alg, &mut packed);
            if ok && me != root {
                let Some(mut sink) = buf.sink() else {
                    return false;
                };
                // SAFETY: as above.
                unsafe { sink.write(0, packed.as_ptr(), bytes) };
            }
            ok
        }
    }
}

fn reduction(plan: &mut HierPlan, comm: Comm, r: &ReductionArgs, prepared: Prepared) -> bool {
    let me = plan.me;
    let layout = prepared.layout.expect("a served reduction has its layout");
    let span = layout.span(layout.count);
    // SAFETY: the contribution holds `count` elements laid out by `layout`.
    let mut acc = unsafe { std::slice::from_raw_parts(r.own(), span) }.to_vec();
    let mut tmp = vec![0u8; span];
    let mut ops = Operands {
        layout,
        dtype: r.dtype,
        op: r.op,
        acc: &mut acc,
        tmp: &mut tmp,
    };
    let (reduce_alg, allreduce_form) = (plan.params.reduce, plan.params.allreduce);
    let mut chain = Chain {
        me,
        groups: &mut plan.chain,
        reaches_top: plan.reaches_top,
    };
    let (ok, result_here) = if r.coll == Coll::Reduce {
        (
            chain::reduce(comm, &mut chain, r.root, reduce_alg, &mut ops),
            me == r.root,
        )
    } else {
        (
            chain::allreduce(comm, &mut chain, allreduce_form, reduce_alg, &mut ops),
            true,
        )
    };
    if ok && result_here {
        // SAFETY: the receive buffer holds `count` elements (significant here).
        unsafe { layout.copy_to_user(r.rbuf, acc.as_ptr(), layout.count) };
    }
    ok
}
