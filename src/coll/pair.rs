//! Exchanges of two processes through the pair buffer (`shm::pair`): on a
//! channel of two, Allgather(v) blocks of 33 bytes (`MIN_BYTES`) to one
//! half, Alltoall blocks of 33 bytes to 256 KiB (`alltoall::PAIR_MAX_BYTES`),
//! the `allgather` Allreduce of dense vectors of 33 bytes to 12 KiB,
//! reduce-scatter + allgather of dense vectors from 12 KiB whose halves fit
//! one half, the Reduce of dense vectors of 33 bytes to 256 KiB
//! (`reduce_exchange`), and Bcasts, Gather(v) and Scatter(v) blocks of 64 KiB to 8 MiB
//! and dense Reduces of 256 KiB to 8 MiB as one stream through its ring.
//! In an exchange each process fills its half straight from its send
//! block, makes its own copy while the other fills, then copies the
//! other's block out; an Allreduce combines its vector with the other's
//! half into its result instead, in rank order on both processes.
//!
//! np=2, fresh send data, in turns with `coll_sharm_pair_buffer_size 0`
//! (the queues) and Intel MPI (6 rounds, cores near,
//! `docs/benchmark/2026-11-30-h-pair/`): Allgather 1 KiB-512 KiB in
//! 0.51-0.70x the queues' time, Alltoall 1 KiB-256 KiB in 0.60-0.81x,
//! Allreduce 1 / 8 KiB 0.61 / 0.87x; against Intel MPI 0.61-0.98x, except
//! Allgather 512 KiB (1.06x) and Alltoall 256 KiB (1.06x).  The
//! reduce-scatter and allgather, 4 and 8 rounds
//! (`docs/benchmark/2026-12-01-b-pair-allreduce/`): 16 KiB-1 MiB in
//! 0.54-0.85x the queues' time, 0.64-0.98x Intel MPI's.  The Bcast:
//! `docs/benchmark/2026-12-01-c-pair-bcast/` and `STREAM_MIN_BYTES`.

use crate::coll::reduction::{self, Reduction};
use crate::coll::small::SayOnce;
use crate::kernels::copy;
use crate::ompi::payload::{Payload, RootSide, SelfCopy, TypedBuf};
use crate::shm::channel::{land, Shared};
use crate::shm::layout::CACHE_LINE;
use crate::shm::pair::{Pair, ROTATING_BELOW_BYTES};
use crate::shm::queue::INLINE_BYTES;
use crate::shm::wait::Waiter;
use tracing::trace;

/// Whether a call whose blocks are `out` bytes (ours to the other) and
/// `inc` bytes (the other's to us) goes through the pair buffer, the
/// two-copy route on two processes:
/// * both fit a half;
/// * the larger holds at least [`MIN_BYTES`];
/// * `single(bytes)` (forced single copy, or its size class's trials) says
///   that neither goes by single copy; the trials thus weigh the pair
///   buffer where they weighed the queues.
///
/// Both processes know both sizes, so they decide alike.  Every path that
/// may serve such a call asks this before anything else: the short paths
/// of `coll::small` (the express lane's, and the ordinary path's) also
/// decide from a process's own send layout, which the other does not know,
/// and meet the queue paths, not this one.
pub(crate) fn takes(sh: &Shared, out: usize, inc: usize, single: impl Fn(usize) -> bool) -> bool {
    sh.pair
        .as_ref()
        .is_some_and(|pair| out.max(inc) <= pair.half())
        && out.max(inc) >= MIN_BYTES
        && !single(out)
        && !single(inc)
}

