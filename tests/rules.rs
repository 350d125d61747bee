//! MPI tests of the `coll_sharm_<op>_rules` parameters (issue 16): a rule
//! changes the algorithm a call really runs (sharm says which at
//! `coll_sharm_verbose 100`), a forced `*_algorithm` still wins, a block for
//! other process counts does not apply, per-rule radix and fragment give
//! correct results, and a malformed rule is reported once and ignored.
//!
//! The program is `tests/mpi/rules_check.c` (Allreduce, Bcast, Reduce, Alltoall at 8 B,
//! 64 KiB and 1 MiB on MPI_COMM_WORLD and a duplicate, every result checked).
//! Needs `cargo build --release` first (see `tests/support`).

mod support;

use std::path::PathBuf;
use std::process::Command;
use std::sync::OnceLock;
use std::time::Duration;

use mca_coll_sharm::ompi::call::Coll;
use mca_coll_sharm::ompi::rules::RawRules;
use support::Mpirun;

static SETUP: OnceLock<Result<(PathBuf, PathBuf), String>> = OnceLock::new();

/// Runs rules_check on `np` processes with `mca`; panics unless it passed.
/// Returns stdout + stderr.
fn mpirun(np: usize, mca: &[(&str, &str)]) -> String {
    mpirun_sizes(np, mca, &[])
}

/// As `mpirun`, with rules_check's message sizes in bytes (its defaults when
/// empty).  The output is stdout and each process's standard error whole
/// (`support::StderrFiles`): the counts below once lost a line split around
/// another process's lines in mpirun's one stream (1 run in 3 of the
/// movements' test).
fn mpirun_sizes(np: usize, mca: &[(&str, &str)], sizes: &[u64]) -> String {
    let (components, program) =
        match SETUP.get_or_init(|| support::prepare("rules-tests", "rules_check")) {
            Ok(s) => s,
            Err(e) => panic!("setup failed: {e}"),
        };
    let sizes: Vec<String> = sizes.iter().map(u64::to_string).collect();
    let run = Mpirun::new(components, program, np)
        .mcas(mca)
        .args(&sizes)
        .timeout(Duration::from_secs(120))
        .run();
    run.assert_ok(&format!("rules_check: OK np={np}"));
    run.output()
}

fn has(out: &str, needle: &str) -> bool {
    out.contains(needle)
}

#[test]
fn a_rule_changes_the_algorithm_that_runs() {
    let verbose = ("coll_sharm_verbose", "100");
    // Built-in auto at np=2: allgather up to 2 KiB, reduce-scatter+allgather
    // from 12 KiB; no rule is consulted.
    let out = mpirun(2, &[verbose]);
    assert!(
        has(&out, "MPI_Allreduce on 2 processes runs Allgather"),
        "{out}"
    );
    assert!(
        has(
            &out,
            "MPI_Allreduce on 2 processes runs ReduceScatterAllgather"
        ),
        "{out}"
    );
    assert!(
        !has(&out, "MPI_Allreduce on 2 processes runs Knomial"),
        "{out}"
    );
    assert!(!has(&out, "_rules:"), "{out}");

    // A rule for 0-1K and one from 1M; 64 KiB falls between and keeps auto.
    // Queues of 8 slots, so that frag=64K (8 slots) must be cut to s/2.
    let rules = "np>=2: 0-1K knomial radix=3, 1M- linear frag=64K";
    let out = mpirun(
        2,
        &[
            verbose,
            ("coll_sharm_allreduce_rules", rules),
            ("coll_sharm_queue_slots", "8"),
        ],
    );
    assert!(has(&out, "MPI_Allreduce: 8 bytes on 2 processes: rule 1.1 of coll_sharm_allreduce_rules: Knomial, radix 3, fragment built-in"), "{out}");
    assert!(
        has(&out, "MPI_Allreduce on 2 processes runs Knomial"),
        "{out}"
    );
    assert!(
        !has(&out, "MPI_Allreduce on 2 processes runs Allgather"),
        "{out}"
    );
    // frag=64K is cut to s/2 = 4 slots of 8 KiB.
    assert!(has(&out, "MPI_Allreduce: 1048576 bytes on 2 processes: rule 1.2 of coll_sharm_allreduce_rules: Linear, radix 2, fragment 32768 bytes"), "{out}");
    assert!(
        has(&out, "MPI_Allreduce on 2 processes runs Linear"),
        "{out}"
    );
    assert!(
        has(
            &out,
            "MPI_Allreduce on 2 processes runs ReduceScatterAllgather"
        ),
        "{out}"
    );

    // A forced algorithm wins over the rules.
    let out = mpirun(
        2,
        &[
            verbose,
            ("coll_sharm_allreduce_rules", rules),
            ("coll_sharm_allreduce_algorithm", "allgather"),
        ],
    );
    assert!(
        has(&out, "MPI_Allreduce on 2 processes runs Allgather"),
        "{out}"
    );
    assert!(!has(&out, "of coll_sharm_allreduce_rules:"), "{out}");
    assert!(
        !has(&out, "MPI_Allreduce on 2 processes runs Knomial"),
        "{out}"
    );

    // A block for other process counts does not apply.
    let out = mpirun(
        2,
        &[verbose, ("coll_sharm_allreduce_rules", "np>=3: 0- knomial")],
    );
    assert!(!has(&out, "of coll_sharm_allreduce_rules:"), "{out}");
    assert!(
        has(&out, "MPI_Allreduce on 2 processes runs Allgather"),
        "{out}"
    );
}

