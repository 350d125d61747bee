//! The queue protocol: p single-writer cyclic queues of s slots.
//!
//! # Who writes what
//! * Process `w` is the only writer of queue `w`: its slot headers and data.
//! * Reader `r` is the only writer of ack line `r` of each queue it reads:
//!   its acknowledgement and, advisory, its report of late headers
//!   (`AckLine::far_at`) and the time of its last large acknowledgement
//!   (`AckLine::released`; both for `shm::stores`).
//!
//! # Positions instead of per-queue counters
//! Every process numbers the collective operations of a communicator the same
//! way (`op` = 1, 2, 3, ...: MPI requires all processes to call collectives in
//! the same order).  Fragment `index` of operation `op` goes to position
//! `start(op) + index` of the writer's queue: slot `position mod s`, lap
//! `position / s`.  A reader therefore knows where to look without knowing how
//! much the writer wrote in earlier operations, which keeps every process's
//! view in lock-step even for operations whose fragment counts only some
//! processes know (the v-variants).  A large stream may use fragments `width`
//! slots wide (a divisor of s): positions then count groups of `width` slots
//! (`Pos::spanning`), and a writer reuses a group once all readers of each of its
//! slots acknowledged them.
//!
//! # Where an operation starts ([`Placement`])
//! `start(op)` is `op · stride mod places`, with a stride coprime with the
//! number of places, so any `places` consecutive single-fragment operations
//! use distinct slots and a writer can run ahead of slow readers by that
//! many.  Under `Consecutive` the places are the ring's `groups`; under
//! `Spread` a one-slot operation has all s of them, and longer streams a
//! prime number of places as large as they are ([`Places`]).
//! With stride 1 (`Consecutive`), operation op+1 starts one place after op,
//! on the slots op's fragments 1, 2, ... still occupy: the writer's next
//! operation overwrites lines the reader is copying out at that moment, one
//! fragment behind, and every such line crosses between the cores twice.
//! `Spread` starts it about 0.618 of the ring away (the golden ratio keeps
//! the last few operations' starts far apart whatever their sizes).
//! Measured at np=2 (2026-11-25, alternated launches): Bcast and Reduce of
//! 64/128/192 KiB took 0.77/0.65/0.62 and 0.77/0.67/0.64 of the time,
//! Allreduce 32-192 KiB 0.77-0.87, small messages and streams from 256 KiB
//! (which wrap the ring either way) the same.  On a node with more processes
//! than cores, `Consecutive` stays: there a Scatter root that must wait for
//! its first reader before it may write the second block yields its core to
//! that reader, and Spread measured slower (np=4 on 2 cores: Scatter 64/128
//! KiB 1.5/1.6x, Gather 16 KiB 1.3x).
//!
//! Under `Spread` the places are as large as the operation's stream
//! ([`Pos::span`]: the power-of-two room that holds it, at most half the
//! ring), not as its fragments: a 256 KiB stream of 32 KiB fragments starts
//! at one of s/32 places of 256 KiB, and operations of one size visit every
//! place before they come back to one, so each slot is rewritten only after
//! the whole ring has been written since (a ring of two L2s: its reader's
//! copies have left the reader's L2).  With places of one fragment the
//! golden stride let a stream overlap one written a few operations before,
//! and the writer refilled lines its reader still held.  Measured at np=2
//! (2026-11-26, 10 alternated launches per build, medians of the launches
//! with the cores near): 256 KiB Allgather 28.5 -> 22.9 us, Alltoall 33.9
//! -> 22.1, Allreduce 28.6 -> 23.7, Bcast 13.2 -> 8.8, Gather 18.9 -> 13.8,
//! Alltoall 128 KiB 18.7 -> 11.3; with the cores far most cells from 32
//! KiB to 1 MiB 1.1-2.4x faster.  Some cells were slower (near: Scatter 128
//! KiB 10.7 -> 14.8, Reduce 1 MiB 40.2 -> 47.1, Allgather 4 MiB 1305 ->
//! 1451; far: Alltoall 1 MiB 149 -> 161), and a second run of 10 launches
//! at 128 KiB-4 MiB (Scatter, Reduce, Bcast, Allgather) found no direction
//! in either placement.  `Consecutive` keeps places of one fragment (np=4
//! on 2 cores, 4 launches: 1 MiB Allgather, Alltoall, Gather and Scatter
//! ran 1.2-1.3x slower with spans).  Measured later one launch against the
//! other (`bench/paired_ab.c`, fresh data), operations that take two
//! operation numbers per call lose: Scatter 64/128 KiB and Gather 64 KiB
//! took 1.09x the time, Allreduce 64/128 KiB 1.18/1.07x.  An even step
//! visits only half of a power-of-two number of places, which halves their
//! reuse distance; [`Places`] therefore uses a prime number of them.
//!
//! # Publishing (one write serves all readers)
//! The writer fills the slot, stores `len` and `wseq` (relaxed), then `lap`
//! and `op` with Release.  A reader waits until it loads (Acquire) both
//! `op == its op` and `lap == its lap`.  Whichever of the two Release stores
//! its Acquire loads read from, that store was made after the data, `len` and
//! `wseq`, so they are visible.  The pair is unique: `op` never repeats (u64),
//! and within one operation each lap of a slot holds one fragment.  A slot
//! cannot move past the content a reader waits for, because the writer does
//! not reuse a slot before all its readers acknowledged it (next paragraph).
//! Payloads of at most [`INLINE_BYTES`] ride in the header's cache line, so a
//! small message costs the reader one line transfer.
//!
//! # Acknowledging (one monotone counter per reader and queue)
//! `wseq` numbers the writer's publications 1, 2, 3, ...  A reader consumes a
//! queue's fragments in publication order, so after copying a fragment out it
//! stores (Release) that fragment's `wseq` into its ack line of the queue.
//! Before reusing a slot the writer waits (Acquire) until every reader of the
//! slot's previous content has an ack value >= that content's `wseq`.  The
//! writer remembers those readers in private memory ([`Writer`]), which is what
//! lets different operations address different reader sets.

use std::cell::UnsafeCell;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

use crate::ompi::stats;
use crate::shm::layout::Layout;
use crate::shm::wait::{Arrival, Waiter};

/// Payload bytes that fit in a slot header's cache line.
pub const INLINE_BYTES: usize = 32;

/// Largest expected fragment whose data lines a waiting reader prefetches.
///
/// Why prefetch at all: a reader that waits for the header and only then
/// reads the data pays two cache-line transfers in a row.  Touching the data
/// lines while polling brings them over together with the header (or right
/// after the writer's stores reach them).  Why only up to 8 lines: measured
/// at np=2 with both variants alternating by operation within one launch,
/// Bcast of 64-512 B took 6-16 % less time, 1 KiB the same, and 2 KiB
/// 6-30 % more (the reader pulls lines back while the writer still fills
/// them, and every such line must be taken from it again).
pub const PREFETCH_MAX_BYTES: usize = 512;

