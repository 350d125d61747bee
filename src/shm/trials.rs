//! Which way a large call's streams go — through the queues or by single
//! copy — and how they land in receive buffers — ordinary or non-temporal
//! stores — learned from the application's own calls: the trials' state,
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
//! The landing is a second stage of the same round, on the path decided,
//! for the collectives whose copies into receive buffers are plain copies,
//! from [`LANDING_TRIALS_FROM`] in all (`Shared::asks`): T calls with every
//! such copy by ordinary stores, T with every one non-temporal, alternated,
//! then shared and decided as the path is.  Why measured and not a rule:
//! the size from which non-temporal stores pay depends on the host (the
//! Zen 4 VM's exchanges gained from 8 MiB landed; on the Xeon VM of
//! 2026-11-30 a per-stream size of 8 MiB made Bcast 0.82-0.88x and Reduce
//! 1.12x, Scatter 1.08x, `docs/benchmark/2026-11-30-b-guest-cache/`), and
//! the cache a guest's CPUID reports is the host's.  Without single copy
//! the round is the landing stage alone.  A round costs 2T + 1 calls more
//! then: 0.8 % of the calls with both stages at the defaults.
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

use crate::kernels::copy::Landing;
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

/// The least bytes in all from which a call's landing (`Landing`) is
/// tried.  Below it the result stays in the cache for the application's
/// next read, a gain the call's own time does not show; and there the
/// size rule measured streaming as a loss (np=2 Alltoall of 2 MiB landing
/// 4 MiB streamed: 1.30x, `copy::call_streams`).
pub const LANDING_TRIALS_FROM: u64 = 2 << 20;

/// Streamed landing is kept only when its slowest process takes at most
/// this fraction (in sixteenths) of the cached landing's: the application
/// pays for a streamed result when it next reads it from memory, which
/// the call's time does not show, so a tie keeps the result cached.
const STREAMED_AT_MOST_SIXTEENTHS: u64 = 15;

/// Where a call's streams go and how they land.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Route {
    /// None: single copy is not tried for the call, its floors decide
    /// (`Shared::single_copy`).
    pub path: Option<StreamPath>,
    /// `BySize`: the size rules (`copy::streams`, `Shared::land_call`).
    pub landing: Landing,
}

fn landing_name(landing: Landing) -> &'static str {
    match landing {
        Landing::BySize => "by size",
        Landing::Stream => "non-temporal",
        Landing::Cache => "cached",
    }
}

/// What a call asks to be tried (`Trials::plan`), the same on every
/// process for the same call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Asks {
    /// The path: single copy against the queues.
    pub path: bool,
    /// The landing: non-temporal stores against ordinary ones.
    pub landing: bool,
}

/// A size class: the collective, and the power of two at or below the
/// call's bytes in all.
type Class = (Coll, u32);

/// The size class of `coll` with `bytes` bytes in all (an empty call, which
/// is never tried, would share the class of 1 byte).
fn class(coll: Coll, bytes: u64) -> Class {
    (coll, bytes.max(1).ilog2())
}

/// What one round of trials compares: first the path, then, on the path
/// decided, the landing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Stage {
    /// Queues against single copy, each landing by size; `then_landing`:
    /// the landing is tried next.
    Path { then_landing: bool },
    /// On `path`, cached landing against non-temporal.
    Landing { path: Option<StreamPath> },
}

impl Stage {
    /// The first stage of a round for a call that asks `asks` (one of the
    /// two at least).
    fn first(asks: Asks) -> Stage {
        if asks.path {
            Stage::Path {
                then_landing: asks.landing,
            }
        } else {
            Stage::Landing { path: None }
        }
    }

    /// The two routes compared, in the order the calls alternate them.
    fn routes(self) -> [Route; 2] {
        match self {
            Stage::Path { .. } => [StreamPath::Queues, StreamPath::Single].map(|path| Route {
                path: Some(path),
                landing: Landing::BySize,
            }),
            Stage::Landing { path } => {
                [Landing::Cache, Landing::Stream].map(|landing| Route { path, landing })
            }
        }
    }
}