/// Built-in auto for 8 KiB Allreduce: at two processes with a core each,
/// the one-hop allgather (below reduce-scatter + allgather's 12 KiB); on a
/// crowded node (told to yield) the tree, as for more processes.
#[test]
fn auto_allreduce_at_two_processes_takes_one_hop_below_12k() {
    let verbose = ("coll_sharm_verbose", "100");
    let out = mpirun_sizes(2, &[verbose], &[8192]);
    assert!(
        has(&out, "MPI_Allreduce on 2 processes runs Allgather"),
        "{out}"
    );
    for other in ["Knomial", "Linear", "ReduceScatterAllgather"] {
        let line = format!("MPI_Allreduce on 2 processes runs {other}");
        assert!(!has(&out, &line), "{out}");
    }
    // Crowded: the tree (the checker's own 4-byte summary Allreduce still
    // runs Allgather, so only the tree's line tells).
    let out = mpirun_sizes(2, &[verbose, ("mpi_yield_when_idle", "1")], &[8192]);
    assert!(
        has(&out, "MPI_Allreduce on 2 processes runs Linear"),
        "{out}"
    );
}

#[test]
fn rules_with_radix_and_fragments_compute_correctly() {
    // np=4 is oversubscribed here, where auto would take the flat trees: the
    // rules force radix-3 trees and wide fragments; rules_check verifies
    // every result at 8 B, 64 KiB and 1 MiB.
    let out = mpirun(
        4,
        &[
            ("coll_sharm_verbose", "100"),
            ("coll_sharm_bcast_rules", "0- knomial radix=3 frag=16K"),
            (
                "coll_sharm_reduce_rules",
                "np=4: 0- knomial radix=3 frag=24K",
            ),
            (
                "coll_sharm_allreduce_rules",
                "0-1K allgather, 1K- knomial radix=3 frag=32K",
            ),
        ],
    );
    for op in ["MPI_Bcast", "MPI_Reduce", "MPI_Allreduce"] {
        assert!(
            has(&out, &format!("{op} on 4 processes runs Knomial")),
            "{op}:\n{out}"
        );
    }
    // 24K is no divisor of 8 slots: 2 slots.
    assert!(
        has(
            &out,
            "coll_sharm_reduce_rules: Knomial, radix 3, fragment 16384 bytes"
        ),
        "{out}"
    );
}

/// Allreduce's `auto` takes reduce-scatter + allgather from 12 KiB with a
/// core per process, but from 64 KiB on a crowded node (here: asked to
/// yield when idle, which every process sees and the set-up agrees on).
#[test]
fn auto_allreduce_moves_to_reduce_scatter_later_on_a_crowded_node() {
    let verbose = ("coll_sharm_verbose", "100");
    let rsag = "MPI_Allreduce on 2 processes runs ReduceScatterAllgather";
    let tree = "MPI_Allreduce on 2 processes runs Linear";
    // (Below 12 KiB the uncrowded pair takes the allgather: the test above.)
    let out = mpirun_sizes(2, &[verbose], &[16384]);
    assert!(has(&out, rsag) && !has(&out, tree), "{out}");
    assert!(has(&out, "crowded: false"), "{out}");

    let crowded = [verbose, ("mpi_yield_when_idle", "1")];
    let out = mpirun_sizes(2, &crowded, &[16384]);
    assert!(has(&out, tree) && !has(&out, rsag), "{out}");
    assert!(has(&out, "crowded: true"), "{out}");
    let out = mpirun_sizes(2, &crowded, &[65536]);
    assert!(has(&out, rsag) && !has(&out, tree), "{out}");
}

#[test]
fn a_malformed_rule_is_reported_once_and_ignored() {
    // Two communicators (world and its duplicate) on two processes: one
    // message, from rank 0, naming the position; the job runs on auto.
    let out = mpirun(2, &[("coll_sharm_bcast_rules", "np>=2: 0- knomal")]);
    let line = "coll_sharm_bcast_rules ignored: unknown algorithm 'knomal' (auto, linear, knomial) at character 11 of \"np>=2: 0- knomal\"";
    assert_eq!(out.matches(line).count(), 1, "{out}");
    assert_eq!(out.matches("_rules ignored").count(), 1, "{out}");
}

/// The rules `ci/tune.sh` writes are read by the Rust parser exactly as the
/// tuner's own lookup (used by `--check`) reads them.
#[test]
fn the_tuners_rules_parse_alike_in_rust() {
    use mca_coll_sharm::ompi::call::Coll;
    use mca_coll_sharm::ompi::params::{algorithm_value, decode_algorithm};
    use mca_coll_sharm::ompi::rules::{RawRules, RULED};

    let out = Command::new("python3")
        .arg(support::repo().join("bench/tune.py"))
        .arg("--selftest")
        .output()
        .expect("run python3 bench/tune.py --selftest");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && text.contains("tune selftest: OK"),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut tables = std::collections::BTreeMap::new();
    let mut lookups = 0;
    for line in text.lines() {
        let words: Vec<&str> = line.split_whitespace().collect();
        match words.as_slice() {
            ["RULES", op, ..] => {
                let rules = line.splitn(3, ' ').nth(2).unwrap_or("");
                let texts: Vec<String> = RULED
                    .iter()
                    .map(|(n, _, _)| {
                        if n == op {
                            rules.to_string()
                        } else {
                            String::new()
                        }
                    })
                    .collect();
                let table = RawRules::compile(&texts);
                assert!(table.count > 0, "Rust rejected the tuner's '{rules}'");
                tables.insert(op.to_string(), table);
            }
            ["LOOKUP", op, np, bytes, label @ ..] => {
                let coll: Coll = RULED.iter().find(|r| r.0 == *op).expect("ruled op").1;
                let got = tables[*op].lookup(coll, np.parse().unwrap(), bytes.parse().unwrap());
                let want = match label {
                    ["none"] => None,
                    [alg, opts @ ..] => Some((
                        decode_algorithm(algorithm_value(alg).expect("known name")),
                        opts.iter()
                            .find_map(|o| o.strip_prefix("radix="))
                            .map(|k| k.parse::<usize>().unwrap()),
                    )),
                    [] => panic!("empty label in {line}"),
                };
                assert_eq!(got.map(|r| (r.algorithm, r.radix)), want, "{line}");
                lookups += 1;
            }
            _ => {}
        }
    }
    assert!(lookups >= 50, "only {lookups} lookups compared:\n{text}");
}

