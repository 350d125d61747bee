//! The hierarchical (coll/tcl) collectives under mpirun, on one machine:
//! virtual nodes (`coll_sharm_virtual_node_size`) stand in for real ones, and
//! topology files add switch levels.  The checks are those of
//! `tests/mpi/sharm_check.c` (results computed independently, MPI_T counters
//! proving sharm served the calls), run with the hierarchy switched on.

mod support;

use std::path::PathBuf;
use std::process::Command;
use std::sync::{Mutex, OnceLock};

use support::OMPI_COMPONENTS;

/// One mpirun at a time: the machine has 2 cores.
static MPIRUN: Mutex<()> = Mutex::new(());

struct Setup {
    dir: PathBuf,
    components: PathBuf,
    checker: PathBuf,
}

fn setup() -> &'static Setup {
    static SETUP: OnceLock<Setup> = OnceLock::new();
    SETUP.get_or_init(|| {
        let (components, checker) = support::prepare("hierarchy-tests", "sharm_check").unwrap_or_else(|e| panic!("setup failed: {e}"));
        let dir = components.parent().expect("work directory").to_path_buf();
        // Two switch levels over 4 virtual nodes of 2: vnode0,1 | vnode2 | vnode3.
        std::fs::write(
            dir.join("two-levels.topo"),
            "# node  switch  switch-2\nvnode0 swA spine0\nvnode1 swA spine0\nvnode2 swB spine0  # shares the spine\nvnode3 swC spine1\n",
        )
        .expect("topology file");
        std::fs::write(dir.join("malformed.topo"), "vnode0 swA\nvnode1\n").expect("topology file");
        Setup { dir, components, checker }
    })
}

/// Runs the checker; returns its combined output (panics on failure).
fn run(np: usize, scenarios: &str, mca: &[(&str, &str)]) -> String {
    let s = setup();
    let _one = MPIRUN.lock().unwrap_or_else(|e| e.into_inner());
    let path = format!("{}:{OMPI_COMPONENTS}", s.components.display());
    let mut cmd = Command::new("timeout");
    cmd.args(["-s", "KILL", "300", "mpirun.openmpi", "--allow-run-as-root"]);
    if np > 2 {
        cmd.arg("--oversubscribe");
    }
    cmd.args([
        "-np",
        &np.to_string(),
        "--mca",
        "mca_base_component_path",
        &path,
    ]);
    cmd.args(["--mca", "coll_sharm_priority", "100", "--mca", "op", "^avx"]);
    for (k, v) in mca {
        cmd.args(["--mca", k, v]);
    }
    cmd.arg(&s.checker)
        .args([scenarios, "--calls", "2000", "--big", "4194304"]);
    let out = cmd.output().expect("mpirun.openmpi");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.status.success(),
        "mpirun -np {np} {scenarios} {mca:?} failed:\n{text}"
    );
    assert!(text.contains("sharm_check: OK"), "no summary line:\n{text}");
    let left: Vec<String> = std::fs::read_dir("/dev/shm")
        .map(|d| {
            d.filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.starts_with("sharm-"))
                .collect()
        })
        .unwrap_or_default();
    assert!(left.is_empty(), "shared-memory files left behind: {left:?}");
    text
}

fn topo(name: &str) -> String {
    setup().dir.join(name).display().to_string()
}

#[test]
fn virtual_nodes_of_two_flat_groups() {
    run(
        5,
        "ops,stress",
        &[
            ("coll_sharm_virtual_node_size", "2"),
            ("coll_sharm_verbose", "1"),
        ],
    );
}

#[test]
fn virtual_nodes_binomial_groups_and_allreduce_forms() {
    for form in ["reduce_bcast", "reduce_allreduce_bcast"] {
        run(
            6,
            "ops,dtypes",
            &[
                ("coll_sharm_virtual_node_size", "2"),
                ("coll_sharm_hierarchy_bcast_algorithm", "knomial"),
                ("coll_sharm_hierarchy_reduce_algorithm", "knomial"),
                ("coll_sharm_hierarchy_allreduce_algorithm", form),
            ],
        );
    }
}