/// The smallest block (or reduced vector) the pair buffer takes: one more
/// than the queues carry in a slot header's own line ([`INLINE_BYTES`]).
/// A fragment that small reaches its reader in one line transfer, where a
/// turn of the pair buffer takes two: the half's data line and its turn
/// line.  Beyond it the queues move the header and the data lines (which
/// the reader prefetches while it waits) and then hand the slot back, and
/// the turns win.
///
/// np=2, paired in one launch (`bench/paired_ab.c`, fresh data, 40 blocks
/// of 100 calls, 3 launches, the Xeon VM, 2026-12-01 evening; the pair
/// buffer's time over the queues'): Allreduce 48 / 64 / 128 / 256 / 512 B
/// 0.79-0.94 / 0.85-0.94 / 0.77-0.96 / 0.75-0.88 / 0.54-0.67; Reduce 64 /
/// 256 / 512 B 0.86-1.02 / 0.91-0.99 / 0.73-0.84; Alltoall 48-256 B
/// 0.75-1.00 and 512 B 0.61-0.67; Allgather 48-256 B 0.87-1.05 and 512 B
/// 0.63-0.76.  At 16 and 32 B the Reduce took 1.07-1.23x the queues' time
/// and the Allreduce 0.92-1.13x.
pub(crate) const MIN_BYTES: usize = INLINE_BYTES + 1;

/// Sends `out_bytes` of `src` to the other process and receives its
/// `in_bytes` into `sink`, running `own_copy` while the other fills; the
/// caller checked `takes`.  False when the own copy failed (reported).
/// `said`: whether this process said (at verbose 100) that a call of
/// `name` went through the pair buffer, once per process and operation.
pub(crate) fn exchange(
    sh: &mut Shared,
    (name, said): (&str, &SayOnce),
    (src, out_bytes): (&mut Payload, usize),
    (sink, in_bytes): (&mut Payload, usize),
    own_copy: SelfCopy,
) -> bool {
    if said.first() {
        trace!("{name}: blocks exchanged through the pair buffer");
    }
    let me = sh.me;
    let waiter = sh.waiter;
    let pair = sh.pair.as_mut().expect("`takes` found a pair buffer");
    let mut copied = true;
    // SAFETY: `takes` checked that both blocks fit a half; the payloads
    // hold the bytes they are asked for.
    unsafe {
        pair.exchange(
            me,
            &waiter,
            |ours| {
                if out_bytes > 0 {
                    src.read(0, ours, out_bytes)
                }
            },
            || copied = own_copy.finish(),
            |theirs| {
                if in_bytes > 0 {
                    sink.write(0, theirs, in_bytes)
                }
            },
        )
    };
    copied
}

/// Whether this process said (at verbose 100) that an Allreduce went
/// through the pair buffer.
static ALLREDUCE_SAID: SayOnce = SayOnce::new();

/// Whether an Allreduce of `red` goes through the pair buffer: a dense
/// vector of `bytes` bytes that fits a half (the caller has ruled out
/// single copy and a forced algorithm).  Every process knows the size and
/// the layout, so all decide alike.
pub(crate) fn takes_allreduce(sh: &Shared, red: &Reduction, bytes: usize) -> bool {
    bytes > 0 && red.layout.dense() && takes(sh, bytes, bytes, |_| false)
}

/// The Allreduce of two processes: each fills its half with its vector,
/// then combines its vector with the other's half into its receive buffer,
/// x0 op x1 on both
/// (the same operands in the same order, so both results are
/// bit-identical, for non-commutative operations too).  Our operand is our
/// input, not our half, which the other may already be filling again
/// (`Pair::exchange`); in place the result overwrites it exactly, which
/// `Reduction::fused` allows.  The caller checked `takes_allreduce`.
pub(crate) fn allreduce(sh: &mut Shared, red: &Reduction) -> bool {
    if ALLREDUCE_SAID.first() {
        trace!("MPI_Allreduce: contributions exchanged through the pair buffer");
    }
    let me = sh.me;
    let bytes = red.layout.span(red.layout.count);
    let waiter = sh.waiter;
    let pair = sh
        .pair
        .as_mut()
        .expect("`takes_allreduce` found a pair buffer");
    // SAFETY: `takes_allreduce` checked that the vector fits a half and is
    // dense: `bytes` bytes hold its `count` elements in our input, in each
    // half and in the receive buffer, which overlaps neither half and is
    // our input exactly or not at all.
    unsafe {
        pair.exchange(
            me,
            &waiter,
            |ours| copy::copy(ours, red.own, bytes),
            || {},
            |theirs| {
                combine(
                    red,
                    me,
                    (red.own, theirs),
                    red.rbuf,
                    red.layout.count,
                    bytes,
                )
            },
        )
    };
    true
}

