//! Where everything lives inside one communicator's shared segment.
//!
//! ```text
//!   offset 0                  header page: magic, p, s, f (checked by every mapper)
//!   PAGE                      sync lines: one 64-byte line per process (barrier)
//!   queues_offset             queue 0 | queue 1 | ... | queue p-1   (queue_stride each)
//!
//!   queue w (owner: process w, first-touched by it so it lands on its NUMA node)
//!     +0                      s slot headers, one cache line each, written by w only
//!     +64*s                   p ack lines, line r written by reader r only
//!     +control_bytes          s data slots of f bytes each, page aligned
//!   pair_offset               two processes only (`with_pair`): a page of two
//!                             turn lines and two stream lines, then two
//!                             halves of pair_half bytes
//! ```
//!
//! Size formula (a = 4096-byte page, L = 64-byte line, ⌈x⌉ₐ = x rounded up to a):
//!
//! `total = a + ⌈pL⌉ₐ + p·(⌈(s+p)L⌉ₐ + ⌈s·f⌉ₐ)`
//!
//! e.g. p = 8, s = 32, f = 8192: 4096 + 4096 + 8·(4096 + 262144) = 2,138,112
//! bytes; with the default f and auto slots on a 1 MiB L2 (s = 256, see
//! [`auto_slots`]): 4096 + 4096 + 8·(20480 + 2097152) = 16,949,248 bytes.
//! Compared with the paper's `p·s·(f+a)` the control area is O(p·(s+p)) lines
//! instead of one page per slot: a reader acknowledges with one monotone
//! counter per queue instead of one flag per slot (see `queue`).

pub const CACHE_LINE: usize = 64;
pub const PAGE: usize = 4096;
/// Magic number at the start of a segment ("SHARM" + layout version 1).
pub const MAGIC: u64 = 0x5348_4152_4d00_0001;

/// Largest process count sharm serves on one node (keeps control areas small
/// and all offsets far from overflow).
pub const MAX_PROCS: usize = 4096;

/// `coll_sharm_queue_slots` 0 (auto) gives a queue at least this many slots.
pub const AUTO_MIN_SLOTS: usize = 32;
/// ... and at most this many.
pub const AUTO_MAX_SLOTS: usize = 1024;
/// An automatic geometry grows only while the whole segment stays within
/// this share of `coll_sharm_shared_memory_budget` (1/32: a 1 GiB budget
/// still holds 32 communicators of the largest automatic size).
pub const AUTO_BUDGET_SHARE: u64 = 32;

/// How many of one core's L2 caches an automatic ring holds (see
/// [`auto_slots`]).
pub const AUTO_RING_L2S: usize = 2;

/// Slots per queue when `coll_sharm_queue_slots` is 0 (auto): the smallest
/// power of two from [`AUTO_MIN_SLOTS`] whose ring (`s·f` bytes) is at least
/// [`AUTO_RING_L2S`] times `l2_bytes`, one core's L2 cache, unless the
/// segment of `p` queues would then exceed `budget / AUTO_BUDGET_SHARE` (it
/// stops at the last size that fits, never below the minimum).
///
/// Why the L2: a writer that refills a slot whose lines still sit in the
/// reader's L2 pays a cross-core invalidation per line, and the reader then
/// misses on every line it takes; a ring larger than the L2 lets the
/// reader's copies be evicted before the writer comes round again.  Two
/// threads on two cores of the development VM (Zen 4, 1 MiB L2; 1 MiB
/// through the ring, `bench/ring_copy.c`) moved 10 GB/s through a 256 KiB
/// ring, 16 GB/s through 512 KiB and 31-34 GB/s through 1 or 2 MiB, with
/// 8-128 KiB fragments alike: the ring's size decides, not the fragment's.
/// In the collectives (np=2, alternated launches) 32 -> 128 slots of 8 KiB
/// took Bcast 1 MiB from 102 to 35 µs and Reduce 4 MiB from 535 to 215 µs,
/// with small messages unchanged.
///
/// Why twice the L2: a ring of exactly one L2 still leaves part of the
/// reader's copies cached when the writer comes round, because the L2 also
/// holds the callers' buffers.  Calls of 8-256 KiB, each touching a few
/// slots of the ring, paid for it: np=2, 2026-11-25 (evening), 11 launches each with
/// the cores near each other, 128 -> 256 slots of 8 KiB (1 -> 2 MiB rings):
/// Bcast 16/64 KiB 1.58/6.43 -> 0.92/3.11 µs, Allgather 64 KiB 7.94 ->
/// 5.25, Reduce 64/256 KiB 6.29/13.73 -> 3.42/10.12, Scatter 256 KiB 22.5
/// -> 14.6; 1-4 MiB streams, which wrap either ring, within the launches'
/// spread; 512 slots (4 MiB) no better at 64 KiB and worse at 8 KiB and
/// 1 MiB.  np=4 on two cores: the same within noise.
pub fn auto_slots(p: usize, f: usize, l2_bytes: usize, budget: u64) -> usize {
    let f = round_up(f.max(CACHE_LINE), CACHE_LINE);
    let ring = l2_bytes.saturating_mul(AUTO_RING_L2S);
    let mut s = AUTO_MIN_SLOTS;
    while s.saturating_mul(f) < ring && s < AUTO_MAX_SLOTS {
        match Layout::new(p, 2 * s, f) {
            Ok(l) if l.total as u64 <= budget / AUTO_BUDGET_SHARE => s *= 2,
            _ => break,
        }
    }
    s
}

