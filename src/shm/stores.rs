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
//! so while they are used, one ordinary fill in `RECHECK_EVERY`, at most
//! one per `RECHECK_INTERVAL`, is timed to see whether the placement came
//! back.  The choice is this writer's alone: a reader copies a fragment
//! the same way however it was written (the slot header says how, for the
//! readers' timings below), so nothing has to be agreed.
//!
//! From 4 KiB (`coll_sharm_nontemporal_min_size`): np=2, 40-60 launches
//! per setting, 8 and 12 KiB calls in the far placement took 4.1-7.7 us
//! with the floor at 16 KiB and 1.5-2.6 us at 8 KiB, 4 and 6 KiB calls
//! 2.4-3.6 us with the floor at 8 KiB and 1.1-1.5 us at 4 KiB; the fast
//! placement alike in both A/Bs.
//!
//! The readers' side (`Reads`): with rings of twice the L2 a writer's fills
//! often no longer meet the reader's copies of a slot, so from 2026-11-25
//! the readers judge the placement too and report a far writer in their ack
//! line; a writer heeds the reports for streams up to 256 KiB, its own
//! timings for the rest (and, on a crowded node, where readers yield
//! instead of spinning and so time no header, for every stream).  The
//! readers first
//! timed their copies.  np=2, 24 launches each (21 with the cores near, 3
//! far): near the same within noise; far Allgather 64/256 KiB 14.6/59.8 ->
//! 8.1/31.6 us, Allreduce 256 KiB 87.5 -> 27.8, Alltoall 64/256 KiB
//! 13.2/52.3 -> 8.2/30.0, Bcast 256 KiB 38.0 -> 13.1, Reduce 256 KiB 25.0
//! -> 14.1.  Since 2026-11-27 they time how long a stamped header takes to
//! reach them instead (`Reads`): a copy's speed depends on the memory as
//! well as on the placement, a line's latency on the placement alone.
//!
//! `fills` (`coll_sharm_nontemporal fills`) is `auto` without the readers'
//! side.  It was made while their judgement rested on copy speeds, which
//! slow memory blurs: in the VM launch of 2026-11-26 night (memcpy of 64
//! MiB 4.8 GB/s against 15-49 in the states the thresholds were set in)
//! near cores' copies fell below the readers' 16 GB/s three times in a row
//! often enough that their reports made writers non-temporal with the
//! cores near.  np=2, 20 rounds
//! of alternated launches, each labelled near or far by the line round trip
//! probed before and after it (2026-11-27): with the cores near (12 launches
//! each) Allgather 64/256 KiB 15.6/70.6 -> 11.5/46.6 us, Alltoall 256 KiB
//! 84.0 -> 54.9, Allreduce 64/256 KiB 14.1/59.5 -> 9.9/41.0, Bcast 256 KiB
//! 23.6 -> 17.3, Reduce 256 KiB 29.2 -> 23.5 (24 cells of 16-256 KiB
//! Bcast, Reduce, Allreduce, Allgather, Gather and Alltoall: 0.65-1.03x, 0.80
//! in the median cell); with the cores far (5 and 4 launches) 0.80-1.21x,
//! 0.97 in the median cell (Gather 256 KiB 35.9 -> 43.6, Bcast 16 KiB 4.0 ->
//! 2.8).  The readers' reports had made the far placement's 64-256 KiB
//! exchanges 1.8-2.9x faster on 2026-11-25 (above), in a state with fast
//! memory, so `auto` stayed the default.  With the readers timing headers
//! instead (same VM launch, `docs/benchmark/2026-11-27-r-headers`) `fills`
//! took 0.93x `auto`'s time near and 1.12x far in the median cell, where
//! it had taken 0.90x near against the copy-timing readers.
//!
//! Short streams (4-16 KiB) followed the writer's own timings until
//! 2026-11-27 afternoon, since their fragments were too short for a stamp:
//! in that VM launch's slow-memory state (memcpy of 64 MiB at 3.6-5.2
//! GB/s) a near writer's 4-16 KiB fills ran below 5.5 GB/s often enough to
//! send them non-temporal with the cores near, where that cost up to 2.3x
//! (`coll_sharm_nontemporal_min_size 65536` against the default, near:
//! Bcast 4 KiB 1.21 -> 0.52 us, `docs/benchmark/2026-11-27-v-nontemporal-min`).
//! Now one short fragment in four carries a stamp (`queue::SHORT_STAMP_EVERY`,
//! the share of fills the writer used to time), and the readers' reports
//! speak for every stream up to 256 KiB.  Alternated launches against the
//! old rule, same VM launch (`docs/benchmark/2026-11-27-w-short-streams`),
//! new/old in the median 4-16 KiB cell: near 0.95 and 0.89 (5 and 1-2
//! launches each), far 1.02 (3 each), launches whose placement flipped
//! 0.66; 64-256 KiB near 1.00-1.02, far 0.94.  Against no non-temporal
//! stores below 64 KiB (`coll_sharm_nontemporal_min_size 65536`), `auto`
//! then took 1.01x the time near and 0.82x far at 4-16 KiB (median cell;
//! 3 / 5 and 2 / 3 launches), where near it had taken 1.1-2.3x before;
//! but near Bcasts of 4-16 KiB alone still took 1.13-1.34x (5 / 4
//! launches): their writers still go non-temporal at times, why is open.
//!
//! Acknowledgements (from 2026-11-27 evening): streams beyond
//! `REPORTS_ALONE_MAX` follow the latency of the acknowledgements their
//! writer spins for.  A reader stamps its acknowledgement of every large
//! fragment with its clock (`queue::AckStamp`); a writer that was spinning
//! on that line as it moved times it, as a reader times a header, and the
//! same thresholds and counts in a row turn it far or near.  Why: the
//! writer's own timings judge the memory as much as the placement.  On the
//! Zen 3 VM launch of that evening (memcpy of 64 MiB at 3.7-5.2 GB/s) a
//! 16 MiB Gather's sender, with the cores near (line round trip 111 ns),
//! timed its ordinary 32 KiB fills at 4.8-5.5 GB/s, mostly below the far
//! threshold, because the root's non-temporal landing of the same call
//! kept the memory busy; it went non-temporal, and the root then read the
//! stream from memory instead of the sender's cache.  `bench/ring_copy.c`
//! (16 MiB through 32 slots of 32 KiB, non-temporal reader, cores near)
//! took 1.46-1.53 ms with an ordinary writer and 2.20-2.30 with a
//! non-temporal one.  Readers' reports cannot stand in alone: a reader of
//! a large stream often trails its writer and times no header (see
//! `REPORTS_ALONE_MAX`); the writer of such a stream waits for its ring
//! instead, for the acknowledgements.  Paired np=2 (`bench/paired_ab.c`,
//! fresh data, 4 launches, each crossing between the placements), the old
//! choice's time over the new: Gather, Bcast, Reduce, Allreduce, Allgather,
//! Alltoall and Scatter of 16 MiB 1.20 in the median cell (0.99-1.51), 4
//! MiB 1.14 (0.94-1.77), 512 KiB 1.04 (0.64-2.07; `docs/benchmark/
//! 2026-11-27-af-acks`).
//!
//! Held-up times and the acknowledgements' thresholds (2026-11-27 night,
//! a new launch of the Zen 3 VM).  A time above about a microsecond
//! (`LINE_CEILING_NS`) is no sample at all: acknowledgements came in runs
//! of 1-48 µs there, a process held up between its clock read and its
//! store, and each counted as far, so four in a row turned writers
//! non-temporal with the cores near.  Without them the acknowledgements
//! of far cores took 250-380 ns, about half under the headers' 300 ns, so
//! an acknowledgement counts as far from 250 ns (`ACK_SHARE`).  A line
//! round trip timed before each block of calls (`RTT=1 paired_ab`), new
//! over old, median of the blocks of 3-8 launches: 1 MiB Gather 0.51 far
//! and 0.94 near, Reduce 0.65 far, Scatter 0.84 far and 0.87 near,
//! Allgather 0.80 far and 0.90 near; 4 MiB Bcast 0.92, Gather 0.90 and
//! Reduce 0.88 near, Allreduce 0.84 far; 16 MiB Allgather 0.65 far and 1.06
//! near; the rest 0.93-1.06, Reduce 4 MiB far 1.10 (12 blocks, one launch;
//! `docs/benchmark/2026-11-27-ah-ceiling`).
//!
//! Large streams hear both (2026-11-28): beyond `REPORTS_ALONE_MAX` a
//! writer goes non-temporal when a reader reports late headers or its
//! acknowledgements come late.  Why: with the cores far and ordinary
//! stores, the writer is the slow end (each store first takes the line
//! back from the reader's far core), so it seldom waits for its ring and
//! times few acknowledgements (np=2, 4 MiB Bcast, far: a root heard one in
//! 48 calls and stayed ordinary, 910-1110 us a call against 300-480 with
//! `always`), while its reader waits for every header and times them.
//! When the writer is ahead instead, the acknowledgements speak.  Paired
//! np=2 (`RTT=1 paired_ab`, 30 launches, 96-264 blocks per cell and
//! placement), new over old, median block: far 4 MiB Bcast 0.46, 1 MiB
//! Allgather 0.63, 4 MiB Gather 0.97, Alltoall 0.97, Reduce 1.02, 1 MiB
//! Reduce 1.01, 16 MiB Allgather 0.99; near 0.98-1.06 (1 MiB Allgather
//! 1.06, q1-q3 0.70-1.57).  In 6 more launches, far: 1 MiB Alltoall 0.62,
//! 16 MiB Bcast 0.79, 4 MiB Scatter 0.85, Allreduce 0.94
//! (`docs/benchmark/2026-11-28-a-large-reports`).
//!
//! Acknowledgements go stale (2026-11-28, later): what they said speaks
//! only while they keep coming, for `ACKS_KEPT_CALLS` calls after the last
//! one timed.  Why: a writer times only the acknowledgements it spins for
//! while its ring is full, and a stream that fits the ring (a 1 MiB Bcast
//! through the 1 MiB ring of 128 slots of 8 KiB) never fills it, so a far
//! verdict heard in the launch's first calls stayed for good.  With the
//! cores near that made every later 1 MiB Bcast non-temporal: np=2,
//! `sharm_bench --data reuse`, near launches, `auto` took 42-47 or 76-96
//! us, `never` 44-45 and `always` 80-107; at verbose 100 the slow launch's
//! root had heard its last acknowledgement (398 ns: far) before the
//! measured calls and none in its 400 calls after.  Once the
//! acknowledgements are stale, the readers' reports speak as they do for
//! shorter streams, and the writer's own fills while those are silent.
//! 30 alternated launches each, near: before, 6 of 17 at 87-112 us and the
//! rest at 44-51; after, 17 of 17 at 46-57
//! (`docs/benchmark/2026-11-28-c-stale-acks`).
//!
//! Ownership: a `Stores` belongs to one process's channel (`Shared`);
//! `Cell`s because fills happen through `&Shared` while its queues are
//! borrowed.

