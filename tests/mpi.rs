//! MPI correctness tests of sharm's Bcast, Reduce and Allreduce under
//! `mpirun`.
//!
//! The checks live in the C checker `sharm_check` (tests/mpi/check_*.c, one
//! file per operation family; built once per test process into
//! `target/mpi-tests/`); every `#[test]` here runs it through the launcher
//! of `tests/support` with a set of scenarios and MCA parameters and asserts
//! that it exits 0 with its summary line and leaves no
//! `/dev/shm/sharm-<pid>-*` of its processes behind.  Results are checked
//! against values computed independently in C, and the MPI_T counters
//! `coll_sharm_<op>_served` / `_fallbacks` / `_hierarchical` around every
//! call.
//!
//! Needs `cargo build --release` first: the plugin under test is
//! `target/release/libmca_coll_sharm.so` (or `$SHARM_PLUGIN`).

mod support;

use support::{checker, run_checker, stale_shm_files};

/// The scenarios every configuration runs.
const CORE: &str = "ops,big,dtypes,comms,unservable";

/// Runs the checker and returns stdout + stderr; panics (with the command
/// line and the whole output) unless it succeeded.
fn mpirun(np: usize, scenarios: &str, mca: &[(&str, &str)], args: &[&str]) -> String {
    let job = checker().job(np, scenarios).mcas(mca).args(args);
    run_checker(&job, scenarios).0.output()
}

/// The job must fail (not time out), leaving nothing behind.
fn mpirun_failing(np: usize, scenarios: &str) -> String {
    let run = checker().job(np, scenarios).run();
    run.assert_failed();
    run.output()
}

fn algorithms(alg: &str, radix: &str) -> Vec<(&'static str, String)> {
    vec![
        ("coll_sharm_bcast_algorithm", alg.to_owned()),
        ("coll_sharm_reduce_algorithm", alg.to_owned()),
        ("coll_sharm_allreduce_algorithm", alg.to_owned()),
        ("coll_sharm_knomial_radix", radix.to_owned()),
    ]
}