/// Asks for the `len` bytes at `data` to be brought into this core's cache.
///
/// A prefetch is only a hint: it neither faults nor orders anything.  A
/// line fetched before the writer's stores is invalidated by them (the
/// writer cannot store before it owns the line), so whatever is still
/// cached when the header's Acquire load sees the publication is current.
#[inline]
fn prefetch_lines(data: *const u8, len: usize) {
    #[cfg(target_arch = "x86_64")]
    for line in (0..len).step_by(crate::shm::layout::CACHE_LINE) {
        // SAFETY: prefetching has no preconditions and never faults; the
        // address (inside the slot) is not dereferenced.
        unsafe {
            use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
            _mm_prefetch::<_MM_HINT_T0>(data.wrapping_add(line).cast());
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (data, len);
}

/// One slot's control line.  Written by the queue owner only.
#[repr(C, align(64))]
pub struct SlotHeader {
    op: AtomicU64,
    lap: AtomicU64,
    wseq: AtomicU64,
    len: AtomicU32,
    /// Unused: keeps `inline` at offset 32, 8-aligned for a [`Stamp`].
    _padding: u32,
    /// The payload of a fragment of at most [`INLINE_BYTES`].  In one of
    /// [`STAMPED_MIN`] bytes or more from a stamping writer
    /// ([`Writer::new`]), a [`Stamp`]: the writer's clock as it began to
    /// publish and a tag naming the publication.  Plain bytes either way:
    /// the writer stores them before its Release publication and readers
    /// load them after their Acquire load saw it, as the slot's data.
    inline: UnsafeCell<[u8; INLINE_BYTES]>,
}

/// What a stamped header's inline area holds: the writer's clock
/// (`clock_ns`), and its publication number `wseq` xor [`STAMP_TAG`].
///
/// Why a tag rather than a flag: the inline bytes of a published slot may
/// be an earlier publication's (small payloads, or a stamp from before the
/// writer stopped stamping: the parameter is read per process, so a reader
/// under `auto` may read a writer that does not stamp).  The tag names this
/// very publication; stale bytes match it only by a 2^-64 accident, and
/// then cost one wrong sample, never a wrong result (the stamp steers the
/// choice of stores only).
#[repr(C)]
#[derive(Clone, Copy)]
struct Stamp {
    clock_ns: u64,
    tag: u64,
}

/// Xored into a stamp's `wseq` (an arbitrary odd constant).
const STAMP_TAG: u64 = 0x9e37_79b9_7f4a_7c15;

const _: () = assert!(std::mem::size_of::<Stamp>() <= INLINE_BYTES);

/// Fragments of at least this many bytes each carry a stamp (from a
/// stamping writer, `Writer::new`).
pub const STAMPED_MIN: usize = 16 << 10;
/// Shorter fragments, from this many bytes (or the writer's `stamp_from`),
/// carry one in `SHORT_STAMP_EVERY`: they are on the latency path, where a
/// clock read on either side (30 ns each) would show in every call, and
/// shorter ones still are too short to be written non-temporally (the
/// default `coll_sharm_nontemporal_min_size`; below this a fill took too
/// short a time for the writer's own timings too, `stores::TIMED_MIN`).
pub const SHORT_STAMPED_MIN: usize = 4 << 10;
/// One short stamped fragment in this many carries a stamp (as one
/// writer's fill in four was timed when the writer judged short streams by
/// itself, `stores::SAMPLE_EVERY`).
pub const SHORT_STAMP_EVERY: u32 = 4;

/// Stamps header `h` for publication `wseq`, among the publication's own
/// stores to that line, so that the stamp and the header travel together
/// (until 2026-11-27 it was stored earlier, while the fill was marked; the
/// latencies measured were the same either way, `shm::stores::Reads`).
/// Out of line: only large fragments come here, and the publication stays
/// short for the rest.
#[inline(never)]
fn stamp(h: &SlotHeader, wseq: u64) {
    let stamp = Stamp {
        clock_ns: clock_ns(),
        tag: wseq ^ STAMP_TAG,
    };
    // SAFETY: the inline area is 8-aligned (offset 32 of a line) and holds
    // a `Stamp`; a reserved slot's header is its writer's to write until it
    // publishes, and readers read it only after (see the field).
    unsafe { h.inline.get().cast::<Stamp>().write(stamp) };
}

/// `CLOCK_MONOTONIC` in nanoseconds: one clock for every process of the
/// host (the kernel keeps it consistent across cores), read through the
/// vDSO without a system call (30 ns per call here, 2026-11-27).
fn clock_ns() -> u64 {
    let mut t = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `t` is a valid timespec to write; CLOCK_MONOTONIC always
    // exists on Linux.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut t) };
    t.tv_sec as u64 * 1_000_000_000 + t.tv_nsec as u64
}

/// One reader's acknowledgement line for one queue.  Written by that reader only.
#[repr(C, align(64))]
pub struct AckLine {
    consumed: AtomicU64,
    /// Advisory, for the queue's owner: the `wseq` of the latest header
    /// that reached this reader late enough to take the writer's core for
    /// a far one (`shm::stores::Reads`), 0 once headers came early again.
    /// Relaxed both ways: nothing is read on its strength but the
    /// writer's choice of stores, which is right either way.
    far_at: AtomicU64,
    /// Advisory, for the queue's owner: when this reader acknowledged its
    /// last fragment of [`STAMPED_MIN`] bytes or more, as an [`AckStamp`],
    /// stored (Relaxed) just before `consumed`.  A writer that was spinning
    /// on `consumed` when it moved to that very acknowledgement times from
    /// it how long the line took to come across
    /// (`Writer::take_ack_latency`).  One word, so that the time and the
    /// acknowledgement it belongs to are never read torn.
    released: AtomicU64,
}

/// What an ack line's `released` holds: the reader's clock (`clock_ns`)
/// in its low 40 bits' worth of nanoseconds (18 minutes before it wraps;
/// latencies are taken modulo that) above the low 24 bits of the
/// acknowledged `wseq`, which name the acknowledgement the time belongs to.
struct AckStamp;

impl AckStamp {
    const WSEQ_BITS: u32 = 24;
    const WSEQ_MASK: u64 = (1 << Self::WSEQ_BITS) - 1;
    const CLOCK_MASK: u64 = (1 << (64 - Self::WSEQ_BITS)) - 1;

    fn word(clock_ns: u64, wseq: u64) -> u64 {
        (clock_ns << Self::WSEQ_BITS) | (wseq & Self::WSEQ_MASK)
    }

    /// The ns from the stamp `stamp` to `now_ns`, if it names the
    /// acknowledgement `wseq` (at least 1: a stamp a few ns ahead of our
    /// clock reads as the shortest).
    fn latency(stamp: u64, wseq: u64, now_ns: u64) -> Option<u32> {
        if stamp == 0 || stamp & Self::WSEQ_MASK != wseq & Self::WSEQ_MASK {
            return None;
        }
        let then = stamp >> Self::WSEQ_BITS;
        let ns = now_ns.wrapping_sub(then) & Self::CLOCK_MASK;
        // A stamp just ahead of our clock wraps to nearly the whole range.
        let ns = if ns > Self::CLOCK_MASK / 2 { 1 } else { ns };
        Some(ns.clamp(1, u32::MAX as u64) as u32)
    }
}

/// A process's line in the segment's sync area (barrier), written by that
/// process only: `arrive` counts the barriers it (and its subtree) reached,
/// `release` (rank 0's) the barriers everyone may leave.
#[repr(C, align(64))]
pub struct SyncLine {
    pub arrive: AtomicU64,
    pub release: AtomicU64,
}

const _: () = assert!(std::mem::size_of::<SlotHeader>() == crate::shm::layout::CACHE_LINE);
const _: () = assert!(std::mem::size_of::<SyncLine>() == crate::shm::layout::CACHE_LINE);
const _: () = assert!(std::mem::size_of::<AckLine>() == crate::shm::layout::CACHE_LINE);

/// Where a fragment goes: fragment `index` of operation `op`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Pos {
    pub op: u64,
    pub index: u64,
    /// Slots one fragment spans (a divisor of s; 1 for ordinary fragments).
    pub width: usize,
    /// The room the operation's stream takes in the ring, in slots (a
    /// multiple of `width` dividing s; `Shared::cut`): under `Spread`,
    /// operations start only at multiples of it.
    pub span: usize,
}

impl Pos {
    pub fn new(op: u64, index: usize) -> Pos {
        Pos::spanning(op, index, 1, 1)
    }

    /// Fragment `index` of an operation whose fragments span `width`
    /// consecutive slots (large messages: fewer, larger fragments) and
    /// whose stream takes `span` slots (`Shared::cut`).
    pub fn spanning(op: u64, index: usize, width: usize, span: usize) -> Pos {
        Pos {
            op,
            index: index as u64,
            width,
            span,
        }
    }
}

/// Who will read a published fragment.
#[derive(Clone, Copy, Debug)]
pub enum Readers<'a> {
    /// Every process but the writer.
    AllOthers,
    One(usize),
    List(&'a [usize]),
    /// Every process of a higher rank than the given one (a scan's
    /// readers), without building a list per call.
    Above(usize),
}

/// How consecutive operations are laid out in a queue (module docs, "Where
/// an operation starts"); agreed by all processes, like the layout.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Placement {
    /// Operation op+1 starts one place after op.
    Consecutive,
    /// Operation op+1 starts about 0.618 of the ring after op (rings of a
    /// power-of-two number of places; others stay consecutive).
    Spread,
}

/// The places, all multiples of one span, that operations of that span
/// (two slots or more; one-slot operations: `Queues::one_slot_stride`)
/// start at under `Spread` in a ring of `starts` such places (a power of
/// two): the largest prime number of them that fits, and the stride from
/// one operation's start to the next.
///
/// Why a prime: a call that takes k operation numbers (Gather and Scatter
/// take p, Allreduce's reduce-scatter and allgather one each, a loop of two
/// calls two) writes a given queue, with streams of one span, every k-th
/// number.  With a power-of-two number of places an even k meets only
/// starts/gcd(k, starts) of them, and each slot is rewritten after that
/// fraction of the ring (np=2, paired launches: Scatter 64/128 KiB and
/// Gather 64 KiB 1.09x the time of places one fragment wide, Allreduce
/// 64/128 KiB 1.18/1.07x).  With a prime number P of places every step
/// k < P meets all of them, each once in P of its operations.  The ring
/// loses starts - P places: none of 2, one of 4, 8, 32 and 128, 3 of 16
/// and 64.  (No function of the operation number does better
/// with all `starts`: one that gives step 1 a full round on every window
/// of `starts` operations is periodic in `starts`, and step 2 then meets
/// half of the places.  Shifting each later round by one place, tried
/// first, fixed even steps but left step 3 a slot back after 0.3-0.7 of
/// a round.)
///
/// The stride is about 0.618 of the places (the golden ratio keeps the last
/// few operations' starts far apart whatever their sizes), coprime with P
/// because it lies between 0 and P.  Places are computed several times per
/// fragment, so both remainders use a multiplication by a precomputed
/// inverse instead of a division (Lemire's "fastmod"; tens of cycles
/// saved each).
///
/// Measured at np=2 (2026-11-26, `bench/paired_ab.c`, fresh data, 5-6
/// launches per run, new time over old): Scatter 64/128 KiB 0.93/0.91 and
/// 0.80/0.85 in two runs, Gather 64/128 KiB 0.96-0.99, Allreduce 64 KiB
/// 0.95-0.97, Alltoall 64 KiB 0.94-1.03.  Bcast 128 KiB (13 of 16 places)
/// took 1.02-1.07 and Allgather 256 KiB (7 of 8) 1.05-1.10, within what an
/// A/A run of one build spread the same day (Bcast 128 KiB 1.09,
/// Allgather 64 KiB 1.06).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Places {
    count: u32,
    stride: u32,
    /// ceil(2^64 / count): `rem` below.
    inverse: u64,
}