/// The rules built into sharm (src/ompi/built-in-rules.conf, derived by
/// `ci/tune.sh --derive`) decide the calls they cover when the user gave no
/// rule, say so at verbose 100, and a user's rule still wins over them.
/// With no entry in the file, no call says a built-in rule decided it.
#[test]
fn built_in_rules_decide_when_the_user_gave_none() {
    // The built-in entries rules_check can exercise at np=2 (Allreduce,
    // Bcast, Reduce, Alltoall): a size inside each entry's range, a
    // multiple of 4.
    let ops = [
        (Coll::Allreduce, "MPI_Allreduce", "allreduce"),
        (Coll::Bcast, "MPI_Bcast", "bcast"),
        (Coll::Reduce, "MPI_Reduce", "reduce"),
        (Coll::Alltoall, "MPI_Alltoall", "alltoall"),
    ];
    let table = RawRules::built_in();
    let mut sizes: Vec<u64> = table.entries[..table.count as usize]
        .iter()
        .filter(|r| ops.iter().any(|o| o.0 as u8 == r.coll))
        .filter(|r| (r.np_lo..=r.np_hi).contains(&2))
        .map(|r| (r.lo.max(4).div_ceil(4) * 4).min(16 << 20))
        .filter(|b| *b >= 4)
        .collect();
    sizes.sort_unstable();
    sizes.dedup();
    // The file may hold no entry: the derivation keeps only cells where
    // every tuning run agreed (2026-11-26: none of four).  Then no call
    // may say a built-in rule decided it, at the sizes of the grid.
    let empty = sizes.is_empty();
    if empty {
        sizes = vec![4, 16, 64, 256, 1024, 4096, 16 << 10, 64 << 10];
    }
    let out = mpirun_sizes(2, &[("coll_sharm_verbose", "100")], &sizes);
    if empty {
        assert!(
            !has(&out, "built into sharm"),
            "no built-in rule expected\n{out}"
        );
    }
    for (coll, call, name) in ops {
        for &bytes in &sizes {
            let said = format!("{call}: {bytes} bytes on 2 processes: rule");
            match table.lookup(coll, 2, bytes) {
                Some(r) => assert!(
                    has(
                        &out,
                        &format!(
                            "{said} {}.{} of coll_sharm_{name}_rules built into sharm: {:?}",
                            r.block, r.entry, r.algorithm
                        )
                    ),
                    "{said}: built-in rule expected\n{out}"
                ),
                None => assert!(!has(&out, &said), "{said}: no rule expected\n{out}"),
            }
        }
    }
    // A user's rule for the same cells wins over the built-in ones.
    let out = mpirun_sizes(
        2,
        &[
            ("coll_sharm_verbose", "100"),
            ("coll_sharm_allreduce_rules", "0- linear"),
        ],
        &sizes,
    );
    assert!(
        !has(&out, "of coll_sharm_allreduce_rules built into sharm"),
        "{out}"
    );
    assert!(has(&out, "of coll_sharm_allreduce_rules: Linear"), "{out}");
}

/// With more processes than CPUs, `auto` runs Alltoall as `linear` when a
/// process's p-1 blocks take 128 KiB to 1 MiB together, where processes
/// with a core each take the pairwise rounds for the same blocks
/// (`alltoall::OVERSUBSCRIBED_LINEAR_BYTES`).  The oversubscribed run needs
/// CPUs + 1 processes: on a machine of more than 11 CPUs it is not made,
/// and the test says so.
#[test]
fn oversubscribed_alltoall_runs_linear() {
    let cpus = support::cpus_online();
    let mca = [
        ("coll_sharm_verbose", "100"),
        ("coll_sharm_single_copy", "none"),
        ("mpi_yield_when_idle", "1"),
    ];
    if cpus < 12 {
        let np = cpus + 1;
        // p-1 blocks of 512 KiB / (p-1) bytes: 512 KiB together.
        let block = ((512 << 10) / (np - 1) / 4 * 4) as u64;
        let out = mpirun_sizes(np, &mca, &[block]);
        let line = format!("MPI_Alltoall on {np} processes runs Linear");
        // Once per process on MPI_COMM_WORLD and once on its duplicate.
        assert_eq!(out.matches(&line).count(), 2 * np, "`{line}`:\n{out}");
        assert!(out.contains("(Oversubscribed), queue stores from"), "{out}");
    } else {
        eprintln!(
            "oversubscribed run not made: it needs {} processes",
            cpus + 1
        );
    }
    if cpus >= 2 {
        // A core each, mpi_yield_when_idle left alone: not crowded.
        let out = mpirun_sizes(2, &mca[..2], &[256 << 10]);
        let line = "MPI_Alltoall on 2 processes runs Pairwise";
        assert_eq!(out.matches(line).count(), 4, "`{line}`:\n{out}");
    }
}

/// How many lines of `out` contain `said`.
fn lines_with(out: &str, said: &str) -> usize {
    out.lines().filter(|l| l.contains(said)).count()
}