/// `out = x0 op x1` for `n` elements of `len` bytes, where process `me`
/// holds `ours` and the other's part is `theirs`: both processes combine
/// the same operands in rank order, so their results are bit-identical,
/// for non-commutative operations too.
///
/// # Safety
/// As `Reduction::fused`.
unsafe fn combine(
    red: &Reduction,
    me: usize,
    (ours, theirs): (*const u8, *const u8),
    out: *mut u8,
    n: usize,
    len: usize,
) {
    let (x0, x1) = if me == 0 {
        (ours, theirs)
    } else {
        (theirs, ours)
    };
    // SAFETY: forwarded contract.
    unsafe { red.fused(x0, x1, out, n, len) }
}

/// Whether this process said (at verbose 100) that an Allreduce reduced
/// its slice through the pair buffer.
static SLICES_SAID: SayOnce = SayOnce::new();

/// Where process `r`'s slice (`reduction::slice`) of a dense vector of
/// `count` elements of `size` bytes lies on two processes, as (first byte,
/// elements, bytes): process 0 reduces the first `count / 2` elements,
/// process 1 the rest.
fn slice(r: usize, count: usize, size: usize) -> (usize, usize, usize) {
    let (first, n) = reduction::slice(r, 2, count);
    (first * size, n, n * size)
}

/// Whether the reduce-scatter + allgather Allreduce of `red` goes through
/// the pair buffer: a dense vector whose larger slice (process 1's) fits
/// a half and holds at least `MIN_BYTES` (the caller has ruled out
/// single copy).  Every process knows the size and the layout, so both
/// decide alike.
pub(crate) fn takes_reduce_scatter_allgather(sh: &Shared, red: &Reduction) -> bool {
    let (_, _, larger) = slice(1, red.layout.count, red.layout.size);
    red.layout.dense() && takes(sh, larger, larger, |_| false)
}

/// Reduce-scatter + allgather on two processes, in two exchanges:
/// 1. each fills its half with the other's slice of its vector, then
///    combines its own slice with the other's half into its slice of the
///    receive buffer, x0 op x1 (rank order on both, so non-commutative
///    operations are reduced alike);
/// 2. each fills its next half with its reduced slice, which the combine
///    just wrote into its cache, and copies the other's reduced slice out.
///
/// Each process reads one slice across the cores per exchange, half the
/// vector, and folds half of it; its second fill goes into the half it
/// read in the first, whose lines it holds.  Every slice is reduced once,
/// so the results are bit-identical.  Our operand is our input, not our
/// half (`Pair::exchange`); in place, our slice's result overwrites our
/// operand exactly, which `Reduction::fused` allows, and the other's slice
/// of the input is read by the first fill before the second exchange
/// overwrites it.  The caller checked `takes_reduce_scatter_allgather`.
pub(crate) fn reduce_scatter_allgather(sh: &mut Shared, red: &Reduction) -> bool {
    if SLICES_SAID.first() {
        trace!("MPI_Allreduce: slices reduced and exchanged through the pair buffer");
    }
    let me = sh.me;
    let (count, size) = (red.layout.count, red.layout.size);
    let (our_at, _, our_len) = slice(me, count, size);
    let (their_at, _, their_len) = slice(1 - me, count, size);
    let waiter = sh.waiter;
    let pair = sh
        .pair
        .as_mut()
        .expect("`takes_reduce_scatter_allgather` found a pair buffer");
    // SAFETY: `takes_reduce_scatter_allgather` checked that the vector is
    // dense and that each slice fits a half: the slices are disjoint byte
    // ranges of our input and of the receive buffer, which overlaps
    // neither half and is our input exactly or not at all.
    unsafe {
        reduce_scatter(pair, me, &waiter, red, |_| red.rbuf.add(our_at));
        pair.exchange(
            me,
            &waiter,
            |ours| copy::copy(ours, red.rbuf.add(our_at), our_len),
            || {},
            |theirs| copy::copy(red.rbuf.add(their_at), theirs, their_len),
        );
    }
    true
}

