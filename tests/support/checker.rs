//! The C checker `sharm_check` (tests/mpi/check_*.c) under [`Mpirun`]: built
//! once per test process, run with a scenario list, its summary line parsed.

use std::path::PathBuf;
use std::sync::OnceLock;

use super::launch::{Mpirun, Run};

/// The checker program, built from every `tests/mpi/check_*.c`.
pub const CHECKER: &str = "sharm_check";

/// The checker aborts itself, naming the pending call, after this long
/// (before the launcher's timeout kills the job).
pub const ALARM_S: u32 = 200;

/// The installed plugin and the built checker of this test process.
pub struct Checker {
    pub components: PathBuf,
    pub program: PathBuf,
}

/// Built on first use into `target/<test file>-tests/` (e.g.
/// `target/mpi-tests/` for tests/mpi.rs); panics if that fails.
pub fn checker() -> &'static Checker {
    static CHECKER_OF_THIS_PROCESS: OnceLock<Result<Checker, String>> = OnceLock::new();
    let built = CHECKER_OF_THIS_PROCESS.get_or_init(|| {
        let (components, program) = super::prepare(&format!("{}-tests", test_file()), CHECKER)?;
        Ok(Checker {
            components,
            program,
        })
    });
    match built {
        Ok(c) => c,
        Err(e) => panic!("MPI test setup failed: {e}"),
    }
}

/// The name of the test file this process was built from (`mpi` for
/// target/release/deps/mpi-0123abcd).
fn test_file() -> String {
    let exe = std::env::current_exe().expect("current_exe");
    let stem = exe
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    match stem.rsplit_once('-') {
        Some((name, hash)) if hash.chars().all(|c| c.is_ascii_hexdigit()) => name.to_owned(),
        _ => stem,
    }
}

impl Checker {
    /// The checker on `np` processes running `scenarios` (comma-separated).
    pub fn job(&self, np: usize, scenarios: &str) -> Mpirun {
        Mpirun::new(&self.components, &self.program, np).args(&[
            scenarios.to_owned(),
            "--alarm".to_owned(),
            ALARM_S.to_string(),
        ])
    }
}

/// The checker's closing line: totals over all processes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Summary {
    /// Counter checks (one per checked call and process).
    pub calls: u64,
    pub served: u64,
    pub fallbacks: u64,
    /// Calls served through the hierarchy ...
    pub hierarchical: u64,
    /// ... and those that had to be (from the checker's --hierarchy/--vnode).
    pub hier_expected: u64,
}

/// Runs `job` and asserts that it succeeded cleanly with the summary line
/// of `np` processes and `scenarios`; returns the run and the summary.
pub fn run_checker(job: &Mpirun, scenarios: &str) -> (Run, Summary) {
    let run = job.run();
    let prefix = format!("{CHECKER}: OK np={} scenarios={scenarios} ", job.np);
    run.assert_ok(&prefix);
    let line = run
        .stdout
        .lines()
        .find(|l| l.starts_with(&prefix))
        .expect("summary line")
        .to_owned();
    let get = |key: &str| -> u64 {
        line.split_whitespace()
            .find_map(|w| w.strip_prefix(key)?.parse().ok())
            .unwrap_or_else(|| panic!("{}", run.report(&format!("no {key} in the summary"))))
    };
    let summary = Summary {
        calls: get("calls="),
        served: get("served="),
        fallbacks: get("fallbacks="),
        hierarchical: get("hierarchical="),
        hier_expected: get("hier_expected="),
    };
    (run, summary)
}
