//! Runs a served call up and down the communicator's hierarchy of groups
//! (`hier::chain`, `hier::collect`): Barrier, Bcast, Allgather, and
//! Reduce/Allreduce (non-commutative operations only when the plan is rank
//! ordered).
//! The routing decision (`state`) has already checked the size limit, the
//! element size against the groups' fragments, and the operation.

use super::flat;
use crate::hier::chain::{self, Chain, Operands, Transport};
use crate::hier::collect;
use crate::hier::network;
use crate::hier::plan::HierPlan;
use crate::hier::remap::mapping::Variant;
use crate::ompi::call::{Args, Coll, MovementArgs, ReductionArgs};
use crate::ompi::combine::Combiner;
use crate::ompi::dtype::ReduceLayout;
use crate::ompi::ffi::{self, Comm};
use crate::ompi::params::{AllgatherRemap, GroupAlgorithm, HierAllgather};
use crate::ompi::payload::{Payload, TypedBuf};

/// Runs `args`; false when a transfer failed.  Counts the routes the
/// call's data took in this process's groups (`count_routes`).
pub fn run(plan: &mut HierPlan, comm: Comm, args: &Args) -> bool {
    let ok = run_call(plan, comm, args);
    count_routes(plan, args.coll());
    ok
}

/// Counts a served call of `coll` that moved data by single copy (MPI_T
/// `coll_sharm_<op>_single_copy`) or through a pair buffer
/// (`coll_sharm_<op>_pair_buffer`) in one of this process's groups, as
/// `flat::count_routes` does for the flat path (both count through
/// `flat::count_took`): a group in shared memory
/// has its own channel, and its collectives take single copy and (two
/// processes) the pair buffer as the flat ones do.  Every group's channel
/// is asked, so that each forgets this call; the call counts once however
/// many groups took a route.
fn count_routes(plan: &mut HierPlan, coll: Coll) {
    let (mut single, mut paired) = (false, false);
    for group in &mut plan.chain {
        if let Transport::SharedReady(sh) = &mut group.transport {
            single |= sh.took_single();
            paired |= sh.took_pair();
        }
    }
    flat::count_took(coll, single, paired, " in a group");
}

/// The call itself, by kind: Barrier up and down the chain of groups, Bcast
/// in pieces, Reduce/Allreduce, and Allgather(v) (the routing let only
/// those through); false when a transfer failed.
fn run_call(plan: &mut HierPlan, comm: Comm, args: &Args) -> bool {
    match args {
        Args::Barrier => {
            let alg = plan.params.bcast;
            let mut chain = chain_of(plan);
            collect::barrier(comm, &mut chain, alg)
        }
        Args::Bcast { buf, root } => bcast(plan, comm, buf, *root),
        Args::Reduction(r) => reduction(plan, comm, r),
        Args::Movement(m) => allgather(plan, comm, m),
    }
}

// Pieces.  A hierarchical call packs, stages, climbs or reduces at most
// `HierParams::piece_bytes` at once (`coll_sharm_hierarchy_piece_size`,
// 64 MiB by default): a larger Bcast goes in pieces of that size, a larger
// Allgather(v) in rounds of p pieces adding up to at most that, and a
// larger Reduce or Allreduce in pieces of whole elements with at most that
// much data, so that a call's own memory does not grow with its message:
// whole, the in-place Allgatherv of 8 GB per process in ompi-tests-public's
// collective-big-count, across two nodes, took another 8 GB and was
// stopped by the OOM killer where coll/tuned passes.  Whether a call goes
// in pieces follows from its size and the piece size alone (the same on
// every process: the piece size is in the hierarchy's digest; processes
// may differ in datatype layout), and every process cuts the stream at the
// same places.

fn bcast(plan: &mut HierPlan, comm: Comm, buf: &TypedBuf, root: usize) -> bool {
    let (alg, piece) = (plan.params.bcast, plan.params.piece_bytes);
    bcast_in_pieces(comm, &mut chain_of(plan), root, alg, buf, piece)
}

