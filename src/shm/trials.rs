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
//! calls of each size class try both in runs of two (`route_of`): calls 0,
//! 1, 4, 5, ... through the queues, 2, 3, 6, 7, ... by single copy,
//! `coll_sharm_single_copy_trials` each; the next call first shares every
//! process's lower median time of each route (one fragment of at most 32
//! bytes per process, inline in its slot header), and every process takes
//! the route whose slowest process was fastest.  The class keeps
//! that path for `coll_sharm_single_copy_retry_after` calls (default 1000;
//! 0: for good), then tries both again as at first: the state of the
//! machine moves within a run as well as between runs (on the development
//! VM the cores' placement flips every few seconds, and two copies went
//! from 19 to 5 GB/s within one benchmark run, 2026-11-28-n).  The cost is
//! bounded: of every R + 2T + 1 calls, T take the path that was not chosen
//! (0.4 % of the calls at the defaults).
//!
//! From [`LANDING_TRIALS_FROM`] in all, a collective whose copies into
//! receive buffers are plain copies tries their landing too (`Shared::asks`):
//! with every such copy by ordinary stores, or every one non-temporal.  The
//! two questions are tried together, four routes of T calls, the cached
//! ones first (`route_of`), because a path's time depends on its landing: np=2 Allgather of 8
//! MiB a process (2026-11-30), each path with the size rule's landing, timed
//! the queues at 2.4-2.9 ms (their 16 MiB landed streams) and single copy at
//! 2.5-3.1 (its 8 MiB of own copies does not), so the trials kept the
//! queues; single copy streamed ran 1.5-2.0, and the four routes together
//! choose it.  Why the landing is measured and not a rule: the size from
//! which non-temporal stores pay depends on the host (the Zen 4 VM's
//! exchanges gained from 8 MiB landed; on the Xeon VM of 2026-11-30 a
//! per-stream size of 8 MiB made Bcast 0.82-0.88x and Reduce 1.12x,
//! Scatter 1.08x, `docs/benchmark/2026-11-30-b-guest-cache/`), and the cache
//! a guest's CPUID reports is the host's.  Without single copy the round
//! compares the two landings alone.  A round of four routes costs 4T + 1
//! calls, 3T of them on routes not chosen: 1.2 % of the calls at the
//! defaults.
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

use crate::kernels::copy::LandingStores;
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

/// The least bytes in all from which a call's landing (`LandingStores`) is
/// tried.  Below it the result stays in the cache for the application's
/// next read, a gain the call's own time does not show; and there the
/// size rule measured streaming as a loss (np=2 Alltoall of 2 MiB landing
/// 4 MiB streamed: 1.30x, `copy::call_streams`).
pub const LANDING_TRIALS_FROM: u64 = 2 << 20;

/// Non-temporal landing is kept only when its slowest process takes less
/// than this fraction (in sixteenths) of a cached route's time: the
/// application pays for a streamed result when it next reads it from
/// memory, which the call's time does not show, so a near tie keeps the
/// result cached.
const STREAMED_BELOW_SIXTEENTHS: u64 = 15;

/// The most routes a round compares: two paths, each with two landings.
pub const MOST_ROUTES: usize = 4;

/// Where a call's streams go and how they land.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Route {
    /// None: single copy is not tried for the call, its floors decide
    /// (`Shared::single_copy`).
    pub path: Option<StreamPath>,
    /// `BySize`: the size rules (`copy::streams`, `Shared::land_call`).
    pub landing: LandingStores,
}

impl Route {
    /// How the verdict lines name it.
    pub fn name(self) -> String {
        let landing = match self.landing {
            LandingStores::BySize => None,
            LandingStores::Stream => Some("landing non-temporal"),
            LandingStores::Cache => Some("landing cached"),
        };
        match (self.path, landing) {
            (Some(path), None) => path.name().to_string(),
            (Some(path), Some(landing)) => format!("{} {landing}", path.name()),
            (None, Some(landing)) => landing.to_string(),
            (None, None) => "the floors".to_string(),
        }
    }

