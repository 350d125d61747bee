//! MPI correctness tests of sharm's collectives other than Bcast and Reduce
//! (Barrier, Gather(v), Scatter(v), Allgather(v), Alltoall(v),
//! Reduce_scatter(_block), Scan, Exscan, and Allreduce under its
//! `allgather` and `reduce_scatter_allgather` algorithms), under `mpirun`.
//!
//! The checks live in `tests/mpi/collectives_check.c` (compiled once per test
//! process into `target/collectives-tests/`); every `#[test]` is one mpirun
//! of it with a scenario (or several) and MCA parameters, and asserts that it
//! exits 0 with its summary line and leaves no `/dev/shm/sharm-<pid>-*` of
//! its processes behind.  The C side checks every result against values it
//! computes itself and the MPI_T counters `coll_sharm_<op>_served` /
//! `_fallbacks` around every call.
//!
//! Needs `cargo build --release` first: the plugin under test is
//! `target/release/libmca_coll_sharm.so` (or `$SHARM_PLUGIN`), copied to
//! `target/collectives-tests/components/mca_coll_sharm.so`.  One mpirun at a
//! time (a global lock), each under `timeout -s KILL 300`.

mod support;

use std::collections::BTreeSet;

use std::fs;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Mutex, OnceLock};
use std::time::Instant;
use support::{shm_files_of, OMPI_COMPONENTS};

const TIMEOUT: &str = "300";
/// The C program aborts itself, naming the pending call, after this long.
const ALARM: &str = "200";
const PROGRAM: &str = "collectives_check";

/// Every scenario but `allreduce` (run under the forced algorithms below).
const ALL: &str = "gather,scatter,allgather,alltoall,redscat,scan,big,comms,barrier,mixed";

static MPIRUN: Mutex<()> = Mutex::new(());
static SETUP: OnceLock<Result<(PathBuf, PathBuf), String>> = OnceLock::new();

fn prepare() -> Result<(PathBuf, PathBuf), String> {
    support::prepare("collectives-tests", PROGRAM)
}

/// Runs the checker on `np` processes; panics with the command and the whole
/// output unless it succeeded.  Returns the output.
fn mpirun(np: usize, scenarios: &str, mca: &[(&str, &str)], args: &[&str]) -> String {
    let (components, program) = match SETUP.get_or_init(prepare) {
        Ok(s) => s,
        Err(e) => panic!("setup failed: {e}"),
    };
    let _one_at_a_time = MPIRUN.lock().unwrap_or_else(|p| p.into_inner());
    let path = format!("{}:{OMPI_COMPONENTS}", components.display());
    let np_s = np.to_string();
    let mut argv: Vec<String> = [
        "-s",
        "KILL",
        TIMEOUT,
        "mpirun.openmpi",
        "--allow-run-as-root",
    ]
    .map(String::from)
    .to_vec();
    if np > 2 {
        argv.push("--oversubscribe".into());
    }
    let fixed = [
        "-np",
        &np_s,
        "--mca",
        "mca_base_component_path",
        &path,
        "--mca",
        "coll_sharm_priority",
        "100",
        "--mca",
        "op",
        "^avx",
    ];
    argv.extend(fixed.map(String::from));
    for (k, v) in mca {
        argv.extend(["--mca", k, v].map(String::from));
    }
    argv.push(program.display().to_string());
    argv.push(scenarios.into());
    argv.extend(["--alarm", ALARM].map(String::from));
    argv.extend(args.iter().map(|a| a.to_string()));
    let shown = format!("timeout {}", argv.join(" "));

    let mut cmd = Command::new("timeout");
    cmd.args(&argv)
        .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    for (key, _) in std::env::vars_os() {
        if key.to_string_lossy().starts_with("OMPI_MCA_") {
            cmd.env_remove(key);
        }
    }
    let started = Instant::now();
    let child = cmd
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start `{shown}`: {e}"));
    let group = child.id();
    let out = child.wait_with_output().expect("wait for mpirun");
    let secs = started.elapsed().as_secs_f64();
    let killed = out.status.signal() == Some(9) || out.status.code() == Some(137);
    if killed {
        // Whatever is left of the job, in its own process group.
        let _ = Command::new("kill")
            .args(["-KILL", "--", &format!("-{group}")])
            .status();
    }
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let pids: BTreeSet<u32> = stdout
        .lines()
        .filter_map(|l| l.strip_prefix(&format!("{PROGRAM}: start ")))
        .filter_map(|l| l.split("pids=").nth(1))
        .flat_map(|p| p.split(',').filter_map(|x| x.trim().parse().ok()))
        .collect();
    let leftovers = shm_files_of(&pids);
    for f in &leftovers {
        let _ = fs::remove_file(Path::new("/dev/shm").join(f));
    }
    let report = |why: &str| {
        format!(
            "{why}\ncommand: {shown}\nstatus: {:?} after {secs:.1} s\n---- stdout ----\n{stdout}---- stderr ----\n{stderr}",
            out.status
        )
    };
    assert!(!killed, "{}", report("killed after the timeout"));
    assert!(out.status.success(), "{}", report("the MPI job failed"));
    let summary = format!("{PROGRAM}: OK np={np} scenarios={scenarios} ");
    assert!(stdout.contains(&summary), "{}", report("no summary line"));
    assert!(
        leftovers.is_empty(),
        "{}",
        report(&format!("left in /dev/shm: {leftovers:?}"))
    );
    eprintln!("{shown}: {secs:.1} s");
    stdout
}