/// A Bcast, one Bcast per piece of at most `piece` bytes of the stream (one
/// piece when it fits): a contiguous buffer's pieces are slices of it, a
/// packed one's go through one piece of staging (packed at the root,
/// unpacked elsewhere, in stream order).  The network path moves whole
/// byte ranges, through the same convertor streams as the flat path.
fn bcast_in_pieces(
    comm: Comm,
    chain: &mut Chain,
    root: usize,
    alg: GroupAlgorithm,
    buf: &TypedBuf,
    piece: usize,
) -> bool {
    let bytes = buf.bytes();
    if bytes > piece {
        tracing::trace!(
            "Bcast of {bytes} bytes in {} pieces of up to {piece}",
            bytes.div_ceil(piece)
        );
    }
    let start = buf.byte_range();
    let (mut staging, mut stream) = match start {
        Some(_) => (Vec::new(), None),
        None => {
            let stream = if chain.me == root {
                buf.source()
            } else {
                buf.sink()
            };
            (vec![0u8; piece.min(bytes)], Some(stream))
        }
    };
    let mut at = 0;
    while at < bytes {
        let len = piece.min(bytes - at);
        let piece: &mut [u8] = match start {
            // SAFETY: bytes [at, at + len) of the application's contiguous
            // buffer, valid for the call.
            Some(start) => unsafe { std::slice::from_raw_parts_mut(start.add(at), len) },
            None => &mut staging[..len],
        };
        if let (Some(stream), true) = (&mut stream, chain.me == root) {
            // SAFETY: `piece` holds `len` bytes; the stream has them (read
            // in order, piece after piece).
            unsafe { stream.read(at, piece.as_mut_ptr(), len) };
        }
        if !chain::bcast(comm, chain, root, alg, piece) {
            return false;
        }
        if let (Some(stream), false) = (&mut stream, chain.me == root) {
            // SAFETY: as above, written in order.
            unsafe { stream.write(at, piece.as_ptr(), len) };
        }
        at += len;
    }
    true
}

/// A Reduce or Allreduce, in pieces of at most `piece_bytes` of data when
/// larger (the accumulator, the executor's receive buffers and the
/// climb's copies then hold a piece, not the message).  The pieces are cut
/// by element counts from the elements' data size, which the type
/// signature fixes: the same on every process, whatever its datatype's
/// extent.
fn reduction(plan: &mut HierPlan, comm: Comm, r: &ReductionArgs) -> bool {
    let layout = r.layout.expect("a served reduction has its layout");
    let per = (plan.params.piece_bytes / layout.size.max(1)).max(1);
    if per < layout.count {
        tracing::trace!(
            "{:?} of {} elements in {} pieces of up to {per}",
            r.coll,
            layout.count,
            layout.count.div_ceil(per)
        );
    }
    let mut first = 0;
    loop {
        let count = per.min(layout.count - first);
        let piece = ReduceLayout { count, ..layout };
        if !reduce_piece(plan, comm, r, piece, first * layout.extent) {
            return false;
        }
        first += count;
        if first >= layout.count {
            return true;
        }
    }
}

