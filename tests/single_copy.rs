//! sharm's single-copy (CMA) path under mpirun: every operation it serves
//! that way, forced with `coll_sharm_single_copy cma` at np 2–4 (above 2
//! oversubscribed: the waits must yield), checked by `tests/mpi/
//! single_copy_check.c` against values it computes itself and against the
//! MPI_T counters `coll_sharm_<op>_single_copy` (which must move around
//! every large call, and never around a small one or when the queues are
//! used); and the two ways back to the queues: `none`, and CMA refused by
//! the kernel (processes made non-dumpable, mpirun without CAP_SYS_PTRACE),
//! which must be said at `coll_sharm_verbose 1`.
//!
//! Needs `cargo build --release` first (see `support::prepare`).  Run it
//! under `flock /tmp/sharm-cpu.lock` on the shared machine.

mod support;

use std::path::PathBuf;
use std::sync::OnceLock;
use std::time::Duration;

use mca_coll_sharm::shm::stores::{ACKS_KEPT_CALLS, ACKS_SPEAK, ACKS_STALE};
use support::Mpirun;

static SETUP: OnceLock<Result<(PathBuf, PathBuf), String>> = OnceLock::new();

/// The threshold every forced run sets: the checker's small calls (400 B)
/// stay below it, its large ones (≥ 70 KB) above.
const MIN_SIZE: &str = "4096";

/// Runs the checker at `np` with `mode` (cma | queues | any) and MCA
/// settings; `wrap` is a command mpirun runs under (e.g. setpriv).  Returns
/// stdout + stderr (each process's whole, `support::StderrFiles`),
/// panicking unless the job succeeded with its summary line.
fn run(np: usize, mode: &str, mca: &[(&str, &str)], wrap: &[&str], extra: &[&str]) -> String {
    let (components, check) =
        match SETUP.get_or_init(|| support::prepare("single-copy-tests", "single_copy_check")) {
            Ok(s) => s,
            Err(e) => panic!("setup failed: {e}"),
        };
    let run = Mpirun::new(components, check, np)
        .mcas(mca)
        .wrapper(wrap)
        .args(&[mode])
        .args(extra)
        .timeout(Duration::from_secs(120))
        .run();
    run.assert_ok(&format!("single_copy_check: OK np={np} mode={mode}"));
    run.output()
}

fn forced(np: usize) {
    let out = run(
        np,
        "cma",
        &[
            ("coll_sharm_single_copy", "cma"),
            ("coll_sharm_single_copy_min_size", MIN_SIZE),
            ("coll_sharm_verbose", "100"),
        ],
        &[],
        &[],
    );
    // The verbose trace names the path too (the counters are checked in C).
    for op in ["MPI_Bcast", "MPI_Reduce", "MPI_Allreduce", "MPI_Alltoallv"] {
        let line = format!("{op}: single copy (cma)");
        assert!(out.contains(&line), "no `{line}` at verbose 100:\n{out}");
    }
    // Gather's blocks are written by their senders (the root says how many
    // per call), which every process agreed on at set-up.
    let agreed = out
        .matches("Gather(v) blocks from 4096 bytes written by their senders (cma writes)")
        .count();
    assert!(agreed >= np, "every process agrees on writes:\n{out}");
    let written = format!("MPI_Gather(v): {} blocks written by their senders", np - 1);
    assert!(
        out.contains(&written),
        "no `{written}` at verbose 100:\n{out}"
    );
}

/// `coll_sharm_single_copy_push 0`: the root reads the blocks, every
/// process says so at set-up, and no block is written by its sender.
#[test]
fn gather_reads_when_writes_are_not_wanted() {
    let out = run(
        3,
        "cma",
        &[
            ("coll_sharm_single_copy", "cma"),
            ("coll_sharm_single_copy_min_size", MIN_SIZE),
            ("coll_sharm_single_copy_push", "0"),
            ("coll_sharm_verbose", "100"),
        ],
        &[],
        &[],
    );
    let said = out
        .matches("Gather(v) blocks by single copy read by the root")
        .count();
    assert!(said >= 3, "every process says the root reads:\n{out}");
    assert!(!out.contains("blocks written by their senders"), "{out}");
    assert!(out.contains("MPI_Gather: single copy (cma)"), "{out}");
}

#[test]
fn cma_serves_every_operation_np2() {
    forced(2);
}

#[test]
fn cma_serves_every_operation_np3_oversubscribed() {
    forced(3);
}

#[test]
fn cma_serves_every_operation_np4_oversubscribed() {
    forced(4);
}

/// `coll_sharm_nontemporal always`: every large stream enters the queues by
/// non-temporal stores (single copy off, so that all of them use the
/// queues), and every value still arrives: the store fence must order the
/// fragments before their publication, at np=2 and oversubscribed at np=3.
/// Every process says at set-up how it writes large streams, and at its
/// first such fill that it wrote one (verbose 100).
#[test]
fn nontemporal_queue_stores_deliver_every_operation() {
    for np in [2, 3] {
        let out = nontemporal_at_verbose_100(np, "always", &[], &[]);
        assert_every_process_takes(&out, np, "Always");
        let filled = out.matches(NONTEMPORAL_FILLED).count();
        assert!(filled >= np, "every process wrote non-temporally:\n{out}");
    }
}

/// `coll_sharm_nontemporal fills`: every process takes the mode (it says so
/// at set-up, verbose 100), no reader reports a writer's headers however
/// late they come (their reports are `auto`'s alone: here every header
/// counts as late), and every value still arrives.
#[test]
fn nontemporal_fills_mode_leaves_the_readers_out() {
    let out = nontemporal_at_verbose_100(2, "fills", &[EVERY_HEADER_LATE], &[]);
    assert_every_process_takes(&out, 2, "Fills");
    assert!(
        !out.contains(READER_ASKS) && !out.contains(WRITER_HEEDS),
        "no reader reports, no writer heeds:\n{out}"
    );
}

/// `coll_sharm_nontemporal auto`: readers that wait for a stamped header
/// note how late it came, and after four late ones in a row ask its
/// writer for non-temporal stores, which the writer heeds (both say so at
/// verbose 100).  With the threshold at 1 ns every measured header is
/// late, so both processes must ask and heed; a stamp, a measurement or a
/// report that does not run fails the test.  Every value still arrives.
///
/// The checker runs 64 KiB Bcasts (two 32 KiB fragments, each stamped),
/// 256 from each root: a reader times only headers it was spinning on when
/// they came, and the checker's default calls, a few per kind, left that
/// to chance (on Open MPI 5.0, in 7 of 51 runs one reader timed fewer than
/// four of its writer's headers, or timed the fourth after the writer's
/// last call that reads the reports).  Without the pair buffer: on two
/// processes a 64 KiB Bcast goes through its ring, not the queues.
#[test]
fn nontemporal_auto_readers_report_late_headers() {
    let out = nontemporal_at_verbose_100(
        2,
        "auto",
        &[EVERY_HEADER_LATE, NO_PAIR_BUFFER],
        &["bcasts=16384"],
    );
    assert_every_process_takes(&out, 2, "Auto");
    // A reader names the writer it asks; a writer names itself.
    for rank in [0, 1] {
        let asked = format!("a header from process {rank} took");
        assert!(
            out.lines()
                .any(|l| l.contains(&asked) && l.contains(READER_ASKS)),
            "process {rank}'s reader asks it:\n{out}"
        );
        let heeded = format!("queue stores of process {rank}: {WRITER_HEEDS}");
        assert!(out.contains(&heeded), "process {rank} heeds:\n{out}");
    }
}

