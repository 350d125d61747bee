//! The pair buffer of a two-process channel: two halves that the two
//! processes take in turns to exchange blocks (`coll::pair`: Allgather(v),
//! Alltoall, Allreduce and Reduce on two processes, blocks of at most one
//! half that do not go by single copy), and that a Bcast, a Gather(v) or a
//! larger Reduce takes as one ring (`stream`).
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
//! Streams.  A one-way stream (`stream`: an np=2 Bcast, or the non-root's
//! block of an np=2 Gather(v) or its vector of an np=2 Reduce, the
//! stream's root then being the non-root) uses the same memory as a ring
//! of chunks, 1 MiB at the default size: small enough that the lines its
//! root writes come round while its own cache still holds them, which the
//! queues' ring of two L2 caches is not (np=2, a probe without MPI: 256
//! KiB / 1 MiB in 24.0 / 88 µs through a 1 MiB ring, 28.0 / 104 through 4
//! MiB; the Bcast through this ring 1-4 MiB in 0.75-0.87x the queues'
//! time, `docs/benchmark/2026-12-01-c-pair-bcast/`; the Gather 256 KiB-1
//! MiB in 0.81-0.91x, `docs/benchmark/2026-12-01-e-pair-gather/`).  Each
//! process has a stream line that only it writes: a running count of
//! ticks, which both processes advance alike by one more than the
//! chunks of every stream.  In a stream that starts at `base`, the root
//! stores base + 2 + c after writing chunk c (Release), and the reader
//! waits for it (Acquire) before reading the chunk; the reader stores
//! base + 1 on entry and base + 2 + c after reading chunk c (Release:
//! its reads happen before the root, seeing it (Acquire), rewrites the
//! slot).  Both processes keep, per slot of the ring, who reads what it
//! holds and the tick that reader stores once it has (`SlotRead`): a root
//! writes a slot only once that reader's line has reached it (at once
//! when the reader was itself).  After an exchange the half the root
//! filled in it may still be being read by the other, whose entry tick
//! says it has done so.  The root returns without waiting for the reader.
//!
//! Where a stream starts.  One of `ROTATING_BELOW_BYTES` or more starts in
//! the half the root would fill next in an exchange, the one it read last,
//! after waiting until the reader has read every chunk of the last stream
//! (`settle`).  A shorter one starts where the last stream ended, so that
//! consecutive short streams go round the whole ring instead of rewriting,
//! call after call, the lines the reader has just read; the root then
//! waits only for the slots it comes round to.  An exchange always waits
//! for the reader of the last stream (`settle`): it fills from a half's
//! first byte, wherever streams left off.
//!
//! Cache lines: the two turn lines and the two stream lines are each two
//! lines apart (the adjacent-line prefetcher fetches aligned pairs); each
//! is written by one process at a time and polled by the other.  The
//! halves are page aligned.  One owner: the channel (`Shared::pair`),
//! whose calls are serialized as MPI requires of a communicator's
//! collectives.

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
    /// Each process's stream line (`stream`).
    streams: [*const AtomicU64; 2],
    /// Ticks of the streams so far: one more than the chunks of each.
    ticks: u64,
    /// Whether we were the root of the last stream and have not yet seen
    /// the other read all of it: its stream line then reaches `ticks`.
    owed: bool,
    /// Whether the halves' last use was a stream, not an exchange.
    after_stream: bool,
    /// The ring's slot after the last stream's last chunk: where the next
    /// stream shorter than `ROTATING_BELOW_BYTES` starts.
    rotor: usize,
    /// For each slot of the ring, who must read what it holds before a
    /// root may write it again (see the module's docs).  Both processes
    /// keep it alike, since either may be the next root.
    slot_reads: Vec<SlotRead>,
    /// Whether an exchange or a stream ran since `take_used` last looked:
    /// the call that made it counts for MPI_T `coll_sharm_<op>_pair_buffer`.
    used: bool,
}

/// Who reads what a ring slot holds, and the tick that reader's stream
/// line reaches once it has (`Pair::slot_reads`).
#[derive(Clone, Copy, Default)]
struct SlotRead {
    reader: usize,
    tick: u64,
}

/// Bytes of a stream's chunk (`Pair::stream`): the fragment the queues
/// move large streams in (`channel::WIDE_FRAGMENT`).
const CHUNK: usize = 32 * 1024;