/// The reduce-scatter exchange of two processes (`reduce_scatter_allgather`
/// and `reduce_exchange`'s `Slices` begin with it): each fills its half
/// with the other's slice of its vector (`slice`), then combines its own
/// slice with the other's half, x0 op x1 in rank order on both, into
/// `out(theirs)`, given the other's half.
///
/// # Safety
/// The vector is dense and each slice fits a half; `out` returns room for
/// our slice's result: our slice of the input exactly, the other's operand
/// in its half exactly, or bytes that overlap neither operand
/// (`Reduction::fused`).
unsafe fn reduce_scatter(
    pair: &mut Pair,
    me: usize,
    waiter: &Waiter,
    red: &Reduction,
    out: impl FnOnce(*mut u8) -> *mut u8,
) {
    let (count, size) = (red.layout.count, red.layout.size);
    let (our_at, our_n, our_len) = slice(me, count, size);
    let (their_at, _, their_len) = slice(1 - me, count, size);
    // SAFETY: forwarded contract; the slices are disjoint byte ranges of
    // our input, each within a half.
    unsafe {
        pair.exchange(
            me,
            waiter,
            |ours| copy::copy(ours, red.own.add(their_at), their_len),
            || {},
            |theirs| {
                let ours = red.own.add(our_at);
                combine(red, me, (ours, theirs), out(theirs), our_n, our_len)
            },
        )
    }
}

/// How an np=2 Reduce below the ring's sizes goes through the pair
/// buffer's turns (`reduce_route`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ReduceRoute {
    /// One exchange: the non-root fills its half with its vector, the root
    /// combines its own with it into its receive buffer.
    Whole,
    /// Two: the reduce-scatter exchange (`reduce_scatter`), the
    /// non-root's reduced slice left in the half it read
    /// (`reduced_at`), then the root copies it out.
    Slices,
}

/// Vectors from this size on take `ReduceRoute::Slices`.  The root of
/// `Whole` waits for the other's fill of the whole vector and then
/// combines all of it; in `Slices` each process fills and combines half,
/// and the root copies the other half out, one turn more.  np=2, MPI_FLOAT
/// sums, paired in one launch (`bench/paired_ab.c`, 16 calls a block, 60
/// blocks, fresh data; 2026-12-01): `Whole` in 0.79 / 0.83x the queues'
/// time at 768 B / 1 KiB, 1.21 / 1.08 / 1.07x at 2 / 4 / 8 KiB; `Slices`
/// in 0.86 / 0.92 / 0.89x `Whole`'s time at 2 / 4 / 8 KiB, 0.80-0.88x the
/// queues' at 4-64 KiB, 0.91x at 128 KiB and 1.02x at 200 KiB.
const REDUCE_SLICES_MIN_BYTES: usize = 2 * 1024;

/// Where in the half it read the non-root of `ReduceRoute::Slices` (rank
/// `writer`) leaves its reduced slice of `len` bytes: over the root's
/// operand there, whose lines its combine has just read, so that its
/// stores find them in its own cache (beside the operand, on lines the
/// root had last read, it ran 1.2-1.7x the queues' time at 64-128 KiB).
/// Except where Open MPI's combine would take that operand as the left one
/// and stage it in a temporary (`Combiner::fused`: the non-root is rank 1,
/// so the root's operand is x0): then just past it, on a line of its own.
/// Both processes compute it alike from the rank and the operation.
fn reduced_at(red: &Reduction, writer: usize, len: usize) -> usize {
    if writer == 1 && !red.comb.own_kernel() {
        len.next_multiple_of(CACHE_LINE)
    } else {
        0
    }
}

/// How a Reduce of `red` goes through the pair buffer's turns, if it does:
/// a dense vector of at least `MIN_BYTES` and less than the
/// ring's `REDUCE_STREAM_MIN_BYTES` (from there `takes_reduce`), as `Slices` from
/// `REDUCE_SLICES_MIN_BYTES` where a half holds the larger slice and, past
/// it, the reduced slice (`reduced_at`), else as `Whole` where a half
/// holds the vector (the caller has ruled out single copy and a forced
/// algorithm).  Every process knows the size and the layout (MPI gives
/// all the same count, datatype and operation), so both decide alike.
pub(crate) fn reduce_route(sh: &Shared, red: &Reduction) -> Option<ReduceRoute> {
    let layout = &red.layout;
    let bytes = layout.span(layout.count);
    let half = sh.pair.as_ref()?.half();
    if !layout.dense() || !(MIN_BYTES..REDUCE_STREAM_MIN_BYTES).contains(&bytes) {
        return None;
    }
    let (_, _, larger) = slice(1, layout.count, layout.size);
    if bytes >= REDUCE_SLICES_MIN_BYTES && larger.next_multiple_of(CACHE_LINE) + larger <= half {
        Some(ReduceRoute::Slices)
    } else if bytes <= half {
        Some(ReduceRoute::Whole)
    } else {
        None
    }
}