/// Under `auto`, streams beyond 256 KiB follow the acknowledgements their
/// writer spins for: a reader stamps its acknowledgements of large
/// fragments, a writer that waited for one times it, says so at verbose
/// 100, and after four late ones in a row writes non-temporally.  The
/// checker's gathering calls with 4 MiB blocks (Allgather, Alltoall,
/// Gather) wrap each 1 MiB ring several times, so writers wait for their
/// rings; with the threshold at 1 ns every timed acknowledgement is late.
/// A stamp, a timing or a verdict that does not run fails the test.  Every
/// value still arrives.
#[test]
fn nontemporal_auto_large_streams_follow_acknowledgements() {
    let out = nontemporal_at_verbose_100(
        2,
        "auto",
        &[EVERY_HEADER_LATE, RINGS_OF_1_MIB],
        &["landing=1048576"],
    );
    assert_every_process_takes(&out, 2, "Auto");
    let timed = |what: &str| {
        out.lines()
            .any(|l| l.contains("an acknowledgement took") && l.contains(what))
    };
    assert!(
        timed(ACKS_SPEAK),
        "a writer timed an acknowledgement:\n{out}"
    );
    assert!(
        timed("non-temporal from now on"),
        "late acknowledgements made a writer non-temporal:\n{out}"
    );
}

/// Under `auto`, streams beyond 256 KiB heed their readers' reports as
/// well as the acknowledgements: with the cores far and ordinary stores a
/// writer seldom spins for an acknowledgement, while its readers wait for
/// every header.  Only the checker's Bcasts of 512 KiB run (each reader
/// spins for the first header of every call), and every header a reader
/// times counts as late, so a reader asks its writer for non-temporal
/// stores, and the writer must read that report at a large stream's first
/// fill and say that it heeds it (verbose 100); writers that read reports
/// only for streams up to 256 KiB fail the test.
#[test]
fn nontemporal_auto_large_streams_heed_the_readers_too() {
    // The queues' Bcast: the pair buffer would take these (`coll::pair`).
    let out = nontemporal_at_verbose_100(
        2,
        "auto",
        &[EVERY_HEADER_LATE, NO_PAIR_BUFFER],
        &["bcasts=131072"],
    );
    assert_every_process_takes(&out, 2, "Auto");
    assert!(out.contains(READER_ASKS), "a reader asks:\n{out}");
    assert!(out.contains(WRITER_HEEDS), "its writer heeds:\n{out}");
}

/// Under `auto`, the acknowledgements speak for large streams only while
/// they keep coming: 4 MiB Bcasts fill the 1 MiB rings, so their writers
/// time acknowledgements (every one late at a far threshold of 1 ns), and
/// the small Bcasts after them time none; a writer must then say at
/// verbose 100 that its acknowledgements went stale.  Writers that keep an
/// acknowledgement's verdict for good fail the test.
#[test]
fn nontemporal_auto_acknowledgements_go_stale() {
    let out = nontemporal_at_verbose_100(
        2,
        "auto",
        &[EVERY_HEADER_LATE, RINGS_OF_1_MIB, NO_PAIR_BUFFER],
        &["quiet=1048576"],
    );
    assert_every_process_takes(&out, 2, "Auto");
    assert!(
        out.contains(&format!("streams over 256 KiB {ACKS_SPEAK}")),
        "the acknowledgements spoke:\n{out}"
    );
    assert!(
        out.contains(&format!(
            "{} {} calls: streams over 256 KiB follow the readers' reports",
            ACKS_STALE, ACKS_KEPT_CALLS
        )),
        "and went stale:\n{out}"
    );
}

/// Under `auto`, streams too short for every fragment to carry a stamp
/// (8 KiB Bcasts, one fragment each) follow the readers' reports too: one
/// short fragment in four is stamped, the readers time them, and each
/// writer heeds the reports (verbose 100) though it never fills a stamped
/// fragment.  Every header counts as late (as above), so both processes
/// must heed; short stamps, their timing, or a writer that reads the
/// reports only for long fragments fails the test.
#[test]
fn nontemporal_auto_short_streams_follow_the_readers() {
    let out = nontemporal_at_verbose_100(2, "auto", &[EVERY_HEADER_LATE], &["bcasts=2048"]);
    assert_every_process_takes(&out, 2, "Auto");
    for rank in [0, 1] {
        let heeded = format!("queue stores of process {rank}: {WRITER_HEEDS}");
        assert!(out.contains(&heeded), "process {rank} heeds:\n{out}");
    }
}

/// A negative `coll_sharm_nontemporal_far_latency` is no latency: it is
/// reported (a warning, printed at any verbosity), the default takes its
/// place, and every value still arrives.
#[test]
fn a_negative_far_latency_is_reported_and_replaced() {
    let out = nontemporal_at_verbose_100(
        2,
        "auto",
        &[("coll_sharm_nontemporal_far_latency", "-5")],
        &[],
    );
    assert!(
        out.contains(
            "coll_sharm_nontemporal_far_latency: -5 ns is not a latency; using the default, 300 ns"
        ),
        "reported:\n{out}"
    );
    assert_every_process_takes(&out, 2, "Auto");
}

/// A pair buffer larger than sharm takes is reported and cut to 256 MiB
/// halves, and the calls still go through it with every value right; so is
/// one of -1.
#[test]
fn an_oversized_pair_buffer_is_reported_and_cut() {
    let mca = [
        ("coll_sharm_single_copy", "none"),
        ("coll_sharm_verbose", "100"),
        ("coll_sharm_pair_buffer_size", "1073741824"),
    ];
    let out = run(2, "queues", &mca, &[], &[]);
    assert!(
        out.contains(
            "coll_sharm_pair_buffer_size: 1073741824 bytes is more than sharm takes for a half; \
             using 268435456"
        ),
        "reported:\n{out}"
    );
    let said = "MPI_Allgather(v): blocks exchanged through the pair buffer";
    assert_eq!(out.matches(said).count(), 2, "still used:\n{out}");
    // "-1", which Open MPI reads as 2^64-1, is named as typed.
    let mca = [mca[0], mca[1], ("coll_sharm_pair_buffer_size", "-1")];
    let out = run(2, "queues", &mca, &[], &[]);
    assert!(
        out.contains(
            "coll_sharm_pair_buffer_size: -1 (read as 18446744073709551615 bytes) is more than \
             sharm takes for a half; using 268435456 bytes"
        ),
        "reported:\n{out}"
    );
    assert_eq!(out.matches(said).count(), 2, "still used:\n{out}");
}