/// An Alltoallv whose blocks for the other processes are each one fragment
/// (of one slot, or wider where their slots are apart) publishes them all
/// before it reads any (`alltoall::publishes_first`); so do blocks of
/// several fragments on a crowded node, whose rounds are spaced apart in
/// the ring (`Shared::round_spacing`), unless the ring is too small for
/// that.  rules_check runs each size on two communicators, with a send
/// buffer and in place: 4 calls per process.  Its blocks take 516 or 260
/// bytes at 129 elements; at 5000 elements 20000 or 10000 bytes, two
/// fragments (of 16 KiB and 8 KiB).  At np=3 the middle process's blocks (all
/// 260 bytes) travel with their headers when not in place
/// (`small_pairwise`, which says nothing here), so 2 + 0 + 2 lines; at
/// np=4 (the rounds pair processes off) every process has a 516-byte
/// block.  In place an Alltoallv swaps its blocks a round at a time
/// (`alltoall::in_place`, since 2026-11-29: publishing them all first
/// needed the whole buffer copied aside), and says so, 2 lines a process.
/// np=3 and 4 on 2 cores: the crowded node this is for.
#[test]
fn alltoallv_blocks_that_fit_the_ring_are_published_before_any_is_read() {
    let first = "processes published every round's block first";
    for (np, lines) in [(3, 4), (4, 8)] {
        let out = mpirun_sizes(np, &[("coll_sharm_verbose", "100")], &[516]);
        let said = format!("MPI_Alltoall(v) on {np} {first}");
        assert_eq!(lines_with(&out, &said), lines, "np={np}:\n{out}");
        let swapped = format!("MPI_Alltoall(v) on {np} processes swapped its blocks in place");
        assert_eq!(lines_with(&out, &swapped), 2 * np, "np={np}:\n{out}");
    }
    // 8192 elements: blocks of 32 KiB and 16 KiB, one fragment each of 4
    // and 2 slots, published first where their slots are apart
    // (`Queues::apart`): at np=4 a round's two 2-slot fragments meet the
    // 4-slot one in 2 of every 128 operation numbers, so nearly always.
    // Each process's two Alltoalls of 32 KiB blocks take the pairwise
    // rounds too, and publish first (4 slots each; in place after a copy
    // aside of the whole 128 KiB, `CROWDED_ASIDE_ALL_BYTES`): 4 lines a
    // process, the in-place Alltoallv swapping instead.
    let out = mpirun_sizes(4, &[("coll_sharm_verbose", "100")], &[32768]);
    let wide = lines_with(&out, first);
    assert!((12..=16).contains(&wide), "{wide} lines:\n{out}");
    // Two fragments a block: 6 Alltoallv calls not in place and 6
    // Alltoalls (pairwise too, 20000-byte blocks) in all, published first
    // where the spaced rounds keep their slots apart; blocks of 8 KiB
    // fragments beside blocks of 16 KiB ones may meet (15 of 18 did on a
    // ring of 128 slots when the in-place Alltoallv calls published first
    // too).
    let out = mpirun_sizes(3, &[("coll_sharm_verbose", "100")], &[20000]);
    let several = lines_with(&out, first);
    assert!((6..=12).contains(&several), "{several} lines:\n{out}");
    assert_eq!(
        lane_lines(&out, "MPI_Alltoallv", 3, "Pairwise").1,
        12,
        "{out}"
    );
    // A ring of 8 slots holds two 16 KiB fragments of both rounds, but not
    // rounds spaced for 32 KiB fragments: one operation apart, round k+1
    // would start on round k's second fragment, so they go round by round.
    let small_ring = [
        ("coll_sharm_verbose", "100"),
        ("coll_sharm_queue_slots", "8"),
    ];
    let out = mpirun_sizes(3, &small_ring, &[20000]);
    assert_eq!(lines_with(&out, first), 0, "{out}");
    assert_eq!(
        lane_lines(&out, "MPI_Alltoallv", 3, "Pairwise").1,
        12,
        "{out}"
    );
}

/// On a crowded node `auto` runs the chain Scan and Exscan from 64 KiB
/// whatever the size of the communicator (its p - 1 folds instead of the
/// linear Scan's p(p - 1) / 2, on cores the processes share;
/// `scan::auto_linear_up_to`); with a core per process linear below 9
/// processes.  Asked to yield, three processes are crowded on any machine.
/// Each size runs on two communicators, with a send buffer and in place.
#[test]
fn crowded_scans_run_the_chain_from_64_kib() {
    let verbose = ("coll_sharm_verbose", "100");
    let yields = ("mpi_yield_when_idle", "1");
    let out = mpirun_sizes(3, &[verbose, yields], &[8192, 65536]);
    for op in ["MPI_Scan", "MPI_Exscan"] {
        // 8 KiB on the lane, linear; 64 KiB by the chain.
        assert_eq!(lane_lines(&out, op, 3, "Linear"), (12, 0), "{op}:\n{out}");
        assert_eq!(lane_lines(&out, op, 3, "Chain"), (0, 12), "{op}:\n{out}");
    }
    // Two processes with a core each (not asked to yield): linear.  On a
    // machine of one core they are crowded too, and run the chain.
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let out = mpirun_sizes(2, &[verbose], &[65536]);
    let want = if cores >= 2 { "Linear" } else { "Chain" };
    for op in ["MPI_Scan", "MPI_Exscan"] {
        assert_eq!(lane_lines(&out, op, 2, want), (0, 8), "{op}:\n{out}");
    }
}

/// Lines of `out` that say a call of `op` on `np` processes ran `alg`,
/// split into those on the express lane and the others.
fn lane_lines(out: &str, op: &str, np: usize, alg: &str) -> (usize, usize) {
    let said = format!("{op} on {np} processes runs {alg}");
    let lines: Vec<&str> = out.lines().filter(|l| l.contains(&said)).collect();
    let express = lines
        .iter()
        .filter(|l| l.contains("(express lane)"))
        .count();
    (express, lines.len() - express)
}

