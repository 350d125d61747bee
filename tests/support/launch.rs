//! The one way the MPI tests start a job: [`Mpirun`] describes it (process
//! count, MCA parameters, extra mpirun arguments such as a hostfile and an
//! rsh agent for simulated nodes, the program and its arguments), [`Mpirun::run`]
//! runs it under a timeout, one job at a time, and returns a [`Run`] with
//! everything a failure report needs.
//!
//! A program that prints `<name>: start np=N pids=a,b,...` first (the C
//! checker does) has those pids killed on a timeout and their
//! `/dev/shm/sharm-<pid>-*` files checked after the job; the others
//! (rules_check, single_copy_check) rely on mpirun's process group alone.
//! Each process's standard error comes back whole (`StderrFiles`), after
//! mpirun's own, in `Run::stderr`.

use std::collections::BTreeSet;
use std::ffi::OsString;
use std::fs;
use std::io::Read;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::{shm_files_of, StderrFiles, OMPI_COMPONENTS};

/// No job takes more than a minute or two here; the checker's own
/// `--alarm` names the pending call well before this.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(300);

/// One mpirun at a time, whatever the test harness's thread count: the
/// machine has 2 cores and the jobs spin.
static MPIRUN: Mutex<()> = Mutex::new(());

/// Holds off every other job of this test process while alive.
pub fn one_job_at_a_time() -> MutexGuard<'static, ()> {
    MPIRUN
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// An mpirun of `program` on `np` processes with sharm forced (priority 100)
/// from `components` (a directory holding `mca_coll_sharm.so`).
#[derive(Clone, Debug)]
pub struct Mpirun {
    pub np: usize,
    pub components: PathBuf,
    pub program: PathBuf,
    pub mca: Vec<(String, String)>,
    /// A command mpirun runs under (`setpriv ...`), empty for none.
    pub wrapper: Vec<String>,
    /// Before the program: `--hostfile f`, `--mca plm_rsh_agent a`, ...
    pub mpirun_args: Vec<String>,
    pub args: Vec<String>,
    pub timeout: Duration,
}

impl Mpirun {
    pub fn new(components: &Path, program: &Path, np: usize) -> Self {
        Mpirun {
            np,
            components: components.to_path_buf(),
            program: program.to_path_buf(),
            mca: Vec::new(),
            wrapper: Vec::new(),
            mpirun_args: Vec::new(),
            args: Vec::new(),
            timeout: DEFAULT_TIMEOUT,
        }
    }

    pub fn mca(mut self, key: &str, value: &str) -> Self {
        self.mca.push((key.to_owned(), value.to_owned()));
        self
    }

    pub fn mcas(mut self, params: &[(&str, &str)]) -> Self {
        for (k, v) in params {
            self = self.mca(k, v);
        }
        self
    }

    pub fn wrapper<S: AsRef<str>>(mut self, command: &[S]) -> Self {
        self.wrapper
            .extend(command.iter().map(|a| a.as_ref().to_owned()));
        self
    }

    pub fn mpirun_args<S: AsRef<str>>(mut self, args: &[S]) -> Self {
        self.mpirun_args
            .extend(args.iter().map(|a| a.as_ref().to_owned()));
        self
    }

    pub fn args<S: AsRef<str>>(mut self, args: &[S]) -> Self {
        self.args.extend(args.iter().map(|a| a.as_ref().to_owned()));
        self
    }

    pub fn timeout(mut self, t: Duration) -> Self {
        self.timeout = t;
        self
    }