impl Places {
    /// The largest place count a start may use: the largest prime below
    /// 2^16, so that a start times the stride stays within 32 bits.
    const MAX: u32 = 65_521;

    fn new(starts: u64) -> Places {
        let is_prime = |n: u32| {
            n >= 2
                && (2..)
                    .take_while(|d| d * d <= n)
                    .all(|d| !n.is_multiple_of(d))
        };
        let mut count = starts.min(Places::MAX as u64) as u32;
        while count > 2 && !is_prime(count) {
            count -= 1;
        }
        // 40503 / 2^16 = 0.618..., the golden ratio's fraction.
        let stride = ((count as u64 * 40503 + (1 << 15)) >> 16).max(1) as u32;
        Places {
            count,
            stride,
            // count 1 (a stream as large as the ring) wraps to 0, and every
            // remainder is then 0, as it must be.
            inverse: (u64::MAX / count as u64).wrapping_add(1),
        }
    }

    /// `a mod count` for any 32-bit `a`: the fraction a/count is
    /// `inverse · a` modulo 2^64, and its top 64 bits times count are the
    /// remainder (exact for 32-bit operands and divisors).
    #[inline]
    fn rem(self, a: u32) -> u32 {
        ((self.inverse.wrapping_mul(a as u64) as u128 * self.count as u128) >> 64) as u32
    }

    /// The place operation `op` starts at.  Only the low 32 bits of `op`
    /// take part: once in 2^32 operations the sequence jumps, which costs
    /// at most one early reuse (where an operation goes is a matter of
    /// speed only, never of correctness: see "Acknowledging").
    #[inline]
    fn start(self, op: u64) -> u64 {
        let turn = self.rem(op as u32);
        // turn < count and stride < count <= 2^16: the product fits in u32.
        self.rem(turn * self.stride) as u64
    }
}

/// A view of the p queues of a mapped segment.
pub struct Queues {
    base: *mut u8,
    layout: Layout,
    placement: Placement,
    /// Under `Spread`, at index i the places of a ring of 2^i starts
    /// (streams that span s/2^i slots), for every power of two up to s;
    /// empty under `Consecutive`.
    places: Vec<Places>,
    /// Under `Spread`, the stride between the starts of operations of one
    /// slot (messages of up to a fragment) in a power-of-two ring: odd, about
    /// 0.618 s.  Such operations keep all s places and a multiplication with
    /// a mask: the prime places' two remainders cost them 1.5-3 % (np=2,
    /// paired launches, Bcast 8 B 0.120 -> 0.125 us, Allgather 512 B 0.24
    /// -> 0.26), and with s places in the ring even a call that takes k
    /// numbers reuses a slot only after s/k calls of at most f bytes each.
    one_slot_stride: u64,
}

// SAFETY: all cross-process (and cross-thread) access to the memory behind
// `base` follows the protocol described above: control words are atomics, and
// slot data is written only by its owner while no reader may read it.
unsafe impl Send for Queues {}
unsafe impl Sync for Queues {}

impl Queues {
    /// # Safety
    /// `base` must point to `layout.total` bytes, 4096-aligned, zero-filled
    /// before first use by any process, and alive as long as the `Queues`.
    /// Every process of the segment must pass the same `placement`.
    pub unsafe fn new(base: *mut u8, layout: Layout, placement: Placement) -> Queues {
        // Every power of two up to s: a ring of s = 6 slots cut in groups
        // of 3 has 2 of them, and streams of 3 slots 2 starts.
        let places = match placement {
            Placement::Spread => (0..=layout.s.ilog2())
                .map(|i| Places::new(1 << i))
                .collect(),
            Placement::Consecutive => Vec::new(),
        };
        let s = layout.s as u64;
        Queues {
            base,
            layout,
            placement,
            places,
            // 40503 / 2^16 = 0.618..., the golden ratio's fraction.
            one_slot_stride: ((s * 40503) >> 16) | 1,
        }
    }

    pub fn layout(&self) -> &Layout {
        &self.layout
    }

    pub fn placement(&self) -> Placement {
        self.placement
    }

    /// Whether fragments at `positions` would occupy pairwise distinct
    /// slots: a writer may then hold them all published at once, none
    /// waiting for another to be released (`coll::alltoall::
    /// publishes_first`).  Works out the placement of each, so it is for
    /// calls whose copies outweigh a few divisions.
    pub fn apart(&self, positions: impl Iterator<Item = Pos>) -> bool {
        let mut taken = vec![0u64; self.layout.s.div_ceil(64)];
        positions.into_iter().all(|pos| {
            let first = self.place(pos).0;
            (first..first + pos.width).all(|k| {
                let (word, bit) = (k / 64, 1u64 << (k % 64));
                let free = taken[word] & bit == 0;
                taken[word] |= bit;
                free
            })
        })
    }

    fn header(&self, w: usize, k: usize) -> &SlotHeader {
        debug_assert!(w < self.layout.p && k < self.layout.s);
        // SAFETY: in bounds by the layout; aligned to a cache line; SlotHeader
        // is only accessed through atomics and the UnsafeCell.
        unsafe { &*(self.base.add(self.layout.slot_header(w, k)) as *const SlotHeader) }
    }

    fn ack_line(&self, w: usize, r: usize) -> &AckLine {
        debug_assert!(w < self.layout.p && r < self.layout.p);
        // SAFETY: as above.
        unsafe { &*(self.base.add(self.layout.ack_line(w, r)) as *const AckLine) }
    }

    /// Reader `me` tells queue `w`'s owner that the header of publication
    /// `at` reached it late, or (`at` = 0) that headers come early again.
    pub fn report_far(&self, w: usize, me: usize, at: u64) {
        self.ack_line(w, me).far_at.store(at, Ordering::Relaxed);
    }

    /// Whether one of `count` readers of owner `me`'s queue, from process
    /// `first` on (round the ring), reported a late header of a fragment
    /// published after `since` (older reports are stale: that reader may no
    /// longer read this queue).  A window, not all p-1: the lines are the
    /// readers' ack lines, which they keep writing, so each look may cost a
    /// cross-core transfer.
    pub fn readers_far(&self, me: usize, since: u64, first: usize, count: usize) -> bool {
        let p = self.layout.p;
        (first..first + count.min(p))
            .map(|r| r % p)
            .filter(|&r| r != me)
            .any(|r| self.ack_line(me, r).far_at.load(Ordering::Relaxed) > since)
    }

    /// Process `r`'s sync line.
    pub fn sync(&self, r: usize) -> &SyncLine {
        debug_assert!(r < self.layout.p);
        // SAFETY: in bounds by the layout; only accessed through atomics.
        unsafe { &*(self.base.add(self.layout.sync_line(r)) as *const SyncLine) }
    }