#[test]
fn two_switch_levels_from_a_topology_file() {
    let file = topo("two-levels.topo");
    let out = run(
        8,
        "ops,comms",
        &[
            ("coll_sharm_virtual_node_size", "2"),
            ("coll_sharm_topology_file", &file),
            (
                "coll_sharm_hierarchy_allreduce_algorithm",
                "reduce_allreduce_bcast",
            ),
            ("coll_sharm_verbose", "1"),
        ],
    );
    // The group tree printed at verbose 1 has both switch levels.
    assert!(
        out.contains("switch1: [0 2 4]") || out.contains("switch1: [0 2]"),
        "no switch level:\n{out}"
    );
    assert!(out.contains("switch2"), "no second switch level:\n{out}");
}

#[test]
fn switch_levels_can_be_turned_off() {
    let file = topo("two-levels.topo");
    let out = run(
        8,
        "ops",
        &[
            ("coll_sharm_virtual_node_size", "2"),
            ("coll_sharm_topology_file", &file),
            ("coll_sharm_hierarchy_levels", "numa,node"),
            ("coll_sharm_verbose", "1"),
        ],
    );
    assert!(
        !out.contains("switch1:"),
        "switch level used although turned off:\n{out}"
    );
}

#[test]
fn malformed_topology_file_is_reported_and_dropped() {
    let file = topo("malformed.topo");
    let out = run(
        4,
        "ops",
        &[
            ("coll_sharm_virtual_node_size", "2"),
            ("coll_sharm_topology_file", &file),
        ],
    );
    assert!(
        out.contains("malformed.topo:2:") && out.contains("network levels dropped"),
        "no clear report:\n{out}"
    );
}

#[test]
fn missing_topology_file_is_reported_and_dropped() {
    let out = run(
        4,
        "ops",
        &[
            ("coll_sharm_virtual_node_size", "2"),
            ("coll_sharm_topology_file", "/nonexistent/sharm.topo"),
        ],
    );
    assert!(
        out.contains("/nonexistent/sharm.topo") && out.contains("network levels dropped"),
        "no clear report:\n{out}"
    );
}

#[test]
fn hierarchy_on_within_one_node() {
    run(3, "ops,stress", &[("coll_sharm_hierarchy", "on")]);
}

#[test]
fn virtual_nodes_of_three_with_split_communicators() {
    run(7, "comms,packed", &[("coll_sharm_virtual_node_size", "3")]);
}

#[test]
fn ring_group_algorithms_over_point_to_point() {
    // Virtual nodes of one process: every group is a network group.
    for form in ["reduce_bcast", "reduce_allreduce_bcast"] {
        run(
            5,
            "ops,dtypes",
            &[
                ("coll_sharm_virtual_node_size", "1"),
                ("coll_sharm_hierarchy_bcast_algorithm", "ring"),
                ("coll_sharm_hierarchy_reduce_algorithm", "ring"),
                ("coll_sharm_hierarchy_allreduce_algorithm", form),
            ],
        );
    }
}

#[test]
fn per_level_algorithms() {
    let file = topo("two-levels.topo");
    run(
        8,
        "ops",
        &[
            ("coll_sharm_virtual_node_size", "2"),
            ("coll_sharm_topology_file", &file),
            (
                "coll_sharm_hierarchy_level_algorithms",
                "node:knomial,switch1:ring,switch2:flat,top:ring",
            ),
            (
                "coll_sharm_hierarchy_allreduce_algorithm",
                "reduce_allreduce_bcast",
            ),
        ],
    );
    let out = run(
        4,
        "ops",
        &[
            ("coll_sharm_virtual_node_size", "2"),
            ("coll_sharm_hierarchy_level_algorithms", "node=ring"),
        ],
    );
    assert!(
        out.contains("'node=ring' is not <level>:<flat|knomial|ring>"),
        "bad item not reported:\n{out}"
    );
}