    /// Its slowest process's time as the verdict weighs it: a non-temporal
    /// landing's raised by 16/15 ([`STREAMED_BELOW_SIXTEENTHS`]).
    fn weighed(self, ns: u64) -> u64 {
        match self.landing {
            LandingStores::Stream => ns.saturating_mul(16) / STREAMED_BELOW_SIXTEENTHS,
            _ => ns,
        }
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

impl Asks {
    /// The routes a round compares, landing by landing (`route_of`; ties
    /// go to the earlier one): cached before non-temporal, and within a
    /// landing the queues before single copy.  Both asked: all four,
    /// because a path's time depends on its landing (np=2 Allgather of 8
    /// MiB a process, 2026-11-30: the queues 2.4-2.9 ms by size, which
    /// streams their 16 MiB landed; single copy 2.5-3.1 by size, which
    /// does not stream its 8 MiB, and 1.5-2.0 streamed).
    fn routes(self) -> Vec<Route> {
        let paths: &[Option<StreamPath>] = if self.path {
            &[Some(StreamPath::Queues), Some(StreamPath::Single)]
        } else {
            &[None]
        };
        let landings: &[LandingStores] = if self.landing {
            &[LandingStores::Cache, LandingStores::Stream]
        } else {
            &[LandingStores::BySize]
        };
        landings
            .iter()
            .flat_map(|&landing| paths.iter().map(move |&path| Route { path, landing }))
            .collect()
    }
}

/// A size class: the collective, and the power of two at or below the
/// call's bytes in all.
type Class = (Coll, u32);

/// The size class of `coll` with `bytes` bytes in all (an empty call, which
/// is never tried, would share the class of 1 byte).
fn class(coll: Coll, bytes: u64) -> Class {
    (coll, bytes.max(1).ilog2())
}

/// The fewest bytes in all a call of the size class of `bytes` has: the
/// power of two at or below them (1 for an empty call).
pub fn class_floor(bytes: u64) -> u64 {
    1 << bytes.max(1).ilog2()
}

/// One size class's state.
enum ClassState {
    /// The routes compared (`Asks::routes`) and how many paths each
    /// landing has among them, calls made so far, each route's times in
    /// ns, and the route a round before this one decided, if any.
    Trying {
        routes: Vec<Route>,
        paths: usize,
        calls: usize,
        took: Vec<Vec<u64>>,
        before: Option<Route>,
    },
    /// The route, the calls made on it since it was decided, and the
    /// verdict's check while it runs (`Check`).
    Decided {
        route: Route,
        calls: usize,
        check: Option<Check>,
    },
}

/// A verdict checked on the calls after it.  Why: a verdict rests on a few
/// calls of each route, and one process's slow calls of one route can tip
/// it.  On 2026-11-30 an np=2 Allgather of 8 MiB in all kept the queues
/// (their slowest process 1192 us against single copy's 1263, which one
/// process timed at 1202-1471 and the other at 913-1021), then ran the
/// queues in 1642 us, where single copy ran 930-1216 in other launches.
/// So the `per_route` calls after a verdict are timed too, and the verdict
/// taken again with the decided route's time from them in place of its
/// trials' time; a route that loses that way gives way to the one that
/// wins, itself checked the same way unless it was checked already.  Each
/// route is checked at most once a round, so a class settles within
/// `MOST_ROUTES` checks.  A trial call times above the calls after it
/// (it follows calls of other routes), so the check is biased towards
/// keeping the verdict, not away from it.
struct Check {
    /// The round's routes, as `Asks::routes` lists them.
    routes: Vec<Route>,
    /// Each route's slowest-process time the verdict weighed, the checked
    /// routes' from their calls after it.
    slowest: Vec<u64>,
    /// Which routes have been checked.
    checked: Vec<bool>,
    /// The route under check (its index in `routes`).
    at: usize,
    /// Its calls' times so far in ns.
    took: Vec<u64>,
}

impl ClassState {
    fn trying(asks: Asks, per_route: usize, before: Option<Route>) -> ClassState {
        let routes = asks.routes();
        ClassState::Trying {
            took: routes
                .iter()
                .map(|_| Vec::with_capacity(per_route))
                .collect(),
            routes,
            paths: if asks.path { 2 } else { 1 },
            calls: 0,
            before,
        }
    }
}

/// What a call does about its route (`Trials::plan`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Plan {
    /// Not a call that is tried: the floors and size rules decide.
    Floors,
    /// A trial call, or a call after a verdict that checks it (`Check`):
    /// time it and hand the time to `Trials::took`.
    Try(Route),
    /// The trials, or a verdict's check calls, are done: share the medians
    /// (`Trials::medians`), decide (`Trials::decide`), then run the call on
    /// the route decided.
    Decide,
    /// Decided earlier.
    Use(Route),
}

/// The trials of one channel (owned by its `Shared`; private to this
/// process, like all of `Shared`).
pub struct Trials {
    /// Calls of each route per round; 0: no trials.
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
    /// about its route.  A class keeps the routes its first call asked
    /// for until it is tried again.
    pub fn plan(&mut self, coll: Coll, bytes: u64, asks: Asks) -> Plan {
        if self.per_route == 0 || !(asks.path || asks.landing) {
            return Plan::Floors;
        }
        let (per_route, retry_after) = (self.per_route, self.retry_after);
        let state = self
            .classes
            .entry(class(coll, bytes))
            .or_insert_with(|| ClassState::trying(asks, per_route, None));
        // A decided class whose calls ran out starts a new round of trials.
        if let ClassState::Decided { route, calls, .. } = state {
            if retry_after > 0 && *calls >= retry_after {
                *state = ClassState::trying(asks, per_route, Some(*route));
            }
        }
        match state {
            ClassState::Decided {
                route,
                calls,
                check,
            } => {
                *calls += 1;
                match check {
                    None => Plan::Use(*route),
                    Some(c) if c.took.len() >= per_route => Plan::Decide,
                    Some(_) => Plan::Try(*route),
                }
            }
            ClassState::Trying { routes, calls, .. } if *calls >= routes.len() * per_route => {
                Plan::Decide
            }
            ClassState::Trying {
                routes,
                paths,
                calls,
                ..
            } => Plan::Try(routes[route_of(*calls, per_route, *paths)]),
        }
    }

