//! How this process writes the fragments of large streams into its own
//! queue: with ordinary stores, or with non-temporal ones that go around
//! the caches to memory (`coll_sharm_nontemporal`).
//!
//! Why it is a choice, and why it is made while running: a reader copies a
//! fragment out of wherever its lines are.  Written with ordinary stores
//! they sit dirty in the writer's cache, and what each line costs then
//! depends on where the host placed the two cores.  On the development VM
//! (2026-11-25) the cross-core line round trip flips every few seconds
//! between ~75 ns and ~310 ns.  `bench/ring_copy.c` (writer core 0, reader
//! core 1, 32 KiB fragments) in the slow placement: 16 KiB / 64 KiB / 1 MiB
//! in 6.4 / 22.0 / 323 µs with ordinary stores, 1.5 / 5.4 / 49 µs with
//! non-temporal ones; in the fast placement within 3 % of each other up to
//! 128 KiB.  In the plugin (np=2, 8 launches, each classified by the line
//! round trip measured before and after it) non-temporal stores made every
//! operation of 16–128 KiB 3–4.5× faster in the slow placement, but in the
//! fast one exchanges and reductions 1.3–3× *slower* (both processes then
//! write and read memory at once: Allgather 256 KiB 21 → 38 µs, Reduce
//! 13 → 42).  Neither fixed choice is right, and the placement changes
//! under a running job, so `auto` watches it.
//!
//! The signal is this process's own ordinary copies into its queue: a
//! store to a slot line its reader still holds must first invalidate that
//! reader's copy, a cross-core round trip.  `ring_copy` timed the writer's
//! ordinary fill of 16 KiB / 64 KiB / 256 KiB at 14 / 13 / 15 GB/s in the
//! fast placement and 4.1 / 3.7 / 4.0 GB/s in the slow one; non-temporal
//! fills take the same time in both (they never touch the reader's lines),
//! so while they are used, one ordinary fill in `RECHECK_EVERY` is timed
//! to see whether the placement came back.  The choice is this writer's
//! alone: readers cannot tell how a fragment was written, so nothing has
//! to be agreed.
//!
//! From 4 KiB (`coll_sharm_nontemporal_min_size`): np=2, 40-60 launches
//! per setting, 8 and 12 KiB calls in the far placement took 4.1-7.7 us
//! with the floor at 16 KiB and 1.5-2.6 us at 8 KiB, 4 and 6 KiB calls
//! 2.4-3.6 us with the floor at 8 KiB and 1.1-1.5 us at 4 KiB; the fast
//! placement alike in both A/Bs.
//!
//! Ownership: a `Stores` belongs to one process's channel (`Shared`);
//! `Cell`s because fills happen through `&Shared` while its queues are
//! borrowed.

use std::cell::Cell;
use std::time::Instant;

use tracing::trace;

use crate::kernels::copy;
use crate::ompi::params::NontemporalMode;

/// An ordinary fill slower than this (bytes per ns = GB/s) counts as a sign
/// of far cores: between the 13–15 and 3.7–4.1 GB/s measured above, nearer
/// the slow side, so that a fill sharing the memory with its peer's (both
/// write and read at once in an exchange) is not taken for far cores.
const FAR_BELOW_GBPS: f64 = 5.5;
/// While non-temporal, a recheck must run at least this fast to go back to
/// ordinary stores: rechecks in the far placement ran 5-8 GB/s as often as
/// below 5.5 (np=2, Allgather and Bcast of 64/256 KiB, 2026-11-25 evening),
/// so with one threshold a launch switched back and forth up to 113 times,
/// each time paying ordinary stores until two slow samples came round again;
/// in the near placement ordinary fills ran at 9-36 GB/s.  With the cores
/// near, np=2, 10 and 12 launches: Bcast / Reduce / Allreduce 64 KiB
/// 3.84 / 3.95 / 6.78 -> 3.14 / 3.59 / 6.64 us, 256 KiB 21.7 / 11.3 / 19.5
/// -> 20.3 / 10.3 / 18.4 (fewer spells of non-temporal stores begun by one
/// unlucky pair of samples); far launches too few to tell (2 and 4).
const NEAR_FROM_GBPS: f64 = 9.0;
/// Fills shorter than this are not timed: two clock reads (~50 ns) would be
/// a noticeable part of them (a 4 KiB fill takes ~300 ns near, and one in
/// `SAMPLE_EVERY` is timed: the A/B above saw no difference), and a sample
/// of a few hundred ns says little.
const TIMED_MIN: usize = 4 << 10;
/// While the cores look near, one eligible fill in this many is timed (the
/// clock reads cost ~2 % of an 8 KiB fill that way).
const SAMPLE_EVERY: u32 = 4;
/// While they look far, one eligible fill in this many is ordinary and
/// timed, to notice that they are near again.
const RECHECK_EVERY: u32 = 32;
/// Slow samples in a row before switching to non-temporal stores (one slow
/// sample may be a preemption or an interrupt).
const SLOW_IN_A_ROW: u8 = 2;