/// Each of the `np` processes said at set-up (verbose 100) that it writes
/// large streams into the queues in `mode` (`NontemporalMode`'s name).
fn assert_every_process_takes(out: &str, np: usize, mode: &str) {
    let said = out
        .matches(&format!("queue stores from {MIN_SIZE} bytes: {mode}"))
        .count();
    assert!(said >= np, "every process takes {mode}:\n{out}");
}

/// `coll_sharm_nontemporal_far_latency` at 1 ns: every measured header
/// counts as a far writer's.
const EVERY_HEADER_LATE: (&str, &str) = ("coll_sharm_nontemporal_far_latency", "1");
/// Rings of 128 slots of the default 8 KiB: 1 MiB, whatever the machine's
/// L2 cache (the automatic ring is two of them: 4 MiB on the VM of
/// 2026-11-30, where a 4 MiB stream then never lapped its ring, its writer
/// never waited for an acknowledgement, and the tests that need such waits
/// failed in 5 launches of 5).
const RINGS_OF_1_MIB: (&str, &str) = ("coll_sharm_queue_slots", "128");
/// What a reader says at verbose 100 when it asks a writer for
/// non-temporal stores, and what a writer says when it heeds that.
const READER_ASKS: &str = "asking it for non-temporal stores";
const WRITER_HEEDS: &str = "a reader's headers came late: non-temporal from now on";

/// With a core per process, Allgather's own block goes to the receive
/// buffer in the pass of its fills into the queue (every process says so
/// once, at verbose 100), and every value still arrives, Allgatherv and
/// in place included; on a crowded node (np=3 on 2 cores) it does not.
#[test]
fn allgather_copies_its_own_block_with_its_fills_on_a_core_each() {
    let said = "MPI_Allgather(v): own block copied in the pass of its fills";
    for np in [2, 3] {
        let out = queues_at_verbose_100(np, &[]);
        let processes = out.matches(said).count();
        if np <= cores() {
            assert_eq!(processes, np, "every process, once:\n{out}");
        } else {
            assert_eq!(processes, 0, "not on a crowded node:\n{out}");
        }
    }
}

/// With a core per process, a call that lands a quarter of the last-level
/// cache or more here (Allgather, Alltoall, a Gather root; in place too)
/// lands every stream and own block non-temporally (every process says so
/// once, at verbose 100), and every value still arrives; with half as much
/// no process does.  np=2, the queues only, the size rule alone (the
/// landing trials off: they would land the first calls both ways).
#[test]
fn calls_that_land_a_quarter_of_the_cache_land_non_temporally() {
    let said = "its streams and own block land non-temporally";
    let per_stream = mca_coll_sharm::kernels::isa::stream_threshold();
    // Blocks of `ints` ints: each process lands two of them.
    let enough = if per_stream == usize::MAX {
        1 << 20
    } else {
        ((per_stream - 1) / 4 * 3).div_ceil(2 * 4)
    };
    for (ints, expect) in [(enough, per_stream != usize::MAX), (enough / 2, false)] {
        let arg = format!("landing={ints}");
        let out = queues_at_verbose_100_with(
            2,
            &[("coll_sharm_nontemporal_landing_trials", "0")],
            &[&arg],
        );
        assert!(mca_coll_sharm::kernels::copy::call_streams(2 * 4 * ints) == expect);
        let processes = out.matches(said).count();
        assert_eq!(processes, if expect { 2 } else { 0 }, "{arg}:\n{out}");
    }
}

/// `coll_sharm_nontemporal_landing_min_size` moves the size from which
/// copies into receive buffers stream: with 1 MiB an Allgather that lands 1
/// MiB per process (np=2, 512 KiB blocks) lands it non-temporally in every
/// process, with 1 GiB in none, and every value still arrives.  At set-up
/// every process names the size and where it came from: the parameter, or
/// by default the last-level cache as `kernels::isa::CacheCounted` counts
/// it (under a hypervisor at most 40 MiB: the unit test of `isa`).
#[test]
fn landing_threshold_follows_its_parameter() {
    let lands = "its streams and own block land non-temporally";
    let said = |from: usize, why: &str| {
        format!("copies into receive buffers use non-temporal stores from {from} bytes, and every copy of a call that lands {} bytes in all ({why}", (from - 1) / 4 * 3)
    };
    let ints = "landing=131072"; // two blocks of 512 KiB land per process
    for (size, expect) in [(1usize << 20, 2), (1 << 30, 0)] {
        let value = size.to_string();
        let out = queues_at_verbose_100_with(
            2,
            &[("coll_sharm_nontemporal_landing_min_size", &value)],
            &[ints],
        );
        assert_eq!(out.matches(lands).count(), expect, "{size}:\n{out}");
        let setup = said(size, "coll_sharm_nontemporal_landing_min_size");
        assert_eq!(out.matches(&setup).count(), 2, "{setup}\n{out}");
    }
    let auto = mca_coll_sharm::kernels::isa::CacheCounted::detect().stream_threshold();
    let out = queues_at_verbose_100(2, &[ints]);
    if auto == usize::MAX {
        assert_eq!(
            out.matches("never use non-temporal stores (auto").count(),
            2,
            "{out}"
        );
    } else {
        assert_eq!(out.matches(&said(auto, "auto")).count(), 2, "{out}");
    }
}

/// Allgather and Alltoall blocks that travel with their slot headers (1 to
/// 512 bytes, one byte range) skip the stream machinery: at verbose 100
/// every process says so once for each of the two with 8-byte blocks, none
/// with 1 KiB blocks, at np=2 and on a crowded node (np=3), in place too;
/// the checker checks every value.
#[test]
fn small_exchanges_skip_the_stream_machinery() {
    let said = [
        "MPI_Allgather(v): blocks travel with their headers",
        "MPI_Alltoall: blocks travel with their headers",
    ];
    for np in [2, 3] {
        for (ints, expect) in [(2, np), (256, 0)] {
            let arg = format!("landing={ints}");
            let out = queues_at_verbose_100(np, &[&arg]);
            for line in said {
                assert_eq!(
                    out.matches(line).count(),
                    expect,
                    "np={np} {arg}: {line}\n{out}"
                );
            }
        }
    }
}