/// One size class's state.
enum ClassState {
    /// The stage tried, calls made in it so far, each route's times in ns
    /// (in `Stage::routes`' order), and the route a round before this one
    /// decided, if any.
    Trying {
        stage: Stage,
        calls: usize,
        took: [Vec<u64>; 2],
        before: Option<Route>,
    },
    /// The route, and the calls made on it since it was decided.
    Decided { route: Route, calls: usize },
}

impl ClassState {
    fn trying(stage: Stage, per_route: usize, before: Option<Route>) -> ClassState {
        ClassState::Trying {
            stage,
            calls: 0,
            took: [Vec::with_capacity(per_route), Vec::with_capacity(per_route)],
            before,
        }
    }
}

/// What a call does about its route (`Trials::plan`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Plan {
    /// Not a call that is tried: the floors and size rules decide.
    Floors,
    /// A trial call: time it and hand the time to `Trials::took`.
    Try(Route),
    /// The stage's trials are done: share the medians (`Trials::medians`),
    /// decide (`Trials::decide`), then run the call on the route decided.
    Decide,
    /// Decided earlier.
    Use(Route),
}

/// The trials of one channel (owned by its `Shared`; private to this
/// process, like all of `Shared`).
pub struct Trials {
    /// Calls of each route per stage; 0: no trials.
    per_route: usize,
    /// Calls a decided class makes before it is tried again; 0: never.
    retry_after: usize,
    classes: HashMap<Class, ClassState>,
}

impl Trials {
    pub fn new(per_route: usize, retry_after: usize) -> Trials {
        Trials {
            per_route,
            retry_after,
            classes: HashMap::new(),
        }
    }

    /// What the call `coll` of `bytes` bytes in all, asking `asks`, does
    /// about its route.  A class keeps the stages its first call asked
    /// for until it is tried again.
    pub fn plan(&mut self, coll: Coll, bytes: u64, asks: Asks) -> Plan {
        if self.per_route == 0 || !(asks.path || asks.landing) {
            return Plan::Floors;
        }
        let (per_route, retry_after) = (self.per_route, self.retry_after);
        let state = self
            .classes
            .entry(class(coll, bytes))
            .or_insert_with(|| ClassState::trying(Stage::first(asks), per_route, None));
        // A decided class whose calls ran out starts a new round of trials.
        if let ClassState::Decided { route, calls } = state {
            if retry_after > 0 && *calls >= retry_after {
                *state = ClassState::trying(Stage::first(asks), per_route, Some(*route));
            }
        }
        match state {
            ClassState::Decided { route, calls } => {
                *calls += 1;
                Plan::Use(*route)
            }
            ClassState::Trying { calls, .. } if *calls >= 2 * per_route => Plan::Decide,
            ClassState::Trying { stage, calls, .. } => Plan::Try(stage.routes()[*calls % 2]),
        }
    }

    /// The trial call `plan` gave for `coll` of `bytes` took `ns`.
    pub fn took(&mut self, coll: Coll, bytes: u64, ns: u64) {
        if let Some(ClassState::Trying { calls, took, .. }) =
            self.classes.get_mut(&class(coll, bytes))
        {
            took[*calls % 2].push(ns);
            *calls += 1;
        }
    }

    /// This process's lower median time of each route of the class of
    /// (`coll`, `bytes`) in ns, in `Stage::routes`' order.
    pub fn medians(&self, coll: Coll, bytes: u64) -> [u64; 2] {
        match self.classes.get(&class(coll, bytes)) {
            Some(ClassState::Trying { took, .. }) => [median(&took[0]), median(&took[1])],
            _ => [0, 0],
        }
    }

