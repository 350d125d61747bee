//! MPI correctness tests of the sharm coll component, under `mpirun`.
//!
//! The checks themselves live in `tests/mpi/sharm_check.c` (compiled once per
//! test process into `target/mpi-tests/`); every `#[test]` here runs one
//! `mpirun` of it with a set of scenarios and MCA parameters and asserts that
//! it exits 0 and prints its summary line.  Results are checked against values
//! computed independently in C, and the MPI_T counters
//! `coll_sharm_<op>_served` / `_fallbacks` are checked around every call.
//!
//! Needs `cargo build --release` first: the plugin under test is
//! `target/release/libmca_coll_sharm.so` (or `$SHARM_PLUGIN`), copied into
//! `target/mpi-tests/components/mca_coll_sharm.so`.  mpiruns are serialized
//! by a global lock (the machine has 2 cores); after each one, no
//! `/dev/shm/sharm-<pid>-*` of the job's processes may remain.

mod support;

use std::collections::BTreeSet;

use std::ffi::OsString;
use std::fs;
use std::io::Read;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex, OnceLock};
use std::thread::JoinHandle;
use std::time::Instant;
use support::{shm_files_of, OMPI_COMPONENTS};

/// Open MPI's own component directory (must stay in mca_base_component_path).
/// Seconds before `timeout` kills an mpirun; the C program aborts itself
/// (naming the pending call) earlier: no run takes more than ~10 s here.
const TIMEOUT_S: u32 = 300;
const ALARM_S: u32 = 120;

/// The scenarios every configuration runs (see sharm_check.c).
const CORE: &str = "ops,big,dtypes,comms,unservable";

/// One mpirun at a time, whatever the test harness's thread count.
static MPIRUN: Mutex<()> = Mutex::new(());

struct Setup {
    components: PathBuf,
    check: PathBuf,
}

static SETUP: OnceLock<Result<Setup, String>> = OnceLock::new();

fn prepare() -> Result<Setup, String> {
    let (components, check) = support::prepare("mpi-tests", "sharm_check")?;
    Ok(Setup { components, check })
}

fn setup() -> &'static Setup {
    match SETUP.get_or_init(prepare) {
        Ok(s) => s,
        Err(e) => panic!("MPI test setup failed: {e}"),
    }
}

/// The pids the job printed (`sharm_check: start np=N pids=a,b,...`).
fn job_pids(stdout: &str) -> BTreeSet<u32> {
    stdout
        .lines()
        .filter_map(|l| l.strip_prefix("sharm_check: start "))
        .filter_map(|l| l.split("pids=").nth(1))
        .flat_map(|p| p.split(',').filter_map(|x| x.trim().parse().ok()))
        .collect()
}

/// Reads `pipe` to its end in a thread, into a buffer readable meanwhile.
fn collect(mut pipe: impl Read + Send + 'static) -> (Arc<Mutex<Vec<u8>>>, JoinHandle<()>) {
    let buf = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&buf);
    let reader = std::thread::spawn(move || {
        let mut chunk = [0u8; 8192];
        while let Ok(n) = pipe.read(&mut chunk) {
            if n == 0 {
                break;
            }
            sink.lock().unwrap().extend_from_slice(&chunk[..n]);
        }
    });
    (buf, reader)
}

/// SIGKILL to the job's processes that are still our checker.
fn kill_job(pids: &BTreeSet<u32>) {
    for pid in pids {
        let cmdline = fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
        if String::from_utf8_lossy(&cmdline).contains("sharm_check") {
            let _ = Command::new("kill")
                .args(["-KILL", &pid.to_string()])
                .status();
        }
    }
}

/// Runs the checker under mpirun and returns stdout + stderr; panics (with
/// the command line and the whole output) unless it succeeded.
fn mpirun(np: usize, scenarios: &str, mca: &[(&str, &str)], args: &[&str]) -> String {
    launch(np, scenarios, mca, args, true)
}