/// The small-message Allreduce (`allgather`, below 12 KiB at np=2) writes
/// its slots through the store policy like every stream: with
/// `coll_sharm_nontemporal always` both processes say at verbose 100 that
/// they wrote non-temporally, and every value arrives (8000-byte calls of
/// longs under MPI_MAX, in place too).  Filled by a plain copy, as before
/// 2026-11-26, no process would say it: the call is the job's only one.
/// The pair buffer, which takes these calls on two processes, is off.
#[test]
fn allgather_allreduce_fills_through_the_store_policy() {
    let out = nontemporal_at_verbose_100(2, "always", &[NO_PAIR_BUFFER], &["allreduce=1000"]);
    let ran = out
        .matches("MPI_Allreduce on 2 processes runs Allgather")
        .count();
    assert!(
        ran >= 2,
        "both processes ran the allgather Allreduce:\n{out}"
    );
    let filled = out.matches(NONTEMPORAL_FILLED).count();
    assert_eq!(filled, 2, "both processes wrote non-temporally:\n{out}");
}

/// An Allreduce whose reduce-scatter a queue holds whole publishes each
/// reduced fragment as it folds it (every process says so once, at verbose
/// 100), at np=2 and on a crowded node (np=3); one of 4 MiB, whose
/// reduce-scatter does not fit, keeps the allgather as a second exchange
/// (no process says so).  The checker checks every value: longs under
/// MPI_MAX, and pairs under a non-commutative operation, in place too.
#[test]
fn allreduce_publishes_reduced_fragments_as_it_folds() {
    let said = "MPI_Allreduce: reduced fragments published as they fold";
    for np in [2, 3] {
        for (elements, expect) in [(70001, np), ((1 << 19) + 7, 0)] {
            let arg = format!("reductions={elements}");
            let out = queues_at_verbose_100(np, &[&arg]);
            assert_eq!(out.matches(said).count(), expect, "np={np} {arg}:\n{out}");
        }
    }
}

/// What a process says at verbose 100 at its first non-temporal fill under
/// `coll_sharm_nontemporal always`.
const NONTEMPORAL_FILLED: &str = "queue stores: non-temporal fills (coll_sharm_nontemporal always)";

/// `run` of the checker's `extra` mode through the queues alone, every
/// stream of `MIN_SIZE` bytes or more written as `coll_sharm_nontemporal
/// mode` says (`always`: non-temporally), with every process's trace and
/// the parameters `mca` besides.
fn nontemporal_at_verbose_100(
    np: usize,
    mode: &str,
    mca: &[(&str, &str)],
    extra: &[&str],
) -> String {
    let mut params = vec![
        ("coll_sharm_single_copy", "none"),
        ("coll_sharm_nontemporal", mode),
        ("coll_sharm_nontemporal_min_size", MIN_SIZE),
        ("coll_sharm_verbose", "100"),
    ];
    params.extend_from_slice(mca);
    run(np, "queues", &params, &[], extra)
}

/// `run` of the checker's `extra` mode through the queues alone, with
/// every process's trace (verbose 100): what the tests of the data path's
/// choices read.
fn queues_at_verbose_100(np: usize, extra: &[&str]) -> String {
    queues_at_verbose_100_with(np, &[], extra)
}

/// `queues_at_verbose_100` with more MCA settings.
fn queues_at_verbose_100_with(np: usize, mca: &[(&str, &str)], extra: &[&str]) -> String {
    let mut all = vec![
        ("coll_sharm_single_copy", "none"),
        ("coll_sharm_verbose", "100"),
        NO_PAIR_BUFFER,
    ];
    all.extend_from_slice(mca);
    run(np, "queues", &all, &[], extra)
}

/// The queues alone on two processes too: no pair buffer (`shm::pair`).
const NO_PAIR_BUFFER: (&str, &str) = ("coll_sharm_pair_buffer_size", "0");

/// On two processes, Allgather(v) and Alltoall blocks, Allreduce vectors
/// or their halves that fit a half of the pair buffer, and Reduce vectors
/// below its ring's sizes go through it (each process says so once per
/// operation and route, at verbose 100) and every value still arrives:
/// Allgatherv, in place, empty blocks, unequal halves (70,001 and 5,001
/// elements), and a non-commutative Allreduce and Reduce, the Reduce to
/// either root, included; with `coll_sharm_pair_buffer_size` 0, or on
/// three processes, none does.
#[test]
fn two_processes_exchange_through_the_pair_buffer() {
    let lines = [
        "MPI_Allgather(v): blocks exchanged through the pair buffer",
        "MPI_Alltoall(v): blocks exchanged through the pair buffer",
        // The 800-byte vectors take the `allgather` Allreduce, the
        // 560,008-byte ones reduce-scatter + allgather.
        "MPI_Allreduce: contributions exchanged through the pair buffer",
        "MPI_Allreduce: slices reduced and exchanged through the pair buffer",
        // The 800-byte Reduces combine the other's whole vector, the
        // 40,008-byte ones reduce slices (`coll::pair::reduce_exchange`).
        "MPI_Reduce: the other's vector combined from the pair buffer",
        "MPI_Reduce: slices reduced through the pair buffer",
    ];
    let verbose = [
        ("coll_sharm_single_copy", "none"),
        ("coll_sharm_verbose", "100"),
    ];
    let out = run(2, "queues", &verbose, &[], &[]);
    for line in lines {
        assert_eq!(
            out.matches(line).count(),
            2,
            "{line}, every process once:\n{out}"
        );
    }
    let off = [verbose[0], verbose[1], NO_PAIR_BUFFER];
    for (np, mca) in [(2, &off[..]), (3, &verbose[..])] {
        let out = run(np, "queues", mca, &[], &[]);
        assert!(
            !out.contains("through the pair buffer"),
            "np={np}, {mca:?}:\n{out}"
        );
    }
}

/// MPI_T `coll_sharm_<op>_pair_buffer` counts, in each process, the calls
/// that went through the pair buffer: on two processes once for a Bcast,
/// Gather and Scatter of 100,000-byte blocks (its ring), an Allgather(v),
/// Alltoall(v), Allreduce and Reduce of 4 KiB (its halves, the last three
/// from the express lane), of 512 B and of 36 B (the halves from
/// `coll::pair::MIN_BYTES`, all from the lane but the Alltoallv), and a
/// Reduce of 320,000 bytes (the ring); never for an 8-byte Bcast or for
/// those exchanges and reductions at 32 B (the queues).  The Allgather and
/// Alltoall are also run with rank 0 sending through a strided vector
/// (`pair_mixed_layouts`), which the short paths would not take: both
/// processes must still take the pair buffer from 36 B, or neither.  With
/// `coll_sharm_pair_buffer_size` 0 never (`test_pair_counters` checks each
/// counter around its call, and every value).
#[test]
fn pair_buffer_counters_follow_the_route() {
    let none = ("coll_sharm_single_copy", "none");
    run(2, "queues", &[none], &[], &["pair_counters=1"]);
    run(
        2,
        "queues",
        &[none, NO_PAIR_BUFFER],
        &[],
        &["pair_counters=0"],
    );
}

