//! What every reduction shares: one call's buffers and semantics
//! (`Reduction`), and folding one fragment of several processes in MPI's
//! canonical order (`fold_ranks`).  Every combination of two operands goes
//! through `Reduction::fold`, the one place that picks the reduction kernel.

use crate::ompi::dtype::ReduceLayout;
use crate::ompi::ffi::{Dtype, Op};
use crate::shm::channel::Shared;
use crate::shm::queue::Pos;

/// One reduction call's buffers and semantics.
pub struct Reduction {
    /// This process's contribution (the receive buffer when MPI_IN_PLACE).
    pub own: *const u8,
    /// The receive buffer (significant at the root / everywhere for Allreduce).
    pub rbuf: *mut u8,
    pub in_place: bool,
    pub layout: ReduceLayout,
    pub dtype: Dtype,
    pub op: Op,
    pub commutative: bool,
}

impl Reduction {
    /// `acc[i] = src[i] op acc[i]` for `n` elements (Open MPI's operand order:
    /// the source is the left operand).
    ///
    /// # Safety
    /// `src` and `acc` must address `n` elements laid out by `self.layout`.
    pub unsafe fn fold(&self, src: *const u8, acc: *mut u8, n: usize) {
        self.op.reduce(src, acc, n, self.dtype)
    }
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
    let mut first = true;
    for w in ranks.rev() {
        let frag = (w != sh.me).then(|| sh.queues.receive(&sh.waiter, w, piece.pos));
        let src = frag.map_or(own, |f| f.data);
        if first {
            std::ptr::copy_nonoverlapping(src, acc, piece.len);
            first = false;
        } else {
            red.fold(src, acc, piece.n);
        }
        if let Some(f) = frag {
            sh.queues.release(sh.me, w, f);
        }
    }
}