/// Reduces the elements of `layout` that start `offset` bytes into the
/// call's buffers.
fn reduce_piece(
    plan: &mut HierPlan,
    comm: Comm,
    r: &ReductionArgs,
    layout: ReduceLayout,
    offset: usize,
) -> bool {
    let me = plan.me;
    // SAFETY (the three): `offset` lies inside each buffer, which holds the
    // call's whole count of elements.
    let rbuf = unsafe { r.rbuf.add(offset) };
    let sbuf = r.sbuf.map(|s| unsafe { s.add(offset) });
    let own = unsafe { r.own().add(offset) };
    let span = layout.span(layout.count);
    // The accumulator starts as this process's contribution.  Where this
    // process's receive buffer gets the result and is one dense range
    // (Allreduce; Reduce at the root), the receive buffer itself is the
    // accumulator: no copy in when in place, none out ever (the two copies
    // cost a 1 MiB Allreduce a third of its time).  Elsewhere it is the
    // plan's buffer, reused from call to call (`HierPlan::accumulator`).
    let direct = layout.dense() && (r.coll == Coll::Allreduce || me == r.root);
    let mut kept = Vec::new();
    let acc: &mut [u8] = if direct {
        if let Some(sbuf) = sbuf {
            // SAFETY: both buffers hold `count` elements in `span` dense
            // bytes; MPI forbids them to overlap unless MPI_IN_PLACE (sbuf
            // None) is given.
            unsafe { std::ptr::copy_nonoverlapping(sbuf, rbuf, span) };
        }
        // SAFETY: the receive buffer holds `count` elements in `span` dense
        // bytes, the application's for the duration of the call.
        unsafe { std::slice::from_raw_parts_mut(rbuf, span) }
    } else {
        kept = std::mem::take(&mut plan.accumulator);
        kept.clear();
        // SAFETY: the contribution holds `count` elements laid out by `layout`.
        kept.extend_from_slice(unsafe { std::slice::from_raw_parts(own, span) });
        &mut kept
    };
    let mut ops = Operands {
        layout,
        comb: Combiner::new(r.op, r.dtype, plan.kernels),
        acc,
        commutative: r.commutative,
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
            chain::allreduce(
                comm,
                &mut chain,
                allreduce_form,
                reduce_alg,
                &plan.top,
                &mut ops,
            ),
            true,
        )
    };
    if ok && result_here && !direct {
        // SAFETY: the receive buffer holds `count` elements (significant here).
        unsafe { layout.copy_to_user(rbuf, kept.as_ptr(), layout.count) };
    }
    // Keep the buffer for the next call, unless it is exceptionally large
    // (a communicator should not pin a huge message's memory for good).
    if !direct && kept.capacity() <= KEEP_ACCUMULATOR_UP_TO {
        plan.accumulator = kept;
    }
    ok
}

/// Largest accumulator a plan keeps between calls.
const KEEP_ACCUMULATOR_UP_TO: usize = 64 << 20;

fn chain_of(plan: &mut HierPlan) -> Chain<'_> {
    Chain {
        me: plan.me,
        groups: &mut plan.chain,
        reaches_top: plan.reaches_top,
    }
}

/// MPI_Allgather, and MPI_Allgatherv with equal counts (the route sends no
/// other here).  When the p blocks fit `piece_bytes` and the receive
/// buffer is one contiguous range of them (Allgather), the hierarchy fills
/// that range itself; anything else goes through staging
/// (`allgather_in_rounds`), in one round when it fits.  Both make the same
/// calls for the same size, so processes may differ in layout.
fn allgather(plan: &mut HierPlan, comm: Comm, m: &MovementArgs) -> bool {
    debug_assert!(
        m.coll == Coll::Allgather || (m.coll == Coll::Allgatherv && m.recv_side.equal_blocks())
    );
    let (me, p) = (plan.me, plan.size);
    let block = m.recv_side.block(me).bytes();
    // The receive buffer as one typed range of p blocks, when its count fits
    // an int (Allgatherv's blocks lie at its displacements: never).
    let direct = i32::try_from(m.recv.count as i64 * p as i64)
        .ok()
        .filter(|_| m.coll == Coll::Allgather && block.saturating_mul(p) <= plan.params.piece_bytes)
        .and_then(|n| TypedBuf::new(m.recv.buf, n, m.recv.dtype).byte_range());
    let Some(start) = direct else {
        return allgather_in_rounds(plan, comm, m, block);
    };
    // SAFETY: p blocks in one contiguous range of the application's receive
    // buffer, valid for the call.
    let all = unsafe { std::slice::from_raw_parts_mut(start, block * p) };
    // Our own block into its place (in place, it is there already).
    if !m.send_in_place {
        // SAFETY: the slot holds `block` bytes; the stream has as many.
        unsafe {
            m.send
                .source()
                .read(0, all[me * block..].as_mut_ptr(), block)
        };
    }
    gather_all(plan, comm, block, all)
}

