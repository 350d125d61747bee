//! MPI correctness tests of sharm's collectives other than Bcast and Reduce
//! (Barrier, Gather(v), Scatter(v), Allgather(v), Alltoall(v),
//! Reduce_scatter(_block), Scan, Exscan, and Allreduce under its
//! `allgather` and `reduce_scatter_allgather` algorithms), under `mpirun`.
//!
//! The checks live in the C checker `sharm_check` (tests/mpi/check_*.c, one
//! file per operation family; built once per test process into
//! `target/collectives-tests/`); every `#[test]` is one mpirun of it through
//! the launcher of `tests/support` with a scenario (or several) and MCA
//! parameters, and asserts that it exits 0 with its summary line and leaves
//! no `/dev/shm/sharm-<pid>-*` of its processes behind.  The C side checks
//! every result against values it computes itself and the MPI_T counters
//! `coll_sharm_<op>_served` / `_fallbacks` / `_hierarchical` around every
//! call.
//!
//! Needs `cargo build --release` first: the plugin under test is
//! `target/release/libmca_coll_sharm.so` (or `$SHARM_PLUGIN`).

mod support;

use support::{checker, run_checker, stale_shm_files};

/// Every scenario but `allreduce` (run under the forced algorithms below).
const ALL: &str =
    "gather,scatter,allgather,alltoall,redscat,scan,big_others,comms_others,barrier,mixed";

/// Runs the checker on `np` processes; panics with the command and the whole
/// output unless it succeeded.  Returns the totals of its summary line
/// (calls checked, served, fallbacks).
fn totals(np: usize, scenarios: &str, mca: &[(&str, &str)], args: &[&str]) -> (u64, u64, u64) {
    let job = checker().job(np, scenarios).mcas(mca).args(args);
    let (_, s) = run_checker(&job, scenarios);
    (s.calls, s.served, s.fallbacks)
}

// ---- every scenario at np 2, 3, 4, 6 (3+ oversubscribed), default parameters ----

#[test]
fn np1_all() {
    // A one-process MPI_COMM_WORLD is not sharm's: nothing is counted.
    let (calls, served, fallbacks) = totals(1, ALL, &[], &[]);
    assert!(calls > 0 && served == 0 && fallbacks == 0);
}