fn as_refs<'a>(v: &'a [(&'static str, String)]) -> Vec<(&'static str, &'a str)> {
    v.iter().map(|(k, s)| (*k, s.as_str())).collect()
}

// ---- every scenario at np 1..4, sharm forced, default parameters ----

#[test]
fn np1_everything() {
    // MPI_COMM_WORLD of one process: sharm must not see any call.
    mpirun(1, &format!("{CORE},stress,packed"), &[], &[]);
}

/// Default parameters, sizes chosen around the slot count sharm picks by
/// itself (`coll_sharm_queue_slots` 0: a ring of two of one core's L2 caches),
/// which the segment set-up line at verbose 10 must show.
fn core_at_auto_geometry(np: usize) {
    use mca_coll_sharm::shm::{channel::l2_cache_bytes, layout::auto_slots};
    let s = auto_slots(np, 8192, l2_cache_bytes(), 1 << 30).to_string();
    let out = mpirun(
        np,
        CORE,
        &[("coll_sharm_verbose", "10")],
        &["--s", &s, "--big", "4194304"],
    );
    let needle = format!("(p={np} s={s} f=8192");
    assert!(
        out.contains(&needle),
        "no segment set up with `{needle}` (auto slots):\n{out}"
    );
}

#[test]
fn np2_core() {
    core_at_auto_geometry(2);
}

#[test]
fn np3_core() {
    core_at_auto_geometry(3);
}

#[test]
fn np4_core() {
    mpirun(4, CORE, &[], &[]);
}

/// Six processes, default algorithms: `auto` picks k-nomial reductions here.
#[test]
fn np6_core() {
    mpirun(6, CORE, &[], &[]);
}

#[test]
fn np2_stress_10000_calls() {
    mpirun(2, "stress", &[], &["--calls", "10000"]);
}

#[test]
fn np3_stress_10000_calls() {
    mpirun(3, "stress", &[], &["--calls", "10000"]);
}

#[test]
fn np4_stress_10000_calls() {
    mpirun(4, "stress", &[], &["--calls", "10000"]);
}

// ---- Bcast of datatypes whose packed elements straddle fragments ----

#[test]
fn np2_packed_straddling_elements() {
    mpirun(2, "packed", &[], &[]);
}

#[test]
fn np3_packed_straddling_elements() {
    mpirun(3, "packed", &[], &[]);
}

#[test]
fn np4_packed_straddling_elements() {
    mpirun(4, "packed", &[], &[]);
}

#[test]
fn np4_packed_knomial_radix3() {
    mpirun(4, "packed", &as_refs(&algorithms("knomial", "3")), &[]);
}

// ---- forced fallback: results right, fallbacks counted, nothing served ----

const MAX1: (&str, &str) = ("coll_sharm_max_message_size", "1");
const BUDGET1: (&str, &str) = ("coll_sharm_shared_memory_budget", "1");

#[test]
fn np3_fallback_max_message_size() {
    let s = format!("{CORE},packed,stress");
    mpirun(3, &s, &[MAX1], &["--expect", "max1", "--calls", "2000"]);
}

#[test]
fn np4_fallback_max_message_size() {
    let s = format!("{CORE},packed,stress");
    mpirun(4, &s, &[MAX1], &["--expect", "max1", "--calls", "2000"]);
}

#[test]
fn np3_fallback_shared_memory_budget() {
    let s = format!("{CORE},packed,stress");
    mpirun(
        3,
        &s,
        &[BUDGET1],
        &["--expect", "budget1", "--calls", "2000"],
    );
}

#[test]
fn np4_fallback_shared_memory_budget() {
    let s = format!("{CORE},packed,stress");
    mpirun(
        4,
        &s,
        &[BUDGET1],
        &["--expect", "budget1", "--calls", "2000"],
    );
}

#[test]
fn verbose_explains_handover() {
    const LINE: &str = "handed to the next component";
    let out = mpirun(2, "unservable", &[("coll_sharm_verbose", "1")], &[]);
    for op in ["MPI_Reduce", "MPI_Allreduce"] {
        let needle = format!("{op} {LINE}");
        assert!(
            out.lines()
                .any(|l| l.contains("coll:sharm") && l.contains(&needle)),
            "no line with `{needle}` at coll_sharm_verbose 1:\n{out}"
        );
    }
    // And silence at the default verbosity.
    let quiet = mpirun(2, "unservable", &[], &[]);
    assert!(
        !quiet.contains(LINE),
        "explanations printed at coll_sharm_verbose 0:\n{quiet}"
    );
}

// ---- every algorithm forced by name ----

fn forced(np: usize, alg: &str, radix: &str) {
    let mca = algorithms(alg, radix);
    mpirun(
        np,
        &format!("{CORE},stress"),
        &as_refs(&mca),
        &["--calls", "2000"],
    );
}

#[test]
fn np3_linear() {
    forced(3, "linear", "2");
}

#[test]
fn np4_linear() {
    forced(4, "linear", "2");
}

#[test]
fn np3_knomial_radix2() {
    forced(3, "knomial", "2");
}

#[test]
fn np4_knomial_radix2() {
    forced(4, "knomial", "2");
}

#[test]
fn np4_knomial_radix3() {
    forced(4, "knomial", "3");
}

#[test]
fn np4_knomial_radix4() {
    forced(4, "knomial", "4");
}

/// Six processes: radix-3 and radix-4 trees of more than one level.
#[test]
fn np6_knomial_radix3() {
    forced(6, "knomial", "3");
}

#[test]
fn np6_knomial_radix4() {
    forced(6, "knomial", "4");
}

#[test]
fn np3_allreduce_allgather() {
    let mca = [("coll_sharm_allreduce_algorithm", "allgather")];
    mpirun(3, &format!("{CORE},stress"), &mca, &["--calls", "2000"]);
}

#[test]
fn np4_allreduce_allgather() {
    let mca = [("coll_sharm_allreduce_algorithm", "allgather")];
    mpirun(4, &format!("{CORE},stress"), &mca, &["--calls", "2000"]);
}

#[test]
fn np3_allreduce_reduce_scatter_allgather() {
    let mca = [("coll_sharm_allreduce_algorithm", "reduce_scatter_allgather")];
    mpirun(3, &format!("{CORE},stress"), &mca, &["--calls", "2000"]);
}

#[test]
fn np4_allreduce_reduce_scatter_allgather() {
    let mca = [("coll_sharm_allreduce_algorithm", "reduce_scatter_allgather")];
    mpirun(4, &format!("{CORE},stress"), &mca, &["--calls", "2000"]);
}

// ---- small geometry: 2 slots of 64 bytes (queue wrap-around, many fragments) ----

fn small(np: usize, mut mca: Vec<(&'static str, String)>, big: &str) {
    mca.push(("coll_sharm_queue_slots", "2".to_owned()));
    mca.push(("coll_sharm_fragment_size", "64".to_owned()));
    let args = ["--f", "64", "--s", "2", "--big", big, "--calls", "3000"];
    mpirun(np, &format!("{CORE},stress"), &as_refs(&mca), &args);
}

fn allreduce_only(alg: &str) -> Vec<(&'static str, String)> {
    vec![("coll_sharm_allreduce_algorithm", alg.to_owned())]
}

#[test]
fn np2_small_geometry() {
    small(2, Vec::new(), "16777216");
}

#[test]
fn np3_small_geometry() {
    small(3, Vec::new(), "1048576");
}

#[test]
fn np4_small_geometry() {
    small(4, Vec::new(), "1048576");
}

#[test]
fn np3_small_geometry_linear() {
    small(3, algorithms("linear", "2"), "1048576");
}

#[test]
fn np4_small_geometry_knomial_radix2() {
    small(4, algorithms("knomial", "2"), "1048576");
}

#[test]
fn np4_small_geometry_knomial_radix3() {
    small(4, algorithms("knomial", "3"), "1048576");
}

#[test]
fn np4_small_geometry_allreduce_allgather() {
    small(4, allreduce_only("allgather"), "1048576");
}

#[test]
fn np4_small_geometry_allreduce_reduce_scatter_allgather() {
    small(4, allreduce_only("reduce_scatter_allgather"), "1048576");
}

/// Geometries sharm must round or split unevenly: f not a multiple of 64,
/// odd slot counts.
fn odd(np: usize, slots: &str, fragment: &str) {
    let mca = [
        ("coll_sharm_queue_slots", slots),
        ("coll_sharm_fragment_size", fragment),
    ];
    let args = [
        "--s", slots, "--f", fragment, "--big", "2000000", "--calls", "2000",
    ];
    mpirun(np, &format!("{CORE},stress,packed"), &mca, &args);
}

#[test]
fn np3_odd_geometry_s3_f100() {
    odd(3, "3", "100");
}

#[test]
fn np4_odd_geometry_s5_f192() {
    odd(4, "5", "192");
}

/// A slot count that is not a power of two, whose fragments of 3 and 6
/// slots still make power-of-two rings of places (6 slots in groups of 3,
/// 12 in groups of 3 or 6): streams of 24 KiB and more take the spread
/// placement's prime places there too (np=2: a core per process).
#[test]
fn np2_odd_geometry_s6_s12_f8192() {
    for slots in ["6", "12"] {
        odd(2, slots, "8192");
    }
}

#[test]
fn np3_small_geometry_packed() {
    let mca = [
        ("coll_sharm_queue_slots", "2"),
        ("coll_sharm_fragment_size", "64"),
    ];
    mpirun(3, "packed", &mca, &["--f", "64", "--s", "2"]);
}

// ---- nothing left behind ----

/// A process dies while the others wait in a served Bcast: the job ends and
/// leaves no segment behind (names are unlinked once all attached).
#[test]
fn np2_crash_leaves_nothing() {
    let out = mpirun_failing(2, "crash");
    assert!(out.contains("crashing rank 1 on purpose"), "{out}");
}

#[test]
fn np4_crash_leaves_nothing() {
    let out = mpirun_failing(4, "crash");
    assert!(out.contains("crashing rank 3 on purpose"), "{out}");
}

/// No `/dev/shm/sharm-<pid>-*` whose creating process is gone (a segment
/// that outlived its job; every run also checks its own processes' files).
#[test]
fn no_stale_shared_memory_files() {
    let stale = stale_shm_files();
    assert!(
        stale.is_empty(),
        "stale sharm segments in /dev/shm (creator gone): {stale:?}"
    );
}