use std::cell::Cell;
use std::time::{Duration, Instant};

use tracing::trace;

use crate::kernels::copy;
use crate::ompi::params::NontemporalMode;
use crate::shm::queue::{SHORT_STAMPED_MIN, STAMPED_MIN};

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
/// While they look far, a recheck also waits until this long after the
/// last timed fill.
///
/// Why a time as well as a count: a recheck is an ordinary fill, and with
/// the cores far its reader takes each of its lines out of the far core's
/// cache (a 32 KiB fragment ~20 us more than non-temporal).  Counted alone,
/// one fill in `RECHECK_EVERY` put one recheck into every fourth 256 KiB
/// exchange of each process: np=2 with the cores far (line round trip
/// 310-350 ns), 6 launches each (2026-11-26 evening), Allgather / Allreduce
/// / Alltoall 256 KiB took 39.9 / 38.0 / 38.0 us against 31.9 / 29.8 / 30.2
/// with `always`, and with this interval 32.2 / 30.5 / 31.2 (10 ms: 32.1 /
/// 30.4 / 30.4); 64 KiB and Bcast / Reduce alike within 2 %, and with the
/// cores near every cell within 3 % (2 launches each).  The placement
/// changes every few seconds, so 2 ms later back to ordinary stores costs
/// little.
///
/// Not on a crowded node (`Stores::new`): there a fill is slow mostly
/// because its process lost the core halfway, not because of the cores'
/// placement, and a reader may well run on the writer's core; the count
/// alone ends such a verdict sooner.  (Oversubscribed runs spread too much
/// to show a difference either way: np=8 on 2 cores, Alltoall 64 KiB 720
/// / 739 us without / with the interval in one set of 6 launches, 754 /
/// 1069 in another of 5.)
const RECHECK_INTERVAL: Duration = Duration::from_millis(2);
/// Calls whose streams' fragments are all short (below `STAMPED_MIN`)
/// read the readers' reports once in this many.  The reports sit in the
/// readers' ack lines, which they write at every release: a look per call
/// would pull a line across the cores in every 4-16 KiB call (~100 ns near,
/// against 0.4-1.5 us for the call); and those reports change no faster,
/// since a reader reports after `HEADERS_LATE_IN_A_ROW` late headers and
/// only one short fragment in `queue::SHORT_STAMP_EVERY` carries a stamp.
const SHORT_CALLS_PER_READ: u32 = 16;
/// Slow samples in a row before switching to non-temporal stores (one slow
/// sample may be a preemption or an interrupt).
const SLOW_IN_A_ROW: u8 = 2;

/// What one timed sample says about the cores' placement: a sign of far
/// cores, of near ones, or neither (between two thresholds, so that the
/// verdict does not flap around one).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Sample {
    Far,
    Between,
    Near,
}

impl Sample {
    /// An ordinary fill of `bytes` that took `ns` nanoseconds.
    fn of_fill(bytes: usize, ns: f64) -> Sample {
        match gbps(bytes, ns) {
            g if g < FAR_BELOW_GBPS => Sample::Far,
            g if g >= NEAR_FROM_GBPS => Sample::Near,
            _ => Sample::Between,
        }
    }
}