/// One `#[test]` per process count and scenario.
macro_rules! scenarios {
    ($($name:ident: $np:literal $scenario:literal;)*) => {$(
        #[test]
        fn $name() {
            let (_, served, _) = totals($np, $scenario, &[], &[]);
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
    np2_big: 2 "big_others";
    np2_comms: 2 "comms_others";
    np2_barrier: 2 "barrier";
    np2_mixed: 2 "mixed";
    np2_bottom: 2 "bottom";
    np3_gather: 3 "gather";
    np3_scatter: 3 "scatter";
    np3_allgather: 3 "allgather";
    np3_alltoall: 3 "alltoall";
    np3_reduce_scatter: 3 "redscat";
    np3_scan: 3 "scan";
    np3_big: 3 "big_others";
    np3_comms: 3 "comms_others";
    np3_barrier: 3 "barrier";
    np3_mixed: 3 "mixed";
    np3_bottom: 3 "bottom";
    np4_gather: 4 "gather";
    np4_scatter: 4 "scatter";
    np4_allgather: 4 "allgather";
    np4_alltoall: 4 "alltoall";
    np4_reduce_scatter: 4 "redscat";
    np4_scan: 4 "scan";
    np4_big: 4 "big_others";
    np4_comms: 4 "comms_others";
    np4_barrier: 4 "barrier";
    np4_mixed: 4 "mixed";
    np6_gather: 6 "gather";
    np6_scatter: 6 "scatter";
    np6_allgather: 6 "allgather";
    np6_alltoall: 6 "alltoall";
    np6_reduce_scatter: 6 "redscat";
    np6_scan: 6 "scan";
    np6_big: 6 "big_others";
    np6_comms: 6 "comms_others";
    np6_barrier: 6 "barrier";
    np6_mixed: 6 "mixed";
}

/// Blocks of 12 MiB, above the size from which a process's own block is
/// copied with non-temporal stores on a last-level cache of up to 36 MiB
/// (`kernels::copy::copy_local`; its unit test checks that it streams).
#[test]
fn np2_big_blocks_own_copies_stream() {
    let (_, served, _) = totals(2, "big_others", &[], &["--big", "25165824"]);
    assert!(served > 0, "sharm served nothing");
}

// ---- memory ----

/// An in-place Alltoall and Alltoallv of 64 MiB per process never copy the
/// whole receive buffer aside.  Through the queues (`none`) they copy
/// nothing aside: the checker fails when the peak resident set grows by
/// half a block.  By single copy (`cma`) each block is offered from a copy
/// aside: it fails when the peak grows by more than halfway from one block
/// to the whole buffer.  Before 2026-11-29 it grew by the whole 64 MiB.
fn in_place_memory(np: usize, single_copy: &str) {
    let scenario = match single_copy {
        "none" => "inplace_memory",
        _ => "inplace_memory_aside",
    };
    in_place_memory_of(np, single_copy, scenario, &[]);
}

fn in_place_memory_of(np: usize, single_copy: &str, scenario: &str, args: &[&str]) {
    let mca = [
        ("coll_sharm_single_copy", single_copy),
        ("coll_sharm_single_copy_min_size", "4096"),
    ];
    let (_, served, _) = totals(np, scenario, &mca, args);
    assert!(served > 0, "sharm served nothing");
}

#[test]
fn np2_in_place_memory_by_queues() {
    in_place_memory(2, "none");
}

#[test]
fn np2_in_place_memory_by_single_copy() {
    in_place_memory(2, "cma");
}

#[test]
fn np4_in_place_memory_by_queues() {
    in_place_memory(4, "none");
}

/// Blocks beyond 64 MiB (80 MiB here) take the queues even under `cma`,
/// so nothing is copied aside (`alltoall::IN_PLACE_ASIDE_MAX_BYTES`).
#[test]
fn np2_in_place_memory_large_blocks_by_queues() {
    in_place_memory_of(2, "cma", "inplace_memory", &["--big", "167772160"]);
}

// ---- Allreduce under the two newer algorithms ----

fn allreduce(np: usize, alg: &str) {
    let mca = [("coll_sharm_allreduce_algorithm", alg)];
    totals(np, "allreduce,comms_others", &mca, &[]);
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

/// The checker's `scenario` on `np` processes with `param` forcing `alg`,
/// through a queue of `ring` = (slots, fragment bytes) if given.  The
/// checker is told that ring too (`--s`, `--f`, as `geometry` does), so
/// that its counts are sized to it (several times its bytes: many
/// fragments per block, the queue wrapping round) rather than to the
/// default one: 3 MiB Reduce_scatter and Scan calls through two 64-byte
/// slots at np=4 on 2 cores ran past the checker's 200 s alarm on a Zen 3
/// VM (2026-11-27).
fn forced(np: usize, scenario: &str, param: &str, alg: &str, ring: Option<(&str, &str)>) {
    let mut mca = vec![(param, alg)];
    let mut args = Vec::new();
    if let Some((s, f)) = ring {
        mca.extend([
            ("coll_sharm_queue_slots", s),
            ("coll_sharm_fragment_size", f),
        ]);
        args.extend(["--s", s, "--f", f]);
    }
    let (_, served, _) = totals(np, scenario, &mca, &args);
    assert!(served > 0, "sharm served nothing");
}

#[test]
fn alltoall_linear_and_pairwise() {
    for alg in ["linear", "pairwise"] {
        for np in [2, 3, 5] {
            forced(np, "alltoall", "coll_sharm_alltoall_algorithm", alg, None);
        }
        // Many fragments per block and queue wrap-around.
        forced(
            4,
            "alltoall",
            "coll_sharm_alltoall_algorithm",
            alg,
            Some(("2", "64")),
        );
    }
}

#[test]
fn scan_linear_and_chain() {
    for alg in ["linear", "chain"] {
        for np in [2, 3, 5] {
            forced(np, "scan", "coll_sharm_scan_algorithm", alg, None);
        }
        forced(
            4,
            "scan",
            "coll_sharm_scan_algorithm",
            alg,
            Some(("2", "64")),
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
            None,
        );
    }
    forced(
        4,
        "allgather",
        "coll_sharm_allgather_algorithm",
        "gather_bcast",
        Some(("2", "64")),
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
            None,
        );
    }
    forced(
        4,
        "redscat",
        "coll_sharm_reduce_scatter_algorithm",
        "reduce_then_scatter",
        Some(("2", "64")),
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
    totals(np, &all, &mca, &["--s", s, "--f", f, "--big", big]);
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
    totals(np, "barrier", &mca, &["--iters", "1000"]);
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
    let (_, _, fallbacks) = totals(3, ALL, &mca, &["--expect", "max1"]);
    assert!(fallbacks > 0);
}

#[test]
fn np4_fallback_shared_memory_budget() {
    let mca = [("coll_sharm_shared_memory_budget", "1")];
    let (_, _, fallbacks) = totals(4, ALL, &mca, &["--expect", "budget1"]);
    assert!(fallbacks > 0);
}

/// No `/dev/shm/sharm-<pid>-*` whose process is gone.
#[test]
fn no_stale_shared_memory_files() {
    let stale = stale_shm_files();
    assert!(stale.is_empty(), "stale sharm segments: {stale:?}");
}

/// Two processes sharing one core, back-to-back calls through the pair
/// buffer (`shm::pair`): a process preempted between its fill and the end
/// of its read must find the other's next fill in the other half, never in
/// the one it is still using, and a Bcast's root, which returns before its
/// reader has read the ring, must not write the halves again before it
/// has.  Two jobs, every result checked:
/// * the stress scenario's Allreduces (every operation and type) and the
///   allreduce scenario's, 20,000 calls, every process saying that its
///   Allreduces went through the pair buffer, both the `allgather`
///   Allreduce and reduce-scatter + allgather, and its Reduces too, both
///   routes (`coll::pair::reduce_exchange`);
/// * the stress scenario with streams of up to 4 MiB (`--s 256`) and
///   single copy off (which a crowded node would choose for them), whose
///   Bcasts of 512 KiB and more go through the pair buffer's ring (several
///   laps of it), between Allreduces through its halves.
///
/// An Allreduce that combined its own half after publishing it (before
/// 466ee89) failed the first at call 2654 of the stress scenario.
#[test]
fn np2_one_core_pair_buffer_calls_back_to_back() {
    let jobs = [
        (
            "stress,allreduce",
            ["--calls", "20000", "--s", "32"],
            "auto",
            &[
                "MPI_Allreduce: contributions exchanged through the pair buffer",
                "MPI_Allreduce: slices reduced and exchanged through the pair buffer",
                "MPI_Reduce: the other's vector combined from the pair buffer",
                "MPI_Reduce: slices reduced through the pair buffer",
            ][..],
        ),
        (
            "stress",
            ["--calls", "1500", "--s", "256"],
            "none",
            &[
                "MPI_Bcast: streamed through the pair buffer",
                "MPI_Allreduce: slices reduced and exchanged through the pair buffer",
            ][..],
        ),
    ];
    for (scenarios, args, single_copy, lines) in jobs {
        let job = checker()
            .job(2, scenarios)
            // Both on CPU 0 by the affinity mpirun and its children inherit:
            // Open MPI 5's mapper refuses two processes on a one-CPU
            // `--cpu-set`.
            .wrapper(&["taskset", "-c", "0"])
            .mpirun_args(&["--bind-to", "none"])
            .mcas(&[
                ("mpi_yield_when_idle", "1"),
                ("coll_sharm_verbose", "100"),
                ("coll_sharm_single_copy", single_copy),
            ])
            .args(&args);
        let (run, summary) = run_checker(&job, scenarios);
        assert!(summary.served > 0, "sharm served nothing");
        for said in lines {
            assert_eq!(
                run.output().matches(said).count(),
                2,
                "{scenarios} {args:?}: {}",
                run.report(said)
            );
        }
    }
}
