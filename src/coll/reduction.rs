//! What every reduction shares: one call's buffers and semantics
//! (`Reduction`), and folding one fragment of several processes in MPI's
//! canonical order (`fold_ranks`).  Every combination of two operands goes
//! through `Reduction::fold`, the one place that picks the reduction kernel.

use crate::kernels::copy;
use crate::ompi::combine::Combiner;
use crate::ompi::dtype::ReduceLayout;
use crate::shm::channel::Shared;
use crate::shm::queue::{Incoming, Pos};

/// One reduction call's buffers and semantics.
pub struct Reduction {
    /// This process's contribution (the receive buffer when MPI_IN_PLACE).
    pub own: *const u8,
    /// The receive buffer (significant at the root / everywhere for Allreduce).
    pub rbuf: *mut u8,
    pub in_place: bool,
    pub layout: ReduceLayout,
    /// How two operands are combined (sharm's kernel or Open MPI's).
    pub comb: Combiner,
    pub commutative: bool,
}

impl Reduction {
    /// `acc[i] = src[i] op acc[i]` for `n` elements (Open MPI's operand order:
    /// the source is the left operand).
    ///
    /// # Safety
    /// `src` and `acc` must address `n` elements laid out by `self.layout`.
    pub unsafe fn fold(&self, src: *const u8, acc: *mut u8, n: usize) {
        self.comb.fold(src, acc, n)
    }

    /// `out = a op b` for `n` elements of `len` bytes in one pass where
    /// sharm's kernel serves (a copy and a fold otherwise).
    ///
    /// # Safety
    /// As `Combiner::fused`.
    pub unsafe fn fused(&self, a: *const u8, b: *const u8, out: *mut u8, n: usize, len: usize) {
        self.comb.fused(a, b, out, n, len)
    }
}

/// Process `r`'s slice when `count` elements are split among `p`
/// processes, as (first element, elements): elements
/// [r·count/p, (r+1)·count/p).  Every route that has each process reduce
/// one slice splits so (`allreduce::reduce_scatter_allgather`,
/// `single_copy_reduce`, `pair::reduce_scatter_allgather`).
pub(crate) fn slice(r: usize, p: usize, count: usize) -> (usize, usize) {
    let (first, end) = (r * count / p, (r + 1) * count / p);
    (first, end - first)
}

/// One fragment of a reduction: its position and its `n` elements' `len` bytes.
#[derive(Clone, Copy)]
pub(crate) struct Piece {
    pub pos: Pos,
    pub n: usize,
    pub len: usize,
}

/// Folds fragment `piece` of processes `ranks` (ascending) into `acc` in
/// canonical order: `acc = x_first op ... op x_last`, our own part read at
/// `own`, the others from their queues.  `acc` must not alias `own`.
///
/// # Safety
/// `own` and `acc` must address `piece.len` bytes holding `piece.n` elements.
pub(crate) unsafe fn fold_ranks(
    sh: &mut Shared,
    ranks: std::ops::Range<usize>,
    own: *const u8,
    acc: *mut u8,
    piece: Piece,
    red: &Reduction,
) {
    // The highest rank's part stays pending (its fragment not yet
    // acknowledged) until the next one arrives: the two meet in one fused
    // pass, `acc = x_w op x_last`, instead of a copy followed by a fold.
    // Acknowledging late only delays that writer's reuse of this one slot.
    let mut pending: Option<(usize, *const u8, Option<Incoming>)> = None;
    let mut started = false;
    for w in ranks.rev() {
        let frag = (w != sh.me).then(|| {
            sh.queues
                .receive_expecting(&sh.waiter, w, piece.pos, piece.len)
        });
        if let Some(f) = &frag {
            sh.heard(w, f);
        }
        let src = frag.map_or(own, |f| f.data);
        if !started && pending.is_none() {
            pending = Some((w, src, frag));
            continue;
        }
        match pending.take() {
            Some((last, last_src, last_frag)) => {
                red.fused(src, last_src, acc, piece.n, piece.len);
                if let Some(f) = last_frag {
                    sh.queues.release(sh.me, last, f);
                }
                started = true;
            }
            None => red.fold(src, acc, piece.n),
        }
        if let Some(f) = frag {
            sh.queues.release(sh.me, w, f);
        }
    }
    // A single rank: its part is the result.
    if let Some((last, last_src, last_frag)) = pending {
        copy::copy(acc, last_src, piece.len);
        if let Some(f) = last_frag {
            sh.queues.release(sh.me, last, f);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::slice;

    /// The slices of every split tile the elements in rank order, and two
    /// processes split at `count / 2`.
    #[test]
    fn slices_tile_the_elements_in_rank_order() {
        for p in 1..=9 {
            for count in [0, 1, 2, 7, 70_001] {
                let mut next = 0;
                for r in 0..p {
                    let (first, n) = slice(r, p, count);
                    assert_eq!(first, next, "p={p} count={count} r={r}");
                    next += n;
                }
                assert_eq!(next, count, "p={p} count={count}");
            }
        }
        assert_eq!(slice(0, 2, 7), (0, 3));
        assert_eq!(slice(1, 2, 7), (3, 4));
    }
}