/// A Barrier, a Bcast or Reduce of up to one fragment (8 KiB by default),
/// and an Allreduce of as many bytes up to where `auto` runs the
/// `allgather` Allreduce (2 KiB beyond two processes), skip the route and the
/// algorithm choice (`dispatch::express`) where nothing else could decide
/// them: not with a tree or an algorithm forced, a rule for their small
/// calls, or a hierarchy; larger ones take the ordinary path.  rules_check
/// runs each size on two communicators, so each count below is sizes x 2
/// x np.  On two processes the lane runs a Reduce of 33 bytes or more
/// through the pair buffer instead of its tree (`coll::pair::reduce_exchange`),
/// and says so.  Allreduce is its first call on each communicator, which sets up
/// the channel and so takes the ordinary path (2 x np lines off the lane);
/// its last call, 4 bytes on the first communicator, adds np.
#[test]
fn barriers_and_small_bcasts_and_reductions_take_the_express_lane_unless_something_else_decides() {
    let verbose = ("coll_sharm_verbose", "100");
    let out = mpirun_sizes(2, &[verbose], &[8, 4096, 8192, 8196, 65536]);
    // 3 sizes on the lane; 8196 and 65536 bytes not (65536 may go by
    // single copy, which says no tree).
    assert_eq!(lane_lines(&out, "MPI_Bcast", 2, "Linear").0, 12, "{out}");
    assert!(lane_lines(&out, "MPI_Bcast", 2, "Linear").1 >= 4, "{out}");
    // On two processes the 4 and 8 KiB Reduces leave the lane's tree for
    // the pair buffer's halves (`coll::pair::reduce_exchange`), on the lane.
    assert_eq!(lane_lines(&out, "MPI_Reduce", 2, "Linear").0, 4, "{out}");
    assert_eq!(
        lane_lines(&out, "MPI_Reduce", 2, "Slices through the pair buffer").0,
        8,
        "{out}"
    );
    assert!(lane_lines(&out, "MPI_Reduce", 2, "Linear").1 >= 4, "{out}");
    for op in ["MPI_Bcast", "MPI_Reduce"] {
        assert!(
            has(&out, &format!("express lane for {op} of up to 8192 bytes")),
            "{out}"
        );
    }
    assert_eq!(
        lane_lines(&out, "MPI_Allreduce", 2, "Allgather"),
        (10, 8),
        "8 B first: 4 off the lane; 8196 bytes: the ordinary path's \
         Allgather; 64 KiB runs another\n{out}"
    );
    assert!(
        has(&out, "express lane for MPI_Allreduce of up to 8192 bytes"),
        "{out}"
    );
    assert_eq!(
        lane_lines(&out, "MPI_Barrier", 2, "Linear"),
        (20, 0),
        "{out}"
    );

    let out = mpirun_sizes(3, &[verbose], &[8, 1024, 4096]);
    assert_eq!(lane_lines(&out, "MPI_Bcast", 3, "Linear"), (18, 0), "{out}");
    assert_eq!(
        lane_lines(&out, "MPI_Reduce", 3, "Linear"),
        (18, 0),
        "{out}"
    );
    assert_eq!(
        lane_lines(&out, "MPI_Allreduce", 3, "Allgather"),
        (9, 6),
        "{out}"
    );
    assert_eq!(
        lane_lines(&out, "MPI_Allreduce", 3, "Linear"),
        (0, 6),
        "4 KiB: the ordinary path's tree\n{out}"
    );
    assert!(
        has(&out, "express lane for MPI_Allreduce of up to 2048 bytes"),
        "{out}"
    );

    let knomial = [
        verbose,
        ("coll_sharm_bcast_algorithm", "knomial"),
        ("coll_sharm_reduce_algorithm", "knomial"),
        ("coll_sharm_allreduce_algorithm", "allgather"),
        ("coll_sharm_barrier_algorithm", "knomial"),
    ];
    let out = mpirun_sizes(2, &knomial, &[8]);
    assert_eq!(
        lane_lines(&out, "MPI_Barrier", 2, "Knomial"),
        (0, 4),
        "{out}"
    );
    assert!(
        has(
            &out,
            "no express lane for MPI_Barrier (it runs a tree here)"
        ),
        "{out}"
    );
    assert_eq!(
        lane_lines(&out, "MPI_Allreduce", 2, "Allgather"),
        (0, 6),
        "{out}"
    );
    assert!(
        has(
            &out,
            "no express lane for MPI_Allreduce (coll_sharm_allreduce_algorithm decides)"
        ),
        "{out}"
    );
    assert_eq!(lane_lines(&out, "MPI_Bcast", 2, "Knomial"), (0, 4), "{out}");
    assert_eq!(
        lane_lines(&out, "MPI_Reduce", 2, "Knomial"),
        (0, 4),
        "{out}"
    );
    assert!(
        has(&out, "no express lane for MPI_Bcast (it runs a tree here)"),
        "{out}"
    );
    assert!(
        has(&out, "no express lane for MPI_Reduce (it runs a tree here)"),
        "{out}"
    );

    // A rule for sizes the lane takes shuts it for that operation only.
    let rule = ("coll_sharm_bcast_rules", "np>=2: 4K-8K linear");
    let out = mpirun_sizes(2, &[verbose, rule], &[8]);
    assert_eq!(lane_lines(&out, "MPI_Bcast", 2, "Linear"), (0, 4), "{out}");
    assert_eq!(lane_lines(&out, "MPI_Reduce", 2, "Linear"), (4, 0), "{out}");
    assert!(
        has(
            &out,
            "no express lane for MPI_Bcast (a rule speaks for its small calls)"
        ),
        "{out}"
    );
    assert_eq!(
        lane_lines(&out, "MPI_Allreduce", 2, "Allgather"),
        (2, 4),
        "{out}"
    );
    let rule = ("coll_sharm_reduce_rules", "np>=2: 0-64 linear");
    let out = mpirun_sizes(2, &[verbose, rule], &[8]);
    assert_eq!(lane_lines(&out, "MPI_Reduce", 2, "Linear"), (0, 4), "{out}");
    let rule = ("coll_sharm_barrier_rules", "np>=2: 0- linear");
    let out = mpirun_sizes(2, &[verbose, rule], &[8]);
    assert_eq!(
        lane_lines(&out, "MPI_Barrier", 2, "Linear"),
        (0, 4),
        "{out}"
    );
    assert!(
        has(
            &out,
            "no express lane for MPI_Barrier (a rule speaks for it)"
        ),
        "{out}"
    );
    let rule = ("coll_sharm_allreduce_rules", "np>=2: 0-64 linear");
    let out = mpirun_sizes(2, &[verbose, rule], &[8]);
    assert_eq!(
        lane_lines(&out, "MPI_Allreduce", 2, "Linear"),
        (0, 6),
        "{out}"
    );
    assert!(
        has(
            &out,
            "no express lane for MPI_Allreduce (a rule speaks for its small calls)"
        ),
        "{out}"
    );

    // A rule for other process counts leaves the lane open.
    let rule = ("coll_sharm_bcast_rules", "np>=3: 0- knomial");
    let out = mpirun_sizes(2, &[verbose, rule], &[8]);
    assert_eq!(lane_lines(&out, "MPI_Bcast", 2, "Linear"), (4, 0), "{out}");

    let out = mpirun_sizes(2, &[verbose, ("coll_sharm_max_message_size", "16")], &[8]);
    assert!(
        has(&out, "express lane for MPI_Bcast of up to 16 bytes"),
        "{out}"
    );
    assert_eq!(lane_lines(&out, "MPI_Bcast", 2, "Linear"), (4, 0), "{out}");

    let out = mpirun_sizes(2, &[verbose, ("coll_sharm_hierarchy", "on")], &[8]);
    assert!(
        has(
            &out,
            "no express lane for MPI_Bcast (the hierarchy decides)"
        ),
        "{out}"
    );
    assert_eq!(lane_lines(&out, "MPI_Bcast", 2, "Linear").0, 0, "{out}");
    assert_eq!(lane_lines(&out, "MPI_Reduce", 2, "Linear").0, 0, "{out}");
    assert_eq!(lane_lines(&out, "MPI_Allreduce", 2, "").0, 0, "{out}");
    assert_eq!(lane_lines(&out, "MPI_Barrier", 2, "").0, 0, "{out}");
}