/// What the last samples said (a writer's fills, or a reader's headers
/// from one writer): far after some far samples in a row, near again after
/// one near sample (in between, the verdict stays).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Verdict {
    /// The cores look far: non-temporal stores for eligible fills.
    pub far: bool,
    /// Far samples seen in a row while near.
    slow: u8,
}

impl Verdict {
    /// The verdict after an ordinary fill of `bytes` took `ns` nanoseconds.
    pub fn after(self, bytes: usize, ns: f64) -> Verdict {
        self.step(Sample::of_fill(bytes, ns), SLOW_IN_A_ROW)
    }

    /// The verdict after `sample`, turning far after `in_a_row` far ones.
    fn step(self, sample: Sample, in_a_row: u8) -> Verdict {
        if self.far {
            return if sample == Sample::Near {
                Verdict::default()
            } else {
                self
            };
        }
        match sample == Sample::Far {
            false => Verdict::default(),
            true if self.slow + 1 >= in_a_row => Verdict { far: true, slow: 0 },
            true => Verdict {
                far: false,
                slow: self.slow + 1,
            },
        }
    }
}

/// `bytes` copied in `ns` nanoseconds, in GB/s.
fn gbps(bytes: usize, ns: f64) -> f64 {
    bytes as f64 / ns.max(1.0)
}

/// One writer's store choice (see the module comment).
pub struct Stores {
    /// Our rank in the channel (for the trace).
    me: usize,
    mode: NontemporalMode,
    /// Streams below this many bytes always use ordinary stores.
    min: usize,
    verdict: Cell<Verdict>,
    /// Eligible fills since the last timed one.
    since: Cell<u32>,
    /// `RECHECK_INTERVAL`, or zero on a crowded node.
    recheck_interval: Duration,
    /// When the last timed fill began.
    last_timed: Cell<Option<Instant>>,
    /// The first non-temporal fill under `always` was said (verbose 100).
    said: Cell<bool>,
    /// The readers' reports speak for every stream, and alone for streams
    /// up to `REPORTS_ALONE_MAX` (`auto` on a node that is not crowded,
    /// where readers spin and so time headers).
    readers_judge: bool,
    /// What an acknowledgement's latency says (as a header's, `Reads`, at
    /// `ACK_SHARE` of its thresholds).
    latencies: Latencies,
    /// What the acknowledgements this writer spun for said, which speaks
    /// for streams beyond `REPORTS_ALONE_MAX` while they keep coming
    /// (`acks_quiet_for`; module comment, "Acknowledgements" and
    /// "Acknowledgements go stale").
    ack_verdict: Cell<Verdict>,
    /// While the acknowledgements speak, the calls begun since the last
    /// one was timed (past `ACKS_KEPT_CALLS` they go stale); None while
    /// they do not.
    acks_quiet_for: Cell<Option<u32>>,
    /// Calls begun (`new_call`) since the reports were last read; 0: read
    /// in this call already, or no call begun.
    calls_unread: Cell<u32>,
    /// A reader of this queue reported late headers (as last read).
    readers_far: Cell<bool>,
}

impl Stores {
    /// The stores of process `me`; `crowded`: every process of the channel
    /// runs crowded (`Shared::crowded`), and rechecks follow the count
    /// alone; `far_from`: `Params::nontemporal_far_latency_ns`.
    pub fn new(
        me: usize,
        mode: NontemporalMode,
        min: usize,
        crowded: bool,
        far_from: u32,
    ) -> Stores {
        Stores {
            me,
            mode,
            min,
            recheck_interval: if crowded {
                Duration::ZERO
            } else {
                RECHECK_INTERVAL
            },
            verdict: Cell::new(Verdict::default()),
            since: Cell::new(0),
            last_timed: Cell::new(None),
            said: Cell::new(false),
            readers_judge: mode == NontemporalMode::Auto && !crowded,
            latencies: Latencies::new(share(far_from, ACK_SHARE)),
            ack_verdict: Cell::new(Verdict::default()),
            acks_quiet_for: Cell::new(None),
            calls_unread: Cell::new(0),
            readers_far: Cell::new(false),
        }
    }

    /// An acknowledgement this writer spun for took `ns` ns to reach it
    /// (`queue::Writer::take_ack_latency`; 0: none was timed).  Only under
    /// `auto` on a node that is not crowded: a yielding wait would time the
    /// scheduler.
    pub fn heard_ack(&self, ns: u32) {
        if ns == 0 || !self.readers_judge {
            return;
        }
        let Some(sample) = self.latencies.sample(ns) else {
            return;
        };
        let was = self.ack_verdict.get();
        let now = was.step(sample, HEADERS_LATE_IN_A_ROW);
        self.ack_verdict.set(now);
        if self.acks_quiet_for.replace(Some(0)).is_none() {
            trace!(
                "queue stores of process {}: an acknowledgement took {ns} ns: streams over {} KiB {ACKS_SPEAK}",
                self.me,
                REPORTS_ALONE_MAX >> 10
            );
        }
        if now.far != was.far {
            trace!(
                "queue stores of process {}: an acknowledgement took {ns} ns: {}",
                self.me,
                if now.far {
                    "non-temporal from now on"
                } else {
                    "ordinary from now on"
                }
            );
        }
    }

    /// A collective call begins: its first fill that the readers' reports
    /// speak for reads them again, and acknowledgements not heard for
    /// `ACKS_KEPT_CALLS` calls stop speaking (module comment,
    /// "Acknowledgements go stale").
    pub fn new_call(&self) {
        self.calls_unread
            .set(self.calls_unread.get().saturating_add(1));
        if let Some(quiet) = self.acks_quiet_for.get().map(|calls| calls + 1) {
            self.acks_quiet_for.set(Some(quiet));
            if quiet > ACKS_KEPT_CALLS {
                // What they said is forgotten too: when they come again,
                // a far verdict takes a fresh run of late ones.
                self.acks_quiet_for.set(None);
                self.ack_verdict.set(Verdict::default());
                trace!(
                    "queue stores of process {}: {ACKS_STALE} {ACKS_KEPT_CALLS} calls: streams over {} KiB follow the readers' reports and this writer's fills again",
                    self.me,
                    REPORTS_ALONE_MAX >> 10
                );
            }
        }
    }

    /// Whether eligible fills of a stream of `stream_bytes` bytes use
    /// non-temporal stores now (for the tests: `fill` decides by itself).
    #[cfg(test)]
    pub fn far(&self, stream_bytes: usize) -> bool {
        self.settled(stream_bytes).unwrap_or(match self.mode {
            NontemporalMode::Auto | NontemporalMode::Fills => self.verdict.get().far,
            NontemporalMode::Never => false,
            NontemporalMode::Always => true,
        })
    }

    /// From how many bytes on our fragments carry a stamp for the readers
    /// (`queue::Writer::new`); None: they carry none (nothing but `auto`
    /// heeds them).  Short fragments are stamped from the size non-temporal
    /// stores start at (`min`), but not below `SHORT_STAMPED_MIN`; from
    /// `STAMPED_MIN` on, every fragment is, whatever `min` says, since it
    /// may belong to a longer stream.
    pub fn stamp_from(&self) -> Option<usize> {
        (self.mode == NontemporalMode::Auto).then(|| self.min.clamp(SHORT_STAMPED_MIN, STAMPED_MIN))
    }