    /// Settles the stage tried in the class of (`coll`, `bytes`) from
    /// every process's medians (`all`, as `medians` gives them; the same
    /// list on every process), on the route whose slowest process was
    /// faster, and returns the route the deciding call runs on with the
    /// line that says so (verbose 10).  The path: ties go to the queues
    /// (no system calls, and no waiting for every reader before the
    /// application may touch its buffer); then the landing is tried if the
    /// round asks it.  The landing: non-temporal only when clearly faster
    /// ([`STREAMED_AT_MOST_SIXTEENTHS`]).
    pub fn decide(&mut self, coll: Coll, bytes: u64, all: &[[u64; 2]]) -> (Route, String) {
        let slowest = |i: usize| all.iter().map(|m| m[i]).max().unwrap_or(0);
        let times = [slowest(0), slowest(1)];
        let key = class(coll, bytes);
        let (stage, before) = match self.classes.get(&key) {
            Some(ClassState::Trying { stage, before, .. }) => (*stage, *before),
            _ => (
                Stage::Path {
                    then_landing: false,
                },
                None,
            ),
        };
        let routes = stage.routes();
        let (route, what, options, was) = match stage {
            Stage::Path { .. } => {
                let faster = (times[1] < times[0]) as usize;
                let was = before.and_then(|b| b.path).map(StreamPath::name);
                (
                    routes[faster],
                    String::new(),
                    ["the queues", "single copy"],
                    was,
                )
            }
            Stage::Landing { .. } => {
                let faster = (times[1] * 16 <= times[0] * STREAMED_AT_MOST_SIXTEENTHS
                    && times[1] > 0) as usize;
                let was = before.map(|b| landing_name(b.landing));
                let on = match routes[0].path {
                    Some(path) => format!(" on {}", path.name()),
                    None => String::new(),
                };
                (routes[faster], on, ["landing cached", "non-temporal"], was)
            }
        };
        let next = match stage {
            Stage::Path { then_landing: true } => {
                ClassState::trying(Stage::Landing { path: route.path }, self.per_route, before)
            }
            _ => ClassState::Decided { route, calls: 0 },
        };
        let settled = matches!(next, ClassState::Decided { .. });
        self.classes.insert(key, next);
        let chosen = match stage {
            Stage::Path { .. } => route
                .path
                .map_or("the floors", StreamPath::name)
                .to_string(),
            Stage::Landing { .. } => format!("landing {}", landing_name(route.landing)),
        };
        let again = match (was, settled, self.retry_after) {
            (Some(was), _, calls) => format!(" (tried again after {calls} calls; before: {was})"),
            (None, false, _) => " (its landing tried next)".to_string(),
            (None, true, 0) => String::new(),
            (None, true, calls) => format!(" (to be tried again after {calls} calls)"),
        };
        let class = key.1;
        let line = format!(
            "{} of {}..{} bytes in all{what}: {} {:.1} us, {} {:.1} us (the slowest process's lower median of {} calls each): {chosen} from now on{again}",
            coll.name(),
            1u64 << class,
            (1u64 << class) * 2 - 1,
            options[0],
            times[0] as f64 / 1e3,
            options[1],
            times[1] as f64 / 1e3,
            self.per_route,
        );
        (route, line)
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

    const PATH: Asks = Asks {
        path: true,
        landing: false,
    };
    const BOTH: Asks = Asks {
        path: true,
        landing: true,
    };
    const LANDING: Asks = Asks {
        path: false,
        landing: true,
    };

    fn on(path: StreamPath) -> Route {
        Route {
            path: Some(path),
            landing: Landing::BySize,
        }
    }

    /// A class alternates queues and single copy for `per_route` calls
    /// each, then asks for the decision, then keeps the decided path; other
    /// classes (another size, another collective) count apart.
    #[test]
    fn a_class_alternates_then_decides_then_keeps() {
        use StreamPath::*;
        let mut t = Trials::new(2, 0);
        let (c, b) = (Coll::Scatter, 4u64 << 20);
        let mut seen = Vec::new();
        for ns in [700_000, 500_000, 710_000, 480_000] {
            let Plan::Try(route) = t.plan(c, b, PATH) else {
                panic!("a trial")
            };
            seen.push(route);
            t.took(c, b + 5, ns);
        }
        assert_eq!(seen, [on(Queues), on(Single), on(Queues), on(Single)]);
        assert_eq!(t.plan(Coll::Scatter, 1 << 20, PATH), Plan::Try(on(Queues)));
        assert_eq!(t.plan(Coll::Gather, b, PATH), Plan::Try(on(Queues)));
        assert_eq!(t.plan(c, b, PATH), Plan::Decide);
        assert_eq!(t.medians(c, b), [700_000, 480_000]);
        // The other process was slower by single copy: its time counts.
        let (route, line) = t.decide(c, b, &[[700_000, 480_000], [690_000, 720_000]]);
        assert_eq!(route, on(Queues));
        assert!(
            line.contains("the queues 700.0 us, single copy 720.0 us"),
            "{line}"
        );
        assert_eq!(t.plan(c, b, PATH), Plan::Use(on(Queues)));
        assert_eq!(t.plan(c, (8 << 20) - 1, PATH), Plan::Use(on(Queues)));
    }

    /// Single copy wins only when its slowest process beats the queues'
    /// slowest; a tie keeps the queues.
    #[test]
    fn single_copy_must_be_faster_for_the_slowest_process() {
        let b = 1u64 << 20;
        let decide = |all: &[[u64; 2]]| {
            let mut t = Trials::new(1, 0);
            t.plan(Coll::Bcast, b, PATH);
            t.decide(Coll::Bcast, b, all).0.path
        };
        assert_eq!(decide(&[[100, 99]]), Some(StreamPath::Single));
        assert_eq!(decide(&[[100, 100]]), Some(StreamPath::Queues));
        assert_eq!(decide(&[[100, 50], [80, 101]]), Some(StreamPath::Queues));
    }

    #[test]
    fn no_trials_leaves_the_floors_to_decide() {
        let mut t = Trials::new(0, 1000);
        assert_eq!(t.plan(Coll::Alltoall, 1 << 22, BOTH), Plan::Floors);
        let mut t = Trials::new(4, 1000);
        let nothing = Asks {
            path: false,
            landing: false,
        };
        assert_eq!(t.plan(Coll::Alltoall, 1 << 22, nothing), Plan::Floors);
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
            assert_eq!(t.plan(c, b, PATH), Plan::Try(on(Queues)));
            t.took(c, b, queues);
            assert_eq!(t.plan(c, b, PATH), Plan::Try(on(Single)));
            t.took(c, b, single);
            assert_eq!(t.plan(c, b, PATH), Plan::Decide);
            let m = t.medians(c, b);
            t.decide(c, b, &[m])
        };
        let (first, line) = round(&mut t, 900, 600);
        assert_eq!(first, on(Single));
        assert!(
            line.ends_with("single copy from now on (to be tried again after 3 calls)"),
            "{line}"
        );
        for _ in 0..3 {
            assert_eq!(t.plan(c, b, PATH), Plan::Use(on(Single)));
        }
        let (second, line) = round(&mut t, 500, 600);
        assert_eq!(second, on(Queues));
        assert!(
            line.ends_with(
                "the queues from now on (tried again after 3 calls; before: single copy)"
            ),
            "{line}"
        );
        assert_eq!(t.plan(c, b, PATH), Plan::Use(on(Queues)));
    }