/// Calls served through the hierarchy count too: with
/// `coll_sharm_hierarchy on`, two processes form one group in shared
/// memory, whose pair buffer carries a Bcast of 100,000 bytes and a Reduce
/// of 320,000 down its ring (`test_pair_hier` checks each counter, the
/// `_hierarchical` ones too, and every value).  Without
/// `dispatch::hierarchical::count_pair` the pair-buffer counters stayed at
/// 0 there.
#[test]
fn hierarchical_calls_through_a_groups_pair_buffer_are_counted() {
    let mca = [
        ("coll_sharm_single_copy", "none"),
        ("coll_sharm_hierarchy", "on"),
    ];
    run(2, "queues", &mca, &[], &["pair_hier"]);
}

/// With `coll_sharm_hierarchy on`, calls served through the hierarchy whose
/// groups' streams went by CMA count in `coll_sharm_<op>_single_copy`, as
/// the flat path's do: a Bcast, a Reduce and an Allreduce of 1 MiB each count
/// once as hierarchical and once as single copy, an 8-byte Bcast only as
/// hierarchical (`test_single_hier` checks each counter and every value).
/// Under `coll_sharm_single_copy none` the same calls must not count.
/// Without `dispatch::hierarchical::count_routes` asking the groups'
/// channels the single-copy counters stayed at 0 there.
#[test]
fn hierarchical_calls_by_single_copy_are_counted() {
    for (mode, single) in [("cma", "cma"), ("queues", "none")] {
        let mca = [
            ("coll_sharm_single_copy", single),
            ("coll_sharm_single_copy_min_size", MIN_SIZE),
            ("coll_sharm_hierarchy", "on"),
            ("coll_sharm_verbose", "100"),
        ];
        let out = run(2, mode, &mca, &[], &["single_hier=262144"]);
        let line = "single copy (cma) in a group";
        assert_eq!(
            out.contains(line),
            single == "cma",
            "`{line}` at verbose 100 with single copy {single}:\n{out}"
        );
    }
}

/// On two processes a Bcast from 256 KiB streams through the pair buffer's
/// ring, and its root returns before the other has read it: an Allgather
/// through the pair buffer right after it, and the next Bcast, must not
/// overwrite chunks still to be read.  The reader unpacks into a vector
/// type, so it trails; every value is checked (`test_pair_streams`).  With
/// the root's wait for its reader left out (`Pair::settle`), this failed in
/// the first round.  A Gather(v) block of 256 KiB streams the same way,
/// written by the non-root (to either root, in place too), and must have
/// been read before the next round's Bcast or Allgather; so does a Reduce's
/// vector, which the root combines chunk by chunk (a sum, and a
/// non-commutative user operation in rank order).  Bcasts and Gathers of
/// 64 KiB to below 256 KiB go round the ring, each from where the last
/// stream ended (`pair_short_streams`): eight Bcasts in a row, more than
/// the ring, some from the other root, then after an exchange whose reader
/// trails.  A Scatter(v)'s block for the other goes through the same
/// ring, written by the root, to either process.
#[test]
fn streams_through_the_pair_buffer_are_read_before_its_halves_are_reused() {
    let out = run(
        2,
        "queues",
        &[
            ("coll_sharm_single_copy", "none"),
            ("coll_sharm_verbose", "100"),
        ],
        &[],
        &["pair_streams"],
    );
    for line in [
        "MPI_Bcast: streamed through the pair buffer",
        "MPI_Allgather(v): blocks exchanged through the pair buffer",
        "MPI_Gather(v): streamed through the pair buffer",
        "MPI_Reduce: streamed through the pair buffer",
        "MPI_Bcast: streamed round the pair buffer's ring",
        "MPI_Gather(v): streamed round the pair buffer's ring",
        "MPI_Scatter(v): streamed through the pair buffer",
        "MPI_Scatter(v): streamed round the pair buffer's ring",
    ] {
        assert_eq!(out.matches(line).count(), 2, "{line}:\n{out}");
    }
    // The ring's fills: `rep movsb` on an Intel CPU with ERMS, as the
    // kernel's /proc/cpuinfo tells it, vector copies elsewhere.
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let intel = cpuinfo.contains("GenuineIntel")
        && cpuinfo
            .lines()
            .any(|l| l.starts_with("flags") && l.split_whitespace().any(|f| f == "erms"));
    let fills = if intel {
        "fill the pair buffer's ring with rep movsb"
    } else {
        "fill the pair buffer's ring with vector copies"
    };
    assert_eq!(out.matches(fills).count(), 2, "{fills}:\n{out}");
}

/// CPUs this test may use.
fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

#[test]
fn none_keeps_the_queues_and_says_so() {
    let out = run(
        3,
        "queues",
        &[
            ("coll_sharm_single_copy", "none"),
            ("coll_sharm_single_copy_min_size", MIN_SIZE),
            ("coll_sharm_verbose", "10"),
        ],
        &[],
        &[],
    );
    assert!(
        out.contains("single copy off (coll_sharm_single_copy none)"),
        "{out}"
    );
}

/// Non-dumpable processes may be read only with CAP_SYS_PTRACE, which
/// mpirun and its children lose with the bounding set: the probe fails,
/// every process learns it, the queues serve, and verbose 1 says why.
#[test]
fn refused_cma_falls_back_to_the_queues_and_says_so() {
    let out = run(
        2,
        "queues",
        &[
            ("coll_sharm_single_copy", "cma"),
            ("coll_sharm_single_copy_min_size", MIN_SIZE),
            ("coll_sharm_verbose", "1"),
            // Open MPI's own point-to-point CMA would fail the same way.
            ("btl_vader_single_copy_mechanism", "none"),
        ],
        &[
            "setpriv",
            "--bounding-set=-sys_ptrace",
            "--inh-caps=-sys_ptrace",
        ],
        &["undumpable"],
    );
    assert!(
        out.contains("single copy (cma) not permitted between all its processes"),
        "{out}"
    );
    assert!(out.contains("CMA probe of rank"), "{out}");
}