    /// The command line (the wrapper's or mpirun's name first); `run` gives it
    /// `StderrFiles`' directory in the environment.
    pub fn argv(&self) -> Vec<OsString> {
        let path = format!("{}:{OMPI_COMPONENTS}", self.components.display());
        let mut argv: Vec<OsString> = self.wrapper.iter().map(OsString::from).collect();
        argv.extend(["mpirun.openmpi", "--allow-run-as-root"].map(OsString::from));
        if self.np > 2 {
            argv.push("--oversubscribe".into());
        }
        let np = self.np.to_string();
        argv.extend(["-np", &np, "--mca", "mca_base_component_path", &path].map(OsString::from));
        // op/avx: its vectorised reductions differ in the last bit from the
        // reference folds the checker compares with.
        argv.extend(
            ["--mca", "op", "^avx", "--mca", "coll_sharm_priority", "100"].map(OsString::from),
        );
        for (k, v) in &self.mca {
            argv.extend(["--mca", k, v].map(OsString::from));
        }
        argv.extend(self.mpirun_args.iter().map(OsString::from));
        argv.extend(StderrFiles::mpirun_args());
        argv.push(self.program.clone().into());
        argv.extend(self.args.iter().map(OsString::from));
        argv
    }

    /// Runs the job (waiting for any other job of this process first).
    pub fn run(&self) -> Run {
        let _one = one_job_at_a_time();
        let argv = self.argv();
        let command = argv
            .iter()
            .map(|a| a.to_string_lossy())
            .collect::<Vec<_>>()
            .join(" ");
        let files = StderrFiles::new();
        let mut cmd = Command::new(&argv[0]);
        files.set_env(&mut cmd);
        cmd.args(&argv[1..])
            .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
            .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            // Its own process group: a timeout kills mpirun and what it
            // started in that group without touching the test process.
            .process_group(0);
        // Inherited MCA settings would change what is tested.
        for (key, _) in std::env::vars_os() {
            if key.to_string_lossy().starts_with("OMPI_MCA_") {
                cmd.env_remove(key);
            }
        }
        let started = Instant::now();
        let mut child = cmd
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start `{command}`: {e}"));
        let out = Collector::start(child.stdout.take().expect("piped stdout"));
        let err = Collector::start(child.stderr.take().expect("piped stderr"));
        let (status, timed_out) = loop {
            if let Some(status) = child.try_wait().expect("wait for mpirun") {
                break (status, false);
            }
            if started.elapsed() > self.timeout {
                // The job's processes first (they may sit in their own
                // process groups), then mpirun and its group.
                kill_pids(&job_pids(&out.text()), &self.program);
                let _ = Command::new("kill")
                    .args(["-KILL", "--", &format!("-{}", child.id())])
                    .status();
                let _ = child.kill();
                break (child.wait().expect("wait for mpirun"), true);
            }
            std::thread::sleep(Duration::from_millis(50));
        };
        let elapsed = started.elapsed();
        // A process that outlived mpirun may still hold the pipes: read
        // what arrives for a while, then report with what we have.
        let grace = Duration::from_secs(if timed_out { 5 } else { 30 });
        let stdout = out.finish(grace);
        // mpirun's own messages, then each process's (`StderrFiles`).
        let stderr = err.finish(grace) + &files.read(self.np);
        let pids = job_pids(&stdout);
        let leftovers = shm_files_of(&pids);
        // Ours: remove them so later jobs start clean (the run still fails).
        for f in &leftovers {
            let _ = fs::remove_file(Path::new("/dev/shm").join(f));
        }
        let run = Run {
            command,
            status,
            timed_out,
            elapsed,
            stdout,
            stderr,
            pids,
            leftovers,
        };
        eprintln!("{}: {:.1} s", run.command, run.elapsed.as_secs_f64());
        run
    }
}

/// What a job did.
#[derive(Debug)]
pub struct Run {
    /// The exact mpirun command line.
    pub command: String,
    pub status: ExitStatus,
    pub timed_out: bool,
    pub elapsed: Duration,
    pub stdout: String,
    /// mpirun's standard error, then each process's, rank by rank.
    pub stderr: String,
    /// The job's processes, from its `start` line.
    pub pids: BTreeSet<u32>,
    /// `/dev/shm/sharm-<pid>-*` files of those processes after the job
    /// (already removed).
    pub leftovers: Vec<String>,
}

impl Run {
    /// stdout followed by stderr.
    pub fn output(&self) -> String {
        format!("{}{}", self.stdout, self.stderr)
    }