/// What the last timed fills said.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Verdict {
    /// Non-temporal stores for eligible fills.
    pub far: bool,
    /// Slow samples seen in a row while near.
    slow: u8,
}

impl Verdict {
    /// The verdict after an ordinary fill of `bytes` took `ns` nanoseconds.
    pub fn after(self, bytes: usize, ns: f64) -> Verdict {
        let gbps = bytes as f64 / ns.max(1.0);
        if self.far {
            return if gbps >= NEAR_FROM_GBPS {
                Verdict::default()
            } else {
                self
            };
        }
        match gbps < FAR_BELOW_GBPS {
            false => Verdict::default(),
            true if self.slow + 1 >= SLOW_IN_A_ROW => Verdict { far: true, slow: 0 },
            true => Verdict {
                far: false,
                slow: self.slow + 1,
            },
        }
    }
}

/// One writer's store choice (see the module comment).
pub struct Stores {
    mode: NontemporalMode,
    /// Streams below this many bytes always use ordinary stores.
    min: usize,
    verdict: Cell<Verdict>,
    /// Eligible fills since the last timed one.
    since: Cell<u32>,
    /// The first non-temporal fill under `always` was said (verbose 100).
    said: Cell<bool>,
}

impl Stores {
    pub fn new(mode: NontemporalMode, min: usize) -> Stores {
        Stores {
            mode,
            min,
            verdict: Cell::new(Verdict::default()),
            since: Cell::new(0),
            said: Cell::new(false),
        }
    }

    /// Whether eligible fills use non-temporal stores now (for the tests:
    /// `fill` decides by itself).
    #[cfg(test)]
    pub fn far(&self) -> bool {
        match self.mode {
            NontemporalMode::Auto => self.verdict.get().far,
            NontemporalMode::Never => false,
            NontemporalMode::Always => true,
        }
    }

    /// Copies `len` bytes from `src` into our reserved slot `dst`, one
    /// fragment of a stream of `stream_bytes` bytes.
    ///
    /// # Safety
    /// `dst` is writable and `src` readable for `len` bytes, not
    /// overlapping.
    pub unsafe fn fill(&self, dst: *mut u8, src: *const u8, len: usize, stream_bytes: usize) {
        let eligible = stream_bytes >= self.min && self.mode != NontemporalMode::Never;
        if !eligible {
            // SAFETY: forwarded contract.
            return unsafe { std::ptr::copy_nonoverlapping(src, dst, len) };
        }
        if self.mode == NontemporalMode::Always {
            if !self.said.replace(true) {
                trace!("queue stores: non-temporal fills (coll_sharm_nontemporal always)");
            }
            // SAFETY: forwarded contract.
            return unsafe { streaming(dst, src, len) };
        }
        let verdict = self.verdict.get();
        let since = self.since.get() + 1;
        let every = if verdict.far {
            RECHECK_EVERY
        } else {
            SAMPLE_EVERY
        };
        if since < every || len < TIMED_MIN {
            self.since.set(since.min(every));
            // SAFETY: forwarded contract.
            return unsafe {
                if verdict.far {
                    streaming(dst, src, len)
                } else {
                    std::ptr::copy_nonoverlapping(src, dst, len)
                }
            };
        }
        self.since.set(0);
        let start = Instant::now();
        // SAFETY: forwarded contract.
        unsafe { std::ptr::copy_nonoverlapping(src, dst, len) };
        let ns = start.elapsed().as_nanos() as f64;
        let next = verdict.after(len, ns);
        if next.far != verdict.far {
            trace!(
                "queue stores: an ordinary fill of {len} bytes ran at {:.1} GB/s: {} from now on",
                len as f64 / ns.max(1.0),
                if next.far { "non-temporal" } else { "ordinary" }
            );
        }
        self.verdict.set(next);
    }
}

