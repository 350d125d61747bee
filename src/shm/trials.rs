//! Which way a large call's streams go — through the queues or by single
//! copy — learned from the application's own calls: the trials' state,
//! which a channel owns (`Shared::trials`).  Running a call on its path,
//! timing it and sharing the times is `learned_path`, written as methods of
//! the channel (as `single` is beside `single_state`), so that the channel
//! can own this state without importing what uses it.
//!
//! The set-up calibration (`calibrate`) times a few shapes once, cold, right
//! after the segment is made, and its verdicts flip from launch to launch on
//! the development VM: six launches in a row on 2026-11-30 found Gather's
//! writes faster "from 1 MiB", "from 4 MiB", "never", "from 1 MiB", "never",
//! "from 4 MiB", while forced single copy ran the benchmark's Gather and
//! Scatter of 4 MiB in 0.7x the queues' time in every launch.  So the first
//! calls of each size class try both: calls 0, 2, 4, ... through the queues,
//! 1, 3, 5, ... by single copy, `coll_sharm_single_copy_trials` each; the
//! next call first shares every process's lower median time of each path (one
//! 16-byte fragment per process, inline in its slot header), and every
//! process takes the path whose slowest process was faster.  The class keeps
//! that path for `coll_sharm_single_copy_retry_after` calls (default 1000;
//! 0: for good), then tries both again as at first: the state of the
//! machine moves within a run as well as between runs (on the development
//! VM the cores' placement flips every few seconds, and two copies went
//! from 19 to 5 GB/s within one benchmark run, 2026-11-28-n).  The cost is
//! bounded: of every R + 2T + 1 calls, T take the path that was not chosen
//! (0.4 % of the calls at the defaults).
//!
//! Agreement: every process of a channel makes the same collective calls in
//! the same order, and a size class is keyed by what they all know alike
//! (the collective and `Args::shared_bytes`), so all count the same calls
//! per class, try the same path in the same call, share at the same
//! operation number, and compute the same verdict from the same numbers.
//! Only calls on a core per process are tried: with more processes than
//! cores a call's time says more about the scheduler than about the path,
//! and the crowded rules (`calibrate`, point 5) were measured there.

use std::collections::HashMap;

use crate::ompi::call::Coll;

/// How a call's streams move while its size class is tried, and once the
/// class has decided.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StreamPath {
    /// Every stream through the queues (two copies).
    Queues,
    /// Every stream of at least `SINGLE_FLOOR` bytes by single copy.
    Single,
}

impl StreamPath {
    fn name(self) -> &'static str {
        match self {
            StreamPath::Queues => "the queues",
            StreamPath::Single => "single copy",
        }
    }
}

/// Streams below this size go through the queues even in a call that goes
/// by single copy: a call of 1 MiB at np=8 splits into pieces of 128 KiB
/// and less (an Allreduce's slices, a Gather's blocks), and a CMA system
/// call costs a few µs whatever it moves.
pub const SINGLE_FLOOR: usize = 32 << 10;

/// A size class: the collective, and the power of two at or below the
/// call's bytes in all.
type Class = (Coll, u32);

/// The size class of `coll` with `bytes` bytes in all (an empty call, which
/// is never tried, would share the class of 1 byte).
fn class(coll: Coll, bytes: u64) -> Class {
    (coll, bytes.max(1).ilog2())
}

/// One size class's state.
enum ClassState {
    /// Calls made so far, each path's times in ns (index: `Single`), and
    /// the path a round before this one decided, if any.
    Trying {
        calls: usize,
        took: [Vec<u64>; 2],
        before: Option<StreamPath>,
    },
    /// The path, and the calls made on it since it was decided.
    Decided { path: StreamPath, calls: usize },
}

impl ClassState {
    fn trying(per_path: usize, before: Option<StreamPath>) -> ClassState {
        ClassState::Trying {
            calls: 0,
            took: [Vec::with_capacity(per_path), Vec::with_capacity(per_path)],
            before,
        }
    }
}

/// What a call does about its path (`Trials::plan`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Plan {
    /// Not a call that is tried: the floors decide (`Shared::single_copy`).
    Floors,
    /// A trial call: time it and hand the time to `Trials::took`.
    Try(StreamPath),
    /// The trials are done: share the medians (`Trials::medians`), decide
    /// (`Trials::decide`), then run the call on the decided path.
    Decide,
    /// Decided earlier.
    Use(StreamPath),
}

