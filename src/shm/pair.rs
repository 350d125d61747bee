//! The pair buffer of a two-process channel: two halves that the two
//! processes take in turns to exchange blocks (`coll::pair`: Allgather(v),
//! Alltoall and the small Allreduce on two processes, blocks of at most one
//! half that do not go by single copy).
//!
//! Why turns.  Through the queues every line of an exchanged block crosses
//! between the cores twice a call: the writer first takes back the slot
//! lines its reader pulled into its own cache the last time round (or
//! fetches them from memory, when the ring outgrew the cache since), and
//! the reader then pulls the new data across.  Here each process writes
//! the half it read in its previous exchange: those lines are already in
//! its own cache, so its fill is a local copy, and only the reader's pull
//! crosses.  Intel MPI 2021 moves an np=2 Allgather that way (its
//! recursive doubling's send cell is the buffer it received into last
//! time; `gdb` on its libmpi, `docs/benchmark/2026-11-30-h-pair/`).  A probe
//! of the copies alone (two processes, fresh data, np=2 Allgather) ran
//! 32 KiB / 256 KiB in 4.8 / 31.2 µs with turns against 8.1 / 39.9 with
//! one region reused by each writer and 6.4 / 40.7 through a 4 MiB ring.
//!
//! The turns.  Exchange k of a channel (from 0; both processes count alike,
//! since they make the same collective calls in the same order and decide
//! alike from sizes both know whether a call exchanges here): process `me`
//! fills half (me + k) mod 2, stores k + 1 into that half's turn line
//! (Release), waits until the other half's turn line holds more than k
//! (Acquire), and copies the other half out.  Nothing is acknowledged: a
//! half's accesses alternate between a fill by one process and a read by
//! the other, and the reader of exchange k is the writer of exchange k + 1.
//! So each access follows the one before it either in one process's
//! program order (a process reads h, then fills h next time) or through
//! the turn line's Release/Acquire pair (a fill, then the other's read).
//! Only the other process reads a half once it is filled: its filler does
//! not look at it again, since the other fills it in its next exchange
//! without waiting for anything.
//! A turn line holds the number of the last exchange that filled its half,
//! plus one, written by the two processes alternately and only ever
//! increased: the reader of exchange k waits for k + 1, and k + 2 would be
//! its own next store.
//!
//! Cache lines: the two turn lines are two lines apart (the adjacent-line
//! prefetcher fetches aligned pairs); each is written by one process at a
//! time and polled by the other.  The halves are page aligned.  One owner:
//! the channel (`Shared::pair`), whose calls are serialized as MPI requires
//! of a communicator's collectives.

use crate::shm::layout::Layout;
use crate::shm::wait::Waiter;
use std::sync::atomic::{AtomicU64, Ordering};

/// This process's end of a channel's pair buffer.
pub struct Pair {
    /// The turn line of each half (in the mapping, which outlives us: the
    /// channel owns both).
    turns: [*const AtomicU64; 2],
    /// Each half's first byte.
    halves: [*mut u8; 2],
    /// Bytes of each half.
    half: usize,
    /// Exchanges this channel made here so far.
    exchanges: u64,
}

impl Pair {
    /// The pair buffer of the segment mapped at `base` with `layout`; None
    /// when the layout has none (more than two processes, or
    /// `coll_sharm_pair_buffer_size` 0).
    ///
    /// # Safety
    /// `base` is the start of a mapping of `layout.total` bytes that stays
    /// mapped while the result is used.
    pub unsafe fn new(base: *mut u8, layout: &Layout) -> Option<Pair> {
        if layout.pair_half == 0 {
            return None;
        }
        // SAFETY (all offsets): `Layout::with_pair` placed the turn lines
        // and the halves inside the mapping, the lines 8-byte aligned.
        let at = |offset: usize| unsafe { base.add(offset) };
        Some(Pair {
            turns: [0, 1].map(|h| at(layout.pair_turn_line(h)) as *const AtomicU64),
            halves: [0, 1].map(|h| at(layout.pair_half_data(h))),
            half: layout.pair_half,
            exchanges: 0,
        })
    }

    /// Bytes of each half: the largest block an exchange moves.
    pub fn half(&self) -> usize {
        self.half
    }

    /// One exchange: `fill` writes our block into our half (given its
    /// first byte), `between` runs while the other process may still be
    /// filling its half, and `read` takes the other's block (given its
    /// half's first byte) once it is there.  Our half is not ours to read
    /// once filled: the other may fill it again as soon as it has read it
    /// (its next exchange waits for nothing before its fill), so `read`
    /// gets only theirs.  Both processes must call it for
    /// the same calls (see the module's docs).
    ///
    /// # Safety
    /// `fill` writes at most `half()` bytes from its pointer and `read`
    /// reads at most `half()` bytes from its.
    pub unsafe fn exchange(
        &mut self,
        me: usize,
        waiter: &Waiter,
        fill: impl FnOnce(*mut u8),
        between: impl FnOnce(),
        read: impl FnOnce(*const u8),
    ) {
        let k = self.exchanges;
        self.exchanges += 1;
        let ours = ((me as u64 + k) % 2) as usize;
        let theirs = 1 - ours;
        fill(self.halves[ours]);
        // SAFETY: the turn lines live as long as the mapping (`new`).
        let (our_turn, their_turn) = unsafe { (&*self.turns[ours], &*self.turns[theirs]) };
        // Release: our fill is visible to whoever sees k + 1.
        our_turn.store(k + 1, Ordering::Release);
        between();
        // Acquire: the other's fill of exchange k happened before its store
        // of k + 1, so it is all there once we see it.
        waiter.until(|| their_turn.load(Ordering::Acquire) > k);
        read(self.halves[theirs]);
    }
}
