//! Each process's standard error in a file of its own (the C side is
//! `tests/mpi/stderr_file.h`, which every test program calls first): the
//! processes' output, sharm's trace included, read back whole and in rank
//! order instead of through mpirun's one stream, where a line that crossed
//! the end of one read from a process's pipe came out split around another
//! process's lines and a test looking for it missed it.

use std::ffi::OsString;
use std::fs;
use std::path::PathBuf;
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};

/// What the programs read (the C side's name).
const VAR: &str = "SHARM_CHECK_STDERR_DIR";

/// A directory for one job's files, removed when dropped.
pub struct StderrFiles {
    dir: PathBuf,
}

impl StderrFiles {
    /// A fresh, empty directory for one job.
    pub fn new() -> StderrFiles {
        static JOBS: AtomicUsize = AtomicUsize::new(0);
        let dir = std::env::temp_dir().join(format!(
            "sharm-stderr-{}-{}",
            std::process::id(),
            JOBS.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).expect("a directory for the processes' standard error");
        StderrFiles { dir }
    }

    /// mpirun's arguments that hand the directory to every process (before
    /// the program); `set_env` must also be applied to mpirun's command.
    pub fn mpirun_args() -> [OsString; 2] {
        ["-x", VAR].map(OsString::from)
    }

    /// Gives mpirun the directory in its environment (`-x` passes it on).
    pub fn set_env(&self, cmd: &mut Command) {
        cmd.env(VAR, &self.dir);
    }

    /// What the processes wrote, rank by rank: each file whole, those of
    /// ranks that never opened theirs left out.
    pub fn read(&self, np: usize) -> String {
        (0..np)
            .filter_map(|rank| fs::read_to_string(self.dir.join(format!("rank.{rank}"))).ok())
            .collect()
    }
}

impl Drop for StderrFiles {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.dir);
    }
}