pub fn round_up(x: usize, to: usize) -> usize {
    x.div_ceil(to) * to
}

/// The geometry of one segment.  Pure arithmetic: no memory is touched.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Layout {
    /// Processes (queues).
    pub p: usize,
    /// Slots per queue.
    pub s: usize,
    /// Bytes per slot.
    pub f: usize,
    /// Bytes of one queue's control area (slot headers + ack lines, page aligned).
    pub control_bytes: usize,
    /// Distance between consecutive queues.
    pub queue_stride: usize,
    /// Offset of the sync lines.
    pub sync_offset: usize,
    /// Offset of queue 0.
    pub queues_offset: usize,
    /// Offset of the pair buffer (`shm::pair`): its turn lines, then its two
    /// halves; 0 when there is none.
    pub pair_offset: usize,
    /// Bytes of each half of the pair buffer, a whole number of pages; 0:
    /// no pair buffer.
    pub pair_half: usize,
    /// Size of the whole segment.
    pub total: usize,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LayoutError {
    TooFewProcesses,
    TooManyProcesses,
    TooFewSlots,
    FragmentTooSmall,
    TooLarge,
}

impl std::fmt::Display for LayoutError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let text = match self {
            LayoutError::TooFewProcesses => "fewer than 2 processes",
            LayoutError::TooManyProcesses => "more processes than sharm serves on one node",
            LayoutError::TooFewSlots => "queue_slots must be at least 2",
            LayoutError::FragmentTooSmall => "fragment_size must be at least 64 bytes",
            LayoutError::TooLarge => "segment size overflows",
        };
        f.write_str(text)
    }
}

impl Layout {
    /// Geometry for `p` processes, `s` slots of `f` bytes (`f` is rounded up
    /// to a whole number of cache lines so that every slot starts on one).
    pub fn new(p: usize, s: usize, f: usize) -> Result<Layout, LayoutError> {
        if p < 2 {
            return Err(LayoutError::TooFewProcesses);
        }
        if p > MAX_PROCS {
            return Err(LayoutError::TooManyProcesses);
        }
        if s < 2 {
            return Err(LayoutError::TooFewSlots);
        }
        if f < CACHE_LINE {
            return Err(LayoutError::FragmentTooSmall);
        }
        let f = round_up(f, CACHE_LINE);
        let control_bytes = round_up((s + p) * CACHE_LINE, PAGE);
        let data_bytes = s.checked_mul(f).ok_or(LayoutError::TooLarge)?;
        let queue_stride = control_bytes + round_up(data_bytes, PAGE);
        let sync_offset = PAGE;
        let queues_offset = sync_offset + round_up(p * CACHE_LINE, PAGE);
        let total = queue_stride
            .checked_mul(p)
            .and_then(|q| q.checked_add(queues_offset))
            .ok_or(LayoutError::TooLarge)?;
        Ok(Layout {
            p,
            s,
            f,
            control_bytes,
            queue_stride,
            sync_offset,
            queues_offset,
            pair_offset: 0,
            pair_half: 0,
            total,
        })
    }