    /// `why`, the command, the status and the whole output.
    pub fn report(&self, why: &str) -> String {
        format!(
            "{why}\ncommand: {}\nstatus: {:?}{} after {:.1} s\n---- stdout ----\n{}---- stderr ----\n{}",
            self.command,
            self.status,
            if self.timed_out { " (killed after the timeout)" } else { "" },
            self.elapsed.as_secs_f64(),
            self.stdout,
            self.stderr
        )
    }

    /// Panics with the report unless the job ended by itself and left no
    /// shared-memory file.
    pub fn assert_clean(&self) {
        assert!(
            !self.timed_out,
            "{}",
            self.report("mpirun was killed after the timeout")
        );
        assert!(
            self.leftovers.is_empty(),
            "{}",
            self.report(&format!(
                "shared-memory files left in /dev/shm: {:?}",
                self.leftovers
            ))
        );
    }

    /// The job succeeded, cleanly, and printed `summary`.
    pub fn assert_ok(&self, summary: &str) {
        self.assert_clean();
        assert!(
            self.status.success(),
            "{}",
            self.report("the MPI job failed")
        );
        assert!(
            self.stdout.contains(summary),
            "{}",
            self.report(&format!("no summary line `{summary}`"))
        );
    }

    /// The job started, then failed (without timing out), cleanly.
    pub fn assert_failed(&self) {
        self.assert_clean();
        assert!(
            !self.status.success(),
            "{}",
            self.report("the MPI job should fail")
        );
        assert!(
            !self.pids.is_empty(),
            "{}",
            self.report("the job did not start")
        );
    }
}

/// The pids the job printed (`<name>: start np=N pids=a,b,...`).
pub fn job_pids(stdout: &str) -> BTreeSet<u32> {
    stdout
        .lines()
        .filter(|l| l.contains(": start np="))
        .filter_map(|l| l.split("pids=").nth(1))
        .flat_map(|p| p.split(',').filter_map(|x| x.trim().parse().ok()))
        .collect()
}

/// SIGKILL to those of `pids` that still run `program` (a pid may have been
/// reused since).
fn kill_pids(pids: &BTreeSet<u32>, program: &Path) {
    let name = program
        .file_name()
        .map(|n| n.to_string_lossy().into_owned());
    for pid in pids {
        let cmdline = fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
        if name
            .as_deref()
            .is_some_and(|n| String::from_utf8_lossy(&cmdline).contains(n))
        {
            let _ = Command::new("kill")
                .args(["-KILL", &pid.to_string()])
                .status();
        }
    }
}

/// Reads a pipe to its end in a thread, into a buffer readable meanwhile.
struct Collector {
    buf: Arc<Mutex<Vec<u8>>>,
    reader: JoinHandle<()>,
}

impl Collector {
    fn start(mut pipe: impl Read + Send + 'static) -> Self {
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
        Collector { buf, reader }
    }

    fn text(&self) -> String {
        String::from_utf8_lossy(&self.buf.lock().unwrap()).into_owned()
    }

    /// Everything read once the pipe closed, or after `grace`.
    fn finish(self, grace: Duration) -> String {
        let until = Instant::now() + grace;
        while !self.reader.is_finished() && Instant::now() < until {
            std::thread::sleep(Duration::from_millis(20));
        }
        let text = self.text();
        if self.reader.is_finished() {
            let _ = self.reader.join();
        }
        text
    }
}

/// `/dev/shm/sharm-<pid>-*` files whose creating process is gone (a segment
/// that outlived its job; every run also checks its own processes' files).
pub fn stale_shm_files() -> Vec<String> {
    let _one = one_job_at_a_time();
    let Ok(dir) = fs::read_dir("/dev/shm") else {
        return Vec::new();
    };
    dir.filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|name| {
            name.strip_prefix("sharm-")
                .and_then(|rest| rest.split('-').next()?.parse::<u32>().ok())
                .is_some_and(|pid| !Path::new(&format!("/proc/{pid}")).exists())
        })
        .collect()
}
