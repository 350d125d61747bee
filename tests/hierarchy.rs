//! The hierarchical (coll/tcl) collectives under mpirun, on one machine:
//! virtual nodes (`coll_sharm_virtual_node_size`) stand in for real ones, and
//! topology files add switch levels.  The checks are those of the C checker
//! `sharm_check` (results computed independently), run with the hierarchy
//! switched on and told so (`--vnode`, `--hierarchy`): around every call it
//! reads the MPI_T counters `coll_sharm_<op>_served` / `_fallbacks` /
//! `_hierarchical`, and a Bcast/Reduce/Allreduce the hierarchy should have
//! served but the flat path served instead (the hierarchy could not be
//! built) fails the job.  Each test also asserts the totals: the hierarchy
//! served exactly the calls it had to, and at least one.

mod support;

use std::path::PathBuf;
use std::sync::OnceLock;

use support::{checker, run_checker, Summary};

/// Topology files in the work directory.
fn topo_dir() -> &'static PathBuf {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let dir = checker()
            .components
            .parent()
            .expect("work directory")
            .to_path_buf();
        // Two switch levels over 4 virtual nodes of 2: vnode0,1 | vnode2 | vnode3.
        std::fs::write(
            dir.join("two-levels.topo"),
            "# node  switch  switch-2\nvnode0 swA spine0\nvnode1 swA spine0\nvnode2 swB spine0  # shares the spine\nvnode3 swC spine1\n",
        )
        .expect("topology file");
        std::fs::write(dir.join("malformed.topo"), "vnode0 swA\nvnode1\n").expect("topology file");
        dir
    })
}

/// The checker's options that tell it which calls the hierarchy serves:
/// the run's `coll_sharm_virtual_node_size` and `coll_sharm_hierarchy`.
fn hierarchy_args(mca: &[(&str, &str)]) -> Vec<String> {
    let mut args = Vec::new();
    for (k, v) in mca {
        match *k {
            "coll_sharm_virtual_node_size" => args.extend(["--vnode".to_owned(), v.to_string()]),
            "coll_sharm_hierarchy" => args.extend(["--hierarchy".to_owned(), v.to_string()]),
            _ => {}
        }
    }
    args
}

/// Runs the checker; returns its combined output (panics on failure, on a
/// call the hierarchy should have served and did not, and unless the
/// hierarchy served at least one call).
fn run(np: usize, scenarios: &str, mca: &[(&str, &str)]) -> String {
    let job = checker()
        .job(np, scenarios)
        .mcas(mca)
        .args(&["--calls", "2000", "--big", "4194304"])
        .args(&hierarchy_args(mca));
    let (run, s) = run_checker(&job, scenarios);
    assert_hierarchical(&s, &run.report("the hierarchy did not serve as expected"));
    run.output()
}

/// Exactly the calls that had to go through the hierarchy did (the checker
/// checks each; this also catches a run that expected none).
fn assert_hierarchical(s: &Summary, report: &str) {
    assert!(
        s.hierarchical > 0 && s.hierarchical == s.hier_expected,
        "{} of {} calls went through the hierarchy, {} had to (and at least one)\n{report}",
        s.hierarchical,
        s.served,
        s.hier_expected
    );
}

