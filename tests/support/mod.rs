//! Shared by the MPI test files (`tests/mpi.rs`, `tests/collectives.rs`,
//! `tests/hierarchy.rs`, `tests/sim_nodes.rs`, ...): finding the freshly built
//! plugin, installing it in a component directory, compiling the C checker,
//! the one mpirun launcher (`launch`), the checker's runs and summary
//! (`checker`), jobs on simulated nodes (`sim_nodes`), each process's
//! standard error in a file of its own (`stderr_files`), and spotting
//! shared-memory segments a job left behind.
#![allow(dead_code)] // each test file uses its own subset

mod checker;
mod launch;
pub mod sim_nodes;
mod stderr_files;

pub use checker::*;
#[allow(unused_imports)] // not every test file names the launcher
pub use launch::*;
pub use stderr_files::StderrFiles;

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::SystemTime;

/// Open MPI's own component directory (kept in the search path, or mpirun fails).
pub const OMPI_COMPONENTS: &str = "/usr/lib/x86_64-linux-gnu/openmpi/lib/openmpi3";

pub fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// `target/` of this build (the test binary is target/<profile>/deps/…).
pub fn target_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("current_exe");
    exe.ancestors()
        .find(|p| p.file_name().is_some_and(|n| n == "deps"))
        .and_then(|deps| deps.parent()?.parent())
        .map(Path::to_path_buf)
        .unwrap_or_else(|| repo().join("target"))
}

/// CPUs online, as the plugin counts them to find an oversubscribed node
/// (`ompi::ffi::crowding`): a test needs this many + 1 processes for one.
pub fn cpus_online() -> usize {
    // SAFETY: sysconf has no preconditions.
    unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) }.max(1) as usize
}

fn mtime(p: &Path) -> std::io::Result<SystemTime> {
    fs::metadata(p)?.modified()
}

/// The newest modification time of any file under `dir`, and that file.
fn newest(dir: &Path) -> Option<(SystemTime, PathBuf)> {
    let mut best: Option<(SystemTime, PathBuf)> = None;
    for entry in fs::read_dir(dir).ok()?.flatten() {
        let path = entry.path();
        let found = if path.is_dir() {
            newest(&path)
        } else {
            mtime(&path).ok().map(|t| (t, path))
        };
        if let Some(f) = found {
            if best.as_ref().is_none_or(|b| f.0 > b.0) {
                best = Some(f);
            }
        }
    }
    best
}

/// Writes `dst` through a temporary file and a rename (a concurrent reader
/// never sees half a file).
fn replace(dst: &Path, make: impl FnOnce(&Path) -> Result<(), String>) -> Result<(), String> {
    let tmp = dst.with_extension(format!("tmp{}", std::process::id()));
    make(&tmp)?;
    fs::rename(&tmp, dst).map_err(|e| format!("rename to {}: {e}", dst.display()))
}

/// The C sources of `program`: every `tests/mpi/check_*.c` for the checker
/// ([`CHECKER`]), `tests/mpi/<program>.c` for any other.
fn sources_of(program: &str) -> Result<Vec<PathBuf>, String> {
    let dir = repo().join("tests/mpi");
    if program != CHECKER {
        return Ok(vec![dir.join(format!("{program}.c"))]);
    }
    let mut sources: Vec<PathBuf> = fs::read_dir(&dir)
        .map_err(|e| format!("{}: {e}", dir.display()))?
        .filter_map(|e| Some(e.ok()?.path()))
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("check_") && n.ends_with(".c"))
        })
        .collect();
    sources.sort();
    Ok(sources)
}

/// Installs the plugin (`$SHARM_PLUGIN`, or target/release, which must be
/// newer than every source file: cargo test does not build it) as
/// `<target>/<work>/components/mca_coll_sharm.so` and compiles `program`
/// (see `sources_of`) into `<target>/<work>/<program>` without warnings.
/// Returns the component directory and the program.
pub fn prepare(work: &str, program: &str) -> Result<(PathBuf, PathBuf), String> {
    let (plugin, check_age) = match std::env::var_os("SHARM_PLUGIN") {
        Some(p) => (PathBuf::from(p), false),
        None => (target_dir().join("release/libmca_coll_sharm.so"), true),
    };
    let built = mtime(&plugin).map_err(|e| {
        format!("the plugin {} is missing ({e}): run `cargo build --release` first (cargo test does not build it)", plugin.display())
    })?;
    for dir in ["src", "ompi-glue"] {
        match newest(&repo().join(dir)) {
            Some((t, file)) if check_age && t > built => {
                return Err(format!(
                    "{} is older than {}: run `cargo build --release` first (cargo test does not rebuild it)",
                    plugin.display(),
                    file.display()
                ))
            }
            _ => {}
        }
    }
    let components = target_dir().join(work).join("components");
    fs::create_dir_all(&components).map_err(|e| format!("{}: {e}", components.display()))?;
    replace(&components.join("mca_coll_sharm.so"), |tmp| {
        fs::copy(&plugin, tmp)
            .map(drop)
            .map_err(|e| format!("copy {}: {e}", plugin.display()))
    })?;
    let binary = compile(work, program)?;
    Ok((components, binary))
}

/// Compiles `program` (the checker from every `tests/mpi/check_*.c`, any
/// other name from `tests/mpi/<program>.c`) into `<target>/<work>/<program>`
/// without warnings; returns the program.
pub fn compile(work: &str, program: &str) -> Result<PathBuf, String> {
    let work = target_dir().join(work);
    fs::create_dir_all(&work).map_err(|e| format!("{}: {e}", work.display()))?;
    let sources = sources_of(program)?;
    let binary = work.join(program);
    replace(&binary, |tmp| {
        let out = Command::new("mpicc.openmpi")
            .args(["-O2", "-Wall", "-Wextra", "-Werror", "-o"])
            .arg(tmp)
            .args(&sources)
            .output()
            .map_err(|e| format!("cannot run mpicc.openmpi: {e}"))?;
        if out.status.success() && out.stderr.is_empty() {
            Ok(())
        } else {
            Err(format!(
                "mpicc.openmpi {} failed or warned:\n{}",
                sources
                    .iter()
                    .map(|s| s.display().to_string())
                    .collect::<Vec<_>>()
                    .join(" "),
                String::from_utf8_lossy(&out.stderr)
            ))
        }
    })?;
    Ok(binary)
}

/// `/dev/shm/sharm-<pid>-*` files of the given processes.
pub fn shm_files_of(pids: &BTreeSet<u32>) -> Vec<String> {
    let Ok(dir) = fs::read_dir("/dev/shm") else {
        return Vec::new();
    };
    dir.filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|name| {
            name.strip_prefix("sharm-")
                .and_then(|rest| rest.split('-').next()?.parse::<u32>().ok())
                .is_some_and(|pid| pids.contains(&pid))
        })
        .collect()
}

/// What a run's verbose-100 output lacks for a top group of `members` whose
/// Allreduce was forced to `forced` and must have run as `ran`
/// (`hier::network` says `top group of N: allreduce by <algorithm>`, and a
/// Trinaryx3 without a torus says `no torus of` as it falls back); None:
/// nothing.  One rule for the one-node and the simulated-node tests.
pub fn top_group_missing(output: &str, members: usize, forced: &str, ran: &str) -> Option<String> {
    let line = format!("top group of {members}: allreduce by {ran}");
    if !output.contains(&line) {
        return Some(format!("no '{line}' ({forced} forced)"));
    }
    if forced != ran && !output.contains("no torus of") {
        return Some(format!("the fallback from {forced} was not said"));
    }
    None
}