    /// A class that asks both tries the path first, then on the path
    /// decided cached against non-temporal landing, and keeps both.
    #[test]
    fn the_landing_is_tried_on_the_path_decided() {
        use StreamPath::*;
        let (c, b) = (Coll::Bcast, 8u64 << 20);
        let mut t = Trials::new(1, 0);
        assert_eq!(t.plan(c, b, BOTH), Plan::Try(on(Queues)));
        t.took(c, b, 1000);
        assert_eq!(t.plan(c, b, BOTH), Plan::Try(on(Single)));
        t.took(c, b, 900);
        assert_eq!(t.plan(c, b, BOTH), Plan::Decide);
        let (route, line) = t.decide(c, b, &[[1000, 900]]);
        // The deciding call runs on the path decided, landing by size.
        assert_eq!(route, on(Single));
        assert!(
            line.ends_with("single copy from now on (its landing tried next)"),
            "{line}"
        );
        let landing = |landing| Route {
            path: Some(Single),
            landing,
        };
        assert_eq!(t.plan(c, b, BOTH), Plan::Try(landing(Landing::Cache)));
        t.took(c, b, 900);
        assert_eq!(t.plan(c, b, BOTH), Plan::Try(landing(Landing::Stream)));
        t.took(c, b, 800);
        assert_eq!(t.plan(c, b, BOTH), Plan::Decide);
        let (route, line) = t.decide(c, b, &[t.medians(c, b)]);
        assert_eq!(route, landing(Landing::Stream));
        assert!(
            line.contains(
                "bytes in all on single copy: landing cached 0.9 us, non-temporal 0.8 us"
            ),
            "{line}"
        );
        assert!(line.ends_with("landing non-temporal from now on"), "{line}");
        assert_eq!(t.plan(c, b, BOTH), Plan::Use(landing(Landing::Stream)));
    }