    /// The trial call `plan` gave for `coll` of `bytes` took `ns` (a call
    /// of a route under check too).
    pub fn took(&mut self, coll: Coll, bytes: u64, ns: u64) {
        let per_route = self.per_route;
        if let Some(ClassState::Decided { check: Some(c), .. }) =
            self.classes.get_mut(&class(coll, bytes))
        {
            c.took.push(ns);
            return;
        }
        if let Some(ClassState::Trying {
            paths, calls, took, ..
        }) = self.classes.get_mut(&class(coll, bytes))
        {
            took[route_of(*calls, per_route, *paths)].push(ns);
            *calls += 1;
        }
    }

    /// This process's lower median time of each route of the class of
    /// (`coll`, `bytes`) in ns, in `Asks::routes`' order (0 past them); for
    /// a verdict under check, its route's calls since, first.
    pub fn medians(&self, coll: Coll, bytes: u64) -> [u64; MOST_ROUTES] {
        let mut out = [0; MOST_ROUTES];
        match self.classes.get(&class(coll, bytes)) {
            Some(ClassState::Trying { took, .. }) => {
                for (m, ns) in out.iter_mut().zip(took) {
                    *m = median(ns);
                }
            }
            Some(ClassState::Decided { check: Some(c), .. }) => out[0] = median(&c.took),
            _ => {}
        }
        out
    }