/// An Allgather(v) through staging: in rounds, each gathering the next piece
/// of every block (p pieces of at most `piece_bytes / p` bytes, so one round
/// when the p blocks fit) through one staging buffer, so that neither the
/// staging nor the climb's copies hold more than `piece_bytes`.
/// Every block's stream is read or written in order, piece after piece.
fn allgather_in_rounds(plan: &mut HierPlan, comm: Comm, m: &MovementArgs, block: usize) -> bool {
    let (me, p) = (plan.me, plan.size);
    let piece = (plan.params.piece_bytes / p).clamp(1, block.max(1));
    if piece < block {
        tracing::trace!(
            "{:?} of {block} bytes a block in {} rounds of up to {piece}",
            m.coll,
            block.div_ceil(piece)
        );
    }
    let mut staging = vec![0u8; piece * p];
    let mut source = if m.send_in_place {
        m.recv_side.block(me).source()
    } else {
        m.send.source()
    };
    // In place, this process's block is already where it belongs.
    let skip_own = m.send_in_place;
    let mut sinks: Vec<Option<Payload>> = (0..p)
        .map(|r| (r != me || !skip_own).then(|| m.recv_side.block(r).sink()))
        .collect();
    let mut at = 0;
    while at < block {
        let len = piece.min(block - at);
        let all = &mut staging[..len * p];
        // SAFETY: slot `me` of `all` holds `len` bytes; the stream has them.
        unsafe { source.read(at, all[me * len..].as_mut_ptr(), len) };
        if !gather_all(plan, comm, len, all) {
            return false;
        }
        for (r, sink) in sinks.iter_mut().enumerate() {
            if let Some(sink) = sink {
                // SAFETY: slot r of `all` holds `len` bytes; block r takes
                // them at stream offset `at`.
                unsafe { sink.write(at, all[r * len..].as_ptr(), len) };
            }
        }
        at += len;
    }
    true
}

/// Fills `all` (p blocks of `block` bytes, rank order, this process's in
/// place) by the hierarchy or paper 003's algorithm, as asked.
fn gather_all(plan: &mut HierPlan, comm: Comm, block: usize, all: &mut [u8]) -> bool {
    match plan.params.allgather {
        HierAllgather::RecursiveDoubling | HierAllgather::Bruck => {
            remapped_allgather(plan, comm, block, all)
        }
        HierAllgather::Auto | HierAllgather::Hierarchical => {
            let alg = plan.params.bcast;
            let mut chain = chain_of(plan);
            collect::allgather(comm, &mut chain, alg, block, all)
        }
    }
}

/// Paper 003: recursive doubling or Bruck over all processes, in the
/// numbering `coll_sharm_allgather_remap` asks for (π from METIS, computed
/// at the first such call); `all` holds this process's block in place.
fn remapped_allgather(plan: &mut HierPlan, comm: Comm, block: usize, all: &mut [u8]) -> bool {
    let (me, p) = (plan.me, plan.size);
    let rd = plan.params.allgather == HierAllgather::RecursiveDoubling;
    let variant = match (rd, plan.params.allgather_remap) {
        (true, AllgatherRemap::Exch) => Variant::RdExch,
        (true, _) => Variant::RdReorder,
        (false, AllgatherRemap::Exch) => Variant::BruckExch,
        (false, _) => Variant::BruckReorder,
    };
    let remapped = plan.params.allgather_remap != AllgatherRemap::None;
    let Some(mapping) = plan.mapping(variant, remapped) else {
        return false;
    };
    tracing::trace!(
        "allgather over {p} processes: {variant:?}{}",
        if remapped { " remapped" } else { "" }
    );
    network::remapped_allgather(comm, me, variant, mapping, block, all, ffi::tag_bcast())
}
