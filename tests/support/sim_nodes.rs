//! Jobs on simulated nodes (`ci/sim-nodes.sh`): one machine, several host
//! names, one Open MPI daemon per name, TCP between "nodes".  A layout is the
//! slots per node: `&[2, 1, 2]` is sim01 slots=2, sim02 slots=1, sim03
//! slots=2, and mpirun places ranks by slot (0,1 on sim01, 2 on sim02, …).
//!
//! Every job carries a marker in its environment (`SHARM_SIM_NODES_RUN`,
//! passed to daemons and ranks by the agent), so processes it left behind can
//! be found and killed by pid even when the job was killed at its timeout.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use super::{repo, StderrFiles};

/// `ci/sim-nodes.sh`'s exit code for "not available here".
pub const UNAVAILABLE: i32 = 77;
/// Its exit code for "the job left processes behind".
pub const LEFT_BEHIND: i32 = 3;

pub fn script() -> PathBuf {
    repo().join("ci/sim-nodes.sh")
}

/// `Ok` when simulated nodes work here; otherwise the script's loud reason
/// (not root, no `unshare`, /etc/hosts read-only, no mpirun.openmpi).
pub fn available() -> Result<(), String> {
    let out = Command::new(script())
        .arg("check")
        .output()
        .map_err(|e| format!("cannot run {}: {e}", script().display()))?;
    match out.status.code() {
        Some(0) => Ok(()),
        code => Err(format!(
            "{} check: exit {code:?}: {}",
            script().display(),
            String::from_utf8_lossy(&out.stderr).trim()
        )),
    }
}

/// `3:2,1,2` for `[2, 1, 2]`.
pub fn layout_arg(slots: &[usize]) -> String {
    let list: Vec<String> = slots.iter().map(usize::to_string).collect();
    format!("{}:{}", slots.len(), list.join(","))
}

/// The host names of a layout, one per node.
pub fn node_names(nodes: usize) -> Vec<String> {
    (1..=nodes).map(|i| format!("sim{i:02}")).collect()
}

/// The node each rank lands on with `-np` = total slots (mpirun's default
/// by-slot mapping).
pub fn expected_nodes(slots: &[usize]) -> Vec<String> {
    let names = node_names(slots.len());
    slots
        .iter()
        .zip(names)
        .flat_map(|(&n, name)| std::iter::repeat_n(name, n))
        .collect()
}

/// The mpirun command line the script would run (its `--dry-run`), one
/// argument per element.
pub fn mpirun_args(
    slots: &[usize],
    mpirun_opts: &[&str],
    program: &Path,
    args: &[&str],
) -> Result<Vec<String>, String> {
    let out = Command::new(script())
        .args(["run", "--dry-run", &layout_arg(slots)])
        .args(mpirun_opts)
        .arg("--")
        .arg(program)
        .args(args)
        .output()
        .map_err(|e| format!("cannot run {}: {e}", script().display()))?;
    if !out.status.success() {
        return Err(String::from_utf8_lossy(&out.stderr).into_owned());
    }
    Ok(String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::to_owned)
        .collect())
}

/// A job on simulated nodes: `command` runs it under the CPU lock and a
/// KILL timeout; `marker` finds what it leaves behind.
pub struct Job {
    pub command: Command,
    pub marker: String,
    /// Where the processes' standard error goes (`StderrFiles`), and how
    /// many processes there are.
    files: StderrFiles,
    np: usize,
}

/// Builds the job `ci/sim-nodes.sh run <layout> <mpirun_opts> -- program args`.
pub fn job(
    slots: &[usize],
    mpirun_opts: &[&str],
    program: &Path,
    args: &[&str],
    timeout: Duration,
) -> Job {
    static SEQ: AtomicU32 = AtomicU32::new(0);
    let marker = format!(
        "test-{}-{}",
        std::process::id(),
        SEQ.fetch_add(1, Ordering::Relaxed)
    );
    let files = StderrFiles::new();
    let mut command = Command::new("timeout");
    command
        .args(["-s", "KILL"])
        .arg(timeout.as_secs().max(1).to_string())
        .arg(script())
        .args(["run", &layout_arg(slots)])
        .args(mpirun_opts)
        .args(StderrFiles::mpirun_args())
        .arg("--")
        .arg(program)
        .args(args)
        .env("SIM_NODES_RUN_ID", &marker);
    files.set_env(&mut command);
    Job {
        command,
        marker,
        files,
        np: slots.iter().sum(),
    }
}

/// Ids of live processes whose environment holds `SHARM_SIM_NODES_RUN=<marker>`
/// (zombies have an empty environment: they are gone, only not reaped yet).
pub fn marked(marker: &str) -> Vec<u32> {
    let needle = format!("SHARM_SIM_NODES_RUN={marker}");
    let me = std::process::id();
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|&pid| pid != me)
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/environ"))
                .is_ok_and(|env| env.split(|&b| b == 0).any(|v| v == needle.as_bytes()))
        })
        .collect()
}

/// Waits up to 5 s for the job's processes to end (daemons exit a moment
/// after mpirun); kills the ones still there by pid and returns them with
/// their command lines.
pub fn sweep(marker: &str) -> Vec<String> {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let left = marked(marker);
        if left.is_empty() {
            return Vec::new();
        }
        if Instant::now() >= deadline {
            return left
                .into_iter()
                .map(|pid| {
                    let cmd = std::fs::read(format!("/proc/{pid}/cmdline"))
                        .map(|c| String::from_utf8_lossy(&c).replace('\0', " "))
                        .unwrap_or_default();
                    // SAFETY: kill(2) on a pid that carries this job's marker.
                    unsafe { libc::kill(pid as i32, libc::SIGKILL) };
                    format!("{pid} {cmd}")
                })
                .collect();
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Runs `job`; returns its output (stderr: mpirun's, then each process's,
/// rank by rank) and whatever it left behind (killed).
pub fn run(mut job: Job) -> Result<(Output, Vec<String>), String> {
    // One mpirun at a time, shared with every other job of this test process.
    let _one = super::launch::one_job_at_a_time();
    let mut out = job
        .command
        .output()
        .map_err(|e| format!("cannot start the job: {e}"))?;
    let left = sweep(&job.marker);
    out.stderr
        .extend_from_slice(job.files.read(job.np).as_bytes());
    Ok((out, left))
}

/// Runs `job` (panics if it cannot start); returns its status and output,
/// stdout and stderr together, and whatever it left behind (killed).
pub fn run_text(job: Job) -> (Output, String, Vec<String>) {
    let (out, left) = run(job).expect("job");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out, text, left)
}

/// For tests: true when simulated nodes are not available and the test
/// should be skipped; the reason is printed loudly.  With
/// `SHARM_REQUIRE_SIM_NODES=1` an unavailable machine is a failure instead.
pub fn skip_unless_available(test: &str) -> bool {
    match available() {
        Ok(()) => false,
        Err(reason) => {
            if std::env::var_os("SHARM_REQUIRE_SIM_NODES").is_some_and(|v| v == "1") {
                panic!("{test}: simulated nodes required but not available: {reason}");
            }
            eprintln!("*** SKIPPED {test}: simulated nodes not available: {reason} ***");
            true
        }
    }
}