    /// This geometry with a pair buffer of two halves of `half` bytes
    /// (rounded up to pages) after the queues, when there are exactly two
    /// processes and `half` > 0 (`shm::pair`); unchanged otherwise.
    pub fn with_pair(self, half: usize) -> Result<Layout, LayoutError> {
        if self.p != 2 || half == 0 {
            return Ok(self);
        }
        let half = half
            .checked_next_multiple_of(PAGE)
            .ok_or(LayoutError::TooLarge)?;
        let total = half
            .checked_mul(2)
            .and_then(|h| h.checked_add(PAGE))
            .and_then(|area| area.checked_add(self.total))
            .ok_or(LayoutError::TooLarge)?;
        Ok(Layout {
            pair_offset: self.total,
            pair_half: half,
            total,
            ..self
        })
    }

    /// Offset of the turn line of half `h` (0 or 1) of the pair buffer:
    /// two lines apart, so that the adjacent-line prefetcher, which fetches
    /// lines in aligned pairs, never couples them.
    pub fn pair_turn_line(&self, h: usize) -> usize {
        self.pair_offset + h * 2 * CACHE_LINE
    }
    /// Offset of process `r`'s stream line of the pair buffer (`Pair::
    /// stream`), after the turn lines and two lines apart like them.
    pub fn pair_stream_line(&self, r: usize) -> usize {
        self.pair_offset + (4 + 2 * r) * CACHE_LINE
    }
    /// Offset of half `h` (0 or 1) of the pair buffer.
    pub fn pair_half_data(&self, h: usize) -> usize {
        self.pair_offset + PAGE + h * self.pair_half
    }

