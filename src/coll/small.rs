//! Blocks that travel with their slot headers: 1 to `PREFETCH_MAX_BYTES`
//! bytes in one byte range, one fragment, not by single copy.  Gather,
//! Scatter, Allgather and Alltoall move such blocks with a plain copy into
//! a reserved slot and a plain copy out of a received one, at the positions
//! their general paths would use, and leave out the stream machinery
//! around them (payloads, cuts per step, stream lists, the call's landing,
//! single-copy offers).  A process whose datatypes send it down the general
//! path still meets the others: the queue sees the same fragments at the
//! same positions.  On two processes the pair buffer takes the Allgathers'
//! and Alltoalls' blocks from `coll::pair::MIN_BYTES` (33 bytes) first,
//! decided from sizes alone on every path, so only smaller ones come here.
//!
//! Why: at 8 bytes the machinery was most of the call.  np=2,
//! `bench/paired_ab.c` (fresh data, 5 launches, 2026-11-26), this path over
//! the general one: Allgather 8 / 64 / 256 / 512 B 0.78 / 0.84 / 0.80 /
//! 0.76, Alltoall 0.87 / 0.88 / 0.91 / 0.84.

use std::sync::atomic::{AtomicBool, Ordering};

use crate::ompi::payload::{RootSide, TypedBuf};
use crate::shm::channel::Shared;
use crate::shm::queue::{Pos, Readers, PREFETCH_MAX_BYTES};

/// Which single-copy threshold a block's stream would follow on its
/// collective's general path: a block travels with its header only where
/// that path would queue it, since both ends of a stream decide from its
/// size alone.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    /// Allgather(v), Alltoall(v): `Shared::single_copy_exchange`.
    Exchange,
    /// Gather(v): written by its sender (`single_copy_push`) or pulled by
    /// the root (`single_copy`).
    Gather,
    /// Scatter(v): `single_copy_scatter`.
    Scatter,
}

/// Whether `block` of a `kind` collective travels with its slot header: 1
/// to `PREFETCH_MAX_BYTES` bytes in one byte range, one fragment (a
/// configured fragment may be smaller than the limit, and one fragment is
/// what keeps the positions those of the general path), and not by single
/// copy.  Uses the call's cut: `Shared::choose` or `untuned` came first.
pub(crate) fn travels_with_header(sh: &Shared, block: &TypedBuf, kind: Kind) -> bool {
    let n = block.bytes();
    let single = match kind {
        Kind::Exchange => sh.single_copy_exchange(n),
        Kind::Gather => sh.single_copy(n) || sh.single_copy_push(n),
        Kind::Scatter => sh.single_copy_scatter(n),
    };
    (1..=PREFETCH_MAX_BYTES).contains(&n)
        && sh.cut(n).count() == 1
        && !single
        && block.byte_range().is_some()
}

/// Whether every block of `side` but `except`'s travels with its slot
/// header.  The blocks of a collective that is not a v-variant differ only
/// in where they are, so one answers for all.
pub(crate) fn all_travel(sh: &Shared, side: &RootSide, except: Option<usize>, kind: Kind) -> bool {
    match side.counts {
        None => travels_with_header(sh, &side.block(0), kind),
        Some(_) => (0..sh.p)
            .filter(|&r| Some(r) != except)
            .all(|r| travels_with_header(sh, &side.block(r), kind)),
    }
}

/// Publishes `block` (one that `travels_with_header`) as position `pos` of
/// our queue for `readers`.
pub(crate) fn publish(sh: &mut Shared, block: &TypedBuf, pos: Pos, readers: Readers) {
    let (src, len) = (range(block), block.bytes());
    let slot = sh.writer.reserve(&sh.queues, &sh.waiter, pos, len);
    // SAFETY: `slot` is our reserved slot of >= len bytes; `src` holds the
    // block's `len` bytes.
    unsafe { std::ptr::copy_nonoverlapping(src, slot, len) };
    sh.writer.publish(&sh.queues, pos, len, readers);
}

/// Copies position `pos` of `from`'s queue into `block` (one that
/// `travels_with_header`), no more than the block holds, and releases it.
pub(crate) fn take(sh: &mut Shared, from: usize, pos: Pos, block: &TypedBuf) {
    let (dst, n) = (range(block), block.bytes());
    let frag = sh.queues.receive_expecting(&sh.waiter, from, pos, n);
    // SAFETY: the fragment is valid until released; `dst` holds the block's
    // `n` bytes, and no more than that is copied.
    unsafe { std::ptr::copy_nonoverlapping(frag.data, dst, frag.len.min(n)) };
    sh.queues.release(sh.me, from, frag);
}

/// Where a block that `travels_with_header` starts: checked before its
/// call took an operation number, so this cannot fail.
fn range(block: &TypedBuf) -> *mut u8 {
    block.byte_range().expect("checked by travels_with_header")
}

/// A fact a process says once, at verbose 100, that the tests look for
/// (which path a call took).  Checked with a plain load first: a locked
/// swap on every call would cost each call some 20 cycles.
pub(crate) struct SayOnce(AtomicBool);

impl SayOnce {
    pub(crate) const fn new() -> SayOnce {
        SayOnce(AtomicBool::new(false))
    }

    /// True the first time only (per process).
    pub(crate) fn first(&self) -> bool {
        !self.0.load(Ordering::Relaxed) && !self.0.swap(true, Ordering::Relaxed)
    }
}