/// Streams shorter than this start where the last stream ended; longer
/// ones in the root's half of the next exchange (see the module's docs).
/// np=2, Bcasts, fresh data, paired in one launch (`bench/paired_ab.c`,
/// 2026-12-01): started, as the longer ones, in the same half call after
/// call, 32-128 KiB streams took 1.21-1.35x the queues' time; going round
/// the ring 0.78-0.83x, and after an exchange in every call (a 4 KiB
/// Allreduce before each Bcast) 0.81-0.92x.  At 256 KiB going round took
/// 1.32-1.38x the time of the same half; at 1 MiB, a whole ring, the
/// start makes no difference.
pub const ROTATING_BELOW_BYTES: usize = 256 * 1024;

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
            streams: [0, 1].map(|r| at(layout.pair_stream_line(r)) as *const AtomicU64),
            ticks: 0,
            owed: false,
            after_stream: false,
            rotor: 0,
            slot_reads: vec![
                SlotRead::default();
                2 * (layout.pair_half / CHUNK.min(layout.pair_half))
            ],
            used: false,
        })
    }

    /// Whether an exchange or a stream ran since the last look; clears it.
    pub fn take_used(&mut self) -> bool {
        std::mem::take(&mut self.used)
    }

    /// Bytes of each half: the largest block an exchange moves.
    pub fn half(&self) -> usize {
        self.half
    }

    /// Bytes of a stream's chunk (`stream`): every chunk but a stream's
    /// last holds exactly this many, at offsets that are multiples of it.
    pub fn chunk(&self) -> usize {
        CHUNK.min(self.half)
    }

    /// One exchange: `fill` writes our block into our half (given its
    /// first byte), `between` runs while the other process may still be
    /// filling its half, and `read` takes the other's block (given its
    /// half's first byte) once it is there.  Our half is not ours to read
    /// once filled: the other may fill it again as soon as it has read it
    /// (its next exchange waits for nothing before its fill), so `read`
    /// gets only theirs.  `read` may also write that half: from the other's
    /// turn on it is ours alone, the half we fill in our next exchange, and
    /// the other next touches it when it reads that fill (an np=2 Reduce's
    /// non-root leaves its reduced slice there for the root,
    /// `coll::pair::reduce_exchange`).  Either callback may do nothing:
    /// the turns are taken all the same.  Both processes must call it for
    /// the same calls (see the module's docs).
    ///
    /// # Safety
    /// `fill` writes at most `half()` bytes from its pointer and `read`
    /// reads and writes at most `half()` bytes from its.
    pub unsafe fn exchange(
        &mut self,
        me: usize,
        waiter: &Waiter,
        fill: impl FnOnce(*mut u8),
        between: impl FnOnce(),
        read: impl FnOnce(*mut u8),
    ) {
        self.settle(me, waiter);
        self.after_stream = false;
        self.used = true;
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

    /// Waits, after a stream we were the root of, until the other process
    /// has read all of it: the halves are about to be written again.
    fn settle(&mut self, me: usize, waiter: &Waiter) {
        if !self.owed {
            return;
        }
        // The reader's last tick of that stream is the streams' running
        // count: no stream has started since.
        let (target, theirs) = (self.ticks, self.stream_line(1 - me));
        // Acquire: its reads of the stream happen before our next writes.
        waiter.until(|| theirs.load(Ordering::Acquire) >= target);
        self.owed = false;
    }

    fn stream_line(&self, r: usize) -> &AtomicU64 {
        // SAFETY: the stream lines live as long as the mapping (`new`).
        unsafe { &*self.streams[r] }
    }

    /// One stream of `bytes` bytes from `root` to the other process, in
    /// chunks of `CHUNK` bytes through the halves taken as one ring (see
    /// the module's docs).  `chunk(offset, at, len)` is called for each
    /// chunk of the stream, `at` being its place in the ring: the root
    /// writes bytes `[offset, offset + len)` of its message there, the
    /// other reads them from there into its own.  Both processes must call
    /// it for the same calls, as `exchange`.
    ///
    /// # Safety
    /// `chunk` touches at most `len` bytes at `at`, writing them only at
    /// the root.
    pub unsafe fn stream(
        &mut self,
        me: usize,
        root: usize,
        waiter: &Waiter,
        bytes: usize,
        mut chunk: impl FnMut(usize, *mut u8, usize),
    ) {
        self.used = true;
        let size = self.chunk();
        let per_half = self.half / size;
        let ring = 2 * per_half;
        let chunks = bytes.div_ceil(size);
        let rotating = bytes < ROTATING_BELOW_BYTES;
        if !rotating {
            self.settle(me, waiter);
        }
        let base = self.ticks;
        self.ticks += chunks as u64 + 1;
        let reader = 1 - root;
        // The root's half of the next exchange, which the other read last
        // time (and, after an exchange, no longer reads).
        let own_half = ((root as u64 + self.exchanges) % 2) as usize * per_half;
        if !self.after_stream {
            // The other half the root filled in the last exchange (if any):
            // the other reads it until it enters this stream.
            let filled = per_half - own_half;
            for read in &mut self.slot_reads[filled..filled + per_half] {
                *read = SlotRead {
                    reader,
                    tick: base + 1,
                };
            }
        }
        let first = if rotating { self.rotor } else { own_half };
        // SAFETY: the stream lines live as long as the mapping (`new`);
        // taken apart from `self`, whose slot table the loop updates.
        let (ours, theirs) = unsafe { (&*self.streams[me], &*self.streams[1 - me]) };
        if me != root {
            // Release: our last exchange's reads happen before the root
            // enters the half they read.
            ours.store(base + 1, Ordering::Release);
        }
        for c in 0..chunks {
            let slot = (first + c) % ring;
            // SAFETY: `slot` < ring, so the chunk lies within its half.
            let at = unsafe { self.halves[slot / per_half].add(slot % per_half * size) };
            let (offset, tick) = (c * size, base + 2 + c as u64);
            let len = size.min(bytes - offset);
            if me != root {
                waiter.until(|| theirs.load(Ordering::Acquire) >= tick);
            } else {
                // What the slot held has been read: by us (done), or by
                // the other once its line says so (Acquire: its reads
                // happen before our writes).
                let held = self.slot_reads[slot];
                if held.reader != me {
                    waiter.until(|| theirs.load(Ordering::Acquire) >= held.tick);
                }
            }
            self.slot_reads[slot] = SlotRead { reader, tick };
            chunk(offset, at, len);
            // Release: the root's writes of the chunk, or the reader's
            // reads of it, happen before the other sees this tick.
            ours.store(tick, Ordering::Release);
        }
        // The reader's last store is base + 1 + chunks, now `ticks`.
        // A reader that owed the other its last stream no longer does: the
        // other read all of it before writing this one.
        self.owed = me == root;
        self.after_stream = true;
        self.rotor = (first + chunks) % ring;
    }
}