/// A Gather, Scatter, Allgather or Alltoall, or a Gatherv, Scatterv or
/// Allgatherv, whose blocks travel with their slot headers (1 to 512 bytes
/// each, `coll::small`) skips the route (`dispatch::express`) where nothing
/// else could decide it: not with Allgather's or Alltoall's algorithm
/// forced, a rule for their small calls, or a hierarchy; blocks beyond 512
/// bytes take the ordinary path, and so do all of them with the lane shut,
/// where the ordinary path runs the same small-block path.  rules_check
/// runs each size on two communicators, Gather, Scatter, Allgather and
/// their v-variants twice on each (with a send buffer and in place),
/// Alltoall once; every process says which path it took, so each count
/// below is sizes x 2 x (2 or 1) x np.  The v-variants' blocks hold n
/// elements for even ranks and n - n/2 for odd ones (rules_check.c).
#[test]
fn small_data_movements_take_the_express_lane_unless_something_else_decides() {
    let verbose = ("coll_sharm_verbose", "100");
    let movements = ["MPI_Gather", "MPI_Scatter", "MPI_Allgather"];
    let lane = |op: &str| format!("{op} and {op}v");
    let out = mpirun_sizes(2, &[verbose], &[8, 512, 516]);
    for op in movements {
        assert_eq!(lane_lines(&out, op, 2, "Linear").0, 16, "{op}:\n{out}");
        // 516 bytes: rank 0's block (the root is rank 1) is beyond the
        // lane, and the processes that see it take the ordinary path.
        let v = format!("{op}v");
        assert_eq!(lane_lines(&out, &v, 2, "Linear").0, 16, "{v}:\n{out}");
        assert!(
            has(
                &out,
                &format!("express lane for {} of up to 512 bytes a block", lane(op))
            ),
            "{out}"
        );
    }
    assert_eq!(lane_lines(&out, "MPI_Alltoall", 2, "Linear").0, 8, "{out}");
    // 516 bytes: the ordinary path (Gather and Scatter name no algorithm).
    assert_eq!(lane_lines(&out, "MPI_Allgather", 2, "Linear").1, 8, "{out}");
    assert_eq!(
        lane_lines(&out, "MPI_Allgatherv", 2, "Linear").1,
        8,
        "{out}"
    );
    assert_eq!(lane_lines(&out, "MPI_Alltoall", 2, "Linear").1, 4, "{out}");
    // Every Alltoallv takes the lane (sizes x 2 x 2 x np), then runs the
    // pairwise rounds, its blocks with their headers where they fit.
    let alltoallv = "MPI_Alltoallv on 2 processes takes the express lane";
    assert_eq!(lines_with(&out, alltoallv), 24, "{out}");
    assert_eq!(
        lane_lines(&out, "MPI_Alltoallv", 2, "Pairwise"),
        (0, 24),
        "{out}"
    );
    assert!(
        has(&out, "MPI_Alltoallv: blocks travel with their headers"),
        "{out}"
    );

    // Three processes on two cores (crowded): the lane is open the same.
    // At 516 bytes (129 elements) the middle process's v-blocks take 260
    // bytes: it alone takes the lane for its Gatherv and Scatterv, and
    // meets the others on the ordinary path; an Allgatherv's process sees
    // every block, so none does.
    let out = mpirun_sizes(3, &[verbose], &[8, 516]);
    for op in movements {
        assert_eq!(lane_lines(&out, op, 3, "Linear").0, 12, "{op}:\n{out}");
    }
    assert_eq!(lane_lines(&out, "MPI_Alltoall", 3, "Linear").0, 6, "{out}");
    for (v, lines) in [
        ("MPI_Gatherv", 16),
        ("MPI_Scatterv", 16),
        ("MPI_Allgatherv", 12),
    ] {
        assert_eq!(lane_lines(&out, v, 3, "Linear").0, lines, "{v}:\n{out}");
    }
    // At 516 bytes the middle process's Alltoallv blocks travel with their
    // headers and the others' between them do not (rules_check checks
    // every result).
    let alltoallv = "MPI_Alltoallv on 3 processes takes the express lane";
    assert_eq!(lines_with(&out, alltoallv), 24, "{out}");

    // The lane shut by the hierarchy: the ordinary path moves the same
    // blocks with their headers.
    let out = mpirun_sizes(2, &[verbose, ("coll_sharm_hierarchy", "on")], &[8]);
    for op in movements.iter().chain(&["MPI_Alltoall"]) {
        let named = if *op == "MPI_Alltoall" {
            op.to_string()
        } else {
            lane(op)
        };
        assert!(
            has(
                &out,
                &format!("no express lane for {named} (the hierarchy decides)")
            ),
            "{out}"
        );
        assert_eq!(lane_lines(&out, op, 2, "").0, 0, "{op}:\n{out}");
        let v = format!("{op}v");
        assert_eq!(lane_lines(&out, &v, 2, "").0, 0, "{v}:\n{out}");
        assert_eq!(lines_with(&out, "takes the express lane"), 0, "{out}");
        assert!(
            has(&out, &format!("{op}(v): blocks travel with their headers"))
                || has(&out, &format!("{op}: blocks travel with their headers")),
            "{op}:\n{out}"
        );
    }

    // Allgather's and Alltoall's algorithms forced, or a rule: those two
    // leave the lane; Gather and Scatter stay.
    let forced = [
        verbose,
        ("coll_sharm_allgather_algorithm", "gather_bcast"),
        ("coll_sharm_alltoall_rules", "np>=2: 0-64 pairwise"),
    ];
    let out = mpirun_sizes(2, &forced, &[8]);
    assert!(
        has(
            &out,
            "no express lane for MPI_Allgather and MPI_Allgatherv (coll_sharm_allgather_algorithm decides)"
        ),
        "{out}"
    );
    assert!(
        has(
            &out,
            "no express lane for MPI_Alltoall (a rule speaks for its small calls)"
        ),
        "{out}"
    );
    assert_eq!(
        lane_lines(&out, "MPI_Allgather", 2, "GatherBcast"),
        (0, 8),
        "{out}"
    );
    assert_eq!(
        lane_lines(&out, "MPI_Alltoall", 2, "Pairwise"),
        (0, 4),
        "{out}"
    );
    assert_eq!(lane_lines(&out, "MPI_Gather", 2, "Linear").0, 8, "{out}");
    assert_eq!(lane_lines(&out, "MPI_Scatter", 2, "Linear").0, 8, "{out}");
    assert_eq!(lane_lines(&out, "MPI_Allgatherv", 2, "").0, 0, "{out}");
    assert_eq!(lane_lines(&out, "MPI_Gatherv", 2, "Linear").0, 8, "{out}");

    // The size limit counts the call's p blocks: 16 bytes at np=2 leave 8
    // a block.
    let out = mpirun_sizes(2, &[verbose, ("coll_sharm_max_message_size", "16")], &[8]);
    assert!(
        has(
            &out,
            "express lane for MPI_Gather and MPI_Gatherv of up to 8 bytes a block"
        ),
        "{out}"
    );
    assert_eq!(lane_lines(&out, "MPI_Gather", 2, "Linear").0, 8, "{out}");
    // The v-variants' blocks of 8 and 4 bytes: an Allgatherv's within the
    // limit's share; a Gatherv's and Scatterv's have no limit to keep.
    for v in ["MPI_Gatherv", "MPI_Scatterv", "MPI_Allgatherv"] {
        assert_eq!(lane_lines(&out, v, 2, "Linear").0, 8, "{v}:\n{out}");
    }
}