/// The counters of the summary line (calls checked, served, fallbacks).
fn totals(out: &str) -> (u64, u64, u64) {
    let line = out
        .lines()
        .find(|l| l.starts_with(&format!("{PROGRAM}: OK ")))
        .expect("summary line");
    let get = |key: &str| -> u64 {
        line.split_whitespace()
            .find_map(|w| w.strip_prefix(key)?.parse().ok())
            .unwrap_or_else(|| panic!("no {key} in {line}"))
    };
    (get("calls="), get("served="), get("fallbacks="))
}

// ---- every scenario at np 2, 3, 4, 6 (3+ oversubscribed), default parameters ----

#[test]
fn np1_all() {
    // A one-process MPI_COMM_WORLD is not sharm's: nothing is counted.
    let (calls, served, fallbacks) = totals(&mpirun(1, ALL, &[], &[]));
    assert!(calls > 0 && served == 0 && fallbacks == 0);
}

/// One `#[test]` per process count and scenario.
macro_rules! scenarios {
    ($($name:ident: $np:literal $scenario:literal;)*) => {$(
        #[test]
        fn $name() {
            let (_, served, _) = totals(&mpirun($np, $scenario, &[], &[]));
            assert!(served > 0, "sharm served nothing");
        }
    )*};
}

scenarios! {
    np2_gather: 2 "gather";
    np2_scatter: 2 "scatter";
    np2_allgather: 2 "allgather";
    np2_alltoall: 2 "alltoall";
    np2_reduce_scatter: 2 "redscat";
    np2_scan: 2 "scan";
    np2_big: 2 "big";
    np2_comms: 2 "comms";
    np2_barrier: 2 "barrier";
    np2_mixed: 2 "mixed";
    np3_gather: 3 "gather";
    np3_scatter: 3 "scatter";
    np3_allgather: 3 "allgather";
    np3_alltoall: 3 "alltoall";
    np3_reduce_scatter: 3 "redscat";
    np3_scan: 3 "scan";
    np3_big: 3 "big";
    np3_comms: 3 "comms";
    np3_barrier: 3 "barrier";
    np3_mixed: 3 "mixed";
    np4_gather: 4 "gather";
    np4_scatter: 4 "scatter";
    np4_allgather: 4 "allgather";
    np4_alltoall: 4 "alltoall";
    np4_reduce_scatter: 4 "redscat";
    np4_scan: 4 "scan";
    np4_big: 4 "big";
    np4_comms: 4 "comms";
    np4_barrier: 4 "barrier";
    np4_mixed: 4 "mixed";
    np6_gather: 6 "gather";
    np6_scatter: 6 "scatter";
    np6_allgather: 6 "allgather";
    np6_alltoall: 6 "alltoall";
    np6_reduce_scatter: 6 "redscat";
    np6_scan: 6 "scan";
    np6_big: 6 "big";
    np6_comms: 6 "comms";
    np6_barrier: 6 "barrier";
    np6_mixed: 6 "mixed";
}