/// `mpirun`, or with `succeed` false: the job must fail (not time out).
/// Either way no shared-memory file of the job's processes may remain.
fn launch(
    np: usize,
    scenarios: &str,
    mca: &[(&str, &str)],
    args: &[&str],
    succeed: bool,
) -> String {
    let setup = setup();
    let _one_at_a_time = MPIRUN
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    let np_s = np.to_string();
    let path = format!("{}:{OMPI_COMPONENTS}", setup.components.display());
    let mut argv: Vec<OsString> = vec!["-s".into(), "KILL".into(), TIMEOUT_S.to_string().into()];
    argv.extend(["mpirun.openmpi", "--allow-run-as-root"].map(OsString::from));
    if np > 2 {
        argv.push("--oversubscribe".into());
    }
    argv.extend(["-np", &np_s, "--mca", "mca_base_component_path", &path].map(OsString::from));
    argv.extend(["--mca", "op", "^avx", "--mca", "coll_sharm_priority", "100"].map(OsString::from));
    for (k, v) in mca {
        argv.extend(["--mca", k, v].map(OsString::from));
    }
    argv.push(setup.check.clone().into());
    argv.push(scenarios.into());
    argv.extend(["--alarm".to_owned(), ALARM_S.to_string()].map(OsString::from));
    argv.extend(args.iter().map(OsString::from));
    let shown = format!(
        "timeout {}",
        argv.iter()
            .map(|a| a.to_string_lossy())
            .collect::<Vec<_>>()
            .join(" ")
    );

    let mut cmd = Command::new("timeout");
    cmd.args(&argv)
        .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    // Inherited MCA settings would change what is tested.
    for (key, _) in std::env::vars_os() {
        if key.to_string_lossy().starts_with("OMPI_MCA_") {
            cmd.env_remove(key);
        }
    }
    let started = Instant::now();
    let mut child = cmd
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start `{shown}`: {e}"));
    let (out_buf, out_reader) = collect(child.stdout.take().expect("piped stdout"));
    let (err_buf, err_reader) = collect(child.stderr.take().expect("piped stderr"));
    let status = child.wait().expect("wait for mpirun");
    let elapsed = started.elapsed();
    let timed_out = status.signal() == Some(9) || status.code() == Some(137);
    if timed_out {
        // mpirun is gone; its processes (each in its own process group) may
        // still run and hold the pipes open.
        let early = String::from_utf8_lossy(&out_buf.lock().unwrap()).into_owned();
        kill_job(&job_pids(&early));
    }
    let _ = out_reader.join();
    let _ = err_reader.join();
    let stdout = String::from_utf8_lossy(&out_buf.lock().unwrap()).into_owned();
    let stderr = String::from_utf8_lossy(&err_buf.lock().unwrap()).into_owned();
    let pids = job_pids(&stdout);
    let leftovers = shm_files_of(&pids);
    let text = format!("{stdout}{stderr}");
    let report = |why: &str| {
        format!(
            "{why}\ncommand: {shown}\nstatus: {:?} after {:.1} s\n---- stdout ----\n{stdout}---- stderr ----\n{stderr}",
            status,
            elapsed.as_secs_f64()
        )
    };
    if !leftovers.is_empty() {
        // Ours: remove them so later runs start clean, then fail.
        for f in &leftovers {
            let _ = fs::remove_file(Path::new("/dev/shm").join(f));
        }
    }
    assert!(
        !timed_out,
        "{}",
        report("mpirun was killed after the timeout")
    );
    if succeed {
        assert!(status.success(), "{}", report("the MPI job failed"));
        let summary = format!("sharm_check: OK np={np} scenarios={scenarios} ");
        assert!(text.contains(&summary), "{}", report("no summary line"));
    } else {
        assert!(!status.success(), "{}", report("the MPI job should fail"));
        assert!(!pids.is_empty(), "{}", report("the job did not start"));
    }
    assert!(
        leftovers.is_empty(),
        "{}",
        report(&format!(
            "shared-memory files left in /dev/shm: {leftovers:?}"
        ))
    );
    eprintln!("{shown}: {:.1} s", elapsed.as_secs_f64());
    text
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

#[test]
fn np2_core() {
    mpirun(2, CORE, &[], &[]);
}

#[test]
fn np3_core() {
    mpirun(3, CORE, &[], &[]);
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
    let out = launch(2, "crash", &[], &[], false);
    assert!(out.contains("crashing rank 1 on purpose"), "{out}");
}

#[test]
fn np4_crash_leaves_nothing() {
    let out = launch(4, "crash", &[], &[], false);
    assert!(out.contains("crashing rank 3 on purpose"), "{out}");
}

/// No `/dev/shm/sharm-<pid>-*` whose creating process is gone (a segment
/// that outlived its job; every run also checks its own processes' files).
#[test]
fn no_stale_shared_memory_files() {
    let _one_at_a_time = MPIRUN
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
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
    assert!(
        stale.is_empty(),
        "stale sharm segments in /dev/shm (creator gone): {stale:?}"
    );
}
