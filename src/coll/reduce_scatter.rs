//! MPI_Reduce_scatter(_block).
//!
//! * linear: every process streams slice r of its input to process r, and
//!   each process reduces its own slice from every queue in canonical order
//!   (`x_0 op ... op x_{p-1}`, right for non-commutative ops).
//! * reduce_then_scatter: a Reduce of the whole vector to rank 0, then a
//!   Scatterv of the slices: p-1 queue reads at rank 0 and one elsewhere,
//!   instead of p-1 reads at every process, at the price of a second phase.
//!
//! All processes know every slice's element count, so fragment i of slice r
//! sits at position `base(r) + i` of each queue, and every writer fills its
//! queue in the same order.  A process reads its own slice `s-1` positions
//! behind its writing, which keeps the pipeline full without a cycle of
//! waits (same argument as Allreduce's).

use crate::coll::gather;
use crate::coll::reduction::{fold_ranks, Piece, Reduction};
use crate::ompi::call::Coll;
use crate::ompi::dtype::ReduceLayout;
use crate::ompi::params::Algorithm;
use crate::ompi::payload::RootSide;
use crate::ompi::payload::TypedBuf;
use crate::shm::channel::Shared;
use crate::shm::queue::Readers;

/// MPI_Reduce_scatter(_block) (`coll`, which names it in the trace) with
/// the configured algorithm.
pub fn reduce_scatter_op(sh: &mut Shared, red: &Reduction, counts: &[usize], coll: Coll) -> bool {
    // The size rules see: the average result slice (= each process's block
    // for Reduce_scatter_block), known alike everywhere.
    let per_process = red.layout.span(counts.iter().sum()) / sh.p;
    if sh.choose(Coll::ReduceScatter, Some(per_process)) != Algorithm::ReduceThenScatter {
        sh.ran(coll, Algorithm::Linear);
        reduce_scatter(sh, red, counts, Result::BufferStart);
        return true;
    }
    sh.ran(coll, Algorithm::ReduceThenScatter);
    let (me, p) = (sh.me, sh.p);
    let total: usize = counts.iter().sum();
    let (Ok(counts32), Ok(_)) = (
        counts
            .iter()
            .map(|&c| i32::try_from(c))
            .collect::<std::result::Result<Vec<i32>, _>>(),
        i32::try_from(total),
    ) else {
        reduce_scatter(sh, red, counts, Result::BufferStart);
        return true;
    };
    let mut displs = vec![0i32; p];
    for r in 1..p {
        displs[r] = displs[r - 1] + counts32[r - 1];
    }
    // Rank 0 reduces the whole vector into a private buffer.
    let mut whole = vec![0u8; if me == 0 { red.layout.span(total) } else { 0 }];
    let to_zero = Reduction {
        rbuf: whole.as_mut_ptr(),
        in_place: false,
        ..*red
    };
    crate::coll::reduce::reduce(sh, &to_zero, 0);
    // Then hands slice r to process r.
    let source = RootSide {
        whole: TypedBuf::new(whole.as_ptr(), total as i32, red.comb.dtype),
        count: 0,
        counts: Some((&counts32, &displs)),
    };
    let own = TypedBuf::new(red.rbuf, counts32[me], red.comb.dtype);
    gather::scatter(sh, Some(own), &source, 0)
}

/// Where a process puts the reduced slice it owns.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Result {
    /// At the start of the receive buffer (MPI_Reduce_scatter).
    BufferStart,
    /// At the slice's own place in a full-size receive buffer, and where
    /// possible each reduced fragment also published to all others as soon
    /// as it is folded (the first half of a reduce-scatter + allgather
    /// Allreduce, and the fills of its second: see `reduce_scatter`'s
    /// return value).
    SlicePlace,
}