    /// Non-temporal landing must be at least a sixteenth faster for the
    /// slowest process; otherwise the result stays cached.  Without the
    /// path asked, the landing is tried on the floors' path.
    #[test]
    fn streamed_landing_must_be_clearly_faster() {
        let (c, b) = (Coll::Alltoall, 4u64 << 20);
        let decide = |all: &[[u64; 2]]| {
            let mut t = Trials::new(1, 0);
            assert_eq!(
                t.plan(c, b, LANDING),
                Plan::Try(Route {
                    path: None,
                    landing: Landing::Cache
                })
            );
            t.decide(c, b, all).0
        };
        let landing = |landing| Route {
            path: None,
            landing,
        };
        assert_eq!(decide(&[[1600, 1500]]), landing(Landing::Stream));
        assert_eq!(decide(&[[1600, 1501]]), landing(Landing::Cache));
        assert_eq!(
            decide(&[[1600, 1000], [1000, 1590]]),
            landing(Landing::Cache)
        );
    }

    /// Tried again, a class with both stages goes through both, and the
    /// landing's line names the landing decided before.
    #[test]
    fn both_stages_are_tried_again() {
        use StreamPath::*;
        let (c, b) = (Coll::Gather, 2u64 << 20);
        let mut t = Trials::new(1, 2);
        let mut lines = Vec::new();
        for (first, second) in [(900, 800), (1600, 1000), (700, 800), (1000, 1000)] {
            for ns in [first, second] {
                assert!(matches!(t.plan(c, b, BOTH), Plan::Try(_)));
                t.took(c, b, ns);
            }
            assert_eq!(t.plan(c, b, BOTH), Plan::Decide);
            let (route, line) = t.decide(c, b, &[t.medians(c, b)]);
            lines.push(line);
            if lines.len() == 2 {
                assert_eq!(t.plan(c, b, BOTH), Plan::Use(route));
                assert_eq!(t.plan(c, b, BOTH), Plan::Use(route));
            }
        }
        assert!(
            lines[1]
                .ends_with("landing non-temporal from now on (to be tried again after 2 calls)"),
            "{}",
            lines[1]
        );
        assert!(
            lines[2].ends_with(
                "the queues from now on (tried again after 2 calls; before: single copy)"
            ),
            "{}",
            lines[2]
        );
        assert!(
            lines[3].contains("on the queues: landing cached"),
            "{}",
            lines[3]
        );
        assert!(
            lines[3].ends_with(
                "landing cached from now on (tried again after 2 calls; before: non-temporal)"
            ),
            "{}",
            lines[3]
        );
        assert_eq!(
            t.plan(c, b, BOTH),
            Plan::Use(Route {
                path: Some(Queues),
                landing: Landing::Cache
            })
        );
    }

    #[test]
    fn medians_of_odd_and_even_counts() {
        assert_eq!(median(&[]), 0);
        assert_eq!(median(&[9, 1, 5]), 5);
        assert_eq!(median(&[9, 1, 5, 3]), 3);
    }
}