/// Whether this process said (at verbose 100) that a Reduce combined the
/// other's whole vector from the pair buffer.
static REDUCE_WHOLE_SAID: SayOnce = SayOnce::new();

/// Whether this process said (at verbose 100) that a Reduce reduced its
/// slices through the pair buffer.
static REDUCE_SLICES_SAID: SayOnce = SayOnce::new();

/// The Reduce of two processes through the pair buffer's turns, as
/// `route` (`reduce_route`) says:
/// * `Whole`: the non-root fills its half with its vector; the root, which
///   fills nothing, combines its vector with that half into its receive
///   buffer.
/// * `Slices`: first each fills its half with the other's slice of its
///   vector and combines its own slice with the other's half, the root
///   into its receive buffer, the non-root into the half it read
///   (`reduced_at`): that half is its own until the other reads its next
///   fill (`Pair::exchange`).  Then the root copies that reduced slice out
///   of it, in an exchange where neither fills anything: the turn says the
///   non-root's combine is done.
///
/// Every combine is x0 op x1 in rank order (`combine`), so non-commutative
/// operations are reduced as MPI orders them, to either root.  In place,
/// the root's slice overwrites exactly the operand it came from, which
/// `Reduction::fused` allows (so does the non-root's result over the
/// root's operand), and the root's first fill has read the other slice of
/// its input before the second exchange overwrites it.  Against a Reduce
/// through the queues, where the root reads and folds the whole other
/// vector as it trails the other's fragments, `Slices` halves the root's
/// fold and cross-core read: the queues' Reduce had run slower than
/// sharm's own Allreduce at 8-64 KiB (np=2, 2026-12-01: 32 KiB 9.5
/// against 6.3 us); measured against it at `REDUCE_SLICES_MIN_BYTES`.
/// The caller checked `reduce_route`.
pub(crate) fn reduce_exchange(
    sh: &mut Shared,
    red: &Reduction,
    root: usize,
    route: ReduceRoute,
) -> bool {
    let me = sh.me;
    let (count, size) = (red.layout.count, red.layout.size);
    let bytes = red.layout.span(count);
    let waiter = sh.waiter;
    let pair = sh
        .pair
        .as_mut()
        .expect("`reduce_route` found a pair buffer");
    match route {
        ReduceRoute::Whole => {
            if REDUCE_WHOLE_SAID.first() {
                trace!("MPI_Reduce: the other's vector combined from the pair buffer");
            }
            // SAFETY: `reduce_route` checked that the vector is dense and
            // fits a half: `bytes` bytes hold its `count` elements in our
            // input, in the half and, at the root, in the receive buffer,
            // which overlaps neither half and is our input exactly or not
            // at all.
            unsafe {
                pair.exchange(
                    me,
                    &waiter,
                    |ours| {
                        if me != root {
                            copy::copy(ours, red.own, bytes)
                        }
                    },
                    || {},
                    |theirs| {
                        if me == root {
                            combine(red, me, (red.own, theirs), red.rbuf, count, bytes)
                        }
                    },
                )
            };
        }
        ReduceRoute::Slices => {
            if REDUCE_SLICES_SAID.first() {
                trace!("MPI_Reduce: slices reduced through the pair buffer");
            }
            let (our_at, _, our_len) = slice(me, count, size);
            let (their_at, _, their_len) = slice(1 - me, count, size);
            // SAFETY: `reduce_route` checked that the vector is dense and
            // that a half holds the larger slice and, past it, the reduced
            // slice (`reduced_at`): the slices are disjoint byte ranges of
            // our input and of the root's receive buffer, which overlaps
            // neither half and is our input exactly or not at all; the
            // non-root writes only the half it read, which is its own
            // until the root reads it in the second exchange.
            unsafe {
                reduce_scatter(pair, me, &waiter, red, |theirs| {
                    if me == root {
                        red.rbuf.add(our_at)
                    } else {
                        theirs.add(reduced_at(red, me, our_len))
                    }
                });
                pair.exchange(
                    me,
                    &waiter,
                    |_| {},
                    || {},
                    |theirs| {
                        if me == root {
                            let reduced = theirs.add(reduced_at(red, 1 - me, their_len));
                            copy::copy(red.rbuf.add(their_at), reduced, their_len)
                        }
                    },
                );
            }
        }
    }
    true
}