    /// Whether a stream of `stream_bytes` bytes is far by the lines'
    /// latencies, when they decide it (`auto` on a node that is not
    /// crowded): up to `REPORTS_ALONE_MAX` the readers' reports (as last
    /// read); beyond, far when either a reader reports late headers or the
    /// acknowledgements came late, near when neither, once either spoke
    /// (module comment, "Large streams hear both"; the acknowledgements
    /// only while they keep coming).  None: the writer's own timings
    /// decide.
    #[inline]
    fn settled(&self, stream_bytes: usize) -> Option<bool> {
        if !self.readers_judge {
            return None;
        }
        let reported = self.readers_far.get();
        if stream_bytes <= REPORTS_ALONE_MAX {
            Some(reported)
        } else if reported || self.acks_quiet_for.get().is_some() {
            Some(reported || self.ack_verdict.get().far)
        } else {
            None
        }
    }

    /// Whether fragments of a stream of `stream_bytes` bytes may be written
    /// non-temporally at all; the others always take ordinary stores.
    #[inline]
    pub fn eligible(&self, stream_bytes: usize) -> bool {
        stream_bytes >= self.min && self.mode != NontemporalMode::Never
    }

    /// Whether, while the cores look far, the recheck interval has passed
    /// since the last timed fill.
    fn recheck_due(&self) -> bool {
        self.last_timed
            .get()
            .is_none_or(|t| t.elapsed() >= self.recheck_interval)
    }

    /// Copies `len` bytes from `src` into our reserved slot `dst`, one
    /// fragment of a stream of `stream_bytes` bytes, and, when `also` is
    /// given, to `also` too (ordinary stores, in the same pass when the slot
    /// takes ordinary ones: `copy::copy_twice`); returns whether the slot
    /// took non-temporal stores.  `readers_far` says whether a reader of our
    /// queue reported late headers lately; under `auto` it is asked at a
    /// call's first fill of a long fragment (`STAMPED_MIN`), or of a short
    /// one once in `SHORT_CALLS_PER_READ` calls.
    ///
    /// # Safety
    /// `dst` (and `also`) writable and `src` readable for `len` bytes, none
    /// overlapping.
    pub unsafe fn fill(
        &self,
        dst: *mut u8,
        also: Option<*mut u8>,
        src: *const u8,
        len: usize,
        stream_bytes: usize,
        readers_far: impl FnOnce() -> bool,
    ) -> bool {
        // SAFETY (both): forwarded contract.
        let ordinary = || unsafe {
            match also {
                Some(also) => copy::copy_twice(dst, also, src, len),
                None => copy::copy(dst, src, len),
            }
        };
        let nontemporal = || unsafe {
            streaming(dst, src, len);
            if let Some(also) = also {
                copy::copy(also, src, len);
            }
        };
        if !self.eligible(stream_bytes) {
            ordinary();
            return false;
        }
        if self.mode == NontemporalMode::Always {
            if !self.said.replace(true) {
                trace!("queue stores: non-temporal fills (coll_sharm_nontemporal always)");
            }
            nontemporal();
            return true;
        }
        // Under `auto` on a node that is not crowded, the readers' reports
        // speak for every stream (`settled`): they are read at the call's
        // first fill (of a short fragment, one call in
        // `SHORT_CALLS_PER_READ`).
        if self.readers_judge {
            // Not read yet in this call: at its first long fragment, or at
            // a short one once enough calls went by.  (A short fill must not
            // use up the call's read: a long fragment after it in the same
            // call would then not look.)
            let unread = self.calls_unread.get();
            if unread > 0 && (len >= STAMPED_MIN || unread >= SHORT_CALLS_PER_READ) {
                self.calls_unread.set(0);
                self.read_reports(readers_far());
            }
        }
        // Those reports, and for larger streams the acknowledgements'
        // latencies once there were some (`settled`).
        if let Some(far) = self.settled(stream_bytes) {
            if far {
                nontemporal();
            } else {
                ordinary();
            }
            return far;
        }
        // The rest (and under `fills` every fragment) follow this writer's
        // own timings.
        let verdict = self.verdict.get();
        let far = verdict.far;
        let since = self.since.get() + 1;
        let every = if far { RECHECK_EVERY } else { SAMPLE_EVERY };
        if since < every || len < TIMED_MIN || (far && !self.recheck_due()) {
            self.since.set(since.min(every));
            if far {
                nontemporal();
            } else {
                ordinary();
            }
            return far;
        }
        // An ordinary fill, timed; while non-temporal, it is also the
        // readers' chance to time an ordinary fragment again.  The timing
        // covers the slot's copy alone (`also` follows it), so that a
        // second destination does not read as slow stores.
        self.since.set(0);
        let start = Instant::now();
        self.last_timed.set(Some(start));
        // SAFETY: forwarded contract.
        unsafe { copy::copy(dst, src, len) };
        let ns = start.elapsed().as_nanos() as f64;
        if let Some(also) = also {
            // SAFETY: forwarded contract.
            unsafe { copy::copy(also, src, len) };
        }
        let next = verdict.after(len, ns);
        if next.far != verdict.far {
            trace!(
                "queue stores: an ordinary fill of {len} bytes ran at {:.1} GB/s: {} from now on",
                gbps(len, ns),
                if next.far { "non-temporal" } else { "ordinary" }
            );
        }
        self.verdict.set(next);
        false
    }

    /// Takes the readers' reports as read (`far`: one of them reported
    /// late headers lately).
    fn read_reports(&self, far: bool) {
        if far != self.readers_far.replace(far) {
            trace!(
                "queue stores of process {}: {}",
                self.me,
                if far {
                    "a reader's headers came late: non-temporal from now on"
                } else {
                    "the readers' headers come early again"
                }
            );
        }
    }
}

/// A header that reaches its waiting reader `far_from` ns after its
/// writer's stamp or later (`coll_sharm_nontemporal_far_latency`, by
/// default `DEFAULT_FAR_LATENCY_NS`) counts as a sign that the writer's
/// core is far; one in less than this share of it as a sign that it is
/// near (a far pair of cores cannot pass a line that fast, so one such
/// header withdraws a report).
const NEAR_SHARE: (u32, u32) = (2, 3);

/// What a line's latency says of the cores' placement: a header reaching
/// its waiting reader (`Reads`) or an acknowledgement reaching its waiting
/// writer (`Stores::heard_ack`) this long after its stamp.  One pair of
/// thresholds for both, from `coll_sharm_nontemporal_far_latency`.
#[derive(Clone, Copy, Debug)]
struct Latencies {
    /// This late (ns) or later: a sign of far cores ...
    far_from: u32,
    /// ... and earlier than this (`NEAR_SHARE` of `far_from`): of near
    /// ones; worked out once here rather than per sample.
    near_below: u32,
    /// Later than this, a time says nothing of the line (`sample`).
    ceiling: u32,
}