/// A Scan or Exscan of up to one fragment (8 KiB by default) of a
/// predefined datatype and operation skips the route (`dispatch::express`)
/// where `auto` or `linear` runs the linear Scan and nothing else decides:
/// not with the chain forced, a rule for its small calls, or a hierarchy;
/// larger ones take the ordinary path, which says which of the two it ran.
/// rules_check runs each size on two communicators, each operation with a
/// send buffer and in place, so each count below is sizes x 2 x 2 x np.
#[test]
fn small_scans_take_the_express_lane_unless_something_else_decides() {
    let verbose = ("coll_sharm_verbose", "100");
    let out = mpirun_sizes(2, &[verbose], &[8, 4096, 8192, 8196]);
    assert!(
        has(
            &out,
            "express lane for MPI_Scan and MPI_Exscan of up to 8192 bytes"
        ),
        "{out}"
    );
    for op in ["MPI_Scan", "MPI_Exscan"] {
        // 8, 4096 and 8192 bytes on the lane; 8196 bytes not.
        assert_eq!(lane_lines(&out, op, 2, "Linear"), (24, 8), "{op}:\n{out}");
    }

    let out = mpirun_sizes(3, &[verbose], &[8, 1024]);
    for op in ["MPI_Scan", "MPI_Exscan"] {
        assert_eq!(lane_lines(&out, op, 3, "Linear"), (24, 0), "{op}:\n{out}");
    }

    let chain = ("coll_sharm_scan_algorithm", "chain");
    let out = mpirun_sizes(2, &[verbose, chain], &[8]);
    assert!(
        has(
            &out,
            "no express lane for MPI_Scan and MPI_Exscan (coll_sharm_scan_algorithm decides)"
        ),
        "{out}"
    );
    for op in ["MPI_Scan", "MPI_Exscan"] {
        assert_eq!(lane_lines(&out, op, 2, "Chain"), (0, 8), "{op}:\n{out}");
    }

    // A forced `linear` keeps the lane.
    let linear = ("coll_sharm_scan_algorithm", "linear");
    let out = mpirun_sizes(2, &[verbose, linear], &[8]);
    assert_eq!(lane_lines(&out, "MPI_Exscan", 2, "Linear"), (8, 0), "{out}");

    let rule = ("coll_sharm_scan_rules", "np>=2: 0-64 linear");
    let out = mpirun_sizes(2, &[verbose, rule], &[8]);
    assert!(
        has(
            &out,
            "no express lane for MPI_Scan and MPI_Exscan (a rule speaks for its small calls)"
        ),
        "{out}"
    );
    assert_eq!(lane_lines(&out, "MPI_Scan", 2, "Linear"), (0, 8), "{out}");

    let out = mpirun_sizes(2, &[verbose, ("coll_sharm_hierarchy", "on")], &[8]);
    assert!(
        has(
            &out,
            "no express lane for MPI_Scan and MPI_Exscan (the hierarchy decides)"
        ),
        "{out}"
    );
    assert_eq!(lane_lines(&out, "MPI_Exscan", 2, "Linear"), (0, 8), "{out}");
}