    /// Offset of queue `w`.
    pub fn queue(&self, w: usize) -> usize {
        self.queues_offset + w * self.queue_stride
    }
    /// Offset of the header line of slot `k` of queue `w`.
    pub fn slot_header(&self, w: usize, k: usize) -> usize {
        self.queue(w) + k * CACHE_LINE
    }
    /// Offset of the line in which reader `r` acknowledges queue `w`.
    pub fn ack_line(&self, w: usize, r: usize) -> usize {
        self.queue(w) + (self.s + r) * CACHE_LINE
    }
    /// Offset of the data of slot `k` of queue `w`.
    pub fn slot_data(&self, w: usize, k: usize) -> usize {
        self.queue(w) + self.control_bytes + k * self.f
    }
    /// Offset of process `r`'s sync line.
    pub fn sync_line(&self, r: usize) -> usize {
        self.sync_offset + r * CACHE_LINE
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn auto_slots_reach_the_l2_within_the_budget() {
        const MIB: usize = 1 << 20;
        const GIB: u64 = 1 << 30;
        // A 1 MiB L2 with 8 KiB slots: 256 slots, a 2 MiB ring; at p = 16
        // that segment would pass 1/32 of the budget, so 128.
        assert_eq!(auto_slots(2, 8192, MIB, GIB), 256);
        assert_eq!(auto_slots(8, 8192, MIB, GIB), 256);
        assert_eq!(auto_slots(16, 8192, MIB, GIB), 128);
        // Never below the minimum, even when the L2 is small or unknown.
        assert_eq!(auto_slots(2, 8192, 0, GIB), AUTO_MIN_SLOTS);
        assert_eq!(auto_slots(2, 1 << 20, MIB, GIB), AUTO_MIN_SLOTS);
        // A 2 MiB L2: 512 slots; odd fragments are rounded to lines first.
        assert_eq!(auto_slots(2, 8192, 2 * MIB, GIB), 512);
        assert_eq!(auto_slots(2, 8200, MIB, GIB), 256, "8200 -> 8256");
        assert_eq!(auto_slots(2, 8000, MIB, GIB), 512, "256 x 8000 < 2 MiB");
        // Many processes: the segment stays within 1/32 of the budget.
        let s = auto_slots(64, 8192, MIB, GIB);
        assert_eq!(s, 32, "64 queues of 64 slots would be 33 MiB");
        assert!(
            Layout::new(32, auto_slots(32, 8192, MIB, GIB), 8192)
                .unwrap()
                .total as u64
                <= GIB / 32
        );
        // A small budget keeps the minimum; the cap bounds huge L2s.
        assert_eq!(auto_slots(2, 8192, MIB, 1), AUTO_MIN_SLOTS);
        assert_eq!(auto_slots(2, 64, 1 << 40, u64::MAX), AUTO_MAX_SLOTS);
    }

    #[test]
    fn a_pair_buffer_follows_the_queues_of_two_processes_only() {
        let two = Layout::new(2, 64, 8192).unwrap();
        let paired = two.with_pair(5000).unwrap();
        assert_eq!(paired.pair_half, 8192, "halves are whole pages");
        assert_eq!(paired.pair_offset, two.total);
        assert_eq!(paired.pair_offset % PAGE, 0);
        assert!(paired.pair_turn_line(1) + CACHE_LINE <= paired.pair_stream_line(0));
        assert_eq!(
            paired.pair_stream_line(0) - paired.pair_turn_line(1),
            2 * CACHE_LINE
        );
        assert!(paired.pair_stream_line(1) + CACHE_LINE <= paired.pair_half_data(0));
        assert_eq!(paired.pair_half_data(0) % PAGE, 0);
        assert_eq!(paired.pair_half_data(1), paired.pair_half_data(0) + 8192);
        assert_eq!(paired.pair_half_data(1) + 8192, paired.total);
        assert_eq!(two.with_pair(0).unwrap(), two);
        let three = Layout::new(3, 64, 8192).unwrap();
        assert_eq!(three.with_pair(1 << 20).unwrap(), three);
        assert_eq!(two.with_pair(usize::MAX), Err(LayoutError::TooLarge));
    }

    #[test]
    fn documented_example_size() {
        let l = Layout::new(8, 8, 8192).unwrap();
        assert_eq!(l.total, 4096 + 4096 + 8 * (4096 + 65536));
        let l = Layout::new(8, 256, 8192).unwrap();
        assert_eq!(l.total, 16_949_248);
    }

    #[test]
    fn regions_are_aligned_and_disjoint() {
        for &(p, s, f) in &[
            (2, 2, 64),
            (3, 8, 8192),
            (17, 5, 1000),
            (70, 8, 8192),
            (4096, 2, 64),
        ] {
            let l = Layout::new(p, s, f).unwrap();
            assert_eq!(l.f % CACHE_LINE, 0);
            assert!(l.f >= f);
            assert_eq!(l.queues_offset % PAGE, 0);
            assert_eq!(l.queue_stride % PAGE, 0);
            assert!(l.sync_line(p - 1) + CACHE_LINE <= l.queues_offset);
            for w in [0, p / 2, p - 1] {
                assert_eq!(l.slot_data(w, 0) % PAGE, 0);
                // Headers and acks fit in the control area, data fits in the queue.
                assert!(l.ack_line(w, p - 1) + CACHE_LINE <= l.queue(w) + l.control_bytes);
                assert!(l.slot_data(w, s - 1) + l.f <= l.queue(w) + l.queue_stride);
                assert!(l.slot_header(w, s - 1) < l.ack_line(w, 0));
            }
            assert_eq!(l.queue(p - 1) + l.queue_stride, l.total);
        }
    }

    #[test]
    fn rejects_bad_geometry() {
        assert_eq!(Layout::new(1, 8, 8192), Err(LayoutError::TooFewProcesses));
        assert_eq!(Layout::new(2, 1, 8192), Err(LayoutError::TooFewSlots));
        assert_eq!(Layout::new(2, 8, 8), Err(LayoutError::FragmentTooSmall));
        assert_eq!(
            Layout::new(MAX_PROCS + 1, 8, 8192),
            Err(LayoutError::TooManyProcesses)
        );
        assert_eq!(
            Layout::new(4, usize::MAX / 2, 8192),
            Err(LayoutError::TooLarge)
        );
    }
}