/// A line's time above this many ns (or `CEILING_SHARE` times the far
/// threshold, if that is more) was not the line's: the stamping process
/// was held up between its clock read and its store, or the waiting one
/// after its load (an interrupt, the scheduler, or the hypervisor taking
/// the vCPU away).  On the Zen 3 VM launch of 2026-11-27 night such times
/// came in runs (9.6, 21.7, 18.6, 14.6 µs ... for acknowledgements that
/// otherwise took 270-380 ns), and counted as far they turned writers
/// non-temporal with the cores near.  The slowest far pairs seen here pass
/// a line in about 550 ns one way (a round trip of 1.1 µs).
const LINE_CEILING_NS: u32 = 1_000;
/// See `LINE_CEILING_NS`.
const CEILING_SHARE: u32 = 4;

/// An acknowledgement counts as far from this share of the headers' far
/// threshold (250 ns of 300), and as near below two thirds of that.  On
/// the Zen 3 VM's night launch of 2026-11-27, with the cores far (a line
/// round trip of 420-530 ns), the acknowledgements writers spun for took
/// 250-380 ns, about half of them under 300: four in a row at 300 or later
/// came rarely, and np=2 Bcast of 4 MiB under `auto` took 2.3-2.6x the
/// time of non-temporal stores.  With the cores near (90-140 ns) they
/// took 70-230 ns, mostly.  Headers keep the full threshold: the readers'
/// reports were measured at 300 ns (see `Reads`).
const ACK_SHARE: (u32, u32) = (5, 6);

/// `share` (numerator, denominator) of `ns`, rounded down.
fn share(ns: u32, (num, den): (u32, u32)) -> u32 {
    (ns as u64 * num as u64 / den as u64) as u32
}

impl Latencies {
    fn new(far_from: u32) -> Latencies {
        Latencies {
            far_from,
            near_below: share(far_from, NEAR_SHARE),
            ceiling: LINE_CEILING_NS.max(far_from.saturating_mul(CEILING_SHARE)),
        }
    }

    /// A line that came `ns` after its stamp; None when that time cannot
    /// have been the line's (`LINE_CEILING_NS`): no sample, and the
    /// samples in a row before it still count.
    fn sample(self, ns: u32) -> Option<Sample> {
        match ns {
            ns if ns > self.ceiling => None,
            ns if ns >= self.far_from => Some(Sample::Far),
            ns if ns < self.near_below => Some(Sample::Near),
            _ => Some(Sample::Between),
        }
    }
}

/// Late headers in a row before a reader reports (a late one may be a
/// preemption, an interrupt, or a wait that was driving Open MPI's progress
/// engine when the header came; with the cores near, about one in ten
/// came 300 ns late or more, see `Reads`).
const HEADERS_LATE_IN_A_ROW: u8 = 4;
/// Fragments of streams up to this size follow their readers' reports
/// alone; larger ones follow the reports and the latencies of the
/// acknowledgements their writer waits for, far when either says so
/// (module comment, "Acknowledgements" and "Large streams hear both"), or
/// the writer's own fills while neither has spoken.  Why not the reports
/// alone: a reader of a large stream often trails its writer, finds each
/// header published when it looks, and so times none (reports alone for
/// every size, paired np=2, 2026-11-27 evening: Allgather 4 / 16 MiB
/// 1.19-1.37x the time in three launches of four).
pub const REPORTS_ALONE_MAX: usize = 256 << 10;
/// Acknowledgements speak for this many calls after the last one timed
/// (module comment, "Acknowledgements go stale").  Eight: a writer that
/// waits for its ring hears them in every call of such streams, and one
/// that stopped waiting lets the readers' reports or its own fills decide
/// within a few calls of a millisecond each at 1 MiB.
pub const ACKS_KEPT_CALLS: u32 = 8;
/// What the trace says when a writer's acknowledgements begin to speak
/// (again, after going stale), and how it begins when they go stale
/// (verbose 100; tests look for both).
pub const ACKS_SPEAK: &str = "follow the acknowledgements as well while they keep coming";
pub const ACKS_STALE: &str = "no acknowledgement timed in";
/// A writer heeds reports about its last this many publications only (a
/// reader that stopped reading its queue cannot keep it non-temporal).
pub const REPORTS_KEPT: u64 = 4096;
/// Readers' reports a writer looks at per call (a window that moves on
/// with every call, so p-1 readers are all seen within (p-1)/4 calls).
pub const REPORTS_LOOKED_AT: usize = 4;

/// The reading half: this process notes how long the stamped headers of
/// other processes' queues took to reach it while it waited for them, and
/// tells each writer, through its ack line, when they came late.
///
/// Why the reader, and why a header's latency: the cost non-temporal stores
/// avoid is the reader's (it takes the lines out of a far core's cache),
/// and it depends on where the host placed the two cores, which the time a
/// line takes from one core to the other shows directly.  The readers used
/// to time their copies instead (until 2026-11-27), but a copy's speed
/// depends on the memory too: in a VM launch whose memory was slow against
/// its caches (memcpy of 64 MiB at 4.8 GB/s) near cores' copies fell below
/// the far threshold often enough that writers went non-temporal with the
/// cores near, and `never` took 0.59-0.94x `auto`'s time.
///
/// What a header's latency is here: the writer's clock as it begins its
/// publication's stores to the header line, against the reader's clock once
/// its spin sees them; the writer must first take the line from the
/// spinning reader (behind whatever of the fragment's own stores are still
/// draining), which must then fetch it back.  The same
/// VM launch (line round trip 90-120 ns near, 420-510 far), np=2, Bcast,
/// Reduce, Gather, Allgather and Alltoall of 64 and 256 KiB, 1,400-7,000
/// waited-for headers per process and launch: near (16 launches) 1st /
/// 10th / 50th / 90th percentiles 80-110 / 100-130 / 110-220 / 150-540 ns;
/// far (5 launches) 270-300 / 290-310 / 330-600 / 510-940 ns.  Counting
/// only headers that came while the reader spun (`Arrival::Spinning`, not
/// right after a call of the progress engine) left the near tail where it
/// was (7 launches with Allreduce added: 90-120 / 110-140 / 130-200 /
/// 200-310 ns), so it is the line's, not the wait's.  Hence far from 300
/// ns, four in a row (near, about one header in ten came that late), and
/// near below 200 (`NEAR_SHARE`): no far header came under 270.  Until
/// 2026-11-27 midday the stamp was stored before the publication, and a
/// spinning reader could take the line back in between; stamping in the
/// publication did not tighten the tail (alternated launches of the two
/// builds, near: 90th percentile 200-330 ns over 14 processes against
/// 180-320 over 10; far, one launch: 10th / 50th / 90th 310 / 370 /
/// 690-770 ns), so the tail is not that extra transfer.  The two
/// states may sit elsewhere on other hosts
/// (`coll_sharm_nontemporal_far_latency`).
///
/// Ownership: one per channel (`Shared`), one verdict per writer.
pub struct Reads {
    mode: NontemporalMode,
    /// What a header's latency says of its writer's core.
    latencies: Latencies,
    per_writer: Vec<Cell<Verdict>>,
}

impl Reads {
    /// `far_from`: `Params::nontemporal_far_latency_ns`.
    pub fn new(mode: NontemporalMode, far_from: u32, p: usize) -> Reads {
        Reads {
            mode,
            latencies: Latencies::new(far_from),
            per_writer: vec![Cell::new(Verdict::default()); p],
        }
    }

