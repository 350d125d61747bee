//! MPI_Allreduce over the queues: the tree walk of `reduce` with the result
//! published to everybody, or for small messages `allgather` (one hop, every
//! process folds all contributions), or for large dense ones reduce-scatter
//! followed by an allgather of the reduced slices.  On two processes both
//! the `allgather` Allreduce and reduce-scatter + allgather go through the
//! pair buffer where it holds their blocks (`coll::pair`).

use crate::coll::allgather;
use crate::coll::gather::rotation;
use crate::coll::pair;
use crate::coll::reduce::{walk, Sink, LINEAR_UP_TO};
use crate::coll::reduce_scatter;
use crate::coll::reduction::{self, fold_ranks, Piece, Reduction};
use crate::coll::single_copy_reduce;
use crate::ompi::call::Coll;
use crate::ompi::dtype::ReduceLayout;
use crate::ompi::params::Algorithm;
use crate::ompi::payload::{Payload, SelfCopy};
use crate::shm::channel::Shared;
use crate::shm::queue::Readers;
use std::sync::atomic::{AtomicBool, Ordering};
use tracing::trace;

/// The `allgather` Allreduce is for this many processes at most: each
/// folds all p contributions.
const ALLGATHER_ALLREDUCE_MAX_PROCESSES: usize = 16;
/// Messages up to this size use the `allgather` Allreduce under `auto`.
const ALLGATHER_ALLREDUCE_MAX_BYTES: usize = 2048;
/// The same for two processes with a core each, up to where
/// reduce-scatter + allgather takes over: each process then reads one
/// other contribution, as in the tree, but in one hop instead of two.
/// np=2, 3 alternated launches (2026-11-24, memcpy 4 MiB 15 GB/s): 4 KiB
/// 1.76 -> 1.23 us, 8 KiB 2.69 -> 1.90 (k-nomial tree -> allgather), 2 KiB
/// 0.94 / 0.95; at 16 KiB allgather 4.10 beside reduce-scatter +
/// allgather's 4.00.
const ALLGATHER_ALLREDUCE_PAIR_MAX_BYTES: usize = RSAG_ALLREDUCE_MIN_BYTES - 1;
/// Messages from this size on use reduce-scatter + allgather under `auto`,
/// with a core per process.  np=2, alternated launches: 0.83x the tree's
/// time at 12 KiB, 0.68-0.77x at 16-48 KiB, 0.96x at 8 KiB.
const RSAG_ALLREDUCE_MIN_BYTES: usize = 12 * 1024;
/// The same on a crowded node, where each of its two phases waits for
/// processes that may not be running: np=4 on 2 cores, 1.24-1.65x the tree's
/// time at 2-16 KiB, parity from 32 KiB.
const RSAG_ALLREDUCE_CROWDED_MIN_BYTES: usize = 64 * 1024;

/// False when single copy failed (reported).
pub fn allreduce(sh: &mut Shared, red: &Reduction) -> bool {
    let bytes = red.layout.span(red.layout.count);
    let chosen = sh.choose(Coll::Allreduce, Some(bytes));
    // Single copy replaces the algorithm only where none was asked for.
    if chosen == Algorithm::Auto && single_copy_reduce::applies(sh, red) {
        return single_copy_reduce::reduce(sh, red, None);
    }
    // Two processes: where `auto` takes the `allgather` Allreduce, its one
    // exchange goes through the pair buffer, each process folding both
    // contributions.  Not beyond: there reduce-scatter + allgather moves and
    // folds half as much per process (through the pair buffer too, below),
    // and the pair buffer's `allgather` Allreduce took
    // 0.86-1.33x its time at 64-512 KiB (np=2, 6 rounds in turns: near
    // 1.30 / 0.86 / 0.98 at 64 / 256 / 512 KiB, mixed 1.18-1.33;
    // `docs/benchmark/2026-11-30-h-pair/ab/allreduce.txt`), against 0.61 /
    // 0.87x the queues' `allgather` Allreduce at 1 / 8 KiB.
    if chosen == Algorithm::Auto
        && bytes <= allgather_up_to(sh)
        && pair::takes_allreduce(sh, red, bytes)
    {
        sh.ran(Coll::Allreduce, Algorithm::Allgather);
        return pair::allreduce(sh, red);
    }
    let alg = match chosen {
        Algorithm::Auto if bytes <= allgather_up_to(sh) => Algorithm::Allgather,
        Algorithm::Auto if bytes >= rsag_min_bytes(sh) && red.layout.dense() => {
            Algorithm::ReduceScatterAllgather
        }
        other => sh.tree_algorithm(other, LINEAR_UP_TO),
    };
    sh.ran(Coll::Allreduce, alg);
    match alg {
        Algorithm::Allgather => allgather_allreduce(sh, red),
        // Two processes: both exchanges through the pair buffer, where
        // each slice fits a half (`pair::reduce_scatter_allgather`).
        Algorithm::ReduceScatterAllgather if pair::takes_reduce_scatter_allgather(sh, red) => {
            return pair::reduce_scatter_allgather(sh, red)
        }
        Algorithm::ReduceScatterAllgather if red.layout.dense() => {
            return reduce_scatter_allgather(sh, red)
        }
        Algorithm::ReduceScatterAllgather => walk(sh, red, Algorithm::Linear, 0, Sink::Everybody),
        _ => walk(sh, red, alg, 0, Sink::Everybody),
    }
    true
}