/// `auto` times both paths once (ranks 0 and 1), prints the timings at
/// verbose 10, and all processes adopt rank 0's verdict; results stay right
/// whichever path won, and large Gather blocks are written by their senders
/// whichever it was.
#[test]
fn auto_calibrates_once_and_reports() {
    let out = run(
        3,
        "any",
        &[
            ("coll_sharm_single_copy", "auto"),
            ("coll_sharm_calibrate", "1"),
            ("coll_sharm_verbose", "100"),
        ],
        &[],
        &[],
    );
    // Whatever the verdict, the checker's large Gathers (280 KB blocks, at
    // least the default 256 KiB floor) are written by their senders.
    let agreed = out
        .matches("Gather(v) blocks from 262144 bytes written by their senders")
        .count();
    assert_eq!(agreed, 3, "every process agrees on writes:\n{out}");
    assert!(
        out.contains("MPI_Gather(v): 2 blocks written by their senders"),
        "{out}"
    );
    let tables = out
        .matches("calibration (ranks 0-1): 256 KiB queues")
        .count();
    assert_eq!(tables, 1, "expected one calibration table:\n{out}");
    let verdicts = out.matches("single copy (cma) from").count()
        + out
            .matches("single copy (cma) off: the queues were faster")
            .count();
    assert!(verdicts >= 3, "every process says what it adopted:\n{out}");
    // np=3 on 2 cores is crowded: there the exchanges keep the one-way
    // verdict, say so, and are not timed (`crowded_node_times_only_one_way_
    // streams`); on 3 cores or more they are timed apart.
    let crowded = out.contains("crowded: true");
    let exchange_tables = out
        .matches("exchange calibration (ranks 0-1): 1024 KiB queues")
        .count();
    assert_eq!(
        exchange_tables,
        usize::from(!crowded),
        "one exchange table unless crowded ({crowded}):\n{out}"
    );
    let exchange_verdicts = out.matches("; exchanges ").count();
    assert!(
        exchange_verdicts >= 3,
        "every process says what it adopted for exchanges:\n{out}"
    );
}

/// The checker in `crowded` mode on `np` processes told to yield when idle
/// (which sharm takes as a crowded node), single copy from 256 B, with the
/// calibration on, at `coll_sharm_verbose` `verbose`.
fn crowded_run(np: usize, verbose: &str) -> String {
    run(
        np,
        "crowded",
        &[
            ("coll_sharm_single_copy", "auto"),
            ("coll_sharm_calibrate", "1"),
            ("coll_sharm_single_copy_min_size", "256"),
            ("coll_sharm_verbose", verbose),
            ("mpi_yield_when_idle", "1"),
        ],
        &[],
        &[],
    )
}

/// On a crowded node, Alltoall blocks of 256 KiB go by single copy whatever
/// the calibration found, and every process pulls them as they are offered
/// instead of round by round: the checker requires the alltoall counter to
/// move around them (`crowded` mode), and each process must say, at verbose
/// 100, that it left the rounds.  In place, each process swaps its blocks
/// one at a time instead (each still by single copy, from a copy aside),
/// and says so: offering them all at once would need a copy of the whole
/// buffer aside.
#[test]
fn crowded_node_pulls_alltoall_blocks_as_offered() {
    let np = 4;
    let out = crowded_run(np, "100");
    let count = |line: &str| out.matches(line).count();
    let pulled =
        count("MPI_Alltoall(v) on 4 processes pulled every block as offered (crowded node)");
    let swapped = count("MPI_Alltoall(v) on 4 processes swapped its blocks in place");
    assert!(
        pulled >= np && swapped >= np,
        "every process pulls the large Alltoall as offered ({pulled} lines) and swaps the \
         in-place one ({swapped} lines):\n{out}"
    );
}

/// On a crowded node the set-up times only one-way streams: the exchange
/// and Gather verdicts are not used there, so their timings are not run
/// (rank 0 prints each table it timed at verbose 10).
#[test]
fn crowded_node_times_only_one_way_streams() {
    let out = crowded_run(4, "10");
    assert_eq!(
        out.matches("calibration (ranks 0-1): 256 KiB queues")
            .count(),
        1,
        "one one-way table:\n{out}"
    );
    for table in ["exchange calibration", "Gather calibration"] {
        assert!(!out.contains(table), "no `{table}` when crowded:\n{out}");
    }
}

/// More processes than cores (np=4, and `mpi_yield_when_idle 1`, which
/// sharm takes as the same signal, so that the test holds on a machine with
/// more cores too): Scatter goes by
/// single copy from `coll_sharm_single_copy_min_size` whatever the
/// calibration decided for the other streams.  The min size (256 B) is
/// below the checker's small Scatter (400 B) and the calibration never
/// chooses single copy below 256 KiB, so without the rule the small
/// Scatter would take the queues: the checker's `crowded` mode requires the
/// counter to move around every Scatter, small ones included.
#[test]
fn crowded_node_scatters_by_single_copy() {
    let np = 4;
    let out = crowded_run(np, "10");
    let said = out
        .matches("Scatter blocks from 256 bytes (crowded node: ")
        .count();
    assert_eq!(
        said, np,
        "every process says it scatters by single copy:\n{out}"
    );
}

/// More of the job's processes than CPUs online: Scatter goes by single
/// copy from 16 KiB even though `coll_sharm_single_copy_min_size` says 256
/// KiB, and every process says so at set-up (verbose 10).  Two processes
/// told to yield on a machine of two or more CPUs are crowded but not
/// oversubscribed and keep the parameter's 256 KiB.  The `crowded` test
/// above shows, with the MPI_T counters, that this floor is what Scatter's
/// path follows.  The oversubscribed run needs CPUs + 1 processes: on a
/// machine of more than 11 CPUs it is not run, and the test says so.
#[test]
fn oversubscribed_node_scatters_by_single_copy_from_16k() {
    let mca = [
        ("coll_sharm_single_copy", "auto"),
        ("coll_sharm_calibrate", "1"),
        ("coll_sharm_single_copy_min_size", "262144"),
        ("coll_sharm_verbose", "10"),
        ("mpi_yield_when_idle", "1"),
    ];
    let cpus = support::cpus_online();
    let mut runs = vec![];
    if cpus >= 2 {
        runs.push((2, 262144, "Yielding"));
    }
    if cpus < 12 {
        runs.push((cpus + 1, 16384, "Oversubscribed"));
    } else {
        eprintln!(
            "oversubscribed run not made: it needs {} processes",
            cpus + 1
        );
    }
    for (np, floor, crowding) in runs {
        let out = run(np, "any", &mca, &[], &[]);
        let line = format!("Scatter blocks from {floor} bytes (crowded node: {crowding})");
        let said = out.matches(&line).count();
        assert_eq!(said, np, "np={np} on {cpus} CPUs: `{line}`\n{out}");
        assert!(
            out.contains(&format!("({crowding}), queue stores from")),
            "{out}"
        );
    }
}

/// Two processes on two cores (not crowded): the calibration times
/// exchanges and Gather's writes apart from one-way streams, and both
/// processes adopt rank 0's verdicts (the same lines from each).
#[test]
fn auto_calibrates_exchanges_apart_at_np2() {
    let out = run(
        2,
        "any",
        &[
            ("coll_sharm_single_copy", "auto"),
            ("coll_sharm_calibrate", "1"),
            ("coll_sharm_verbose", "10"),
        ],
        &[],
        &[],
    );
    let exchanges = one_table_one_verdict(
        &out,
        "exchange calibration (ranks 0-1): 1024 KiB queues",
        "; exchanges ",
        2,
    );
    assert!(exchanges.ends_with("(calibrated)"), "{out}");
    // Gather's writes are timed too (a Gather at np=2 both ways), and both
    // processes adopt rank 0's verdict: written from some size, or never.
    let gathers = one_table_one_verdict(
        &out,
        "Gather calibration (ranks 0-1, cma = written by the sender): 256 KiB queues",
        "): Gather(v) blocks ",
        2,
    );
    assert!(
        gathers.starts_with("through the queues: the senders' writes were slower")
            || gathers.ends_with("bytes written by their senders (cma writes)"),
        "{out}"
    );
}