    /// Settles the class of (`coll`, `bytes`) from every process's medians
    /// (`all`, as `medians` gives them; the same list on every process) on
    /// the route whose slowest process was fastest, a non-temporal landing
    /// weighed at 16/15 of its time (`Route::weighed`), ties to the earlier
    /// route (the queues: no system calls, and no waiting for every reader
    /// before the application may touch its buffer; cached: the result
    /// stays in the cache).  Returns the route with the line that says so
    /// (verbose 10).
    pub fn decide(
        &mut self,
        coll: Coll,
        bytes: u64,
        all: &[[u64; MOST_ROUTES]],
    ) -> (Route, String) {
        let key = class(coll, bytes);
        if let Some(ClassState::Decided {
            route,
            check: check @ Some(_),
            ..
        }) = self.classes.get_mut(&key)
        {
            let c = check.as_mut().expect("matched Some");
            let (next, line) = c.settle(all, self.per_route);
            let checked = c.checked[next];
            *route = c.routes[next];
            if checked {
                *check = None;
            } else {
                c.at = next;
                c.took.clear();
            }
            return (*route, format!("{}, checked: {line}", label(key)));
        }
        let (routes, before) = match self.classes.get(&key) {
            Some(ClassState::Trying { routes, before, .. }) => (routes.clone(), *before),
            _ => (
                Asks {
                    path: true,
                    landing: false,
                }
                .routes(),
                None,
            ),
        };
        let slowest: Vec<u64> = (0..routes.len())
            .map(|i| all.iter().map(|m| m[i]).max().unwrap_or(0))
            .collect();
        let best = fastest(&routes, &slowest);
        let route = routes[best];
        let check = (routes.len() > 1).then(|| Check {
            checked: vec![false; routes.len()],
            routes: routes.clone(),
            slowest: slowest.clone(),
            at: best,
            took: Vec::with_capacity(self.per_route),
        });
        self.classes.insert(
            key,
            ClassState::Decided {
                route,
                calls: 0,
                check,
            },
        );
        let again = match (before, self.retry_after) {
            (Some(was), calls) => {
                format!(" (tried again after {calls} calls; before: {})", was.name())
            }
            (None, 0) => String::new(),
            (None, calls) => format!(" (to be tried again after {calls} calls)"),
        };
        let times: Vec<String> = routes
            .iter()
            .zip(&slowest)
            .map(|(r, ns)| format!("{} {:.1} us", r.name(), *ns as f64 / 1e3))
            .collect();
        let line = format!(
            "{}: {} (the slowest process's lower median of {} calls each): {} from now on{again}",
            label(key),
            times.join(", "),
            self.per_route,
            route.name(),
        );
        (route, line)
    }
}

/// How the verbose lines name a size class: "MPI_Bcast of 4194304..8388607
/// bytes in all".
fn label((coll, class): Class) -> String {
    format!(
        "{} of {}..{} bytes in all",
        coll.name(),
        1u64 << class,
        (1u64 << class) * 2 - 1
    )
}

/// The index of the fastest of `routes` by their slowest process's times
/// (`slowest`), weighed (`Route::weighed`), ties to the earlier.
fn fastest(routes: &[Route], slowest: &[u64]) -> usize {
    fastest_of(routes, slowest, 0..routes.len()).unwrap_or(0)
}

/// The index of the fastest of the routes at `among`, weighed and tied as
/// `fastest` does (None: `among` is empty).
fn fastest_of(
    routes: &[Route],
    slowest: &[u64],
    among: impl Iterator<Item = usize>,
) -> Option<usize> {
    among.min_by_key(|&i| (routes[i].weighed(slowest[i]), i))
}

impl Check {
    /// Takes the verdict again with the route under check timed by every
    /// process's lower median of its `per_route` calls (`all[p][0]`): the
    /// route to run from now on, and what the verbose line says.
    fn settle(&mut self, all: &[[u64; MOST_ROUTES]], per_route: usize) -> (usize, String) {
        let ran = all.iter().map(|m| m[0]).max().unwrap_or(0);
        let at = self.at;
        self.slowest[at] = ran;
        self.checked[at] = true;
        let next = fastest(&self.routes, &self.slowest);
        let us = |ns: u64| ns as f64 / 1e3;
        let calls = match per_route {
            1 => "the call".to_string(),
            n => format!("the {n} calls"),
        };
        let mut line = format!(
            "{} ran {:.1} us in {calls} after its verdict (the slowest process's lower median)",
            self.routes[at].name(),
            us(ran),
        );
        // The runner-up: the fastest of the others, as the verdict weighs.
        let others = (0..self.routes.len()).filter(|&i| i != at);
        if let Some(r) = fastest_of(&self.routes, &self.slowest, others) {
            let when = if self.checked[r] {
                "on its own calls"
            } else {
                "in the trials"
            };
            line += &format!(
                ", {} {:.1} us {when}",
                self.routes[r].name(),
                us(self.slowest[r])
            );
        }
        if next == at {
            line += ": kept";
        } else if self.checked[next] {
            line += &format!(": {} instead, for good", self.routes[next].name());
        } else {
            line += &format!(
                ": {} instead, checked the same way",
                self.routes[next].name()
            );
        }
        (next, line)
    }
}

/// Which of a round's routes (`Asks::routes`, `paths` paths for each
/// landing) its trial call `call` (from 0) takes: the cached routes first,
/// then the non-temporal ones, `per_route` calls each; within a landing the
/// paths in runs of two in turn, A A B B A A B B ... (an odd count ends
/// A B).
///
/// Why so: each call starts from the state the one before it left.  A
/// non-temporal call leaves the receive buffer in memory, not cached, and
/// the cached call after it first reads every destination line from
/// memory; so no cached call follows a non-temporal one.  np=2 Gather of 8
/// MiB in all, the routes in runs of two in turn (Qc Qc Qn Qn Sc Sc Sn Sn):
/// single copy cached timed 909-969 us, where it runs the benchmark's calls
/// in 513-570 alone (2026-11-30).  Why runs of two between the paths: a
/// queues call that streams (the size rule) leaves the same state for the
/// single-copy call after it; in a run the second call starts from its own
/// route's state, and the lower median of four ignores the two slowest
/// (np=2 Allgather of 8 MiB a process: single copy timed 3030-3450 us in
/// single calls in turn, 2410-3100 in runs of two).
fn route_of(call: usize, per_route: usize, paths: usize) -> usize {
    let (landing, within) = (call / (paths * per_route), call % (paths * per_route));
    let paired = 2 * paths * (per_route / 2);
    let path = if within < paired {
        (within / 2) % paths
    } else {
        (within - paired) % paths
    };
    landing * paths + path
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

    #[test]
    fn a_class_floor_is_the_least_call_of_its_class() {
        assert_eq!(class_floor(0), 1);
        assert_eq!(class_floor(1), 1);
        assert_eq!(class_floor((3 << 20) + 5), 2 << 20);
        assert_eq!(class_floor(4 << 20), 4 << 20);
        assert_eq!(class_floor((4 << 20) - 1), 2 << 20);
    }

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
            landing: LandingStores::BySize,
        }
    }

    /// Medians of two routes as one process shares them.
    fn two(a: u64, b: u64) -> [u64; MOST_ROUTES] {
        [a, b, 0, 0]
    }

    /// The `per_route` calls after a verdict on `route`, timed at `ns`
    /// each, and the check they lead to, with every process's time `all`
    /// (this one's from its calls when None): the route and the line.
    fn check(
        t: &mut Trials,
        (c, b, asks): (Coll, u64, Asks),
        route: Route,
        ns: u64,
        all: Option<&[[u64; MOST_ROUTES]]>,
    ) -> (Route, String) {
        for _ in 0..t.per_route {
            assert_eq!(t.plan(c, b, asks), Plan::Try(route));
            t.took(c, b, ns);
        }
        assert_eq!(t.plan(c, b, asks), Plan::Decide);
        let mine = t.medians(c, b);
        assert_eq!(mine, [ns, 0, 0, 0]);
        t.decide(c, b, all.unwrap_or(&[mine]))
    }

    /// A class takes queues and single copy in runs of two, `per_route`
    /// calls each, then asks for the decision, then keeps the decided path;
    /// other classes (another size, another collective) count apart.
    #[test]
    fn a_class_alternates_then_decides_then_keeps() {
        use StreamPath::*;
        let mut t = Trials::new(2, 0);
        let (c, b) = (Coll::Scatter, 4u64 << 20);
        let mut seen = Vec::new();
        for ns in [700_000, 710_000, 500_000, 480_000] {
            let Plan::Try(route) = t.plan(c, b, PATH) else {
                panic!("a trial")
            };
            seen.push(route);
            t.took(c, b + 5, ns);
        }
        assert_eq!(seen, [on(Queues), on(Queues), on(Single), on(Single)]);
        assert_eq!(t.plan(Coll::Scatter, 1 << 20, PATH), Plan::Try(on(Queues)));
        assert_eq!(t.plan(Coll::Gather, b, PATH), Plan::Try(on(Queues)));
        assert_eq!(t.plan(c, b, PATH), Plan::Decide);
        assert_eq!(t.medians(c, b), two(700_000, 480_000));
        // The other process was slower by single copy: its time counts.
        let (route, line) = t.decide(c, b, &[two(700_000, 480_000), two(690_000, 720_000)]);
        assert_eq!(route, on(Queues));
        assert!(
            line.contains("bytes in all: the queues 700.0 us, single copy 720.0 us (the"),
            "{line}"
        );
        // Checked on its next 2 calls, the slowest process at 650 us: kept.
        let (kept, line) = check(
            &mut t,
            (c, b, PATH),
            on(Queues),
            600_000,
            Some(&[two(600_000, 0), two(650_000, 0)]),
        );
        assert_eq!(kept, on(Queues));
        assert!(
            line.ends_with("4194304..8388607 bytes in all, checked: the queues ran 650.0 us in the 2 calls after its verdict (the slowest process's lower median), single copy 720.0 us in the trials: kept"),
            "{line}"
        );
        assert_eq!(t.plan(c, b, PATH), Plan::Use(on(Queues)));
        assert_eq!(t.plan(c, (8 << 20) - 1, PATH), Plan::Use(on(Queues)));
    }

    /// A verdict whose route runs slower on the calls after it than the
    /// runner-up did in its trials gives way to it; that one is checked the
    /// same way, and a route checked before wins or loses for good.
    #[test]
    fn a_verdict_that_runs_slower_after_it_gives_way() {
        use StreamPath::*;
        let (c, b) = (Coll::Allgather, 8u64 << 20);
        let mut t = Trials::new(1, 0);
        assert_eq!(t.plan(c, b, PATH), Plan::Try(on(Queues)));
        t.took(c, b, 1192);
        assert_eq!(t.plan(c, b, PATH), Plan::Try(on(Single)));
        t.took(c, b, 1263);
        assert_eq!(t.plan(c, b, PATH), Plan::Decide);
        let (first, _) = t.decide(c, b, &[t.medians(c, b)]);
        assert_eq!(first, on(Queues));
        // The queues run 1642 after it: single copy's 1263 wins.
        let (next, line) = check(&mut t, (c, b, PATH), on(Queues), 1642, None);
        assert_eq!(next, on(Single));
        assert!(
            line.ends_with("checked: the queues ran 1.6 us in the call after its verdict (the slowest process's lower median), single copy 1.3 us in the trials: single copy instead, checked the same way"),
            "{line}"
        );
        // Single copy runs 1700 after it: the queues' own 1642 wins, for good.
        let (last, line) = check(&mut t, (c, b, PATH), on(Single), 1700, None);
        assert_eq!(last, on(Queues));
        assert!(
            line.ends_with("single copy ran 1.7 us in the call after its verdict (the slowest process's lower median), the queues 1.6 us on its own calls: the queues instead, for good"),
            "{line}"
        );
        for _ in 0..3 {
            assert_eq!(t.plan(c, b, PATH), Plan::Use(on(Queues)));
        }
    }

    /// Single copy wins only when its slowest process beats the queues'
    /// slowest; a tie keeps the queues.
    #[test]
    fn single_copy_must_be_faster_for_the_slowest_process() {
        let b = 1u64 << 20;
        let decide = |all: &[[u64; MOST_ROUTES]]| {
            let mut t = Trials::new(1, 0);
            t.plan(Coll::Bcast, b, PATH);
            t.decide(Coll::Bcast, b, all).0.path
        };
        assert_eq!(decide(&[two(100, 99)]), Some(StreamPath::Single));
        assert_eq!(decide(&[two(100, 100)]), Some(StreamPath::Queues));
        assert_eq!(
            decide(&[two(100, 50), two(80, 101)]),
            Some(StreamPath::Queues)
        );
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
    /// calls, then takes both again from the queues, decides again and says
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
        // The call after the verdict is timed, the next checks it (kept),
        // and those count among the 3.
        let (kept, _) = check(&mut t, (c, b, PATH), on(Single), 600, None);
        assert_eq!(kept, on(Single));
        assert_eq!(t.plan(c, b, PATH), Plan::Use(on(Single)));
        let (second, line) = round(&mut t, 500, 600);
        assert_eq!(second, on(Queues));
        assert!(
            line.ends_with(
                "the queues from now on (tried again after 3 calls; before: single copy)"
            ),
            "{line}"
        );
        check(&mut t, (c, b, PATH), on(Queues), 500, None);
        assert_eq!(t.plan(c, b, PATH), Plan::Use(on(Queues)));
    }

    /// A class that asks both compares the four routes together, the
    /// cached ones first, the paths in runs of two, and keeps the fastest;
    /// another round names it.
    #[test]
    fn paths_and_landings_are_tried_together() {
        use LandingStores::*;
        use StreamPath::*;
        let (c, b) = (Coll::Allgather, 16u64 << 20);
        let route = |path, landing| Route {
            path: Some(path),
            landing,
        };
        let mut t = Trials::new(2, 5);
        let mut seen = Vec::new();
        for ns in [2800, 2700, 2600, 2500, 2500, 2400, 1600, 1500] {
            let Plan::Try(r) = t.plan(c, b, BOTH) else {
                panic!("a trial")
            };
            seen.push(r);
            t.took(c, b, ns);
        }
        let order = [
            route(Queues, Cache),
            route(Single, Cache),
            route(Queues, Stream),
            route(Single, Stream),
        ];
        let runs: Vec<Route> = order.iter().flat_map(|&r| [r, r]).collect();
        assert_eq!(seen, runs);
        assert_eq!(t.plan(c, b, BOTH), Plan::Decide);
        assert_eq!(t.medians(c, b), [2700, 2500, 2400, 1500]);
        let (decided, line) = t.decide(c, b, &[t.medians(c, b)]);
        assert_eq!(decided, route(Single, Stream));
        assert!(
            line.contains(": the queues landing cached 2.7 us, single copy landing cached 2.5 us, the queues landing non-temporal 2.4 us, single copy landing non-temporal 1.5 us (the slowest process's lower median of 2 calls each): single copy landing non-temporal from now on (to be tried again after 5 calls)"),
            "{line}"
        );
        let (kept, line) = check(&mut t, (c, b, BOTH), decided, 1500, None);
        assert_eq!(kept, decided);
        assert!(
            line.ends_with("single copy landing non-temporal ran 1.5 us in the 2 calls after its verdict (the slowest process's lower median), single copy landing cached 2.5 us in the trials: kept"),
            "{line}"
        );
        for _ in 0..2 {
            assert_eq!(t.plan(c, b, BOTH), Plan::Use(decided));
        }
        assert_eq!(t.plan(c, b, BOTH), Plan::Try(order[0]));
    }

    /// Non-temporal landing must be more than a sixteenth faster for the
    /// slowest process than a cached route; otherwise the result stays
    /// cached.  Without the path asked, the landing is tried on the floors'
    /// path.
    #[test]
    fn streamed_landing_must_be_clearly_faster() {
        let (c, b) = (Coll::Alltoall, 4u64 << 20);
        let landing = |landing| Route {
            path: None,
            landing,
        };
        let decide = |all: &[[u64; MOST_ROUTES]]| {
            let mut t = Trials::new(1, 0);
            assert_eq!(
                t.plan(c, b, LANDING),
                Plan::Try(landing(LandingStores::Cache))
            );
            t.decide(c, b, all)
        };
        let (route, line) = decide(&[two(1600, 1499)]);
        assert_eq!(route, landing(LandingStores::Stream));
        assert!(
            line.contains("bytes in all: landing cached 1.6 us, landing non-temporal 1.5 us (")
                && line.ends_with("each): landing non-temporal from now on"),
            "{line}"
        );
        assert_eq!(decide(&[two(1600, 1500)]).0, landing(LandingStores::Cache));
        assert_eq!(
            decide(&[two(1600, 1000), two(1000, 1590)]).0,
            landing(LandingStores::Cache)
        );
    }

    /// The cached routes first, then the non-temporal ones; the paths in
    /// runs of two, each route `per_route` calls (an odd count ends with one
    /// call of each path).
    #[test]
    fn routes_go_landing_by_landing_in_runs_of_two() {
        let order = |per_route: usize, paths: usize, landings: usize| -> Vec<usize> {
            (0..paths * landings * per_route)
                .map(|k| route_of(k, per_route, paths))
                .collect()
        };
        assert_eq!(order(1, 2, 1), [0, 1]);
        assert_eq!(order(2, 2, 1), [0, 0, 1, 1]);
        assert_eq!(order(3, 2, 1), [0, 0, 1, 1, 0, 1]);
        assert_eq!(order(4, 2, 1), [0, 0, 1, 1, 0, 0, 1, 1]);
        assert_eq!(order(3, 1, 2), [0, 0, 0, 1, 1, 1]);
        assert_eq!(order(1, 2, 2), [0, 1, 2, 3]);
        assert_eq!(order(2, 2, 2), [0, 0, 1, 1, 2, 2, 3, 3]);
        assert_eq!(order(3, 2, 2), [0, 0, 1, 1, 0, 1, 2, 2, 3, 3, 2, 3]);
        for (paths, landings) in [(2, 1), (1, 2), (2, 2)] {
            for per_route in 1..=64 {
                let each = order(per_route, paths, landings);
                for r in 0..paths * landings {
                    assert_eq!(each.iter().filter(|&&x| x == r).count(), per_route);
                }
            }
        }
    }

    #[test]
    fn medians_of_odd_and_even_counts() {
        assert_eq!(median(&[]), 0);
        assert_eq!(median(&[9, 1, 5]), 5);
        assert_eq!(median(&[9, 1, 5, 3]), 3);
    }
}