/// Up to how many bytes `auto` picks the `allgather` Allreduce on this
/// channel (0: never).
pub fn allgather_up_to(sh: &Shared) -> usize {
    if sh.p <= ALLGATHER_ALLREDUCE_MAX_PROCESSES {
        allgather_max_bytes(sh)
    } else {
        0
    }
}

/// Up to how many bytes `auto` picks the `allgather` Allreduce, at most
/// `ALLGATHER_ALLREDUCE_MAX_PROCESSES` processes.
fn allgather_max_bytes(sh: &Shared) -> usize {
    if sh.p == 2 && !sh.crowded() {
        ALLGATHER_ALLREDUCE_PAIR_MAX_BYTES
    } else {
        ALLGATHER_ALLREDUCE_MAX_BYTES
    }
}

fn rsag_min_bytes(sh: &Shared) -> usize {
    if sh.crowded() {
        RSAG_ALLREDUCE_CROWDED_MIN_BYTES
    } else {
        RSAG_ALLREDUCE_MIN_BYTES
    }
}

/// Whether this process said (at verbose 100) that an Allreduce published
/// its reduced fragments as it folded them; once per process is enough for
/// the tests.
static FOLDED_OUT_SAID: AtomicBool = AtomicBool::new(false);

/// Large-message Allreduce: process r reduces slice r of the elements (in
/// canonical order, from everybody's queue), then every process publishes
/// its reduced slice and copies the others'.  Each process moves and reduces
/// 1/p of the data, all in parallel, instead of rank 0 reducing everything;
/// every slice is reduced once, so results are bit-identical.  Dense layouts
/// only (slices are then plain byte ranges); others use the tree walk.
///
/// Where a queue holds the whole reduce-scatter (up to about 2 MiB with the
/// default ring), each reduced fragment is published as soon as it is
/// folded, from the cache it was just written to, and the allgather half
/// only reads (`gather_shared`); beyond, the allgather is a second
/// exchange.  `bench/paired_ab.c` (np=2, fresh data, 5-6 launches of 16
/// blocks of 100 calls, 2026-11-26), published as folded over the second
/// exchange, median of the launches' B/A: 12 KiB 0.82, 16 KiB 1.03, 24 KiB
/// 0.92, 30 KiB 1.09, 32 KiB 1.09-1.13, 34 KiB 0.91, 40 KiB 0.92, 48 KiB
/// 0.95, 64 KiB 0.80-0.83, 128 KiB 0.90, 256 KiB 0.92, 512 KiB 0.81, 1 MiB
/// 0.99; np=4 on 2 cores, 3 launches: 256 KiB 0.70, 1 MiB 0.75, 64 KiB 1.12
/// (0.99-1.18).  The 30-32 KiB losses are not explained: there the second
/// exchange moves each slice as one fragment of 15-16 KiB, and is cheap.
fn reduce_scatter_allgather(sh: &mut Shared, red: &Reduction) -> bool {
    let (me, p, count, size) = (sh.me, sh.p, red.layout.count, red.layout.size);
    let counts: Vec<usize> = (0..p).map(|r| reduction::slice(r, p, count).1).collect();
    let shared =
        reduce_scatter::reduce_scatter(sh, red, &counts, reduce_scatter::Result::SlicePlace);
    if let Some((op, positions)) = shared {
        if !FOLDED_OUT_SAID.swap(true, Ordering::Relaxed) {
            trace!("MPI_Allreduce: reduced fragments published as they fold");
        }
        gather_shared(sh, red, &counts, op, positions);
        return true;
    }
    let offset = |r: usize| reduction::slice(r, p, count).0 * size;
    let op = sh.next_op();
    let mut sinks = sh.peer_streams();
    for r in rotation(me, p) {
        // SAFETY: slices lie within the receive buffer.
        let slice = Payload::Contiguous(unsafe { red.rbuf.add(offset(r)) });
        sinks.push((r, slice, sh.cut(counts[r] * size)));
    }
    let mut mine = Payload::Contiguous(unsafe { red.rbuf.add(offset(me)) });
    let mine_cut = sh.cut(counts[me] * size);
    let done = allgather::exchange(sh, (&mut mine, mine_cut), &mut sinks, op, SelfCopy::none());
    sh.recycle(sinks);
    done
}