    /// Slot and lap of a position.
    ///
    /// A fragment of width c occupies c consecutive slots starting at a
    /// multiple of c (so its data is one contiguous range of c·f bytes); the
    /// queue then holds s/c such groups, and positions count groups.  Under
    /// `Spread` an operation starts at a multiple of its stream's span (see
    /// [`Pos::span`] and the module documentation); under `Consecutive` at a
    /// multiple of its fragments' width, as before spans were measured.
    ///
    /// This runs several times per fragment: with the usual power-of-two
    /// slot counts it avoids the 64-bit divisions (tens of cycles each).
    #[inline]
    fn place(&self, pos: Pos) -> (usize, u64) {
        let s = self.layout.s;
        debug_assert!(pos.width >= 1 && s.is_multiple_of(pos.width));
        debug_assert!(pos.span.is_multiple_of(pos.width) && s.is_multiple_of(pos.span));
        if pos.width == 1 && pos.span == 1 && s.is_power_of_two() {
            // Every message of up to a fragment: s places, one slot each,
            // reached by `one_slot_stride` (not by the prime places below).
            let (mask, shift) = (s as u64 - 1, s.trailing_zeros());
            let start = match self.placement {
                Placement::Spread => pos.op.wrapping_mul(self.one_slot_stride),
                Placement::Consecutive => pos.op,
            } & mask;
            let position = start + pos.index;
            return ((position & mask) as usize, position >> shift);
        }
        if s.is_power_of_two() {
            // Then width and span, divisors of s, are powers of two too, and
            // every quotient below is a shift: no division on the path of
            // every fragment (three of them cost an 8-byte Bcast's root
            // about 70 instructions per call, callgrind, np=2).
            let (ring, width) = (s.trailing_zeros(), pos.width.trailing_zeros());
            let span = match self.placement {
                Placement::Spread => pos.span.trailing_zeros(),
                Placement::Consecutive => width,
            };
            // Groups of `width` slots in the ring, and starts of `span`.
            let (shift, starts) = (ring - width, ring - span);
            let mask = (1u64 << shift) - 1;
            // (A span of one slot has a width of one: the branch above.)
            let start = match self.placement {
                Placement::Spread => self.places[starts as usize].start(pos.op),
                Placement::Consecutive => pos.op & ((1u64 << starts) - 1),
            } << (span - width);
            let position = start + pos.index;
            return ((position & mask) as usize * pos.width, position >> shift);
        }
        // A ring of another size (`coll_sharm_queue_slots`): the same
        // placement, worked out with divisions.
        let span = match self.placement {
            Placement::Spread => pos.span,
            Placement::Consecutive => pos.width,
        };
        let groups = (s / pos.width) as u64;
        // Places an operation may start at, and groups from one to the next.
        let (starts, step) = ((s / span) as u64, (span / pos.width) as u64);
        if groups.is_power_of_two() && starts.is_power_of_two() {
            let (mask, shift) = (groups - 1, groups.trailing_zeros());
            let start = match self.placement {
                // One-slot operations keep all s places (`one_slot_stride`).
                Placement::Spread if pos.span == 1 => {
                    pos.op.wrapping_mul(self.one_slot_stride) & mask
                }
                Placement::Spread => self.places[starts.trailing_zeros() as usize].start(pos.op),
                Placement::Consecutive => pos.op & (starts - 1),
            } * step;
            let position = start + pos.index;
            return ((position & mask) as usize * pos.width, position >> shift);
        }
        let position = pos.op % starts * step + pos.index;
        ((position % groups) as usize * pos.width, position / groups)
    }

    /// Where the `len` bytes of slot `k` of queue `w` live (inline or data area).
    fn buffer(&self, w: usize, k: usize, len: usize) -> *mut u8 {
        if len <= INLINE_BYTES {
            self.header(w, k).inline.get().cast()
        } else {
            // SAFETY: in bounds by the layout.
            unsafe { self.base.add(self.layout.slot_data(w, k)) }
        }
    }

    /// Largest fragment a slot holds.
    pub fn fragment_bytes(&self) -> usize {
        self.layout.f
    }

    /// Waits for fragment `pos` of queue `w` and returns where it is.
    pub fn receive(&self, waiter: &Waiter, w: usize, pos: Pos) -> Incoming {
        self.receive_expecting(waiter, w, pos, 0)
    }

    /// `receive` of a fragment the reader expects to hold `expect` bytes (a
    /// hint: the header's length stays authoritative).  A small fragment
    /// beyond the inline bytes has its data lines prefetched while the
    /// reader waits for the header, so that their transfer overlaps the
    /// header's instead of following it (see [`PREFETCH_MAX_BYTES`]).
    ///
    /// Inlined, like [`Writer::publish_carrying`]: called, it took its `Pos`
    /// and returned its `Incoming` through the stack, written as 8-byte
    /// fields and read back as 16-byte words, which the store buffer cannot
    /// forward (a stall of about 20 cycles per fragment, `perf annotate`).
    #[inline(always)]
    pub fn receive_expecting(
        &self,
        waiter: &Waiter,
        w: usize,
        pos: Pos,
        expect: usize,
    ) -> Incoming {
        let (k, lap) = self.place(pos);
        let h = self.header(w, k);
        // The closure captures plain words, not `pos`: a captured struct is
        // taken by reference, so it would be copied to the stack again.
        let op = pos.op;
        let published =
            || h.op.load(Ordering::Acquire) == op && h.lap.load(Ordering::Acquire) == lap;
        let arrival = if expect <= INLINE_BYTES || expect > PREFETCH_MAX_BYTES {
            waiter.until_noting(published)
        } else {
            let data = self.buffer(w, k, expect);
            waiter.until_noting(|| {
                prefetch_lines(data, expect);
                published()
            })
        };
        let mut frag = self.incoming(w, k);
        // Only a reader that was spinning on the header when it came saw it
        // arrive: one that comes later, or was driving the progress engine
        // at that moment, would time its own lateness (those samples put a
        // near pair's 90th percentile at up to 540 ns), and a yielding
        // wait times the scheduler.
        if frag.len >= SHORT_STAMPED_MIN && arrival == Arrival::Spinning && !waiter.yield_early {
            frag.latency_ns = self.latency_ns(w, k, frag.wseq);
        }
        frag
    }

    /// How long ago, by the host's clock, the writer of slot `k` of queue
    /// `w`, published as `wseq`, stamped it; 0 when it carries no stamp of
    /// that publication.  At least 1 ns when it does: a stamp ahead of our
    /// clock (two cores' readings a few ns apart) reads as the shortest.
    #[cold]
    fn latency_ns(&self, w: usize, k: usize, wseq: u64) -> u32 {
        // SAFETY: the slot is published (an Acquire load saw it) and holds
        // more than the inline bytes, so its inline area is either this
        // publication's stamp or stale bytes, both stored before that
        // publication and not rewritten until we release it; any bit
        // pattern is a valid `Stamp`.
        let stamp = unsafe { self.header(w, k).inline.get().cast::<Stamp>().read() };
        if stamp.tag != wseq ^ STAMP_TAG {
            return 0;
        }
        (clock_ns() as i64 - stamp.clock_ns as i64).clamp(1, u32::MAX as i64) as u32
    }

    /// Fragment `pos` of queue `w` if it is published, without waiting (the
    /// same Acquire loads as `receive`, once).
    pub fn try_receive(&self, w: usize, pos: Pos) -> Option<Incoming> {
        let (k, lap) = self.place(pos);
        let h = self.header(w, k);
        (h.op.load(Ordering::Acquire) == pos.op && h.lap.load(Ordering::Acquire) == lap)
            .then(|| self.incoming(w, k))
    }

    /// Slot `k` of queue `w`, whose publication an Acquire load has seen:
    /// `len` and `wseq` were stored before it (Relaxed reads suffice).
    fn incoming(&self, w: usize, k: usize) -> Incoming {
        let h = self.header(w, k);
        let len = h.len.load(Ordering::Relaxed) as usize;
        Incoming {
            data: self.buffer(w, k, len),
            len,
            wseq: h.wseq.load(Ordering::Relaxed),
            latency_ns: 0,
        }
    }

    /// Tells queue `w`'s owner that reader `me` is done with `fragment`
    /// (and with everything it published before it).
    pub fn release(&self, me: usize, w: usize, fragment: Incoming) {
        let line = self.ack_line(w, me);
        // Large fragments only: a clock read (30 ns) would show in every
        // small call, and large streams are the ones whose stores the
        // writer chooses by these times (`shm::stores`, "Acknowledgements").
        // Relaxed: the Release store below orders it, so a writer whose
        // Acquire load sees this acknowledgement sees this stamp or a later
        // one (whose `wseq` bits then name another acknowledgement).
        if fragment.len >= STAMPED_MIN {
            let stamp = AckStamp::word(clock_ns(), fragment.wseq);
            line.released.store(stamp, Ordering::Relaxed);
        }
        // Release: our reads of the slot happen before the owner's next write.
        line.consumed.store(fragment.wseq, Ordering::Release);
    }
}

/// A received fragment: valid until released.
#[derive(Clone, Copy, Debug)]
pub struct Incoming {
    pub data: *const u8,
    pub len: usize,
    wseq: u64,
    /// How long the header took from the writer's stamp to this reader,
    /// which was already waiting for it, in ns; 0 when not measured (no
    /// stamp, not waited for, or a yielding wait).  Near cores pass a
    /// line in a fraction of the time far ones take (`shm::stores`).
    pub latency_ns: u32,
}

impl Incoming {
    /// The writer's publication number of this fragment.
    pub fn wseq(&self) -> u64 {
        self.wseq
    }

    /// The fragment's bytes.
    ///
    /// # Safety
    /// Only until the fragment is released.
    pub unsafe fn bytes<'a>(&self) -> &'a [u8] {
        std::slice::from_raw_parts(self.data, self.len)
    }
}

/// Who must still acknowledge a slot's current content.
#[derive(Clone, Debug, Default)]
struct Pending {
    wseq: u64,
    all_others: bool,
    readers: Vec<u32>,
}

/// The owner's private bookkeeping for its own queue.
pub struct Writer {
    me: usize,
    next_wseq: u64,
    pending: Vec<Pending>,
    /// Fragments of this many bytes or more carry a [`Stamp`] (the short
    /// ones, below [`STAMPED_MIN`], one in [`SHORT_STAMP_EVERY`]);
    /// `usize::MAX`: none does.
    stamp_from: usize,
    /// Short fragments published since the last one stamped.
    short_unstamped: u32,
    /// Last acknowledgement seen from each reader: acks only grow, so a slot
    /// whose readers are known to be past it needs no shared-memory read
    /// (the reader's ack line stays in its cache instead of bouncing).
    seen: Vec<u64>,
    /// The lowest of `seen` over every other process, as of the last look
    /// at an ack line: a slot whose content is no newer is free whoever
    /// read it, without a look at its readers (`wait_free`).  Every value
    /// in `seen` came from a synchronising load, so their minimum does too.
    /// 0 until every other process was seen.
    seen_by_all: u64,
    /// How long, in ns, the last acknowledgement this writer was spinning
    /// for took from its reader's clock to ours (0: none since it was
    /// taken, `take_ack_latency`).
    ack_latency_ns: std::cell::Cell<u32>,
}