/// Whether this process said (at verbose 100) that a Bcast went through
/// the pair buffer.
static BCAST_SAID: SayOnce = SayOnce::new();
/// Whether it said that a Bcast went round the ring (`ROTATING_BELOW_BYTES`).
static BCAST_ROUND_SAID: SayOnce = SayOnce::new();

/// Says (at verbose 100, once per process and operation) that a stream of
/// `bytes` bytes went through the ring, and whether round it.
fn say_stream(name: &str, bytes: usize, (said, round_said): (&SayOnce, &SayOnce)) {
    if said.first() {
        trace!("{name}: streamed through the pair buffer");
    }
    if bytes < ROTATING_BELOW_BYTES && round_said.first() {
        trace!("{name}: streamed round the pair buffer's ring");
    }
}

/// The smallest Bcast or Gather(v) block, in bytes, that goes through the
/// pair buffer's ring.  Up to 2026-12-01 it was 256 KiB: every stream
/// started in the same half, and below 256 KiB the ring lost to the queues
/// in every state of the VM tried (np=2, alternated launches: Bcast 64 KiB
/// in 1.07-1.48x the queues' time over three states, 128 KiB 1.08-1.55x,
/// Gather alike; `docs/benchmark/2026-12-01-c-pair-bcast/`,
/// `docs/benchmark/2026-12-01-e-pair-gather/`).  Since streams shorter than
/// `ROTATING_BELOW_BYTES` go round the ring (`shm::pair`, "Where a stream
/// starts"), a scratch build (np=2, alternated launches, near) had Bcasts
/// and Gathers of 64-192 KiB in 0.79-1.0x the queues' time, but 16 and 32
/// KiB in 0.98-1.11x, hence 64 KiB.  With the ring's string fills too
/// (`copy::fill_ring`), in turns with the peers: Bcast 64-192 KiB in
/// 0.70-0.79x the queues' time and Gather in 0.75-0.87x, both below Intel
/// MPI's (`docs/benchmark/2026-12-01-j-ring-from-64k/`).
pub(crate) const STREAM_MIN_BYTES: usize = 64 * 1024;
/// The smallest Reduce vector, in bytes, that goes through the ring
/// (`takes_reduce`); shorter ones take the halves (`reduce_route`).  From
/// 256 KiB: Reduce 256 KiB-6 MiB in 0.73-0.97x the queues' time
/// (`docs/benchmark/2026-12-01-e-pair-gather/`), and below it the halves
/// took 0.80-0.88x the queues' at 4-64 KiB.
pub(crate) const REDUCE_STREAM_MIN_BYTES: usize = 256 * 1024;
/// Streams from this size on keep the queues, which land such streams in
/// memory while the ring's chunks come back through the caches: Bcasts of
/// 8 / 12 / 16 / 32 MiB in 0.99 / 1.03 / 1.07 / 1.32x the queues' time
/// through the ring, against 0.75-0.86x at 2-4 MiB.
pub(crate) const STREAM_BELOW_BYTES: usize = 8 * 1024 * 1024;

/// Whether a stream of `bytes` bytes between the two processes of a
/// channel goes through the pair buffer's ring: a channel of two with a
/// pair buffer, and `min` <= bytes < `STREAM_BELOW_BYTES`.  The caller
/// has ruled out single copy (and, for a Bcast or a Reduce, a forced
/// algorithm).  Both ends know the size, so they decide alike.
fn takes_stream_from(sh: &Shared, min: usize, bytes: usize) -> bool {
    sh.pair.is_some() && (min..STREAM_BELOW_BYTES).contains(&bytes)
}