fn topo(name: &str) -> String {
    topo_dir().join(name).display().to_string()
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

/// The hierarchy's parameters are checked on one node too, where no
/// hierarchy is built: each malformed one is said once (two communicators,
/// world and the checker's duplicates, three processes), at verbose 0, and
/// every call is still served, flat.  Before, a misspelt level, override or
/// shape, or a topology file that cannot be read, went unsaid here and was
/// first heard of on the cluster (a shape never).  (The checker itself
/// checks, call by call, that sharm served what it serves.)  An out-of-range
/// fragment size is said once by each process (it was said once per
/// communicator).
#[test]
fn malformed_hierarchy_parameters_are_said_once_on_one_node() {
    let mca = [
        ("coll_sharm_hierarchy_levels", "node,sokcet"),
        ("coll_sharm_hierarchy_level_algorithms", "node=ring"),
        ("coll_sharm_lattice_dims", "4x"),
        ("coll_sharm_torus_dims", "3xthree"),
        ("coll_sharm_topology_file", "/nonexistent/sharm.topo"),
        ("coll_sharm_fragment_size", "3"),
    ];
    let job = checker().job(3, "ops").mcas(&mca);
    let (run, s) = run_checker(&job, "ops");
    let out = run.output();
    assert!(s.served > 0 && s.hierarchical == 0, "{s:?}\n{out}");
    for said in [
        "coll_sharm_hierarchy_levels: 'sokcet': unknown level",
        "coll_sharm_hierarchy_level_algorithms: 'node=ring' is not <level>:<flat|knomial|ring>; ignored",
        "coll_sharm_lattice_dims: '4x' is neither auto nor sides such as 4x4x2; the model's shape is used",
        "coll_sharm_torus_dims: '3xthree' is neither auto nor sides such as 4x4x2",
        "topology file /nonexistent/sharm.topo: cannot read the topology file",
    ] {
        assert_eq!(out.matches(said).count(), 1, "'{said}' not said once:\n{out}");
    }
    // A process's own geometry: once by each process, not once per
    // communicator.
    let geometry =
        "fragment_size=3 queue_slots=0 knomial_radix=2 out of range; using 64 / auto / 2";
    assert_eq!(
        out.matches(geometry).count(),
        3,
        "geometry not said once per process:\n{out}"
    );
}

#[test]
fn hierarchy_on_within_one_node() {
    run(3, "ops,stress", &[("coll_sharm_hierarchy", "on")]);
}

/// A hierarchy of one node ends in a shared-memory group: its Allreduce is
/// the queue Allreduce among the members (verbose 100 names it: the
/// Reduce-to-the-leader-and-Bcast detour would print Reduce and Bcast
/// lines instead), with each Allreduce form.
#[test]
fn one_node_hierarchy_runs_the_queue_allreduce_in_its_top_group() {
    for form in ["reduce_bcast", "reduce_allreduce_bcast"] {
        let out = run(
            3,
            "ops",
            &[
                ("coll_sharm_hierarchy", "on"),
                ("coll_sharm_hierarchy_allreduce_algorithm", form),
                ("coll_sharm_verbose", "100"),
            ],
        );
        assert!(
            out.contains("MPI_Allreduce on 3 processes runs"),
            "{form}: the top group's queue Allreduce did not run\n{}",
            out.lines()
                .filter(|l| l.contains("runs"))
                .take(40)
                .collect::<Vec<_>>()
                .join("\n")
        );
    }
}

/// Every process of a communicator takes rank 0's single-copy decision,
/// also the processes that led a hierarchy group's own calibration before
/// (they used to keep that group's result: processes disagreed and the
/// next large Allgather hung).
#[test]
fn a_communicator_agrees_on_single_copy_after_group_calibrations() {
    let out = run(
        6,
        "ops",
        &[
            ("coll_sharm_virtual_node_size", "2"),
            ("coll_sharm_verbose", "10"),
        ],
    );
    let decisions: std::collections::BTreeSet<&str> = out
        .lines()
        .filter_map(|l| l.split_once("MPI_COMM_WORLD (cid 0): single copy"))
        .map(|(_, what)| what)
        .collect();
    assert!(
        decisions.len() == 1,
        "processes of MPI_COMM_WORLD decided differently: {decisions:?}"
    );
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

/// Papers 001 and 002 at the network level: with virtual nodes of one
/// process every process leads its own node, so the top group is the whole
/// communicator and its Allreduce (form reduce_allreduce_bcast) runs as a
/// schedule over the PML: each algorithm forced, on square and non-square
/// shapes and non-power-of-two sizes, against the checker's independently
/// computed results (floats included: every process must get the same
/// bits).  The verbose-100 line names the algorithm that ran; a torus that
/// cannot exist falls back to the lattice ring, and says so.
/// np, the algorithm forced, a shape parameter, the algorithm that must run.
type TopCase = (
    usize,
    &'static str,
    Option<(&'static str, &'static str)>,
    &'static str,
);

/// Paper 001's asynchronous form in a real run: the top group's lattice
/// ring over the PML posts the next packet's step before the one ahead
/// completes (`schedule::exec`), which the verbose-100 line after each
/// top-group Allreduce counts.  The `big` scenario's 4 MiB Allreduce cuts
/// each block into several 256 KiB packets; its smaller calls take one
/// packet per block and post nothing early.
#[test]
fn top_group_lattice_ring_posts_the_next_packet_early() {
    let mca = [
        ("coll_sharm_virtual_node_size", "1"),
        (
            "coll_sharm_hierarchy_allreduce_algorithm",
            "reduce_allreduce_bcast",
        ),
        (
            "coll_sharm_hierarchy_top_allreduce_algorithm",
            "lattice_ring",
        ),
        ("coll_sharm_verbose", "100"),
    ];
    let mut args = hierarchy_args(&mca);
    args.extend(["--big".to_owned(), (4 << 20).to_string()]);
    let job = checker()
        .job(4, "big")
        .mcas(&mca)
        .mpirun_args(&["--oversubscribe"])
        .args(&args);
    let (run, s) = run_checker(&job, "big");
    assert_hierarchical(&s, &run.report("the hierarchy did not serve"));
    let out = run.output();
    let early: Vec<(u64, u64)> = out
        .lines()
        .filter_map(|l| {
            let rest = l.split("top group of 4: lattice_ring posted ").nth(1)?;
            let mut w = rest.split_whitespace();
            let early = w.next()?.parse().ok()?;
            let steps = w.nth(2)?.parse().ok()?;
            Some((early, steps))
        })
        .collect();
    assert!(
        !early.is_empty(),
        "{}",
        run.report("no top-group lattice ring reported")
    );
    assert!(
        early.iter().any(|&(e, steps)| e > 0 && e < steps),
        "{:?}\n{}",
        early,
        run.report("no lattice ring posted a step early")
    );
}

#[test]
fn top_group_allreduce_schedules_over_every_process() {
    let cases: [TopCase; 6] = [
        (6, "recursive_doubling", None, "recursive_doubling"),
        (5, "ring", None, "ring"),
        (
            6,
            "lattice_ring",
            Some(("coll_sharm_lattice_dims", "3x2")),
            "lattice_ring",
        ),
        (8, "lattice_ring", None, "lattice_ring"),
        (
            9,
            "trinaryx3",
            Some(("coll_sharm_torus_dims", "3x3")),
            "trinaryx3",
        ),
        (6, "trinaryx3", None, "lattice_ring"),
    ];
    for (np, alg, dims, ran) in cases {
        let mut mca = vec![
            ("coll_sharm_virtual_node_size", "1"),
            (
                "coll_sharm_hierarchy_allreduce_algorithm",
                "reduce_allreduce_bcast",
            ),
            ("coll_sharm_hierarchy_top_allreduce_algorithm", alg),
            ("coll_sharm_verbose", "100"),
        ];
        if let Some(d) = dims {
            mca.push(d);
        }
        let job = checker()
            .job(np, "allreduce")
            .mcas(&mca)
            .mpirun_args(&["--oversubscribe"])
            .args(&hierarchy_args(&mca));
        let (run, s) = run_checker(&job, "allreduce");
        assert_hierarchical(&s, &run.report("the hierarchy did not serve"));
        if let Some(missing) = support::top_group_missing(&run.output(), np, alg, ran) {
            panic!("{}", run.report(&missing));
        }
    }
}