impl Writer {
    /// The writer of queue `me`; with `stamp_from`, it stamps fragments of
    /// that many bytes or more as it publishes them ([`Stamp`]: each from
    /// [`STAMPED_MIN`] on, one in [`SHORT_STAMP_EVERY`] below; only readers
    /// under `coll_sharm_nontemporal auto` heed them).
    pub fn new(me: usize, slots: usize, processes: usize, stamp_from: Option<usize>) -> Writer {
        Writer {
            me,
            stamp_from: stamp_from.unwrap_or(usize::MAX),
            short_unstamped: 0,
            next_wseq: 1,
            pending: vec![Pending::default(); slots],
            seen: vec![0; processes],
            seen_by_all: 0,
            ack_latency_ns: std::cell::Cell::new(0),
        }
    }

    /// The publication number the next fragment will carry.
    pub fn next_wseq(&self) -> u64 {
        self.next_wseq
    }

    /// Waits until the slot of `pos` may be overwritten and returns where to
    /// put `len` (<= f) bytes.  Follow with [`Writer::publish`].
    pub fn reserve(&mut self, q: &Queues, waiter: &Waiter, pos: Pos, len: usize) -> *mut u8 {
        debug_assert!(len <= q.layout.f * pos.width);
        let (k, _) = q.place(pos);
        for slot in k..k + pos.width {
            self.wait_free(q, waiter, slot);
        }
        q.buffer(self.me, k, len)
    }

    /// Waits until every reader of what `pos` holds acknowledged it (or
    /// anything published after it).  A single-copy writer calls it before
    /// handing its buffer back to the application: the acknowledgement is
    /// the readers' word that they finished pulling from that buffer.
    pub fn settle(&mut self, q: &Queues, waiter: &Waiter, pos: Pos) {
        let (k, _) = q.place(pos);
        for slot in k..k + pos.width {
            self.wait_free(q, waiter, slot);
        }
    }

    /// Waits until every reader of slot `k`'s current content acknowledged it.
    fn wait_free(&mut self, q: &Queues, waiter: &Waiter, k: usize) {
        let pending = &mut self.pending[k];
        // Free, or acknowledged by every reader there is (the common case:
        // a slot comes round again long after its readers were past it).
        if pending.wseq <= self.seen_by_all {
            pending.wseq = 0;
            return;
        }
        let (me, wseq, seen) = (self.me, pending.wseq, &mut self.seen);
        let latency = &self.ack_latency_ns;
        let mut looked = false;
        let mut wait_for = |r: usize| {
            if seen[r] < wseq {
                looked = true;
                let line = q.ack_line(me, r);
                // Cache exactly the value the Acquire load returned: that
                // load synchronised with the reader's Release store of this
                // very value, so every later reuse decision taken from the
                // cache (any slot with wseq <= acked) rests on a synchronising
                // load.  A second, Relaxed load could return a newer value
                // whose store we never synchronised with.
                let mut acked = 0;
                let arrival = waiter.until_noting(|| {
                    acked = line.consumed.load(Ordering::Acquire);
                    acked >= wseq
                });
                seen[r] = acked;
                // Timed only when we were spinning as the line came (as a
                // reader times headers, `queue::Arrival`), and only against
                // the stamp of the very acknowledgement we saw: a stamp of an
                // earlier one would time how long ago that was.
                if arrival == Arrival::Spinning {
                    let stamp = line.released.load(Ordering::Relaxed);
                    if let Some(ns) = AckStamp::latency(stamp, acked, clock_ns()) {
                        latency.set(ns);
                    }
                }
            }
        };
        if pending.all_others {
            (0..q.layout.p).filter(|&r| r != me).for_each(&mut wait_for);
        } else {
            pending.readers.iter().for_each(|&r| wait_for(r as usize));
        }
        pending.wseq = 0;
        // What a look at the ack lines taught: rare (once per lap of the
        // ring at most, for each reader), so the O(p) minimum is cheap.
        if looked {
            self.seen_by_all = (0..q.layout.p)
                .filter(|&r| r != me)
                .map(|r| self.seen[r])
                .min()
                .unwrap_or(u64::MAX);
        }
    }

    /// The latency of the last acknowledgement this writer spun for, in ns
    /// (0: none timed since the last take), taken: the next take finds 0
    /// unless another is timed in between.
    pub fn take_ack_latency(&self) -> u32 {
        self.ack_latency_ns.replace(0)
    }

    /// Whether a fragment of `len` bytes (at least `stamp_from`) takes a
    /// stamp: each from `STAMPED_MIN` on, one in `SHORT_STAMP_EVERY` below.
    fn stamp_due(&mut self, len: usize) -> bool {
        if len >= STAMPED_MIN {
            return true;
        }
        self.short_unstamped += 1;
        if self.short_unstamped < SHORT_STAMP_EVERY {
            return false;
        }
        self.short_unstamped = 0;
        true
    }

    /// Makes the `len` bytes written at the reserved place visible to `readers`.
    pub fn publish(&mut self, q: &Queues, pos: Pos, len: usize, readers: Readers<'_>) {
        self.publish_carrying(q, pos, len, readers, len);
    }