// ---- Allreduce under the two newer algorithms ----

fn allreduce(np: usize, alg: &str) {
    let mca = [("coll_sharm_allreduce_algorithm", alg)];
    mpirun(np, "allreduce,comms", &mca, &[]);
}

#[test]
fn np2_allreduce_allgather() {
    allreduce(2, "allgather");
}

#[test]
fn np3_allreduce_allgather() {
    allreduce(3, "allgather");
}

#[test]
fn np4_allreduce_allgather() {
    allreduce(4, "allgather");
}

#[test]
fn np6_allreduce_allgather() {
    allreduce(6, "allgather");
}

#[test]
fn np2_allreduce_reduce_scatter_allgather() {
    allreduce(2, "reduce_scatter_allgather");
}

#[test]
fn np3_allreduce_reduce_scatter_allgather() {
    allreduce(3, "reduce_scatter_allgather");
}

#[test]
fn np4_allreduce_reduce_scatter_allgather() {
    allreduce(4, "reduce_scatter_allgather");
}

#[test]
fn np6_allreduce_reduce_scatter_allgather() {
    allreduce(6, "reduce_scatter_allgather");
}

// ---- Alltoall and Scan/Exscan under each named algorithm ----

fn forced(np: usize, scenario: &str, param: &str, alg: &str, geometry: &[(&str, &str)]) {
    let mut mca = vec![(param, alg)];
    mca.extend_from_slice(geometry);
    let (_, served, _) = totals(&mpirun(np, scenario, &mca, &[]));
    assert!(served > 0, "sharm served nothing");
}

#[test]
fn alltoall_linear_and_pairwise() {
    for alg in ["linear", "pairwise"] {
        for np in [2, 3, 5] {
            forced(np, "alltoall", "coll_sharm_alltoall_algorithm", alg, &[]);
        }
        // Many fragments per block and queue wrap-around.
        forced(
            4,
            "alltoall",
            "coll_sharm_alltoall_algorithm",
            alg,
            &[
                ("coll_sharm_queue_slots", "2"),
                ("coll_sharm_fragment_size", "64"),
            ],
        );
    }
}

#[test]
fn scan_linear_and_chain() {
    for alg in ["linear", "chain"] {
        for np in [2, 3, 5] {
            forced(np, "scan", "coll_sharm_scan_algorithm", alg, &[]);
        }
        forced(
            4,
            "scan",
            "coll_sharm_scan_algorithm",
            alg,
            &[
                ("coll_sharm_queue_slots", "2"),
                ("coll_sharm_fragment_size", "64"),
            ],
        );
    }
}

#[test]
fn allgather_gather_bcast() {
    for np in [2, 3, 5] {
        forced(
            np,
            "allgather",
            "coll_sharm_allgather_algorithm",
            "gather_bcast",
            &[],
        );
    }
    forced(
        4,
        "allgather",
        "coll_sharm_allgather_algorithm",
        "gather_bcast",
        &[
            ("coll_sharm_queue_slots", "2"),
            ("coll_sharm_fragment_size", "64"),
        ],
    );
}