/// A Reduce_scatter_block whose blocks take up to one fragment (8 KiB by
/// default) of a predefined datatype and operation, and a Reduce_scatter
/// whose p blocks take no more together, skip the route
/// (`dispatch::express`) where their linear algorithm runs: not with
/// `reduce_then_scatter` forced, a rule for their small blocks, or a
/// hierarchy; the size limit counts the p blocks.  rules_check runs each
/// size on two communicators, with a send buffer and in place, so each
/// count below is sizes x 2 x 2 x np.  Its Reduce_scatter gives even ranks
/// n elements and odd ones n - n/2 (rules_check.c).
#[test]
fn small_reduce_scatter_blocks_take_the_express_lane_unless_something_else_decides() {
    let verbose = ("coll_sharm_verbose", "100");
    let op = "MPI_Reduce_scatter_block";
    let v = "MPI_Reduce_scatter";
    let lane = format!("{op} and {v}");
    let out = mpirun_sizes(2, &[verbose], &[8, 8192, 8196]);
    assert!(
        has(
            &out,
            &format!("express lane for {lane} of up to 8192 bytes a block")
        ),
        "{out}"
    );
    // 8 and 8192 bytes a block on the lane; 8196 not.
    assert_eq!(lane_lines(&out, op, 2, "Linear"), (16, 8), "{out}");
    // Reduce_scatter's 8196 B and 4100 B take less than two blocks of 8 KiB.
    assert_eq!(lane_lines(&out, v, 2, "Linear"), (24, 0), "{out}");

    let out = mpirun_sizes(3, &[verbose], &[8, 1024]);
    assert_eq!(lane_lines(&out, op, 3, "Linear"), (24, 0), "{out}");
    assert_eq!(lane_lines(&out, v, 3, "Linear"), (24, 0), "{out}");

    let forced = ("coll_sharm_reduce_scatter_algorithm", "reduce_then_scatter");
    let out = mpirun_sizes(2, &[verbose, forced], &[8]);
    assert!(
        has(
            &out,
            &format!("no express lane for {lane} (coll_sharm_reduce_scatter_algorithm decides)")
        ),
        "{out}"
    );
    for op in [op, v] {
        assert_eq!(
            lane_lines(&out, op, 2, "ReduceThenScatter"),
            (0, 8),
            "{out}"
        );
    }

    let rule = ("coll_sharm_reduce_scatter_rules", "np>=2: 0-64 linear");
    let out = mpirun_sizes(2, &[verbose, rule], &[8]);
    assert!(
        has(
            &out,
            &format!("no express lane for {lane} (a rule speaks for its small calls)")
        ),
        "{out}"
    );
    assert_eq!(lane_lines(&out, op, 2, "Linear"), (0, 8), "{out}");
    assert_eq!(lane_lines(&out, v, 2, "Linear"), (0, 8), "{out}");

    // 64 bytes in all leave 32 a block at np=2.  At 64 bytes a block the
    // calls exceed the limit, and both lanes leave them to the ordinary
    // path, which hands them over.
    let limit = ("coll_sharm_max_message_size", "64");
    let out = mpirun_sizes(2, &[verbose, limit], &[8, 64]);
    assert!(
        has(
            &out,
            &format!("express lane for {lane} of up to 32 bytes a block")
        ),
        "{out}"
    );
    assert_eq!(lane_lines(&out, op, 2, "Linear"), (8, 0), "{out}");
    assert_eq!(lane_lines(&out, v, 2, "Linear"), (8, 0), "{out}");
    for (op, bytes) in [(op, 128), (v, 96)] {
        assert!(
            has(
                &out,
                &format!(
                    "{op} handed to the next component: {bytes} bytes exceed coll_sharm_max_message_size=64"
                )
            ),
            "{out}"
        );
    }

    let out = mpirun_sizes(2, &[verbose, ("coll_sharm_hierarchy", "on")], &[8]);
    assert!(
        has(
            &out,
            &format!("no express lane for {lane} (the hierarchy decides)")
        ),
        "{out}"
    );
    assert_eq!(lane_lines(&out, op, 2, "Linear"), (0, 8), "{out}");
    assert_eq!(lane_lines(&out, v, 2, "Linear"), (0, 8), "{out}");
}