    /// `publish`, counted in the traffic statistics as `carried` bytes: a
    /// single-copy offer is 24 bytes in the slot but stands for the whole
    /// stream its readers pull.
    #[inline]
    pub fn publish_carrying(
        &mut self,
        q: &Queues,
        pos: Pos,
        len: usize,
        readers: Readers<'_>,
        carried: usize,
    ) {
        stats::shm_published(carried);
        let (k, lap) = q.place(pos);
        let wseq = self.next_wseq;
        self.next_wseq += 1;
        for slot in k..k + pos.width {
            let pending = &mut self.pending[slot];
            pending.wseq = wseq;
            pending.readers.clear();
            pending.all_others = false;
            match readers {
                Readers::AllOthers => pending.all_others = true,
                Readers::One(r) => pending.readers.push(r as u32),
                Readers::List(list) => pending.readers.extend(list.iter().map(|&r| r as u32)),
                Readers::Above(r) => pending.readers.extend(r as u32 + 1..q.layout.p as u32),
            }
        }
        let h = q.header(self.me, k);
        if len >= self.stamp_from && self.stamp_due(len) {
            stamp(h, wseq);
        }
        h.len.store(len as u32, Ordering::Relaxed);
        h.wseq.store(wseq, Ordering::Relaxed);
        // Release, lap before op: see the module documentation.
        h.lap.store(lap, Ordering::Release);
        h.op.store(pos.op, Ordering::Release);
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use std::sync::Arc;

    /// The first time `try_once` returns other than 0, trying again for up
    /// to 20 s (None: no try timed).  A spinning wait times its line only
    /// when the line comes while it spins; with other tests loading both
    /// cores it often comes while the wait drives progress or yields
    /// (`Arrival::Late`), and 64 tries all failed so in two of five runs of
    /// the whole unit suite.  Unloaded, the first try times.
    fn first_timed(mut try_once: impl FnMut() -> u32) -> Option<u32> {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
        loop {
            let ns = try_once();
            if ns > 0 {
                return Some(ns);
            }
            if std::time::Instant::now() >= deadline {
                return None;
            }
        }
    }

    /// Spins (without yielding) for `us` µs, so that a waiter on another
    /// thread is spinning when what it waits for comes.
    fn spin_for_us(us: u64) {
        let until = std::time::Instant::now() + std::time::Duration::from_micros(us);
        while std::time::Instant::now() < until {
            std::hint::spin_loop();
        }
    }

    /// Zeroed, page-aligned memory standing in for a mapped segment.
    pub struct TestSegment {
        ptr: *mut u8,
        layout: std::alloc::Layout,
        pub queues: Queues,
    }
    unsafe impl Send for TestSegment {}
    unsafe impl Sync for TestSegment {}
    impl TestSegment {
        pub fn new(geometry: Layout) -> Arc<TestSegment> {
            TestSegment::placed(geometry, Placement::Consecutive)
        }
        pub fn placed(geometry: Layout, placement: Placement) -> Arc<TestSegment> {
            let layout = std::alloc::Layout::from_size_align(geometry.total, 4096).unwrap();
            let ptr = unsafe { std::alloc::alloc_zeroed(layout) };
            assert!(!ptr.is_null());
            Arc::new(TestSegment {
                ptr,
                layout,
                queues: unsafe { Queues::new(ptr, geometry, placement) },
            })
        }
    }
    impl Drop for TestSegment {
        fn drop(&mut self) {
            unsafe { std::alloc::dealloc(self.ptr, self.layout) }
        }
    }

    fn pattern(op: u64, index: usize, len: usize) -> Vec<u8> {
        (0..len)
            .map(|i| (op as usize * 31 + index * 7 + i) as u8)
            .collect()
    }

    /// One writer broadcasts many operations of varying fragment counts
    /// (wrapping the queue many times) to all others; every byte is checked.
    #[test]
    fn broadcast_through_threads() {
        broadcast_through_threads_in(3, Placement::Consecutive);
        broadcast_through_threads_in(8, Placement::Consecutive);
        broadcast_through_threads_in(8, Placement::Spread);
    }

    fn broadcast_through_threads_in(s: usize, placement: Placement) {
        let p = 4;
        let seg = TestSegment::placed(Layout::new(p, s, 512).unwrap(), placement);
        let ops: Vec<(u64, usize, usize)> = (1..=400u64)
            .map(|op| (op, (op as usize * 7) % 5, ((op as usize * 13) % 512) + 1))
            .collect();
        let ops = Arc::new(ops);
        let handles: Vec<_> = (0..p)
            .map(|me| {
                let seg = seg.clone();
                let ops = ops.clone();
                std::thread::spawn(move || {
                    let q = &seg.queues;
                    let waiter = Waiter::standalone(true);
                    let mut writer = Writer::new(me, s, p, None);
                    for &(op, frags, len) in ops.iter() {
                        let root = (op as usize) % p;
                        for i in 0..frags {
                            let pos = Pos::new(op, i);
                            if me == root {
                                let data = pattern(op, i, len);
                                let dst = writer.reserve(q, &waiter, pos, len);
                                unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), dst, len) };
                                writer.publish(q, pos, len, Readers::AllOthers);
                            } else {
                                // The length hint is only a hint: right,
                                // or wrong by a few lines, the bytes are.
                                let hint = [len, len * 3, 0][(op as usize + i) % 3];
                                let got = q.receive_expecting(&waiter, root, pos, hint);
                                assert_eq!(unsafe { got.bytes() }, &pattern(op, i, len)[..]);
                                q.release(me, root, got);
                            }
                        }
                    }
                })
            })
            .collect();
        for h in handles {
            h.join().unwrap();
        }
    }

    /// Every process writes to a single reader (a reduce's pattern) while the
    /// reader consumes queues in reverse rank order, plus a point-to-point
    /// chain addressed with `Readers::List`.
    #[test]
    fn many_to_one_and_lists() {
        let p = 5;
        let s = 2;
        let seg = TestSegment::new(Layout::new(p, s, 128).unwrap());
        let handles: Vec<_> = (0..p)
            .map(|me| {
                let seg = seg.clone();
                std::thread::spawn(move || {
                    let q = &seg.queues;
                    let waiter = Waiter::standalone(true);
                    let mut writer = Writer::new(me, s, p, None);
                    let mut op = 0;
                    for round in 0..200usize {
                        op += 1;
                        let root = round % p;
                        let frags = 1 + round % 4;
                        for i in 0..frags {
                            let pos = Pos::new(op, i);
                            let len = 1 + (round + i) % 128;
                            if me != root {
                                let data = pattern(op + me as u64, i, len);
                                let dst = writer.reserve(q, &waiter, pos, len);
                                unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), dst, len) };
                                writer.publish(q, pos, len, Readers::One(root));
                            } else {
                                for w in (0..p).rev().filter(|&w| w != me) {
                                    let got = q.receive(&waiter, w, pos);
                                    assert_eq!(
                                        unsafe { got.bytes() },
                                        &pattern(op + w as u64, i, len)[..]
                                    );
                                    q.release(me, w, got);
                                }
                            }
                        }
                        // A chain 0 -> {1,2} -> ... addressed by lists.
                        op += 1;
                        let pos = Pos::new(op, 0);
                        if me == 0 {
                            let dst = writer.reserve(q, &waiter, pos, 8);
                            unsafe {
                                std::ptr::copy_nonoverlapping(
                                    &(op.to_le_bytes()) as *const u8,
                                    dst,
                                    8,
                                )
                            };
                            writer.publish(q, pos, 8, Readers::List(&[1, 2]));
                        } else if me <= 2 {
                            let got = q.receive(&waiter, 0, pos);
                            assert_eq!(unsafe { got.bytes() }, &op.to_le_bytes());
                            q.release(me, 0, got);
                        }
                    }
                })
            })
            .collect();
        for h in handles {
            h.join().unwrap();
        }
    }

    #[test]
    fn positions_wrap_and_spread() {
        let seg = TestSegment::new(Layout::new(2, 4, 64).unwrap());
        let q = &seg.queues;
        assert_eq!(q.place(Pos::new(1, 0)), (1, 0));
        assert_eq!(q.place(Pos::new(1, 3)), (0, 1));
        assert_eq!(q.place(Pos::new(6, 9)), (3, 2));
        // Odd slot counts take the division path; both agree with the formula.
        for s in [3usize, 4, 6, 8] {
            let seg = TestSegment::new(Layout::new(2, s, 64).unwrap());
            for op in [1u64, 5, 17, u64::MAX / 3] {
                for index in [0usize, 1, 7, 100] {
                    let position = op % s as u64 + index as u64;
                    assert_eq!(
                        seg.queues.place(Pos::new(op, index)),
                        ((position % s as u64) as usize, position / s as u64)
                    );
                }
            }
        }
        // Consecutive single-fragment operations use consecutive slots.
        let slots: Vec<usize> = (1..=8).map(|op| q.place(Pos::new(op, 0)).0).collect();
        assert_eq!(slots, vec![1, 2, 3, 0, 1, 2, 3, 0]);
    }

    /// `Queues::apart`: one-fragment operations of one width in a row take
    /// distinct slots up to the places they may start at (all 8 groups of 4
    /// slots in 32 under `Consecutive`, the largest prime below, 7, under
    /// `Spread`), and one-slot ones all 32; a wide fragment that covers a
    /// narrow one's slot is found.
    #[test]
    fn apart_finds_fragments_that_share_a_slot() {
        for (placement, places) in [(Placement::Consecutive, 8), (Placement::Spread, 7)] {
            let seg = TestSegment::placed(Layout::new(2, 32, 64).unwrap(), placement);
            let q = &seg.queues;
            let wide = |op: u64| Pos::spanning(op, 0, 4, 4);
            assert!(q.apart((100..100 + places).map(wide)), "{placement:?}");
            assert!(!q.apart((100..101 + places).map(wide)), "{placement:?}");
            assert!(
                q.apart((100..132).map(|op| Pos::new(op, 0))),
                "{placement:?}"
            );
            assert!(
                !q.apart((100..133).map(|op| Pos::new(op, 0))),
                "{placement:?}"
            );
            // A one-slot fragment inside a wide one's group.
            let (first, _) = q.place(wide(7));
            let inside = (0..64u64)
                .find(|&op| (first..first + 4).contains(&q.place(Pos::new(op, 0)).0))
                .unwrap();
            assert!(!q.apart([wide(7), Pos::new(inside, 0)].into_iter()));
        }
    }

    /// `Writer::seen_by_all` lets a slot be reused without a look at its
    /// readers only when every other process was seen past its content: a
    /// reader that acknowledged an earlier fragment but not this one still
    /// holds the writer back, whichever reader set the fragment had.
    #[test]
    fn reuse_waits_for_a_reader_behind_the_others() {
        use std::sync::atomic::AtomicBool;
        let (p, s) = (3, 2);
        let seg = TestSegment::new(Layout::new(p, s, 64).unwrap());
        let acked_late = Arc::new(AtomicBool::new(false));
        let slow = {
            let (seg, acked_late) = (seg.clone(), acked_late.clone());
            std::thread::spawn(move || {
                let (q, waiter) = (&seg.queues, Waiter::standalone(true));
                // Ops 1 and 2 (slots 1 and 0) at once; op 4 only after a pause.
                for op in [1, 2] {
                    let got = q.receive(&waiter, 0, Pos::new(op, 0));
                    q.release(2, 0, got);
                }
                let got = q.receive(&waiter, 0, Pos::new(4, 0));
                std::thread::sleep(std::time::Duration::from_millis(50));
                acked_late.store(true, Ordering::SeqCst);
                q.release(2, 0, got);
            })
        };
        let fast = {
            let seg = seg.clone();
            std::thread::spawn(move || {
                let (q, waiter) = (&seg.queues, Waiter::standalone(true));
                for op in [1, 2, 3, 4] {
                    let got = q.receive(&waiter, 0, Pos::new(op, 0));
                    q.release(1, 0, got);
                }
            })
        };
        let (q, waiter) = (&seg.queues, Waiter::standalone(true));
        let mut writer = Writer::new(0, s, p, None);
        let mut send = |op: u64, readers: Readers<'_>| {
            let pos = Pos::new(op, 0);
            let dst = writer.reserve(q, &waiter, pos, 8);
            unsafe { std::ptr::copy_nonoverlapping(op.to_le_bytes().as_ptr(), dst, 8) };
            writer.publish(q, pos, 8, readers);
        };
        // Slots 1 and 0 to both readers; op 3 (slot 1 again) waits for both
        // and leaves seen_by_all at 1 or 2.
        send(1, Readers::AllOthers);
        send(2, Readers::AllOthers);
        send(3, Readers::One(1));
        send(4, Readers::AllOthers);
        // Slot 1 again (op 3's content, wseq 3, read by 1 only), then slot 0
        // (op 4's content, wseq 4), which reader 2 acknowledges late.
        send(5, Readers::One(1));
        let pos = Pos::new(6, 0);
        writer.reserve(q, &waiter, pos, 8);
        assert!(
            acked_late.load(Ordering::SeqCst),
            "slot 0 reused before reader 2 acknowledged op 4"
        );
        writer.publish(q, pos, 8, Readers::One(1));
        slow.join().unwrap();
        let got = q.receive(&waiter, 0, Pos::new(5, 0));
        q.release(1, 0, got);
        fast.join().unwrap();
    }

    /// The shifts of a power-of-two ring give the places the divisions
    /// give, for every width and span that divides it, under both
    /// placements (the divisions are the formula of the module docs).
    #[test]
    fn shifts_place_as_divisions_do() {
        for placement in [Placement::Consecutive, Placement::Spread] {
            for s in [2usize, 8, 64, 256] {
                let seg = TestSegment::placed(Layout::new(2, s, 64).unwrap(), placement);
                let q = &seg.queues;
                let divisors = || (0..=s.ilog2()).map(|i| 1usize << i);
                for width in divisors() {
                    for span in divisors().filter(|&sp| sp >= width) {
                        let room = if placement == Placement::Spread {
                            span
                        } else {
                            width
                        };
                        let (groups, starts) = ((s / width) as u64, (s / room) as u64);
                        let step = (room / width) as u64;
                        for op in [0u64, 1, 2, 7, 1000, u64::MAX / 3, u64::MAX] {
                            let start = match placement {
                                Placement::Spread if span == 1 => {
                                    op.wrapping_mul(q.one_slot_stride) % groups
                                }
                                Placement::Spread => {
                                    q.places[starts.trailing_zeros() as usize].start(op)
                                }
                                Placement::Consecutive => op % starts,
                            };
                            for index in [0u64, 1, 3, step, 5 * groups + 1] {
                                let position = start * step + index;
                                let expected =
                                    ((position % groups) as usize * width, position / groups);
                                let pos = Pos::spanning(op, index as usize, width, span);
                                assert_eq!(q.place(pos), expected, "{placement:?} s {s} {pos:?}");
                            }
                        }
                    }
                }
            }
        }
    }

    /// The prime place counts and their strides; `rem` is `%` for every
    /// 32-bit operand of every count (spot checks and the edges).
    #[test]
    fn places_are_prime_with_a_golden_stride() {
        let counts: Vec<u32> = (0..=20).map(|i| Places::new(1 << i).count).collect();
        assert_eq!(&counts[..10], &[1, 2, 3, 7, 13, 31, 61, 127, 251, 509]);
        assert_eq!(counts[20], Places::MAX);
        for starts in (0..=20).map(|i| 1u64 << i) {
            let places = Places::new(starts);
            let (n, stride) = (places.count, places.stride);
            assert!(n == 1 || (stride > 0 && stride < n), "starts {starts}");
            assert!(n < 8 || (stride as f64 - 0.618_034 * n as f64).abs() <= 1.0);
            let edges = [
                0,
                1,
                n - 1,
                n,
                n + 1,
                2 * n - 1,
                65_535,
                u32::MAX - 1,
                u32::MAX,
            ];
            for a in edges
                .into_iter()
                .chain((0..1000).map(|i| i * 4_294_967 + 13))
            {
                assert_eq!(places.rem(a), a % n, "{a} mod {n}");
            }
        }
    }

    /// Spread: consecutive operations start about 0.618 of the places apart,
    /// every `places` consecutive ones on distinct places, for every width;
    /// the fragments of one operation stay consecutive.
    #[test]
    fn spread_operations_start_far_apart() {
        let seg = TestSegment::placed(Layout::new(2, 256, 64).unwrap(), Placement::Spread);
        let q = &seg.queues;
        for width in [1usize, 2, 4, 8, 64, 128] {
            let groups = 256 / width;
            let mut places = Places::new(groups as u64);
            if width == 1 {
                // One-slot operations: all s places, an odd golden stride.
                assert_eq!(q.one_slot_stride % 2, 1);
                assert!((q.one_slot_stride as f64 - 0.618 * 256.0).abs() <= 1.0);
                places.count = 256;
                places.stride = q.one_slot_stride as u32;
            }
            let start = |op: u64| q.place(Pos::spanning(op, 0, width, width)).0 / width;
            let seen: std::collections::HashSet<usize> =
                (1..=places.count as u64).map(start).collect();
            assert_eq!(seen.len(), places.count as usize);
            for op in [1u64, 77, u64::MAX - 3] {
                let (k, lap) = q.place(Pos::spanning(op, 0, width, width));
                let turn = match width {
                    1 => op % 256,
                    _ => (op as u32 % places.count) as u64,
                };
                assert_eq!(
                    k,
                    (turn * places.stride as u64 % places.count as u64) as usize * width
                );
                assert_eq!(lap, 0);
                // Fragment i sits i places on, lapping at the ring's end.
                let (k1, lap1) = q.place(Pos::spanning(op, groups, width, width));
                assert_eq!((k1, lap1), (k, 1));
            }
        }
        // A ring of 6 places is not a power of two: consecutive starts.
        let six = TestSegment::placed(Layout::new(2, 6, 64).unwrap(), Placement::Spread);
        let slots: Vec<usize> = (1..=4)
            .map(|op| six.queues.place(Pos::new(op, 0)).0)
            .collect();
        assert_eq!(slots, vec![1, 2, 3, 4]);
        // Its groups of 3 slots are a power of two (2): spread over the
        // prime places of a ring of 2 starts, as in any other ring.
        for op in 1..=4u64 {
            let (k, lap) = six.queues.place(Pos::spanning(op, 0, 3, 3));
            assert_eq!((k, lap), ((op % 2) as usize * 3, 0));
        }
    }

    /// Spread with spans: an operation starts at a multiple of its span and
    /// its fragments follow one another from there.  Operations of one span
    /// that a queue sees every k-th operation number (a call that takes k
    /// numbers) visit all the span's places, and a place comes back only
    /// after `places` of them, for every step k below the place count, odd
    /// or even.  With a power-of-two number of places an even k met half of
    /// them.  Consecutive ignores the span.
    #[test]
    fn spread_operations_start_on_their_span_for_every_step() {
        let seg = TestSegment::placed(Layout::new(2, 256, 64).unwrap(), Placement::Spread);
        let q = &seg.queues;
        for (width, span) in [(1usize, 2usize), (1, 4), (4, 16), (4, 32), (8, 64)] {
            let places = Places::new(256 / span as u64).count as u64;
            for k in 1..places.min(9) {
                for first in [1u64, 5, (1 << 32) - 7] {
                    let start = |j: u64| q.place(Pos::spanning(first + k * j, 0, width, span)).0;
                    let mut last = std::collections::HashMap::new();
                    for j in 0..3 * places {
                        let k0 = start(j);
                        assert_eq!(k0 % span, 0);
                        if let Some(before) = last.insert(k0, j) {
                            // Across the 2^32 jump one early reuse is allowed.
                            let jumped = (first + k * before) >> 32 != (first + k * j) >> 32;
                            assert!(
                                jumped || j - before == places,
                                "width {width} span {span} step {k}: slot {k0} again after {}",
                                j - before
                            );
                        }
                    }
                    assert_eq!(
                        last.len() as u64,
                        places,
                        "width {width} span {span} step {k}"
                    );
                }
            }
            for op in [3u64, 1000] {
                let k = q.place(Pos::spanning(op, 0, width, span)).0;
                for i in 0..span / width {
                    let (ki, lap) = q.place(Pos::spanning(op, i, width, span));
                    assert_eq!((ki, lap), (k + i * width, 0));
                }
            }
        }
        let consecutive = TestSegment::new(Layout::new(2, 256, 64).unwrap());
        for op in [1u64, 9, 300] {
            assert_eq!(
                consecutive.queues.place(Pos::spanning(op, 2, 4, 64)),
                consecutive.queues.place(Pos::spanning(op, 2, 4, 4))
            );
        }
    }

    /// A reader's report of late headers reaches the writer until it is
    /// withdrawn or stale.
    #[test]
    fn far_reports_reach_the_writer_until_withdrawn_or_stale() {
        let seg = TestSegment::new(Layout::new(3, 4, 4096).unwrap());
        let q = &seg.queues;
        assert!(!q.readers_far(0, 0, 0, 3));
        q.report_far(0, 2, 2);
        assert!(q.readers_far(0, 1, 0, 3), "wseq 2 came late to reader 2");
        assert!(q.readers_far(0, 1, 2, 1), "a window of reader 2 only");
        assert!(!q.readers_far(0, 1, 0, 2), "a window of readers 0-1");
        assert!(q.readers_far(0, 1, 1, 5), "round the ring, at most p");
        assert!(
            !q.readers_far(0, 2, 0, 3),
            "a report on wseq 2 is stale after it"
        );
        assert!(!q.readers_far(1, 0, 0, 3), "queue 1 has no report");
        q.report_far(0, 2, 0);
        assert!(!q.readers_far(0, 0, 0, 3), "withdrawn");
    }

    /// A reader that was spinning on a stamped header when it came learns
    /// how long it took; one that did not wait, one that yields, a fragment
    /// too short to be stamped (`SHORT_STAMPED_MIN`), and a slot whose writer does not stamp
    /// (its inline bytes another publication's stamp) give no latency.
    #[test]
    fn stamped_headers_give_their_latency_to_waiting_readers() {
        const F: usize = 2 * STAMPED_MIN;
        let seg = TestSegment::new(Layout::new(2, 4, F).unwrap());
        // Publishes `len` bytes as op `op` (slot op mod 4, publication
        // `op`) after spinning `delay` µs, from a writer that `stamps` or
        // not; returns what reader 1 received through `waiter`, which
        // starts waiting at once.
        let exchange = |op: u64, len: usize, delay: u64, stamps: bool, waiter: Waiter| {
            let seg2 = Arc::clone(&seg);
            let writer = std::thread::spawn(move || {
                let q = &seg2.queues;
                let mut writer = Writer::new(0, 4, 2, stamps.then_some(SHORT_STAMPED_MIN));
                // Earlier publications, so that this one is numbered `op`.
                writer.next_wseq = op;
                spin_for_us(delay);
                let pos = Pos::new(op, 0);
                writer.reserve(q, &Waiter::standalone(true), pos, len);
                writer.publish(q, pos, len, Readers::AllOthers);
            });
            // Not waiting (no delay): the header is there before we look.
            let writer = if delay == 0 {
                writer.join().unwrap();
                None
            } else {
                Some(writer)
            };
            let frag = seg.queues.receive(&waiter, 0, Pos::new(op, 0));
            seg.queues.release(1, 0, frag);
            if let Some(writer) = writer {
                writer.join().unwrap();
            }
            frag
        };
        let spinning = Waiter::standalone(false);
        // A header may also come just as the wait looks between rounds of
        // spins, or after it began to yield (`Arrival::Late`, no latency;
        // likely when other tests load the cores): some try must measure,
        // and its measurement be sane.
        let mut op = 0;
        let measured = first_timed(|| {
            op += 1;
            exchange(op, STAMPED_MIN, 10, true, spinning).latency_ns
        });
        // Past every op measured, at a multiple of the 4 slots, so that
        // the ops below keep their slots: base + 1 and base + 5 share one.
        let base = (op / 4 + 1) * 4 + 100;
        assert!(
            measured.is_some_and(|ns| ns < 1_000_000_000),
            "{measured:?}"
        );
        let unmeasured = [
            (base + 1, STAMPED_MIN, 0, true, spinning, "no wait"),
            (
                base + 2,
                F,
                10,
                true,
                Waiter::standalone(true),
                "a yielding wait",
            ),
            (
                base + 3,
                SHORT_STAMPED_MIN - 1,
                10,
                true,
                spinning,
                "too short",
            ),
            // Slot 1 again: its inline bytes hold publication base + 1's stamp.
            (
                base + 5,
                F,
                10,
                false,
                spinning,
                "a writer that does not stamp",
            ),
        ];
        for (op, len, delay, stamps, waiter, case) in unmeasured {
            assert_eq!(
                exchange(op, len, delay, stamps, waiter).latency_ns,
                0,
                "{case}"
            );
        }
    }
    /// A writer that spins for a reader's acknowledgement of a large
    /// fragment times it; one for a small fragment's, or one that was there
    /// before it looked, does not.
    #[test]
    fn writers_time_the_large_acknowledgements_they_spin_for() {
        // Two slots: op and op + 2 share one.
        let seg = TestSegment::new(Layout::new(2, 2, STAMPED_MIN).unwrap());
        let (q, spinning) = (&seg.queues, Waiter::standalone(false));
        let mut writer = Writer::new(0, 2, 2, None);
        // Publishes `len` bytes as op `op`, has reader 1 release it after
        // `delay` µs (0: before we look), and reserves its slot again (op +
        // 2), which waits for that acknowledgement.
        let mut exchange = |op: u64, len: usize, delay: u64| {
            let pos = Pos::new(op, 0);
            writer.reserve(q, &spinning, pos, len);
            writer.publish(q, pos, len, Readers::One(1));
            let seg2 = Arc::clone(&seg);
            let reader = std::thread::spawn(move || {
                let q = &seg2.queues;
                let frag = q.receive(&Waiter::standalone(false), 0, pos);
                spin_for_us(delay);
                q.release(1, 0, frag);
            });
            if delay == 0 {
                reader.join().unwrap();
                writer.reserve(q, &spinning, Pos::new(op + 2, 0), len);
            } else {
                writer.reserve(q, &spinning, Pos::new(op + 2, 0), len);
                reader.join().unwrap();
            }
            writer.take_ack_latency()
        };
        // The acknowledgement may also come as the wait looks between
        // rounds of spins, or after it began to yield (`Arrival::Late`):
        // some try must time.
        let mut k = 0;
        let timed = first_timed(|| {
            k += 1;
            exchange(4 * k + 1, STAMPED_MIN, 100)
        });
        assert!(timed.is_some_and(|ns| ns < 1_000_000_000), "{timed:?}");
        let next = 4 * (k + 1) + 1;
        assert_eq!(exchange(next, STAMPED_MIN, 0), 0, "no wait");
        assert_eq!(
            exchange(next + 4, STAMPED_MIN - 1, 100),
            0,
            "a small fragment"
        );
    }

    /// An ack stamp names its acknowledgement, and its latency survives the
    /// wrap of its clock field; a stamp ahead of our clock reads as 1 ns.
    #[test]
    fn ack_stamps_name_their_acknowledgement() {
        let stamp = AckStamp::word(1_000, 77);
        assert_eq!(AckStamp::latency(stamp, 77, 1_250), Some(250));
        assert_eq!(AckStamp::latency(stamp, 78, 1_250), None);
        assert_eq!(AckStamp::latency(0, 0, 1_250), None);
        assert_eq!(AckStamp::latency(stamp, 77, 990), Some(1));
        let wrap = AckStamp::CLOCK_MASK + 1;
        let late = AckStamp::word(wrap - 100, 5);
        assert_eq!(AckStamp::latency(late, 5, wrap + 300), Some(400));
        // Only the low bits of wseq are kept: the stamp of a much later
        // acknowledgement with the same low bits cannot be told apart, but
        // a neighbour can.
        assert_eq!(AckStamp::latency(stamp, 77 + (1 << 24), 1_250), Some(250));
    }

    /// A stamping writer stamps every fragment from `STAMPED_MIN` on, one
    /// short fragment in `SHORT_STAMP_EVERY` from its `stamp_from` on, and
    /// none shorter; a writer that does not stamp, none.
    #[test]
    fn short_fragments_carry_one_stamp_in_every_few() {
        let seg = TestSegment::new(Layout::new(2, 32, 2 * STAMPED_MIN).unwrap());
        let q = &seg.queues;
        let waiter = Waiter::standalone(true);
        // Which of `lens` (published as ops 1, 2, ... in distinct slots,
        // numbered from `wseq0` so that no earlier writer's stamp matches)
        // carry a stamp of their publication.
        let stamped = |wseq0: u64, stamp_from: Option<usize>, lens: &[usize]| -> Vec<bool> {
            let mut writer = Writer::new(0, 32, 2, stamp_from);
            writer.next_wseq = wseq0;
            let out = lens
                .iter()
                .enumerate()
                .map(|(i, &len)| {
                    let pos = Pos::new(1 + i as u64, 0);
                    writer.reserve(q, &waiter, pos, len);
                    writer.publish(q, pos, len, Readers::AllOthers);
                    let (k, _) = q.place(pos);
                    q.latency_ns(0, k, wseq0 + i as u64) != 0
                })
                .collect();
            // Every slot read and released, for the next writer.
            for i in 0..lens.len() {
                let frag = q.receive(&waiter, 0, Pos::new(1 + i as u64, 0));
                q.release(1, 0, frag);
            }
            out
        };
        let (long, short, shorter) = (STAMPED_MIN, 8 << 10, SHORT_STAMPED_MIN - 1);
        let lens = [
            long, short, short, shorter, short, short, long, short, short,
        ];
        assert_eq!(
            stamped(1, Some(SHORT_STAMPED_MIN), &lens),
            [true, false, false, false, false, true, true, false, false],
            "the fourth short one, and each long one"
        );
        assert_eq!(
            stamped(100, Some(STAMPED_MIN), &lens),
            [true, false, false, false, false, false, true, false, false],
            "short ones below stamp_from"
        );
        assert!(stamped(200, None, &lens).iter().all(|&s| !s), "no stamps");
    }
}