#[test]
fn reduce_scatter_reduce_then_scatter() {
    for np in [2, 3, 5] {
        forced(
            np,
            "redscat",
            "coll_sharm_reduce_scatter_algorithm",
            "reduce_then_scatter",
            &[],
        );
    }
    forced(
        4,
        "redscat",
        "coll_sharm_reduce_scatter_algorithm",
        "reduce_then_scatter",
        &[
            ("coll_sharm_queue_slots", "2"),
            ("coll_sharm_fragment_size", "64"),
        ],
    );
}

// ---- small geometries: many fragments, queue wrap-around ----

fn geometry(np: usize, s: &str, f: &str, alg: &str, big: &str) {
    let mca = [
        ("coll_sharm_queue_slots", s),
        ("coll_sharm_fragment_size", f),
        ("coll_sharm_allreduce_algorithm", alg),
    ];
    let all = format!("{ALL},allreduce");
    mpirun(np, &all, &mca, &["--s", s, "--f", f, "--big", big]);
}

#[test]
fn np2_slots2_fragment64() {
    geometry(2, "2", "64", "reduce_scatter_allgather", "1048576");
}

#[test]
fn np3_slots2_fragment64() {
    geometry(3, "2", "64", "allgather", "262144");
}

#[test]
fn np4_slots2_fragment64() {
    geometry(4, "2", "64", "reduce_scatter_allgather", "262144");
}

#[test]
fn np3_slots4_fragment128() {
    geometry(3, "4", "128", "reduce_scatter_allgather", "1048576");
}

#[test]
fn np4_slots4_fragment128() {
    geometry(4, "4", "128", "allgather", "1048576");
}

// ---- Barrier algorithms ----

fn barrier(np: usize, alg: &str, radix: &str) {
    let mca = [
        ("coll_sharm_barrier_algorithm", alg),
        ("coll_sharm_knomial_radix", radix),
    ];
    mpirun(np, "barrier", &mca, &["--iters", "1000"]);
}

#[test]
fn np2_barrier_linear() {
    barrier(2, "linear", "2");
}

#[test]
fn np2_barrier_knomial() {
    barrier(2, "knomial", "2");
}

#[test]
fn np3_barrier_linear() {
    barrier(3, "linear", "2");
}

#[test]
fn np3_barrier_knomial() {
    barrier(3, "knomial", "2");
}

#[test]
fn np4_barrier_linear() {
    barrier(4, "linear", "2");
}

#[test]
fn np4_barrier_knomial() {
    barrier(4, "knomial", "2");
}

#[test]
fn np6_barrier_linear() {
    barrier(6, "linear", "2");
}

#[test]
fn np6_barrier_knomial_radix3() {
    barrier(6, "knomial", "3");
}

// ---- forced fallback: right answers, every call handed over and counted ----

#[test]
fn np3_fallback_max_message_size() {
    let mca = [("coll_sharm_max_message_size", "1")];
    let (_, _, fallbacks) = totals(&mpirun(3, ALL, &mca, &["--expect", "max1"]));
    assert!(fallbacks > 0);
}

#[test]
fn np4_fallback_shared_memory_budget() {
    let mca = [("coll_sharm_shared_memory_budget", "1")];
    let (_, _, fallbacks) = totals(&mpirun(4, ALL, &mca, &["--expect", "budget1"]));
    assert!(fallbacks > 0);
}

/// No `/dev/shm/sharm-<pid>-*` whose process is gone.
#[test]
fn no_stale_shared_memory_files() {
    let _one_at_a_time = MPIRUN.lock().unwrap_or_else(|p| p.into_inner());
    let stale: Vec<String> = fs::read_dir("/dev/shm")
        .map(|d| {
            d.filter_map(|e| e.ok()?.file_name().into_string().ok())
                .filter(|name| {
                    name.strip_prefix("sharm-")
                        .and_then(|rest| rest.split('-').next()?.parse::<u32>().ok())
                        .is_some_and(|pid| !Path::new(&format!("/proc/{pid}")).exists())
                })
                .collect()
        })
        .unwrap_or_default();
    assert!(stale.is_empty(), "stale sharm segments: {stale:?}");
}
