/*
 * sharm_check: MPI correctness checks of the sharm coll component.
 *
 *   sharm_check SCENARIO[,SCENARIO...] [options]
 *
 * One program built from tests/mpi/check_*.c: each operation family's
 * checks are in its own file (check_bcast.c, check_reduce.c, ...), what they
 * share in check_support.h.  The scenarios and where they live:
 *
 *   ops          Reduce/Allreduce of every op over every type it applies to
 *                (check_reduce.c), then Bcast of several types (check_bcast.c)
 *   dtypes       Bcast of derived, resized and mismatched datatypes
 *   packed       Bcast of datatypes whose packed elements straddle fragments
 *   unservable   Reduce/Allreduce sharm must hand over (check_reduce.c)
 *   allreduce    Allreduce over the red_combos combinations (check_reduce.c)
 *   gather       Gather and Gatherv; scatter: Scatter and Scatterv
 *   allgather    Allgather and Allgatherv
 *   alltoall     Alltoall and Alltoallv
 *   inplace_memory  in-place Alltoall and Alltoallv of --big bytes [64 MiB]
 *                each through the queues: the peak resident set may not grow
 *                by half a block
 *   inplace_memory_aside  the same by single copy: by a block (aside), not
 *                by the whole buffer
 *   hier_memory  across nodes: an in-place Allgatherv, an Allgather and a
 *                Bcast of non-contiguous types, a Reduce and an Allreduce,
 *                --big bytes [512 MiB] each, through the hierarchy: the peak
 *                resident set may not grow by half the message
 *                (check_hier_memory.c)
 *   redscat      Reduce_scatter_block and Reduce_scatter
 *   scan         Scan and Exscan
 *   barrier      Barrier through a shared-memory window
 *   big          Bcast/Reduce/Allreduce with large counts (check_big.c)
 *   big_others   the other collectives with about --big bytes
 *   comms        Bcast/Reduce/Allreduce on split, dup'ed, inter-communicators
 *   comms_others the other collectives on split and dup'ed communicators
 *   stress       --calls mixed Bcast/Reduce/Allreduce calls (check_stress.c)
 *   mixed        --calls random calls of the other collectives
 *   crash        the last rank aborts while the others wait in a Bcast
 *
 * Options:
 *   --f BYTES        sharm's fragment size (coll_sharm_fragment_size)  [8192]
 *   --s SLOTS        sharm's queue slots (coll_sharm_queue_slots)      [32]
 *   --expect MODE    serve:   sharm serves every call it can (default)
 *                    max1:    run with coll_sharm_max_message_size=1
 *                    budget1: run with coll_sharm_shared_memory_budget=1
 *   --hierarchy M    the run's coll_sharm_hierarchy (auto, off, on) [auto]
 *   --vnode K        the run's coll_sharm_virtual_node_size          [0]
 *   --big BYTES      largest message of "big" [16 MiB], total of "big_others" [4 MiB]
 *                    (and of inplace_memory [64 MiB])
 *   --calls N        calls of "stress" [10000] and of "mixed" [2000]
 *   --iters N        barrier iterations per communicator [400]
 *   --alarm SECONDS  abort with a description of the pending call after this
 *                    long [240]
 *
 * Around every call the MPI_T counters coll_sharm_<op>_served, _fallbacks
 * and _hierarchical are read and compared with what sharm must have done:
 * with --hierarchy and --vnode mirroring the run's parameters, a
 * Bcast/Reduce/Allreduce the hierarchy should serve and the flat path
 * served instead fails.  Output: "sharm_check: start np=N pids=a,b,..."
 * first (the harness's leftover check and kill list), a line per scenario,
 * and at the end
 *   sharm_check: OK np=... scenarios=... calls=... served=... fallbacks=...
 *                hierarchical=... hier_expected=... time=...
 * (totals over all processes; "calls" counts the counter checks,
 * "hier_expected" the calls that had to go through the hierarchy).
 */
#include "check_support.h"
#include "stderr_file.h"

static void scenario_ops(void)
{
    reduce_ops();
    bcast_ops();
}

static const struct {
    const char *name;
    void (*run)(void);
} scenarios[] = {
    {"ops", scenario_ops},
    {"bottom", scenario_bottom},
    {"dtypes", scenario_dtypes},
    {"packed", scenario_packed},
    {"unservable", scenario_unservable},
    {"allreduce", scenario_allreduce},
    {"gather", scenario_gather},
    {"scatter", scenario_scatter},
    {"allgather", scenario_allgather},
    {"alltoall", scenario_alltoall},
    {"inplace_memory", scenario_inplace_memory},
    {"inplace_memory_aside", scenario_inplace_memory_aside},
    {"hier_memory", scenario_hier_memory},
    {"redscat", scenario_redscat},
    {"scan", scenario_scan},
    {"barrier", scenario_barrier},
    {"big", scenario_big},
    {"big_others", scenario_big_others},
    {"comms", scenario_comms},
    {"comms_others", scenario_comms_others},
    {"stress", scenario_stress},
    {"mixed", scenario_mixed},
    {"crash", scenario_crash},
    {"wrap8", scenario_wrap8},
};

int main(int argc, char **argv)
{
    stderr_to_file();
    if (argc < 2) {
        fprintf(stderr, "usage: %s SCENARIO[,SCENARIO...] [--f N] [--s N] [--expect serve|max1|budget1] "
                        "[--hierarchy auto|off|on] [--vnode K] [--big BYTES] [--calls N] [--iters N] "
                        "[--alarm SECONDS]\n", argv[0]);
        return 2;
    }
    parse_options(argc, argv);
    start(&argc, &argv);
    types_init();
    mtypes_init();

    char list[512];
    snprintf(list, sizeof(list), "%s", argv[1]);
    double t0 = MPI_Wtime();
    for (char *save = NULL, *s = strtok_r(list, ",", &save); s; s = strtok_r(NULL, ",", &save)) {
        cur_scenario = s;
        double ts = MPI_Wtime();
        unsigned long long calls0 = n_calls;
        size_t k = 0;
        while (k < sizeof(scenarios) / sizeof(scenarios[0]) && strcmp(scenarios[k].name, s) != 0) ++k;
        if (k == sizeof(scenarios) / sizeof(scenarios[0])) die("unknown scenario '%s'", s);
        scenarios[k].run();
        snprintf(ctx, sizeof(ctx), "end of scenario");
        MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
        if (w_rank == 0) {
            printf(CHECK_NAME ": scenario %s: %llu calls on rank 0 in %.2f s\n", s, n_calls - calls0,
                   MPI_Wtime() - ts);
            fflush(stdout);
        }
    }
    summary(argv[1], MPI_Wtime() - t0);
    pv_finish();
    mtypes_free();
    types_free();
    MPI_Finalize();
    return 0;
}