/// The trials of one channel (owned by its `Shared`; private to this
/// process, like all of `Shared`).
pub struct Trials {
    /// Calls of each path per class; 0: no trials.
    per_path: usize,
    /// Calls a decided class makes before it is tried again; 0: never.
    retry_after: usize,
    classes: HashMap<Class, ClassState>,
}

impl Trials {
    pub fn new(per_path: usize, retry_after: usize) -> Trials {
        Trials {
            per_path,
            retry_after,
            classes: HashMap::new(),
        }
    }

    /// What the call `coll` of `bytes` bytes in all does about its path
    /// (`bytes` at least the single-copy floor; the caller checks).
    pub fn plan(&mut self, coll: Coll, bytes: u64) -> Plan {
        if self.per_path == 0 {
            return Plan::Floors;
        }
        let class = class(coll, bytes);
        let (per_path, retry_after) = (self.per_path, self.retry_after);
        let state = self
            .classes
            .entry(class)
            .or_insert_with(|| ClassState::trying(per_path, None));
        // A decided class whose calls ran out starts a new round of trials.
        if let ClassState::Decided { path, calls } = state {
            if retry_after > 0 && *calls >= retry_after {
                *state = ClassState::trying(per_path, Some(*path));
            }
        }
        match state {
            ClassState::Decided { path, calls } => {
                *calls += 1;
                Plan::Use(*path)
            }
            ClassState::Trying { calls, .. } if *calls >= 2 * per_path => Plan::Decide,
            ClassState::Trying { calls, .. } => Plan::Try(if *calls % 2 == 0 {
                StreamPath::Queues
            } else {
                StreamPath::Single
            }),
        }
    }

    /// A trial call of `coll` of `bytes` bytes on `path` took `ns`.
    pub fn took(&mut self, coll: Coll, bytes: u64, path: StreamPath, ns: u64) {
        if let Some(ClassState::Trying { calls, took, .. }) =
            self.classes.get_mut(&class(coll, bytes))
        {
            *calls += 1;
            took[(path == StreamPath::Single) as usize].push(ns);
        }
    }

    /// This process's lower median time of each path in the class of (`coll`,
    /// `bytes`), in ns: [queues, single copy].
    pub fn medians(&self, coll: Coll, bytes: u64) -> [u64; 2] {
        match self.classes.get(&class(coll, bytes)) {
            Some(ClassState::Trying { took, .. }) => [median(&took[0]), median(&took[1])],
            _ => [0, 0],
        }
    }

    /// Settles the class of (`coll`, `bytes`) on the path whose slowest
    /// process was faster, from every process's medians (`all`, as
    /// `medians` gives them; the same list on every process), and returns
    /// it with the line that says so (verbose 10).  Ties go to the queues:
    /// no system calls, and no waiting for every reader before the
    /// application may touch its buffer.
    pub fn decide(&mut self, coll: Coll, bytes: u64, all: &[[u64; 2]]) -> (StreamPath, String) {
        let slowest = |i: usize| all.iter().map(|m| m[i]).max().unwrap_or(0);
        let (queues, single) = (slowest(0), slowest(1));
        let path = if single < queues {
            StreamPath::Single
        } else {
            StreamPath::Queues
        };
        let key = class(coll, bytes);
        let before = match self
            .classes
            .insert(key, ClassState::Decided { path, calls: 0 })
        {
            Some(ClassState::Trying { before, .. }) => before,
            _ => None,
        };
        let class = key.1;
        let again = match (before, self.retry_after) {
            (Some(before), calls) => format!(
                " (tried again after {calls} calls; before: {})",
                before.name()
            ),
            (None, 0) => String::new(),
            (None, calls) => format!(" (to be tried again after {calls} calls)"),
        };
        let line = format!(
            "{} of {}..{} bytes in all: the queues {:.1} us, single copy {:.1} us (the slowest process's lower median of {} calls each): {} from now on{again}",
            coll.name(),
            1u64 << class,
            (1u64 << class) * 2 - 1,
            queues as f64 / 1e3,
            single as f64 / 1e3,
            self.per_path,
            path.name(),
        );
        (path, line)
    }
}