/// `red.own`: the whole input (p slices); `red.rbuf`: the receive buffer;
/// `counts[r]`: elements of slice r.
///
/// With `Result::SlicePlace`, returns the operation and the number of
/// reduce-scatter positions when the reduced fragments were published:
/// fragment k of slice r then sits at position `positions + k` of queue r.
/// That needs every writer's reduce-scatter fragments published before any
/// of its reduced ones (a reader acknowledges a writer's fragments in the
/// order they were published), so it is done only when a queue holds the
/// whole reduce-scatter (reads then start after the last write); otherwise
/// None, with the result in place all the same.
pub fn reduce_scatter(
    sh: &mut Shared,
    red: &Reduction,
    counts: &[usize],
    result: Result,
) -> Option<(u64, usize)> {
    let cut = sh.cut(red.layout.span(red.layout.count));
    let (me, p, f) = (sh.me, sh.p, cut.size);
    let slice = |r: usize| ReduceLayout {
        count: counts[r],
        ..red.layout
    };
    // Our slice's first element and first position, and the totals: sums
    // over the slices, without a table (a small call allocates nothing).
    let (mut first_me, mut base_me, mut elements, mut positions) = (0, 0, 0, 0);
    for (r, &count) in counts.iter().enumerate() {
        if r == me {
            (first_me, base_me) = (elements, positions);
        }
        elements += count;
        positions += slice(r).fragments(f);
    }
    // In place, a result at the buffer start overwrites input others still
    // need: work from a private copy.  (At the slice's place a result only
    // overwrites our own slice's input, fragment by fragment after reading it.)
    let copy: Vec<u8>;
    let own = if red.in_place && result == Result::BufferStart {
        let span = red.layout.span(elements);
        // SAFETY: the receive buffer holds the whole input in place.
        copy = unsafe { std::slice::from_raw_parts(red.own, span) }.to_vec();
        copy.as_ptr()
    } else {
        red.own
    };
    let op = sh.next_op();
    let lag = cut.lag(sh.queues.layout().s, positions);
    // Reduced fragments go out as they are folded only when every write of
    // ours precedes every fold (the reads' lag covers the whole call).
    let shares = result == Result::SlicePlace && lag == positions;
    let mine = slice(me);
    // Slice r, its fragment i, and its first element, as the writing goes.
    let (mut r, mut i, mut first_r) = (0usize, 0usize, 0usize);
    for step in 0..positions + lag {
        if step < positions {
            while i >= slice(r).fragments(f) {
                first_r += counts[r];
                r += 1;
                i = 0;
            }
            if r != me {
                let (_, _, offset, len) = slice(r).fragment(i, f);
                let pos = cut.pos(op, step);
                // SAFETY: the fragment lies within the input.
                unsafe {
                    let src = own.add(first_r * red.layout.extent + offset);
                    sh.send_bytes(src, len, cut.bytes, pos, Readers::One(r));
                }
            }
            i += 1;
        }
        if step >= base_me + lag && step - lag - base_me < mine.fragments(f) {
            let k = step - lag - base_me;
            let (_, n, offset, len) = mine.fragment(k, f);
            let pos = cut.pos(op, base_me + k);
            // SAFETY (block): buffers hold the slice; scratch holds a fragment;
            // a reserved slot holds one.
            unsafe {
                let mine_in = own.add(first_me * red.layout.extent + offset);
                let out = match result {
                    Result::BufferStart => red.rbuf.add(offset),
                    Result::SlicePlace => red.rbuf.add(first_me * red.layout.extent + offset),
                };
                let piece = Piece { pos, n, len };
                // The fold must not write where it still reads our input.
                if red.layout.dense() && !std::ptr::eq(out, mine_in) {
                    fold_ranks(sh, 0..p, mine_in, out, piece, red);
                } else {
                    let acc = sh.scratch.ptr();
                    fold_ranks(sh, 0..p, mine_in, acc, piece, red);
                    red.layout.copy_to_user(out, acc, n);
                }
                if shares {
                    // The allgather's fill of this fragment, while its lines
                    // are still in our cache.
                    let at = cut.pos(op, positions + k);
                    sh.send_bytes(out, len, cut.bytes, at, Readers::AllOthers);
                }
            }
        }
    }
    shares.then_some((op, positions))
}