/// `takes_stream_from` for a Bcast or a Gather(v) block.
pub(crate) fn takes_stream(sh: &Shared, bytes: usize) -> bool {
    takes_stream_from(sh, STREAM_MIN_BYTES, bytes)
}

/// The Bcast of two processes as one stream through the pair buffer
/// (`Pair::stream`): the root packs or copies its message into the ring
/// chunk by chunk with ordinary stores, the other unpacks or copies each
/// chunk out as soon as it is there, landing it as the call's landing
/// says (`Shared::landing`: the trials' choice from 2 MiB).  The caller
/// checked `takes_stream`.
pub(crate) fn bcast(sh: &mut Shared, payload: &mut Payload, bytes: usize, root: usize) -> bool {
    say_stream("MPI_Bcast", bytes, (&BCAST_SAID, &BCAST_ROUND_SAID));
    let streams = sh.landing().streams(bytes);
    stream(sh, payload, bytes, root, streams);
    true
}

/// Whether this process said (at verbose 100) that a Gather(v) went
/// through the pair buffer.
static GATHER_SAID: SayOnce = SayOnce::new();
/// Whether it said that a Gather(v) went round the ring.
static GATHER_ROUND_SAID: SayOnce = SayOnce::new();

/// The Gather(v) of two processes: the other's block comes as one stream
/// through the pair buffer's ring, written by the other (the stream's
/// root, for once not the call's), while the root first copies its own
/// block, if it has one (not MPI_IN_PLACE), so that the other fills ahead
/// meanwhile.  `own` is this process's send block, `root_side` the root's
/// receive blocks (the other's block size there equals the other's send
/// size, as MPI requires), `bytes` the other's (non-root's) block size.
/// The caller checked `takes_stream` and ruled out single copy for
/// `bytes`.  False when the root's own copy failed (reported by Open MPI's
/// datatype engine).
pub(crate) fn gather(
    sh: &mut Shared,
    own: Option<TypedBuf>,
    root_side: &RootSide,
    root: usize,
    bytes: usize,
) -> bool {
    say_stream("MPI_Gather(v)", bytes, (&GATHER_SAID, &GATHER_ROUND_SAID));
    let me = sh.me;
    let other = 1 - me;
    if me != root {
        let mut src = own.expect("only the root may pass MPI_IN_PLACE").source();
        stream(sh, &mut src, bytes, me, false);
        return true;
    }
    // All we copy here: the other's block and our own (`land_call`).
    let own_bytes = own.as_ref().map_or(0, |_| root_side.block(me).bytes());
    let stores = sh.land_call(bytes + own_bytes);
    let copied = own.is_none_or(|src| src.copy_to(&root_side.block(me), stores));
    let streams = sh.landing().streams(bytes);
    stream(
        sh,
        &mut root_side.block(other).sink(),
        bytes,
        other,
        streams,
    );
    copied
}

/// Whether this process said (at verbose 100) that a Scatter(v) went
/// through the pair buffer, and round its ring.
static SCATTER_SAID: SayOnce = SayOnce::new();
static SCATTER_ROUND_SAID: SayOnce = SayOnce::new();

/// The Scatter(v) of two processes: the other's block goes as one stream
/// through the pair buffer's ring, written by the root, which then copies
/// its own block (if it has one, not MPI_IN_PLACE) while the other reads.
/// `own` is this process's receive block, `root_side` the root's send
/// blocks, `bytes` the other's (non-root's) block size, which both know
/// (the root from its send block, the other from its receive block).  The
/// caller checked `takes_stream` and ruled out single copy for `bytes`.
/// np=2, in turns with the queues (a scratch build, 5 rounds): 0.72 /
/// 0.81 / 0.88 / 0.89 / 0.94x their time at 64 / 128 / 192 / 256 KiB /
/// 1 MiB (`docs/benchmark/2026-12-01-j-ring-from-64k/`).  False when the
/// root's own copy failed (reported by Open MPI's datatype engine).
pub(crate) fn scatter(
    sh: &mut Shared,
    own: Option<TypedBuf>,
    root_side: &RootSide,
    root: usize,
    bytes: usize,
) -> bool {
    say_stream(
        "MPI_Scatter(v)",
        bytes,
        (&SCATTER_SAID, &SCATTER_ROUND_SAID),
    );
    let me = sh.me;
    if me != root {
        let own = own.expect("only the root may pass MPI_IN_PLACE");
        let streams = sh.landing().streams(bytes);
        stream(sh, &mut own.sink(), bytes, root, streams);
        return true;
    }
    stream(
        sh,
        &mut root_side.block(1 - me).source(),
        bytes,
        root,
        false,
    );
    own.is_none_or(|dst| root_side.block(me).copy_to(&dst, sh.landing()))
}