    /// After a header of writer `w`, published as `wseq`, reached us `ns`
    /// after its stamp (`Incoming::latency_ns`; 0: not measured): the
    /// value to report in our ack line of `w`'s queue, if any (`wseq` for
    /// far, renewed at each late header; 0 for near again).  Only under
    /// `auto`.
    pub fn heard(&self, w: usize, ns: u32, wseq: u64) -> Option<u64> {
        if self.mode != NontemporalMode::Auto || ns == 0 {
            return None;
        }
        let sample = self.latencies.sample(ns)?;
        let cell = &self.per_writer[w];
        let was = cell.get();
        let now = was.step(sample, HEADERS_LATE_IN_A_ROW);
        cell.set(now);
        let report = match (was.far, now.far) {
            (false, true) => Some(wseq),
            (true, false) => Some(0),
            (true, true) => (sample == Sample::Far).then_some(wseq),
            (false, false) => None,
        };
        if was.far != now.far {
            trace!(
                "queue reads: a header from process {w} took {ns} ns: {}",
                if now.far {
                    "asking it for non-temporal stores"
                } else {
                    "withdrawing the request"
                }
            );
        }
        report
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

    const FAR: u32 = crate::ompi::params::DEFAULT_FAR_LATENCY_NS;

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
            NontemporalMode::Fills,
        ] {
            let stores = Stores::new(0, mode, 16 << 10, false, FAR);
            // One destination, touched first: a page fault in a timed fill
            // would look like far cores.
            let mut dst = vec![0u8; K64];
            for (len, stream) in [(100, 100), (8 << 10, 16 << 10), (K64 - 3, 1 << 20)] {
                for _ in 0..(2 * RECHECK_EVERY) {
                    dst.fill(0);
                    // SAFETY: both vectors hold `len` bytes.
                    unsafe {
                        stores.fill(dst.as_mut_ptr(), None, src.as_ptr(), len, stream, || false)
                    };
                    assert_eq!(&dst[..len], &src[..len], "{mode:?} {len}");
                }
            }
            for stream in [16 << 10, 1 << 20] {
                assert_eq!(stores.far(stream), mode == NontemporalMode::Always);
            }
        }
    }

    /// One fill of a `len`-byte fragment of a stream of `stream` bytes
    /// through `stores`, into a buffer of its own; whether it was
    /// non-temporal.  For fills that are not timed (a timed one would
    /// count the new buffer's page faults).
    fn fill_one(
        stores: &Stores,
        len: usize,
        stream: usize,
        readers_far: impl FnOnce() -> bool,
    ) -> bool {
        let (src, mut dst) = (vec![7u8; len], vec![0u8; len]);
        // SAFETY: both vectors hold `len` bytes.
        unsafe {
            stores.fill(
                dst.as_mut_ptr(),
                None,
                src.as_ptr(),
                len,
                stream,
                readers_far,
            )
        }
    }

    /// Stores whose verdict is far (`crowded` as `Stores::new`), and a fill
    /// of a 64 KiB fragment of a 1 MiB stream through them (whether it was
    /// non-temporal).
    fn far_stores(crowded: bool) -> (Stores, impl Fn(&Stores) -> bool) {
        let stores = Stores::new(0, NontemporalMode::Auto, 4 << 10, crowded, FAR);
        stores.verdict.set(Verdict { far: true, slow: 0 });
        let (src, dst) = (vec![3u8; K64], Cell::new(vec![0u8; K64]));
        let fill = move |stores: &Stores| {
            let mut to = dst.take();
            // SAFETY: both vectors hold K64 bytes.
            let nontemporal =
                unsafe { stores.fill(to.as_mut_ptr(), None, src.as_ptr(), K64, 1 << 20, || false) };
            dst.set(to);
            nontemporal
        };
        (stores, fill)
    }

    /// While far, a recheck (an ordinary, timed fill) comes after
    /// `RECHECK_EVERY` fills only once `RECHECK_INTERVAL` has passed since
    /// the last timed fill, and then at once.
    #[test]
    fn rechecks_wait_for_the_interval() {
        let (stores, fill) = far_stores(false);
        // The last timed fill "now" (an hour ahead: never due in this test).
        stores
            .last_timed
            .set(Instant::now().checked_add(Duration::from_secs(3600)));
        assert!(
            (0..2 * RECHECK_EVERY).all(|_| fill(&stores)),
            "no recheck within the interval"
        );
        // The interval passed long ago: the next fill is the recheck.
        stores
            .last_timed
            .set(Instant::now().checked_sub(Duration::from_secs(1)));
        assert!(!fill(&stores), "the recheck is an ordinary fill");
        assert!(stores.last_timed.get().unwrap().elapsed() < Duration::from_secs(1));
    }

    /// On a crowded node the count alone decides: the recheck comes at the
    /// `RECHECK_EVERY`-th fill however recent the last timed one.
    #[test]
    fn crowded_rechecks_follow_the_count() {
        let (stores, fill) = far_stores(true);
        stores.last_timed.set(Some(Instant::now()));
        let ordinary = (1..=RECHECK_EVERY).filter(|_| !fill(&stores)).count();
        assert_eq!(ordinary, 1, "one recheck in RECHECK_EVERY fills");
    }

    /// A reader reports a writer after `HEADERS_LATE_IN_A_ROW` late headers
    /// in a row, renews the report while they stay late, keeps it through
    /// headers between the thresholds, and withdraws it on an early one;
    /// unmeasured headers (0) change nothing, and only `auto` listens.
    #[test]
    fn reads_report_late_headers_and_withdraw() {
        // With the far threshold at 300 ns, near is below 200.
        let (early, between, late) = (199, 200, 300);
        let reads = Reads::new(NontemporalMode::Auto, 300, 2);
        let in_a_row = HEADERS_LATE_IN_A_ROW as u64;
        for wseq in 1..in_a_row {
            assert_eq!(
                reads.heard(1, late, wseq),
                None,
                "late {wseq} of {in_a_row}"
            );
        }
        assert_eq!(reads.heard(1, 0, 50), None, "not measured");
        assert_eq!(
            reads.heard(1, late, 60),
            Some(60),
            "the last late one in a row"
        );
        assert_eq!(reads.heard(1, late, 61), Some(61), "renewed");
        assert_eq!(reads.heard(1, between, 62), None, "kept, not renewed");
        assert_eq!(reads.heard(1, early, 63), Some(0), "withdrawn");
        assert_eq!(reads.heard(1, early, 64), None);
        // An early header in between starts the count again.
        for wseq in 1..in_a_row {
            assert_eq!(reads.heard(1, late, 100 + wseq), None);
        }
        assert_eq!(reads.heard(1, early, 200), None);
        assert_eq!(reads.heard(1, late, 201), None, "counting again");
        // Writer 0's verdict is its own.
        assert_eq!(reads.heard(0, early, 1), None);
        for mode in [
            NontemporalMode::Never,
            NontemporalMode::Always,
            NontemporalMode::Fills,
        ] {
            let other = Reads::new(mode, 300, 2);
            assert!((1..10).all(|wseq| other.heard(1, late, wseq).is_none()));
        }
    }

    /// Under `auto`, the readers' reports alone decide for every fragment
    /// of streams up to `REPORTS_ALONE_MAX`, short ones included (asked
    /// once per call), and a far report speaks for longer streams too; with
    /// the reports withdrawn and no acknowledgement timed, the writer's own
    /// timings decide those.
    #[test]
    fn readers_reports_steer_the_streams_they_judge() {
        let stores = Stores::new(0, NontemporalMode::Auto, 4 << 10, false, FAR);
        stores.new_call();
        let asked = Cell::new(0);
        let far = || {
            asked.set(asked.get() + 1);
            true
        };
        let fill = |len: usize, stream: usize| fill_one(&stores, len, stream, far);
        assert!(fill(32 << 10, 256 << 10), "judged: non-temporal");
        assert!(fill(32 << 10, 256 << 10));
        assert!(fill(4 << 10, 8 << 10), "short fragments too");
        assert!(fill(32 << 10, 1 << 20), "longer streams too");
        assert_eq!(asked.get(), 1, "once per call");
        // Far by its own timings: that no longer decides judged streams.
        stores.verdict.set(Verdict { far: true, slow: 0 });
        stores.new_call();
        assert!(
            !fill_one(&stores, K64, K64 * 2, || false),
            "withdrawn reports: ordinary"
        );
        assert!(stores.far(1 << 20), "its own verdict for longer streams");
    }

    /// Streams beyond `REPORTS_ALONE_MAX` follow the latencies of the
    /// acknowledgements their writer spun for once one was timed: far after
    /// `HEADERS_LATE_IN_A_ROW` late ones, near again after one early one.
    /// The streams the readers judge do not listen to them, and crowded
    /// writers and `fills` ignore them.
    #[test]
    fn acknowledgements_steer_the_longer_streams() {
        const LONG: usize = 1 << 20;
        let stores = Stores::new(0, NontemporalMode::Auto, 4 << 10, false, FAR);
        stores.verdict.set(Verdict { far: true, slow: 0 });
        assert!(stores.far(LONG), "no acknowledgement timed: its own fills");
        stores.heard_ack(0);
        assert!(stores.far(LONG), "0: nothing was timed");
        stores.heard_ack(FAR / 3);
        assert!(!stores.far(LONG), "an early acknowledgement");
        for _ in 1..HEADERS_LATE_IN_A_ROW {
            stores.heard_ack(FAR);
        }
        assert!(!stores.far(LONG), "one late acknowledgement short");
        stores.heard_ack(FAR);
        assert!(stores.far(LONG));
        stores.new_call();
        let fill = |stream: usize| fill_one(&stores, K64, stream, || false);
        assert!(fill(LONG), "late acknowledgements: non-temporal");
        assert!(
            !fill(2 * K64),
            "the readers' reports (none) for judged streams"
        );
        stores.heard_ack(FAR / 3);
        assert!(!fill(LONG), "an early one: ordinary again");
        for (mode, crowded) in [
            (NontemporalMode::Auto, true),
            (NontemporalMode::Fills, false),
        ] {
            let stores = Stores::new(0, mode, 4 << 10, crowded, FAR);
            for _ in 0..2 * HEADERS_LATE_IN_A_ROW {
                stores.heard_ack(2 * FAR);
            }
            assert!(!stores.far(LONG), "{mode:?}, crowded {crowded}");
        }
    }

    /// Acknowledgements speak only while they keep coming: after
    /// `ACKS_KEPT_CALLS` calls without one the readers' reports (or the
    /// writer's own fills) decide the longer streams again, and a far
    /// verdict then takes a fresh run of late acknowledgements.  One timed
    /// within the window keeps them speaking.
    #[test]
    fn acknowledgements_go_stale_after_calls_without_one() {
        const LONG: usize = 1 << 20;
        let stores = Stores::new(0, NontemporalMode::Auto, 4 << 10, false, FAR);
        let late_run = |stores: &Stores| {
            for _ in 0..HEADERS_LATE_IN_A_ROW {
                stores.heard_ack(FAR);
            }
        };
        late_run(&stores);
        for _ in 0..ACKS_KEPT_CALLS {
            stores.new_call();
        }
        assert!(stores.far(LONG), "still within the window");
        stores.heard_ack(FAR);
        for _ in 0..ACKS_KEPT_CALLS {
            stores.new_call();
        }
        assert!(stores.far(LONG), "one timed ack renewed the window");
        stores.new_call();
        assert!(!stores.far(LONG), "stale: the writer's own fills (near)");
        stores.new_call();
        assert!(
            fill_one(&stores, K64, LONG, || true),
            "stale acknowledgements, a reader's report: far"
        );
        stores.new_call();
        assert!(
            !fill_one(&stores, K64, LONG, || false),
            "stale acknowledgements, the report withdrawn: near"
        );
        stores.heard_ack(FAR);
        assert!(
            !stores.far(LONG),
            "one late one after going stale is short of a run"
        );
        late_run(&stores);
        assert!(stores.far(LONG), "a fresh run");
    }

    /// Beyond `REPORTS_ALONE_MAX` a stream is far when a reader reports
    /// late headers or the acknowledgements came late, whichever spoke
    /// (module comment, "Large streams hear both"), and near only when
    /// neither says far: with the cores far and ordinary stores, the writer
    /// seldom spins for an acknowledgement, while its reader waits for
    /// every header.
    #[test]
    fn large_streams_are_far_when_reports_or_acknowledgements_say_so() {
        const LONG: usize = 1 << 20;
        let stores = Stores::new(0, NontemporalMode::Auto, 4 << 10, false, FAR);
        let fill = |stores: &Stores, reported: bool| {
            stores.new_call();
            fill_one(stores, K64, LONG, || reported)
        };
        assert!(fill(&stores, true), "a report, no acknowledgement timed");
        stores.heard_ack(FAR / 3);
        assert!(fill(&stores, true), "a report, early acknowledgements");
        assert!(!fill(&stores, false), "neither says far");
        for _ in 0..HEADERS_LATE_IN_A_ROW {
            stores.heard_ack(FAR);
        }
        assert!(fill(&stores, false), "late acknowledgements, no report");
        assert!(fill(&stores, true), "both");

        // Neither spoke: the writer's own fills, whatever they say.
        let own = Stores::new(0, NontemporalMode::Auto, 4 << 10, false, FAR);
        own.verdict.set(Verdict { far: true, slow: 0 });
        assert!(fill(&own, false), "its own fills' far verdict");
        // Crowded writers and `fills` never read the reports.
        for (mode, crowded) in [
            (NontemporalMode::Auto, true),
            (NontemporalMode::Fills, false),
        ] {
            let deaf = Stores::new(0, mode, 4 << 10, crowded, FAR);
            assert!(!fill(&deaf, true), "{mode:?}, crowded {crowded}");
        }
    }

    /// A time above the ceiling was not a line's (a process held up between
    /// its clock read and its store): it neither counts towards the late
    /// ones in a row nor breaks them, for acknowledgements and headers
    /// alike; a ceiling follows a far threshold set above a quarter of it.
    #[test]
    fn times_above_the_ceiling_are_no_samples() {
        const LONG: usize = 1 << 20;
        let held_up = Latencies::new(FAR).ceiling + 1;
        let stores = Stores::new(0, NontemporalMode::Auto, 4 << 10, false, FAR);
        for _ in 0..2 * HEADERS_LATE_IN_A_ROW {
            stores.heard_ack(held_up);
        }
        assert!(
            stores.acks_quiet_for.get().is_none(),
            "held-up times alone: still the writer's own fills"
        );
        for _ in 1..HEADERS_LATE_IN_A_ROW {
            stores.heard_ack(FAR);
            stores.heard_ack(20_000);
        }
        assert!(!stores.far(LONG), "one late acknowledgement short");
        stores.heard_ack(FAR);
        assert!(stores.far(LONG), "the held-up times did not break the row");
        stores.heard_ack(u32::MAX);
        assert!(stores.far(LONG), "nor do they withdraw it");

        let reads = Reads::new(NontemporalMode::Auto, FAR, 2);
        for wseq in 1..HEADERS_LATE_IN_A_ROW as u64 {
            assert_eq!(reads.heard(1, FAR, 2 * wseq), None);
            assert_eq!(reads.heard(1, held_up, 2 * wseq + 1), None);
        }
        assert_eq!(reads.heard(1, FAR, 50), Some(50), "a report after the row");
        assert_eq!(reads.heard(1, held_up, 51), None, "not renewed by one");

        let high = Latencies::new(1_000);
        assert_eq!(high.sample(3_999), Some(Sample::Far));
        assert_eq!(high.sample(4_001), None);
        assert_eq!(Latencies::new(1).sample(LINE_CEILING_NS), Some(Sample::Far));
    }

    /// Acknowledgements are judged at `ACK_SHARE` of the headers'
    /// thresholds: 260 ns is late for one (far after four in a row), not
    /// for a header, and 180 ns is early for a header, not for one.
    #[test]
    fn acknowledgements_are_late_sooner_than_headers() {
        const LONG: usize = 1 << 20;
        let (late_ack, early_header) = (FAR * 13 / 15, FAR * 3 / 5);
        let stores = Stores::new(0, NontemporalMode::Auto, 4 << 10, false, FAR);
        let reads = Reads::new(NontemporalMode::Auto, FAR, 2);
        for wseq in 1..=HEADERS_LATE_IN_A_ROW as u64 {
            stores.heard_ack(late_ack);
            assert_eq!(reads.heard(1, late_ack, wseq), None, "a header between");
        }
        assert!(stores.far(LONG), "four late acknowledgements");
        stores.heard_ack(early_header);
        assert!(stores.far(LONG), "between for an acknowledgement");
        for wseq in 10..10 + HEADERS_LATE_IN_A_ROW as u64 {
            reads.heard(1, FAR, wseq);
        }
        assert_eq!(
            reads.heard(1, early_header, 20),
            Some(0),
            "early for a header"
        );
    }

    /// Calls of short fragments only read the reports one call in
    /// `SHORT_CALLS_PER_READ` (each look may pull a reader's ack line
    /// across); a call with a long fragment reads them at once.
    #[test]
    fn short_calls_read_the_reports_now_and_then() {
        let src = vec![7u8; K64];
        let mut dst = vec![0u8; K64];
        let stores = Stores::new(0, NontemporalMode::Auto, 4 << 10, false, FAR);
        let asked = Cell::new(0);
        let mut call = |len: usize| {
            stores.new_call();
            // SAFETY: both vectors hold `len` bytes.
            unsafe {
                stores.fill(dst.as_mut_ptr(), None, src.as_ptr(), len, len, || {
                    asked.set(asked.get() + 1);
                    true
                })
            }
        };
        let short = 8 << 10;
        let until_read = (1..=SHORT_CALLS_PER_READ)
            .map(|_| call(short))
            .position(|nontemporal| nontemporal);
        assert_eq!(until_read, Some(SHORT_CALLS_PER_READ as usize - 1));
        assert_eq!(asked.get(), 1);
        assert!(call(short), "the reports as last read");
        assert_eq!(asked.get(), 1);
        assert!(call(STAMPED_MIN));
        assert_eq!(asked.get(), 2, "a long fragment reads them at once");
    }

    /// A short fill early in a call does not use up the call's read: its
    /// first long fragment still reads the reports.
    #[test]
    fn a_short_fill_leaves_the_read_to_a_long_one() {
        let src = vec![7u8; K64];
        let mut dst = vec![0u8; K64];
        let stores = Stores::new(0, NontemporalMode::Auto, 4 << 10, false, FAR);
        stores.new_call();
        let asked = Cell::new(0);
        let mut fill = |len: usize| {
            // SAFETY: both vectors hold `len` bytes.
            unsafe {
                stores.fill(dst.as_mut_ptr(), None, src.as_ptr(), len, 64 << 10, || {
                    asked.set(asked.get() + 1);
                    true
                })
            }
        };
        assert!(!fill(4 << 10), "not read yet: ordinary");
        assert!(fill(STAMPED_MIN), "the long fragment reads: far");
        assert_eq!(asked.get(), 1);
    }

    /// On a crowded node the readers yield instead of spinning and time no
    /// header: the writer's own timings decide every stream, and the
    /// readers are not asked.
    #[test]
    fn crowded_writers_judge_by_their_own_fills() {
        let (stores, fill) = far_stores(true);
        let src = vec![7u8; K64];
        let mut dst = vec![0u8; K64];
        // SAFETY: both vectors hold 8 KiB.
        let nontemporal = unsafe {
            stores.fill(
                dst.as_mut_ptr(),
                None,
                src.as_ptr(),
                8 << 10,
                8 << 10,
                || unreachable!("asked"),
            )
        };
        assert!(nontemporal, "far by its own fills");
        assert!(fill(&stores));
    }

    /// Under `fills` no fill asks the readers, and their reports, were any
    /// made, change nothing: the writer's own verdict alone decides.
    #[test]
    fn fills_mode_never_asks_the_readers() {
        let src = vec![7u8; K64];
        let dst = Cell::new(vec![0u8; K64]);
        let stores = Stores::new(0, NontemporalMode::Fills, 4 << 10, false, FAR);
        let asked = Cell::new(0);
        // A 32 KiB fragment of a 256 KiB stream (one the readers would
        // judge under `auto`), whose readers, if asked, say far.
        let fill = |stores: &Stores| {
            let mut to = dst.take();
            // SAFETY: both vectors hold K64 >= 32 KiB bytes.
            let nontemporal = unsafe {
                stores.fill(
                    to.as_mut_ptr(),
                    None,
                    src.as_ptr(),
                    32 << 10,
                    256 << 10,
                    || {
                        asked.set(asked.get() + 1);
                        true
                    },
                )
            };
            dst.set(to);
            nontemporal
        };
        for _ in 0..4 {
            stores.new_call();
            assert!(!fill(&stores), "near by its own fills: ordinary");
        }
        assert_eq!(asked.get(), 0, "the readers are never asked");
        // Its own slow fills still turn it far.
        stores.verdict.set(Verdict { far: true, slow: 0 });
        assert!(stores.far(256 << 10));
        assert!(fill(&stores), "far by its own fills: non-temporal");
        assert_eq!(asked.get(), 0, "not even then");
    }
}