/// Checks that `out` holds one calibration table (`table`, printed by rank
/// 0) and that each of the `np` processes printed a verdict after
/// `marker`, all the same; returns it.
fn one_table_one_verdict<'a>(out: &'a str, table: &str, marker: &str, np: usize) -> &'a str {
    assert_eq!(out.matches(table).count(), 1, "one `{table}`:\n{out}");
    let verdicts: Vec<&str> = out.lines().filter_map(|l| l.split(marker).nth(1)).collect();
    assert_eq!(verdicts.len(), np, "every process says `{marker}`:\n{out}");
    assert!(
        verdicts.iter().all(|v| *v == verdicts[0]),
        "they agree on `{marker}`:\n{out}"
    );
    verdicts[0]
}

/// The collectives whose path sharm learns from their calls, as they name
/// themselves in the verdicts.
const TRIED: [&str; 7] = [
    "MPI_Bcast",
    "MPI_Reduce",
    "MPI_Allreduce",
    "MPI_Gather",
    "MPI_Scatter",
    "MPI_Allgather",
    "MPI_Alltoall",
];

/// The checker's `trials=...` mode at np=2 under `auto` with 2 trial calls
/// a path, at verbose 10, with more MCA settings.
fn trials_run(mode: &str, mca: &[(&str, &str)]) -> String {
    let mut all = vec![
        ("coll_sharm_single_copy", "auto"),
        ("coll_sharm_single_copy_trials", "2"),
        ("coll_sharm_verbose", "10"),
    ];
    all.extend_from_slice(mca);
    run(2, "any", &all, &[], &[mode])
}

/// The verdict lines about `op` that contain `tail` (not verbose 100's
/// lines of single trial calls), from every process
/// (the output holds each one's stderr file too), after "`op` of "; at
/// least two, all alike (the processes agree).
fn verdicts(out: &str, op: &str, tail: &str) -> Vec<String> {
    let said: Vec<String> = out
        .lines()
        .filter_map(|l| l.split(&format!("{op} of ")).nth(1))
        .filter(|v| v.contains(" bytes in all: ") && v.contains(" from now on") && v.contains(tail))
        .map(str::to_owned)
        .collect();
    assert!(
        said.len() >= 2,
        "each process decides {op} ({tail}):\n{out}"
    );
    assert!(
        said.iter().all(|v| *v == said[0]),
        "they agree on {op}:\n{out}"
    );
    said
}

/// `auto` with `coll_sharm_single_copy_trials 2` at np=2 (a core per
/// process): each collective whose path sharm learns from its first calls
/// takes the queues and single copy for 2 calls each (runs of two), as the checker
/// sees in its MPI_T counters (it fails when a call goes otherwise), then
/// keeps one path; both processes say the same verdict for every one at
/// verbose 10, after timing both paths.  Without the trials every call
/// would follow the set-up floors and the checker's alternation would fail.
/// Each verdict is then checked on the 2 calls after it: both processes
/// say the same check (without it, no such line).
#[test]
fn auto_tries_both_paths_then_keeps_the_faster() {
    if cores() < 2 {
        eprintln!("skipped: trials run only with a core per process");
        return;
    }
    let out = trials_run("trials=2", &[]);
    first_verdicts_name(
        &out,
        &TRIED,
        " from now on",
        &["lower median of 2 calls each): "],
    );
    for op in TRIED {
        let checks: Vec<&str> = out
            .lines()
            .filter_map(|l| l.split(&format!("{op} of ")).nth(1))
            .filter(|v| v.contains(" bytes in all, checked: "))
            .collect();
        assert!(
            checks.len() >= 2
                && checks.iter().all(|c| *c == checks[0])
                && checks[0].contains(
                    " in the 2 calls after its verdict (the slowest process's lower median), "
                ),
            "{op}: every process checks its verdict alike:\n{out}"
        );
    }
}

/// Every process's first verdict about each of `ops` (`verdicts` with
/// `tail`) names each of `parts` and keeps its route for the default 1000
/// calls.
fn first_verdicts_name(out: &str, ops: &[&str], tail: &str, parts: &[&str]) {
    for op in ops {
        let said = verdicts(out, op, tail);
        assert!(
            parts.iter().all(|part| said[0].contains(part))
                && said[0].ends_with(" from now on (to be tried again after 1000 calls)"),
            "{op}: {parts:?}\n{out}"
        );
    }
}

/// With `coll_sharm_single_copy_retry_after 5`, each collective tried as
/// above keeps its path for the 5 calls after the one that decided, then
/// alternates the two paths again and decides again (the checker's
/// `trials=2,5` mode requires it of the MPI_T counters; without retries
/// the second round's alternation fails).  Every process says both
/// verdicts, the second naming the path the class ran before it: the
/// first verdict's, or the one its check gave way to (said at verbose 10
/// as "…, checked: … X instead"), alike on both processes.
#[test]
fn a_decided_path_is_tried_again_after_its_calls() {
    if cores() < 2 {
        eprintln!("skipped: trials run only with a core per process");
        return;
    }
    let out = trials_run("trials=2,5", &[("coll_sharm_single_copy_retry_after", "5")]);
    for op in TRIED {
        let first = verdicts(&out, op, "(to be tried again after 5 calls)");
        let again = verdicts(&out, op, "(tried again after 5 calls; before: ");
        let path = |v: &str| {
            v.split("): ")
                .nth(1)
                .and_then(|s| s.split(" from now on").next())
                .unwrap_or_default()
                .to_owned()
        };
        // The last route a check of the first round gave way to, if any
        // (the 5 calls leave room for one check).
        let gave_way = out
            .lines()
            .filter_map(|l| l.split(&format!("{op} of ")).nth(1))
            .filter(|v| v.contains(" bytes in all, checked: ") && v.contains(" instead"))
            .filter_map(|v| v.rsplit(": ").next()?.split(" instead").next())
            .next_back()
            .map(str::to_owned);
        let before = gave_way.unwrap_or_else(|| path(&first[0]));
        assert!(
            again[0].ends_with(&format!("before: {before})")),
            "{op}: before: {before}\n{out}"
        );
    }
}