/// A non-temporal copy; `copy_streaming` ends with a store fence, so the
/// fragment is visible before the Release store that publishes it.
///
/// # Safety
/// As `Stores::fill`.
unsafe fn streaming(dst: *mut u8, src: *const u8, len: usize) {
    // SAFETY: forwarded contract.
    unsafe { copy::copy_streaming(dst, src, len) }
}

#[cfg(test)]
mod tests {
    use super::*;

    const K64: usize = 64 << 10;
    /// 64 KiB at 13 GB/s (near) and at 3.7 GB/s (far), in ns.
    const NEAR_NS: f64 = 5_000.0;
    const FAR_NS: f64 = 17_700.0;

    #[test]
    fn two_slow_fills_in_a_row_switch_to_nontemporal() {
        let v = Verdict::default().after(K64, FAR_NS);
        assert!(!v.far, "one slow sample may be a preemption");
        assert!(v.after(K64, FAR_NS).far);
        // A fast one in between starts the count again.
        assert!(!v.after(K64, NEAR_NS).after(K64, FAR_NS).far);
    }

    #[test]
    fn one_fast_recheck_switches_back() {
        let far = Verdict::default().after(K64, FAR_NS).after(K64, FAR_NS);
        assert!(far.after(K64, FAR_NS).far, "a slow recheck keeps it");
        assert_eq!(far.after(K64, NEAR_NS), Verdict::default());
    }

    /// 64 KiB at 7 GB/s: not slow enough to switch to non-temporal stores,
    /// not fast enough to switch back (no flapping around one threshold).
    #[test]
    fn rechecks_between_the_thresholds_keep_the_verdict() {
        const BETWEEN_NS: f64 = 65_536.0 / 7.0;
        let far = Verdict::default().after(K64, FAR_NS).after(K64, FAR_NS);
        assert!(far.after(K64, BETWEEN_NS).far);
        let near = Verdict::default();
        assert_eq!(near.after(K64, BETWEEN_NS), near);
        assert!(!near.after(K64, BETWEEN_NS).after(K64, BETWEEN_NS).far);
    }

    /// Whatever the mode and the verdict, a fill is a copy; `auto` switches
    /// after slow timed fills only (ordinary fills here are fast, so it
    /// never does), and a small stream is never non-temporal.
    #[test]
    fn fills_copy_in_every_mode() {
        let src: Vec<u8> = (0..K64).map(|i| (i * 13 + 1) as u8).collect();
        for mode in [
            NontemporalMode::Auto,
            NontemporalMode::Never,
            NontemporalMode::Always,
        ] {
            let stores = Stores::new(mode, 16 << 10);
            // One destination, touched first: a page fault in a timed fill
            // would look like far cores.
            let mut dst = vec![0u8; K64];
            for (len, stream) in [(100, 100), (8 << 10, 16 << 10), (K64 - 3, 1 << 20)] {
                for _ in 0..(2 * RECHECK_EVERY) {
                    dst.fill(0);
                    // SAFETY: both vectors hold `len` bytes.
                    unsafe { stores.fill(dst.as_mut_ptr(), src.as_ptr(), len, stream) };
                    assert_eq!(&dst[..len], &src[..len], "{mode:?} {len}");
                }
            }
            assert_eq!(stores.far(), mode == NontemporalMode::Always);
        }
    }
}