/// Small-message Allreduce: each process publishes its fragment once to all
/// others and folds all p fragments itself in rank order.  One hop instead
/// of two (up to rank 0 and back); every process runs the same operation on
/// the same operands in the same order, and MPI's predefined operations
/// work element by element, so all results are bit-identical.
pub fn allgather_allreduce(sh: &mut Shared, red: &Reduction) {
    let cut = sh.cut(red.layout.span(red.layout.count));
    let (f, p) = (cut.size, sh.p);
    let op = sh.next_op();
    for i in 0..red.layout.fragments(f) {
        let (_, n, offset, len) = red.layout.fragment(i, f);
        let pos = cut.pos(op, i);
        // SAFETY: offsets stay within the user buffers; slots and scratch hold
        // a fragment.  Our own published slot stays unchanged until we reuse
        // it, so it serves as our operand even when the input is in place.
        // Filled as every stream is (`Shared::fill`): with the cores far,
        // ordinary stores would leave the others reading our lines across
        // the host's chiplets.
        unsafe {
            let mine = sh.send_bytes(red.own.add(offset), len, cut.bytes, pos, Readers::AllOthers);
            let piece = Piece { pos, n, len };
            if red.layout.dense() {
                fold_ranks(sh, 0..p, mine, red.rbuf.add(offset), piece, red);
            } else {
                let acc = sh.scratch.ptr();
                fold_ranks(sh, 0..p, mine, acc, piece, red);
                red.layout.copy_to_user(red.rbuf.add(offset), acc, n);
            }
        }
    }
}

/// The allgather half after a reduce-scatter that published its reduced
/// fragments (`reduce_scatter::Result::SlicePlace`): fragment k of every
/// other process's slice, from position `positions + k` of its queue, into
/// the slice's place; fragment k of all slices before fragment k + 1 of
/// any, so that all streams move at once.
fn gather_shared(sh: &mut Shared, red: &Reduction, counts: &[usize], op: u64, positions: usize) {
    let (me, p, count) = (sh.me, sh.p, red.layout.count);
    let cut = sh.cut(red.layout.span(count));
    let slice = |r: usize| ReduceLayout {
        count: counts[r],
        ..red.layout
    };
    let most = (0..p)
        .map(|r| slice(r).fragments(cut.size))
        .max()
        .unwrap_or(0);
    for k in 0..most {
        for r in rotation(me, p) {
            let theirs = slice(r);
            if k >= theirs.fragments(cut.size) {
                continue;
            }
            let (_, _, offset, len) = theirs.fragment(k, cut.size);
            // Slice r's place: where `reduce_scatter` put it at process r.
            // SAFETY: it lies within the receive buffer.
            let start = unsafe {
                red.rbuf
                    .add(reduction::slice(r, p, count).0 * red.layout.extent)
            };
            let mut place = Payload::Contiguous(start);
            let at = cut.pos(op, positions + k);
            sh.recv_at(r, &mut place, theirs.span(counts[r]), offset, at, len);
        }
    }
}