/// Whether this process said (at verbose 100) that a Reduce went through
/// the pair buffer.
static REDUCE_SAID: SayOnce = SayOnce::new();

/// Whether a Reduce of `red` goes through the pair buffer's ring: a dense
/// vector whose bytes `takes_stream` takes and whose elements never
/// straddle two chunks (the caller has ruled out single copy and a forced
/// algorithm).  Every process knows the size and the layout, so both
/// decide alike.
pub(crate) fn takes_reduce(sh: &Shared, red: &Reduction) -> bool {
    let layout = &red.layout;
    layout.dense()
        && takes_stream_from(sh, REDUCE_STREAM_MIN_BYTES, layout.span(layout.count))
        && sh
            .pair
            .as_ref()
            .is_some_and(|pair| pair.chunk() % layout.size == 0)
}

/// The Reduce of two processes as one stream through the pair buffer's
/// ring (`Pair::stream`): the non-root copies its vector in chunk by chunk,
/// and the root combines each chunk, as soon as it is there, with the same
/// elements of its own vector into its receive buffer, x0 op x1 (rank
/// order, so non-commutative operations are reduced as MPI orders them).
/// In place, each chunk's result overwrites exactly the operand it was
/// computed from, which `Reduction::fused` allows.  The caller checked
/// `takes_reduce`.
pub(crate) fn reduce(sh: &mut Shared, red: &Reduction, root: usize) -> bool {
    if REDUCE_SAID.first() {
        trace!("MPI_Reduce: streamed through the pair buffer");
    }
    let me = sh.me;
    let writer = 1 - root;
    let (count, size) = (red.layout.count, red.layout.size);
    let bytes = red.layout.span(count);
    let waiter = sh.waiter;
    let pair = sh
        .pair
        .as_mut()
        .expect("`takes_reduce` found a pair buffer");
    // SAFETY: the vector is dense (`takes_reduce`): `bytes` bytes hold its
    // `count` elements in our input and, at the root, in the receive
    // buffer, which is our input exactly or overlaps neither it nor the
    // ring; each chunk lies within a half, holds `len` bytes, starts at a
    // multiple of the chunk size and so holds whole elements (`chunk() %
    // size == 0`); only the writer writes the ring.
    unsafe {
        pair.stream(me, writer, &waiter, bytes, |offset, at, len| {
            let ours = red.own.add(offset);
            if me == writer {
                copy::fill_ring(at, ours, len)
            } else {
                combine(red, me, (ours, at), red.rbuf.add(offset), len / size, len)
            }
        })
    };
    true
}

/// One stream of `bytes` bytes of `payload` from `writer` to the other
/// process through the pair buffer's ring (`Pair::stream`): the writer
/// packs or copies each chunk into the ring (`copy::fill_ring`), the other
/// unpacks or copies it out, with non-temporal stores when `streams`.
fn stream(sh: &mut Shared, payload: &mut Payload, bytes: usize, writer: usize, streams: bool) {
    let me = sh.me;
    let waiter = sh.waiter;
    let pair = sh
        .pair
        .as_mut()
        .expect("`takes_stream` found a pair buffer");
    // SAFETY: each chunk lies within a half and holds `len` bytes; the
    // payload holds the stream's `bytes` bytes; only the writer writes the
    // ring.
    unsafe {
        pair.stream(
            me,
            writer,
            &waiter,
            bytes,
            |offset, at, len| match payload {
                Payload::Contiguous(base) if me == writer => {
                    copy::fill_ring(at, base.add(offset), len)
                }
                _ if me == writer => payload.read(offset, at, len),
                _ => land(payload, streams, offset, at, len),
            },
        )
    };
}