/// `coll_sharm_single_copy_trials 0` leaves the set-up floors alone: no
/// verdict is said, and the checker's calls still arrive (it checks only
/// that each keeps one path after the first: no alternation).  A value
/// outside 0..=64 is reported and replaced, and so is a negative
/// `coll_sharm_single_copy_retry_after`.
#[test]
fn trials_off_or_out_of_range() {
    let out = run(
        2,
        "any",
        &[
            ("coll_sharm_single_copy", "auto"),
            ("coll_sharm_single_copy_trials", "0"),
            ("coll_sharm_verbose", "10"),
        ],
        &[],
        &["trials=0"],
    );
    assert!(!out.contains("from now on"), "no trials:\n{out}");
    let out = run(
        2,
        "any",
        &[
            ("coll_sharm_single_copy", "auto"),
            ("coll_sharm_single_copy_trials", "-3"),
            ("coll_sharm_single_copy_retry_after", "-1"),
        ],
        &[],
        &["trials=0"],
    );
    for said in [
        "coll_sharm_single_copy_trials: -3 is outside 0..=64; using 0",
        "coll_sharm_single_copy_retry_after: -1 is not a number of calls; using 1000",
    ] {
        assert!(out.contains(said), "reported:\n{out}");
    }
}

/// The collectives whose landing sharm tries (`shm::learned_path`).
const LANDING_TRIED: [&str; 5] = [
    "MPI_Bcast",
    "MPI_Gather",
    "MPI_Scatter",
    "MPI_Allgather",
    "MPI_Alltoall",
];

/// Under `coll_sharm_single_copy none` with 2 trial calls, each collective
/// of at least 2 MiB in all whose copies into receive buffers sharm times
/// both ways lands its first calls cached and non-temporal in runs of two,
/// then keeps one: the checker's `landing_trials=2` mode requires it of the
/// MPI_T counter `coll_sharm_nontemporal_bytes` around every call (what the
/// process copies into its receive buffer, or nothing), and fails when the
/// size rule lands them (it does not alternate).  Both processes say the
/// same verdict for each at verbose 10.
#[test]
fn landing_is_tried_cached_and_non_temporal_then_kept() {
    if cores() < 2 {
        eprintln!("skipped: trials run only with a core per process");
        return;
    }
    let out = run(
        2,
        "any",
        &[
            ("coll_sharm_single_copy", "none"),
            ("coll_sharm_single_copy_trials", "2"),
            ("coll_sharm_verbose", "10"),
        ],
        &[],
        &["landing_trials=2"],
    );
    first_verdicts_name(
        &out,
        &LANDING_TRIED,
        "landing cached ",
        &[
            " us, landing non-temporal ",
            "lower median of 2 calls each): landing ",
        ],
    );
}

/// Under `auto` with single copy permitted, the same collectives try their
/// landing on both paths, four routes together (every cached route first,
/// the paths in runs of two): the checker's `landing_trials=2,cma` mode
/// requires of every call that `coll_sharm_<op>_single_copy` moves exactly
/// on the single-copy routes and `coll_sharm_nontemporal_bytes` grows only
/// on the non-temporal ones (by all this process lands on the queues), and
/// fails when the path and the landing are tried one after the other or
/// not at all.  Both processes name the four routes' times and the same
/// verdict.
#[test]
fn paths_and_landings_are_tried_together() {
    if cores() < 2 {
        eprintln!("skipped: trials run only with a core per process");
        return;
    }
    let out = trials_run("landing_trials=2,cma", &[]);
    first_verdicts_name(
        &out,
        &LANDING_TRIED,
        "the queues landing cached ",
        &[
            ", single copy landing cached ",
            ", the queues landing non-temporal ",
            ", single copy landing non-temporal ",
        ],
    );
}

/// `coll_sharm_nontemporal_landing_trials 0`, or a landing size set by
/// `coll_sharm_nontemporal_landing_min_size`, leaves the landing to the
/// size rule: no landing verdict, and the checker's calls each land one
/// way (its `landing_trials=0` mode: all calls alike).  A value other than
/// 0 or 1 is reported and replaced by 1 (the checker then requires the
/// default 4 trial calls each way).
#[test]
fn landing_trials_off_or_out_of_range() {
    for off in [
        ("coll_sharm_nontemporal_landing_trials", "0"),
        ("coll_sharm_nontemporal_landing_min_size", "1073741824"),
    ] {
        let out = run(
            2,
            "any",
            &[
                ("coll_sharm_single_copy", "none"),
                ("coll_sharm_single_copy_trials", "2"),
                ("coll_sharm_verbose", "10"),
                off,
            ],
            &[],
            &["landing_trials=0"],
        );
        assert!(
            !out.contains("landing cached "),
            "{off:?}: no trials:\n{out}"
        );
    }
    let out = run(
        2,
        "any",
        &[
            ("coll_sharm_single_copy", "none"),
            ("coll_sharm_nontemporal_landing_trials", "7"),
        ],
        &[],
        &["landing_trials=4"],
    );
    assert!(
        out.contains("coll_sharm_nontemporal_landing_trials: 7 is neither 0 nor 1; using 1"),
        "reported:\n{out}"
    );
}

/// A `coll_sharm_single_copy_min_size` that splits a size class (3 MiB
/// inside the class of 2–4 MiB in all): Bcasts of 3.5 and 2.5 MiB in turn
/// under `auto` with trials.  The class is tried for its landing only, so
/// that its calls below the floor never go by single copy (the checker
/// fails a 2.5 MiB call whose single-copy counter moves); its verdict
/// names no single-copy route.  Before the class's floor was compared, its
/// first call (3.5 MiB) gave it single-copy routes that the 2.5 MiB calls
/// took too.  Verbose 100 names each trial call's route.
#[test]
fn a_floor_inside_a_size_class_keeps_its_calls_below_off_single_copy() {
    if cores() < 2 {
        eprintln!("skipped: needs 2 cores for a core per process");
        return;
    }
    let (above, below) = ((7 << 20) / 8, (5 << 20) / 8); // ints: 3.5, 2.5 MiB
    let out = run(
        2,
        "any",
        &[
            ("coll_sharm_single_copy", "auto"),
            ("coll_sharm_single_copy_trials", "2"),
            ("coll_sharm_single_copy_min_size", "3145728"),
            ("coll_sharm_verbose", "100"),
        ],
        &[],
        &[&format!("split_class={above},{below}")],
    );
    // Verbose 100 says each trial call: both landings are tried, and the
    // calls below the floor take part.
    for line in [
        "bytes in all: trial on landing cached took ".to_string(),
        "bytes in all: trial on landing non-temporal took ".to_string(),
        format!("MPI_Bcast of {} bytes in all: trial on landing", below * 4),
    ] {
        assert!(out.contains(&line), "{line}:\n{out}");
    }
    assert!(
        !out.contains("trial on single copy") && !out.contains("trial on the queues"),
        "no path is tried in the class:\n{out}"
    );
    let said = verdicts(&out, "MPI_Bcast", "landing non-temporal");
    assert!(
        said[0].starts_with("2097152..4194303 bytes in all: ") && !said[0].contains("single copy"),
        "the 2-4 MiB class tries its landing alone: {}",
        said[0]
    );
}