/// The lower median of `ns` (the smaller of the middle two for an even
/// count; 0 for none).  Why: a trial call's time takes in the page faults
/// of a buffer's first use, the skew of the processes' arrival and the
/// host's interruptions, all of which only lengthen it; the mean would
/// carry them, and of 4 calls the lower median ignores the two slowest.
/// The minimum would ignore three, and so trust one lucky call: on
/// 2026-11-30 the plain median (the mean of the middle two) picked the
/// queues for np=2 Gather and Alltoall of 1 MiB in one of six launches,
/// where single copy ran them in 0.6-0.8x the time in the others.
fn median(ns: &[u64]) -> u64 {
    let mut v = ns.to_vec();
    v.sort_unstable();
    match v.len() {
        0 => 0,
        n => v[(n - 1) / 2],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A class alternates queues and single copy for `per_path` calls each,
    /// then asks for the decision, then keeps the decided path; other
    /// classes (another size, another collective) count apart.
    #[test]
    fn a_class_alternates_then_decides_then_keeps() {
        let mut t = Trials::new(2, 0);
        let (c, b) = (Coll::Scatter, 4u64 << 20);
        let mut seen = Vec::new();
        for ns in [700_000, 500_000, 710_000, 480_000] {
            let Plan::Try(path) = t.plan(c, b) else {
                panic!("a trial")
            };
            seen.push(path);
            t.took(c, b + 5, path, ns);
        }
        use StreamPath::*;
        assert_eq!(seen, [Queues, Single, Queues, Single]);
        assert_eq!(t.plan(Coll::Scatter, 1 << 20), Plan::Try(Queues));
        assert_eq!(t.plan(Coll::Gather, b), Plan::Try(Queues));
        assert_eq!(t.plan(c, b), Plan::Decide);
        assert_eq!(t.medians(c, b), [700_000, 480_000]);
        // The other process was slower by single copy: its time counts.
        let (path, line) = t.decide(c, b, &[[700_000, 480_000], [690_000, 720_000]]);
        assert_eq!(path, Queues);
        assert!(
            line.contains("the queues 700.0 us, single copy 720.0 us"),
            "{line}"
        );
        assert_eq!(t.plan(c, b), Plan::Use(Queues));
        assert_eq!(t.plan(c, (8 << 20) - 1), Plan::Use(Queues));
    }

    /// Single copy wins only when its slowest process beats the queues'
    /// slowest; a tie keeps the queues.
    #[test]
    fn single_copy_must_be_faster_for_the_slowest_process() {
        let mut t = Trials::new(1, 0);
        let b = 1u64 << 20;
        assert_eq!(t.decide(Coll::Bcast, b, &[[100, 99]]).0, StreamPath::Single);
        assert_eq!(
            t.decide(Coll::Bcast, b, &[[100, 100]]).0,
            StreamPath::Queues
        );
        assert_eq!(
            t.decide(Coll::Bcast, b, &[[100, 50], [80, 101]]).0,
            StreamPath::Queues
        );
    }

    #[test]
    fn no_trials_leaves_the_floors_to_decide() {
        let mut t = Trials::new(0, 1000);
        assert_eq!(t.plan(Coll::Alltoall, 1 << 22), Plan::Floors);
    }

    /// With retries, a decided class keeps its path for `retry_after`
    /// calls, then alternates again from the queues, decides again and says
    /// what it had decided before.
    #[test]
    fn a_decided_class_is_tried_again_after_its_calls() {
        use StreamPath::*;
        let (c, b) = (Coll::Allgather, 2u64 << 20);
        let mut t = Trials::new(1, 3);
        let round = |t: &mut Trials, queues: u64, single: u64| {
            assert_eq!(t.plan(c, b), Plan::Try(Queues));
            t.took(c, b, Queues, queues);
            assert_eq!(t.plan(c, b), Plan::Try(Single));
            t.took(c, b, Single, single);
            assert_eq!(t.plan(c, b), Plan::Decide);
            let m = t.medians(c, b);
            t.decide(c, b, &[m])
        };
        let (first, line) = round(&mut t, 900, 600);
        assert_eq!(first, Single);
        assert!(
            line.ends_with("single copy from now on (to be tried again after 3 calls)"),
            "{line}"
        );
        for _ in 0..3 {
            assert_eq!(t.plan(c, b), Plan::Use(Single));
        }
        let (second, line) = round(&mut t, 500, 600);
        assert_eq!(second, Queues);
        assert!(
            line.ends_with(
                "the queues from now on (tried again after 3 calls; before: single copy)"
            ),
            "{line}"
        );
        assert_eq!(t.plan(c, b), Plan::Use(Queues));
    }

    #[test]
    fn medians_of_odd_and_even_counts() {
        assert_eq!(median(&[]), 0);
        assert_eq!(median(&[9, 1, 5]), 5);
        assert_eq!(median(&[9, 1, 5, 3]), 3);
    }
}
