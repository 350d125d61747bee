/*
 * sharm_bench.c - latency benchmark for intra-node MPI collectives.
 *
 * One source, built against Open MPI (mpicc.openmpi), MPICH (mpicc.mpich)
 * or Intel MPI (MPICH ABI).  Measures Bcast, Reduce, Allreduce, Allgather,
 * Gather, Scatter, Alltoall, Reduce_scatter_block, Scan, Exscan,
 * Allgatherv, Gatherv, Scatterv, Alltoallv, Reduce_scatter and Barrier
 * for a list of message sizes and prints
 * one machine-readable line per (op, size) on rank 0's stdout:
 *
 *   RESULT op=bcast bytes=8 np=2 median_us=1.234 min_us=1.100 mean_us=1.300
 *          max_us=9.000 iters=1000 warmup=20 status=OK
 *
 * Methodology (why each step exists):
 *  - Every iteration writes a fresh, iteration-dependent pattern into the
 *    send buffers *outside* the timed region, so a component cannot be
 *    rewarded for caching or skipping a transfer, and stale data from the
 *    previous iteration is always detected as wrong.
 *  - Before every timed call all ranks pass one fixed dissemination barrier
 *    built from zero-byte MPI_Sendrecv.  It never calls MPI_Barrier, so the
 *    collective component under test has no influence on the
 *    synchronisation, and it is identical for every configuration.
 *  - Only the collective call itself is timed (CLOCK_MONOTONIC around
 *    it).  Each rank stores its per-iteration timestamps locally; after
 *    the loop they are collected with point-to-point messages, the
 *    per-iteration maximum over ranks of the call's duration is taken, and
 *    the median over iterations is reported (plus min, mean and max).
 *  - Also reported: span_us, the median over iterations of (last rank's
 *    exit - first rank's entry).  CLOCK_MONOTONIC is one clock for all
 *    processes of a node, so this is meaningful intra-node.  Per-rank
 *    durations can look short when barrier-exit skew lets every rank enter
 *    after the data is ready (typical when oversubscribed); the span
 *    cannot hide that, though it includes the skew itself.
 *  - Iteration counts adapt to the cost of one iteration so that every
 *    (op, size) takes roughly --budget-ms of wall time, bounded by
 *    --min-iters / --max-iters.
 *  - Every result is checked against an expectation computed locally
 *    (outside the timed region).  Reductions use MPI_FLOAT / MPI_SUM with
 *    small integer values, so the sum is exact in any order (Scan and
 *    Exscan check each rank's prefix; Exscan's rank 0 result is undefined
 *    and not checked).  Every Alltoall block has a pattern of its own
 *    (source, destination) pair.  A wrong answer is reported as
 *    status=WRONG without timing figures, and the program exits with
 *    status 1.
 *  - All bookkeeping traffic (agreement on iteration counts, collecting
 *    times and errors) is point-to-point on a duplicated communicator, so
 *    the component under test is used only by the measured calls.
 *
 * The method above is the default.  For lining results up with the OSU
 * micro-benchmarks, two launch options switch to OSU's way of running the
 * loop (see bench/README.md, "Comparing with OSU"):
 *  - `--data reuse`: the send buffers are filled once per (op, size) and
 *    then reused unchanged, as OSU does; results are checked on the
 *    unmeasured probe iterations and on the last measured one only, so the
 *    checker does not pull buffers into its cache between timed calls.
 *  - `--sync osu`: no barrier before the call; MPI_Barrier on
 *    MPI_COMM_WORLD (the component under test) after it, as OSU does.
 *  - `--osu` sets both.
 * Every RESULT line also carries osu_avg_us, OSU's statistic: each rank's
 * mean duration over the measured iterations, averaged over ranks.
 *
 * The INFO line names each rank's CPU binding (sched_getaffinity), so a
 * run shows whether every configuration was really pinned.
 *
 * Placement: this VM's host moves the two vCPUs between near cores (one
 * core's two threads or one L3, a cache line's round trip of 40-160 ns)
 * and far ones (400-550 ns) every few seconds, often within one (op,
 * size), and large messages take up to 2-3x as long far as near.  A
 * launch's median then mixes placements in unknown shares, and no two
 * launches compare.  So, with the default loop, ranks 0 and 1 time a
 * line's round trip through a shared window right before every iteration
 * (outside the timed region, before the barrier; the least of
 * PROBE_ROUNDS) when they share a node and their machine is not crowded
 * (its processes, counted by boot id so that simulated nodes on one
 * machine count together, are no more than its CPUs), and every RESULT
 * line also carries near_us / near_iters and far_us / far_iters: the
 * median over the iterations that began near (round trip under
 * PROBE_NEAR_NS) and over those that began far, and how many each had.
 * bench/report.py compares libraries per placement from these.
 *
 * Machine-state probes (memcpy, cross-core copy, line latency,
 * point-to-point bandwidth) live in machine_state.c.
 */
#define _GNU_SOURCE /* sched_getaffinity */

#include <mpi.h>

#include <errno.h>
#include <limits.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "line_probe.h"

/* ------------------------------------------------------------------ */
/* Options                                                             */
/* ------------------------------------------------------------------ */

/* Sized operations first; Barrier (no size) must stay the last one. */
enum op_id {
    OP_BCAST, OP_REDUCE, OP_ALLREDUCE, OP_ALLGATHER, OP_GATHER, OP_SCATTER,
    OP_ALLTOALL, OP_REDUCE_SCATTER_BLOCK, OP_SCAN, OP_EXSCAN,
    OP_ALLGATHERV, OP_GATHERV, OP_SCATTERV, OP_ALLTOALLV, OP_REDUCE_SCATTER,
    OP_BARRIER, OP_COUNT
};

static const char *const op_names[OP_COUNT] = {
    "bcast", "reduce", "allreduce", "allgather", "gather", "scatter",
    "alltoall", "reduce_scatter_block", "scan", "exscan",
    "allgatherv", "gatherv", "scatterv", "alltoallv", "reduce_scatter",
    "barrier"
};

#define MAX_SIZES 64

typedef struct {
    unsigned ops_mask;            /* bit i set: measure op i */
    size_t sizes[MAX_SIZES];
    int nsizes;
    double budget_s;              /* target wall time per (op, size) */
    int min_iters, max_iters;
    int min_warmup, max_warmup;
    int root;
    int reuse;                    /* --data reuse: OSU's buffer reuse */
    int sync_osu;                 /* --sync osu: MPI_Barrier after the call */
    unsigned inject_mask;         /* ops whose results are corrupted */
    int counters;                 /* --counters: sharm's MPI_T counters */
} options_t;

static void usage(FILE *f)
{
    fprintf(f,
        "usage: sharm_bench [options]\n"
        "  --ops LIST        comma list of bcast,reduce,allreduce,allgather,\n"
        "                    gather,scatter,alltoall,reduce_scatter_block,\n"
        "                    scan,exscan,allgatherv,gatherv,scatterv,\n"
        "                    alltoallv,reduce_scatter,barrier\n"
        "                    (default: all)\n"
        "  --sizes LIST      comma list of byte sizes, K/M suffixes allowed\n"
        "                    (default: 8,512,8K,64K,1M,4M)\n"
        "  --budget-ms MS    wall time per (op,size) (default 200)\n"
        "  --min-iters N     minimum measured iterations (default 5)\n"
        "  --max-iters N     maximum measured iterations (default 1000)\n"
        "  --min-warmup N    minimum warm-up iterations after the 4 probe\n"
        "                    calls (default 24: 28 calls before measuring,\n"
        "                    past sharm's trials of a size class and their\n"
        "                    checks; OSU skips 10 for large messages)\n"
        "  --max-warmup N    maximum warm-up iterations (default 20)\n"
        "  --root R          root rank for rooted collectives (default 0)\n"
        "  --data fresh|reuse  fresh: new pattern before every iteration\n"
        "                    (default); reuse: fill once per (op,size) as OSU\n"
        "  --sync pre|osu    pre: point-to-point barrier before each call\n"
        "                    (default); osu: MPI_Barrier after each call\n"
        "  --osu             same as --data reuse --sync osu\n"
        "  --counters        read sharm's MPI_T counters around every (op,size)\n"
        "                    and print their sums over ranks (COUNTERS lines)\n"
        "  --inject-wrong LIST self-test only: corrupt the result of these\n"
        "                    ops on one rank after each call (must be\n"
        "                    reported WRONG)\n");
}

/* Parses "8", "64K", "4M" (binary multiples).  Returns 0 on error. */
static size_t parse_size(const char *s)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || end == s)
        return 0;
    if (*end == 'K' || *end == 'k') { v <<= 10; end++; }
    else if (*end == 'M' || *end == 'm') { v <<= 20; end++; }
    else if (*end == 'G' || *end == 'g') { v <<= 30; end++; }
    if (*end == 'B' || *end == 'b')
        end++;
    return *end ? 0 : (size_t)v;
}

static int parse_ops(const char *list, unsigned *mask)
{
    char buf[512];
    snprintf(buf, sizeof buf, "%s", list);
    *mask = 0;
    for (char *tok = strtok(buf, ","); tok; tok = strtok(NULL, ",")) {
        int found = 0;
        for (int i = 0; i < OP_COUNT; i++) {
            if (strcmp(tok, op_names[i]) == 0) {
                *mask |= 1u << i;
                found = 1;
            }
        }
        if (strcmp(tok, "all") == 0) {
            *mask = (1u << OP_COUNT) - 1;
            found = 1;
        }
        if (!found) {
            fprintf(stderr, "sharm_bench: unknown op '%s'\n", tok);
            return -1;
        }
    }
    return 0;
}

static int parse_sizes(const char *list, options_t *o)
{
    char buf[1024];
    snprintf(buf, sizeof buf, "%s", list);
    o->nsizes = 0;
    for (char *tok = strtok(buf, ","); tok; tok = strtok(NULL, ",")) {
        size_t v = parse_size(tok);
        if (v == 0 || o->nsizes == MAX_SIZES) {
            fprintf(stderr, "sharm_bench: bad size '%s'\n", tok);
            return -1;
        }
        o->sizes[o->nsizes++] = v;
    }
    return 0;
}

static int parse_int_arg(const char *s, int lo, int *out)
{
    char *end;
    long v = strtol(s, &end, 10);
    if (end == s || *end || v < lo || v > INT_MAX)
        return -1;
    *out = (int)v;
    return 0;
}

static int parse_options(int argc, char **argv, options_t *o)
{
    memset(o, 0, sizeof *o);
    o->ops_mask = (1u << OP_COUNT) - 1;
    o->budget_s = 0.2;
    o->min_iters = 5;
    o->max_iters = 1000;
    o->min_warmup = 24;
    o->max_warmup = 20;
    parse_sizes("8,512,8K,64K,1M,4M", o);

    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = (i + 1 < argc) ? argv[i + 1] : NULL;
        int bad = 0, budget_ms = 0;
        if (strcmp(a, "--osu") == 0) {
            o->reuse = o->sync_osu = 1;
            continue;
        }
        if (strcmp(a, "--counters") == 0) {
            o->counters = 1;
            continue;
        }
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            usage(stdout);
            exit(0);
        }
        if (!v) {
            fprintf(stderr, "sharm_bench: missing value for %s\n", a);
            return -1;
        }
        if (strcmp(a, "--ops") == 0)
            bad = parse_ops(v, &o->ops_mask);
        else if (strcmp(a, "--sizes") == 0)
            bad = parse_sizes(v, o);
        else if (strcmp(a, "--budget-ms") == 0) {
            bad = parse_int_arg(v, 1, &budget_ms);
            o->budget_s = budget_ms / 1000.0;
        } else if (strcmp(a, "--min-iters") == 0)
            bad = parse_int_arg(v, 1, &o->min_iters);
        else if (strcmp(a, "--max-iters") == 0)
            bad = parse_int_arg(v, 1, &o->max_iters);
        else if (strcmp(a, "--min-warmup") == 0)
            bad = parse_int_arg(v, 0, &o->min_warmup);
        else if (strcmp(a, "--max-warmup") == 0)
            bad = parse_int_arg(v, 0, &o->max_warmup);
        else if (strcmp(a, "--root") == 0)
            bad = parse_int_arg(v, 0, &o->root);
        else if (strcmp(a, "--data") == 0) {
            bad = strcmp(v, "fresh") != 0 && strcmp(v, "reuse") != 0;
            o->reuse = strcmp(v, "reuse") == 0;
        } else if (strcmp(a, "--sync") == 0) {
            bad = strcmp(v, "pre") != 0 && strcmp(v, "osu") != 0;
            o->sync_osu = strcmp(v, "osu") == 0;
        } else if (strcmp(a, "--inject-wrong") == 0)
            bad = parse_ops(v, &o->inject_mask);
        else {
            fprintf(stderr, "sharm_bench: unknown option %s\n", a);
            usage(stderr);
            return -1;
        }
        if (bad) {
            fprintf(stderr, "sharm_bench: bad value '%s' for %s\n", v, a);
            return -1;
        }
        i++;
    }
    if (o->max_iters < o->min_iters)
        o->max_iters = o->min_iters;
    return 0;
}

/* ------------------------------------------------------------------ */
/* Time                                                                */
/* ------------------------------------------------------------------ */

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* ------------------------------------------------------------------ */
/* Data patterns                                                       */
/* ------------------------------------------------------------------ */

/*
 * Byte pattern: the buffer is a sequence of 32-bit words; word w of
 * (rank, iter) is w * 2654435761 + seed(rank, iter).  Multiplication by an
 * odd constant is a bijection mod 2^32, so every word position has a
 * distinct value; misplaced fragments, blocks from the wrong rank and stale
 * data from an earlier iteration are all detected.
 */
static uint32_t seed_of(int rank, unsigned iter)
{
    return (uint32_t)(rank + 1) * 0x01000193u ^ (uint32_t)iter * 0x9e3779b9u;
}

static uint32_t word_of(uint32_t seed, size_t w)
{
    return (uint32_t)w * 2654435761u + seed;
}

static void fill_bytes(unsigned char *buf, size_t n, int rank, unsigned iter)
{
    uint32_t seed = seed_of(rank, iter);
    size_t nw = n / 4, w;
    for (w = 0; w < nw; w++) {
        uint32_t v = word_of(seed, w);
        memcpy(buf + 4 * w, &v, 4);
    }
    if (n % 4) {
        uint32_t v = word_of(seed, w);
        memcpy(buf + 4 * w, &v, n % 4);
    }
}

/* Returns the index of the first wrong byte, or SIZE_MAX if all correct. */
static size_t check_bytes(const unsigned char *buf, size_t n, int rank,
                          unsigned iter)
{
    uint32_t seed = seed_of(rank, iter);
    size_t nw = n / 4, w;
    for (w = 0; w < nw; w++) {
        uint32_t v = word_of(seed, w);
        if (memcmp(buf + 4 * w, &v, 4) != 0)
            break;
    }
    if (w < nw || n % 4) {
        uint32_t v = word_of(seed, w);
        const unsigned char *e = (const unsigned char *)&v;
        for (size_t i = 4 * w; i < n; i++)
            if (buf[i] != e[i - 4 * w])
                return i;
    }
    return SIZE_MAX;
}

/*
 * Float pattern for reductions: 12-bit integers (0..4095) derived from the
 * same hash, so the sum over up to 4096 ranks stays below 2^24 and is
 * exact in single precision whatever the summation order.
 */
static float float_of(uint32_t seed, size_t i)
{
    return (float)((word_of(seed, i) >> 12) & 0xfffu);
}

static void fill_floats(float *buf, size_t count, int rank, unsigned iter)
{
    uint32_t seed = seed_of(rank, iter);
    for (size_t i = 0; i < count; i++)
        buf[i] = float_of(seed, i);
}

/* Checks buf[i] == sum over ranks 0..nranks-1 of element first + i of
 * their fill_floats input (Reduce/Allreduce: all ranks, first = 0;
 * Reduce_scatter_block: this rank's slice; Scan/Exscan: the ranks of the
 * prefix).  Returns the first wrong index or SIZE_MAX. */
static size_t check_float_sum(const float *buf, size_t count, size_t first,
                              int nranks, unsigned iter, float *expected_out)
{
    enum { MAX_SEEDS = 4096 };
    uint32_t seeds[MAX_SEEDS];
    int ns = nranks < MAX_SEEDS ? nranks : MAX_SEEDS;
    for (int r = 0; r < ns; r++)
        seeds[r] = seed_of(r, iter);
    for (size_t i = 0; i < count; i++) {
        float expect = 0.0f;
        for (int r = 0; r < ns; r++)
            expect += float_of(seeds[r], first + i);
        if (buf[i] != expect) {
            *expected_out = expect;
            return i;
        }
    }
    return SIZE_MAX;
}

/* ------------------------------------------------------------------ */
/* Control plane: point-to-point only, on a private communicator       */
/* ------------------------------------------------------------------ */

enum { TAG_BARRIER = 101, TAG_REDUCE = 102, TAG_BCAST = 103, TAG_TIMES = 104,
       TAG_DETAIL = 105, TAG_COUNTERS = 106, TAG_MACHINE = 107 };

static MPI_Comm ctl_comm;
static int g_rank, g_np;

/* Dissemination barrier: ceil(log2 p) rounds of zero-byte Sendrecv. */
static void ctl_barrier(void)
{
    char dummy = 0;
    for (int k = 1; k < g_np; k <<= 1) {
        int to = (g_rank + k) % g_np;
        int from = (g_rank - k + g_np) % g_np;
        MPI_Sendrecv(&dummy, 0, MPI_BYTE, to, TAG_BARRIER,
                     &dummy, 0, MPI_BYTE, from, TAG_BARRIER,
                     ctl_comm, MPI_STATUS_IGNORE);
    }
}

/* Maximum of a double over all ranks, result on every rank. */
static double ctl_max(double v)
{
    if (g_rank == 0) {
        for (int r = 1; r < g_np; r++) {
            double x;
            MPI_Recv(&x, 1, MPI_DOUBLE, r, TAG_REDUCE, ctl_comm,
                     MPI_STATUS_IGNORE);
            if (x > v)
                v = x;
        }
        for (int r = 1; r < g_np; r++)
            MPI_Send(&v, 1, MPI_DOUBLE, r, TAG_BCAST, ctl_comm);
    } else {
        MPI_Send(&v, 1, MPI_DOUBLE, 0, TAG_REDUCE, ctl_comm);
        MPI_Recv(&v, 1, MPI_DOUBLE, 0, TAG_BCAST, ctl_comm,
                 MPI_STATUS_IGNORE);
    }
    return v;
}

/* ------------------------------------------------------------------ */
/* Placement probe (see the file comment)                              */
/* ------------------------------------------------------------------ */

/* Round trips per probe (line_probe.h).  Four cost 0.5-2.5 us, against a
 * barrier's 1-5. */
#define PROBE_ROUNDS 4

/* Two words a cache line apart in a window rank 0 owns: rank 0 writes the
 * first, rank 1 answers in the second.  NULL: no probe in this launch. */
static _Atomic long *probe_line;
static MPI_Win probe_win = MPI_WIN_NULL;
static long probe_seq;

#define BOOT_ID_LEN 40

/* This machine's boot id (the kernel's, the same in every UTS namespace,
 * so simulated nodes on one machine share it), or "" when unreadable. */
static void boot_id(char out[BOOT_ID_LEN])
{
    memset(out, 0, BOOT_ID_LEN);
    FILE *f = fopen("/proc/sys/kernel/random/boot_id", "r");
    if (!f)
        return;
    if (!fgets(out, BOOT_ID_LEN, f))
        out[0] = 0;
    fclose(f);
    out[strcspn(out, "\n")] = 0;
}

/* Rank 0: how many processes run on rank 0's machine (same boot id; a rank
 * whose id or rank 0's could not be read counts as on it); the others
 * return 0.  Point to point on ctl_comm, as all bookkeeping. */
static int processes_on_my_machine(void)
{
    char mine[BOOT_ID_LEN];
    boot_id(mine);
    if (g_rank != 0) {
        MPI_Send(mine, BOOT_ID_LEN, MPI_CHAR, 0, TAG_MACHINE, ctl_comm);
        return 0;
    }
    int n = 1;
    for (int r = 1; r < g_np; r++) {
        char theirs[BOOT_ID_LEN];
        MPI_Recv(theirs, BOOT_ID_LEN, MPI_CHAR, r, TAG_MACHINE, ctl_comm,
                 MPI_STATUS_IGNORE);
        theirs[BOOT_ID_LEN - 1] = 0;
        n += !mine[0] || !theirs[0] || strcmp(mine, theirs) == 0;
    }
    return n;
}

/* Sets the probe up when ranks 0 and 1 share a node and rank 0's machine
 * runs no more processes than it has online CPUs: on a crowded machine a
 * spinning probe would wait for a descheduled partner, and placement
 * means little.  The machine, not the node: simulated nodes (ci/sim-nodes.sh)
 * are several nodes of one machine.  Collective over MPI_COMM_WORLD;
 * called before anything is measured. */
static void probe_init(void)
{
    if (g_np < 2)
        return;
    MPI_Comm node;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0,
                        MPI_INFO_NULL, &node);
    int in_node[2] = { MPI_UNDEFINED, MPI_UNDEFINED };
    MPI_Group world_group, node_group;
    MPI_Comm_group(MPI_COMM_WORLD, &world_group);
    MPI_Comm_group(node, &node_group);
    int pair[2] = { 0, 1 };
    MPI_Group_translate_ranks(world_group, 2, pair, node_group, in_node);
    MPI_Group_free(&world_group);
    MPI_Group_free(&node_group);
    /* rank 0 decides (its machine is the one that matters), the rest
     * follow */
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    int on_machine = processes_on_my_machine();
    double use = g_rank == 0 && in_node[1] != MPI_UNDEFINED && ncpu > 0 &&
                 on_machine <= ncpu;
    use = ctl_max(g_rank == 0 ? use : 0.0);
    /* every process of every node takes part in its node's window call */
    MPI_Aint size = (use > 0 && g_rank == 0) ? 2 * 64 : 0;
    void *base = NULL;
    MPI_Win_allocate_shared(size, 1, MPI_INFO_NULL, node, &base, &probe_win);
    if (use > 0 && g_rank <= 1) {
        MPI_Aint sz;
        int du;
        MPI_Win_shared_query(probe_win, in_node[0], &sz, &du, &base);
        probe_line = base;
        if (g_rank == 0) {
            atomic_store(&probe_line[0], 0);
            atomic_store(&probe_line[8], 0);
        }
    }
    MPI_Comm_free(&node);
    ctl_barrier(); /* the words are zero before anyone probes */
}

static void probe_free(void)
{
    if (probe_win != MPI_WIN_NULL)
        MPI_Win_free(&probe_win);
    probe_line = NULL;
}

/* One probe (line_probe.h): rank 0 returns the least line round trip in
 * ns; rank 1 answers and returns 0; the other ranks return at once. */
static double probe_rtt(void)
{
    return probe_line
               ? line_round_trip_ns(probe_line, g_rank, &probe_seq, PROBE_ROUNDS)
               : 0.0;
}

/* ------------------------------------------------------------------ */
/* Operations under test                                               */
/* ------------------------------------------------------------------ */

/*
 * Sizes: `bytes` is per rank for Bcast, Reduce, Allreduce, Scan, Exscan;
 * per block for Allgather, Gather, Scatter and Alltoall (as in OSU); the
 * per-rank result block for Reduce_scatter_block; and the nominal block
 * for the v-variants: in Allgatherv / Gatherv / Scatterv rank r's block
 * holds vblock(bytes, r) bytes (irregular counts), placed at reversed
 * displacements (rank p-1's block first); in Alltoallv the block from s
 * to d holds vblock(bytes, s + d) bytes, reversed likewise on both sides;
 * Reduce_scatter gives rank r float_count(vblock(bytes, r)) elements.
 * Reductions use MPI_FLOAT / MPI_SUM with bytes/4 elements (at least
 * one).
 */
typedef struct {
    enum op_id op;
    int rank, np, root;
    size_t bytes;          /* nominal message size in bytes (see above) */
    size_t count;          /* elements passed to the MPI call (send side) */
    void *sbuf, *rbuf;
    size_t sbytes, rbytes; /* allocated sizes (0: not allocated) */
    /* the v-variants: per-rank counts and displacements of the receive
     * side (Allgatherv, Gatherv, Alltoallv, Reduce_scatter: counts only)
     * or of the root's send side (Scatterv); Alltoallv's send side */
    int *vcounts, *vdispls;
    int *scounts, *sdispls;
    size_t first;          /* Reduce_scatter: first element of own block */
} ctx_t;

static void *xmalloc(size_t n)
{
    if (n == 0)
        return NULL;
    void *p = malloc(n);
    if (!p) {
        fprintf(stderr, "sharm_bench: out of memory (%zu bytes)\n", n);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    memset(p, 0, n); /* first touch now, so page faults are never timed */
    return p;
}

/* Irregular block of rank r for the v-variants: bytes * (1 + r mod 3) / 2,
 * rounded (n/2, n, 3n/2, n/2, ...; never 0 for n >= 1). */
static size_t vblock(size_t n, int r)
{
    return (n * (size_t)(1 + r % 3) + 1) / 2;
}

/* Seed id of the Alltoall block that `src` sends to `dst`: distinct for
 * every ordered pair and from the plain rank ids 0..np-1, so a block from
 * the wrong source or for the wrong destination is detected. */
static int pair_id(int src, int dst, int np)
{
    return np + src * np + dst;
}

static size_t float_count(size_t n)
{
    return n / sizeof(float) ? n / sizeof(float) : 1;
}

static void too_large(const ctx_t *c, size_t what)
{
    fprintf(stderr, "sharm_bench: %s with %zu bytes at np=%d needs a count "
            "or displacement of %zu > INT_MAX\n", op_names[c->op], c->bytes,
            c->np, what);
    MPI_Abort(MPI_COMM_WORLD, 2);
}

/* Fills p counts and reversed displacements (rank p-1's block first) of
 * the v-variants' blocks: vblock(bytes, r) for r < p with `pair` < 0, else
 * the block between `pair` and r, vblock(bytes, pair + r).  Returns the
 * blocks' total. */
static size_t v_layout(ctx_t *c, int **counts, int **displs, int pair)
{
    size_t p = (size_t)c->np, off = 0;
    *counts = xmalloc(p * sizeof(int));
    *displs = xmalloc(p * sizeof(int));
    for (int r = c->np - 1; r >= 0; r--) {
        size_t b = vblock(c->bytes, pair < 0 ? r : pair + r);
        if (b > INT_MAX || off > INT_MAX)
            too_large(c, b > off ? b : off);
        (*counts)[r] = (int)b;
        (*displs)[r] = (int)off;
        off += b;
    }
    return off;
}

static void ctx_setup(ctx_t *c)
{
    int is_root = c->rank == c->root;
    size_t n = c->bytes, p = (size_t)c->np;

    c->count = n;
    switch (c->op) {
    case OP_BCAST:
        c->sbytes = n;
        break;
    case OP_REDUCE:
    case OP_ALLREDUCE:
        c->count = float_count(n);
        c->sbytes = c->count * sizeof(float);
        c->rbytes = (c->op == OP_ALLREDUCE || is_root) ? c->sbytes : 0;
        break;
    case OP_ALLGATHER:
    case OP_ALLTOALL:
        c->sbytes = c->op == OP_ALLTOALL ? n * p : n;
        c->rbytes = n * p;
        break;
    case OP_GATHER:
        c->sbytes = n;
        c->rbytes = is_root ? n * p : 0;
        break;
    case OP_SCATTER:
        c->sbytes = is_root ? n * p : 0;
        c->rbytes = n;
        break;
    case OP_REDUCE_SCATTER_BLOCK:
        c->count = float_count(n);            /* recvcount per rank */
        c->rbytes = c->count * sizeof(float);
        c->sbytes = c->rbytes * p;
        break;
    case OP_SCAN:
    case OP_EXSCAN:
        c->count = float_count(n);
        c->sbytes = c->rbytes = c->count * sizeof(float);
        break;
    case OP_ALLGATHERV:
    case OP_GATHERV: {
        c->vcounts = xmalloc(p * sizeof(int));
        c->vdispls = xmalloc(p * sizeof(int));
        size_t off = 0;
        for (int r = c->np - 1; r >= 0; r--) {  /* reversed displacements */
            size_t b = vblock(n, r);
            if (b > INT_MAX || off > INT_MAX)
                too_large(c, b > off ? b : off);
            c->vcounts[r] = (int)b;
            c->vdispls[r] = (int)off;
            off += b;
        }
        c->count = (size_t)c->vcounts[c->rank];
        c->sbytes = c->count;
        c->rbytes = (c->op == OP_ALLGATHERV || is_root) ? off : 0;
        break;
    }
    case OP_SCATTERV:
        c->count = vblock(n, c->rank);
        c->sbytes = is_root ? v_layout(c, &c->vcounts, &c->vdispls, -1)
                            : 0;
        c->rbytes = c->count;
        break;
    case OP_ALLTOALLV:
        c->sbytes = v_layout(c, &c->scounts, &c->sdispls, c->rank);
        c->rbytes = v_layout(c, &c->vcounts, &c->vdispls, c->rank);
        break;
    case OP_REDUCE_SCATTER: {
        c->vcounts = xmalloc(p * sizeof(int));
        size_t total = 0;
        for (int r = 0; r < c->np; r++) {
            size_t k = float_count(vblock(n, r));
            if (k > INT_MAX)
                too_large(c, k);
            if (r == c->rank)
                c->first = total;
            c->vcounts[r] = (int)k;
            total += k;
        }
        c->count = (size_t)c->vcounts[c->rank];
        c->rbytes = c->count * sizeof(float);
        c->sbytes = total * sizeof(float);
        break;
    }
    case OP_BARRIER:
    case OP_COUNT:
        c->count = 0;
        break;
    }
    if (c->count > INT_MAX)
        too_large(c, c->count);
    c->sbuf = xmalloc(c->sbytes);
    c->rbuf = xmalloc(c->rbytes);
}

static void ctx_free(ctx_t *c)
{
    free(c->sbuf);
    free(c->rbuf);
    free(c->vcounts);
    free(c->vdispls);
    free(c->scounts);
    free(c->sdispls);
    c->sbuf = c->rbuf = NULL;
    c->vcounts = c->vdispls = c->scounts = c->sdispls = NULL;
}

/* Writes this iteration's input pattern (outside the timed region). */
static void op_prepare(ctx_t *c, unsigned iter)
{
    unsigned char *s = c->sbuf;
    switch (c->op) {
    case OP_BCAST:
        if (c->rank == c->root)
            fill_bytes(s, c->bytes, c->rank, iter);
        break;
    case OP_REDUCE:
    case OP_ALLREDUCE:
    case OP_SCAN:
    case OP_EXSCAN:
        fill_floats(c->sbuf, c->count, c->rank, iter);
        break;
    case OP_REDUCE_SCATTER_BLOCK:
        /* one pattern over all p slices: slice r is elements r*count.. */
        fill_floats(c->sbuf, c->count * (size_t)c->np, c->rank, iter);
        break;
    case OP_REDUCE_SCATTER:
        /* likewise: rank r's slice is elements first(r).. */
        fill_floats(c->sbuf, c->sbytes / sizeof(float), c->rank, iter);
        break;
    case OP_SCATTERV:
        if (c->rank == c->root)
            for (int r = 0; r < c->np; r++)
                fill_bytes(s + c->vdispls[r], (size_t)c->vcounts[r], r, iter);
        break;
    case OP_ALLTOALLV:
        for (int d = 0; d < c->np; d++)
            fill_bytes(s + c->sdispls[d], (size_t)c->scounts[d],
                       pair_id(c->rank, d, c->np), iter);
        break;
    case OP_ALLGATHER:
    case OP_GATHER:
    case OP_ALLGATHERV:
    case OP_GATHERV:
        fill_bytes(s, c->count, c->rank, iter);
        break;
    case OP_SCATTER:
        if (c->rank == c->root)
            for (int r = 0; r < c->np; r++)
                fill_bytes(s + (size_t)r * c->bytes, c->bytes, r, iter);
        break;
    case OP_ALLTOALL:
        for (int d = 0; d < c->np; d++)
            fill_bytes(s + (size_t)d * c->bytes, c->bytes,
                       pair_id(c->rank, d, c->np), iter);
        break;
    case OP_BARRIER:
    case OP_COUNT:
        break;
    }
}

/* The measured call. */
static int op_execute(ctx_t *c)
{
    int n = (int)c->count;
    MPI_Comm w = MPI_COMM_WORLD;
    switch (c->op) {
    case OP_BCAST:
        return MPI_Bcast(c->sbuf, n, MPI_BYTE, c->root, w);
    case OP_REDUCE:
        return MPI_Reduce(c->sbuf, c->rbuf, n, MPI_FLOAT, MPI_SUM, c->root,
                          w);
    case OP_ALLREDUCE:
        return MPI_Allreduce(c->sbuf, c->rbuf, n, MPI_FLOAT, MPI_SUM, w);
    case OP_ALLGATHER:
        return MPI_Allgather(c->sbuf, n, MPI_BYTE, c->rbuf, n, MPI_BYTE, w);
    case OP_GATHER:
        return MPI_Gather(c->sbuf, n, MPI_BYTE, c->rbuf, n, MPI_BYTE,
                          c->root, w);
    case OP_SCATTER:
        return MPI_Scatter(c->sbuf, n, MPI_BYTE, c->rbuf, n, MPI_BYTE,
                           c->root, w);
    case OP_ALLTOALL:
        return MPI_Alltoall(c->sbuf, n, MPI_BYTE, c->rbuf, n, MPI_BYTE, w);
    case OP_REDUCE_SCATTER_BLOCK:
        return MPI_Reduce_scatter_block(c->sbuf, c->rbuf, n, MPI_FLOAT,
                                        MPI_SUM, w);
    case OP_SCAN:
        return MPI_Scan(c->sbuf, c->rbuf, n, MPI_FLOAT, MPI_SUM, w);
    case OP_EXSCAN:
        return MPI_Exscan(c->sbuf, c->rbuf, n, MPI_FLOAT, MPI_SUM, w);
    case OP_ALLGATHERV:
        return MPI_Allgatherv(c->sbuf, n, MPI_BYTE, c->rbuf, c->vcounts,
                              c->vdispls, MPI_BYTE, w);
    case OP_GATHERV:
        return MPI_Gatherv(c->sbuf, n, MPI_BYTE, c->rbuf, c->vcounts,
                           c->vdispls, MPI_BYTE, c->root, w);
    case OP_SCATTERV:
        return MPI_Scatterv(c->sbuf, c->vcounts, c->vdispls, MPI_BYTE,
                            c->rbuf, n, MPI_BYTE, c->root, w);
    case OP_ALLTOALLV:
        return MPI_Alltoallv(c->sbuf, c->scounts, c->sdispls, MPI_BYTE,
                             c->rbuf, c->vcounts, c->vdispls, MPI_BYTE, w);
    case OP_REDUCE_SCATTER:
        return MPI_Reduce_scatter(c->sbuf, c->rbuf, c->vcounts, MPI_FLOAT,
                                  MPI_SUM, w);
    case OP_BARRIER:
        return MPI_Barrier(w);
    case OP_COUNT:
        break;
    }
    return MPI_ERR_OTHER;
}

/* Checks that `len` bytes at `at` hold pattern `id` (block `r` of the
 * result); fills `detail` on error. */
static int check_block(const unsigned char *at, size_t len, int id, int r,
                       unsigned iter, const char *what, char *detail,
                       size_t dlen)
{
    size_t bad = check_bytes(at, len, id, iter);
    if (bad == SIZE_MAX)
        return 0;
    snprintf(detail, dlen, "%s block %d byte %zu differs", what, r, bad);
    return 1;
}

/* Checks a float result against the sum of `nranks` ranks' inputs. */
static int check_sum(const ctx_t *c, size_t first, int nranks, unsigned iter,
                     char *detail, size_t dlen)
{
    float expect = 0.0f;
    size_t bad = check_float_sum(c->rbuf, c->count, first, nranks, iter,
                                 &expect);
    if (bad == SIZE_MAX)
        return 0;
    snprintf(detail, dlen, "element %zu is %g, expected %g", bad,
             (double)((float *)c->rbuf)[bad], (double)expect);
    return 1;
}

/* Verifies this rank's output for `iter`.  Returns 0 if correct. */
static int op_check(ctx_t *c, unsigned iter, char *detail, size_t dlen)
{
    int is_root = c->rank == c->root;
    const unsigned char *rb = c->rbuf;
    size_t bad;

    switch (c->op) {
    case OP_BCAST:
        bad = check_bytes(c->sbuf, c->bytes, c->root, iter);
        if (bad != SIZE_MAX) {
            snprintf(detail, dlen, "byte %zu differs from root's", bad);
            return 1;
        }
        return 0;
    case OP_REDUCE:
        return is_root ? check_sum(c, 0, c->np, iter, detail, dlen) : 0;
    case OP_ALLREDUCE:
        return check_sum(c, 0, c->np, iter, detail, dlen);
    case OP_REDUCE_SCATTER_BLOCK:
        return check_sum(c, (size_t)c->rank * c->count, c->np, iter, detail,
                         dlen);
    case OP_REDUCE_SCATTER:
        return check_sum(c, c->first, c->np, iter, detail, dlen);
    case OP_SCATTERV:
        bad = check_bytes(rb, c->count, c->rank, iter);
        if (bad != SIZE_MAX) {
            snprintf(detail, dlen, "byte %zu of own block differs", bad);
            return 1;
        }
        return 0;
    case OP_ALLTOALLV:
        for (int r = 0; r < c->np; r++)
            if (check_block(rb + c->vdispls[r], (size_t)c->vcounts[r],
                            pair_id(r, c->rank, c->np), r, iter, "recv",
                            detail, dlen))
                return 1;
        return 0;
    case OP_SCAN:
        return check_sum(c, 0, c->rank + 1, iter, detail, dlen);
    case OP_EXSCAN:
        /* rank 0's receive buffer is undefined after MPI_Exscan */
        return c->rank > 0 ? check_sum(c, 0, c->rank, iter, detail, dlen) : 0;
    case OP_ALLGATHER:
    case OP_GATHER:
        if (c->op == OP_GATHER && !is_root)
            return 0;
        for (int r = 0; r < c->np; r++)
            if (check_block(rb + (size_t)r * c->bytes, c->bytes, r, r, iter,
                            "recv", detail, dlen))
                return 1;
        return 0;
    case OP_ALLGATHERV:
    case OP_GATHERV:
        if (c->op == OP_GATHERV && !is_root)
            return 0;
        for (int r = 0; r < c->np; r++)
            if (check_block(rb + c->vdispls[r], (size_t)c->vcounts[r], r, r,
                            iter, "recv", detail, dlen))
                return 1;
        return 0;
    case OP_ALLTOALL:
        for (int r = 0; r < c->np; r++)
            if (check_block(rb + (size_t)r * c->bytes, c->bytes,
                            pair_id(r, c->rank, c->np), r, iter, "recv",
                            detail, dlen))
                return 1;
        return 0;
    case OP_SCATTER:
        bad = check_bytes(rb, c->bytes, c->rank, iter);
        if (bad != SIZE_MAX) {
            snprintf(detail, dlen, "byte %zu of own block differs", bad);
            return 1;
        }
        return 0;
    case OP_BARRIER:
    case OP_COUNT:
        break;
    }
    return 0;
}

/* Self-test hook: damages one value of the result on one checking rank,
 * to prove that wrong results are detected and reported. */
static void op_corrupt(ctx_t *c)
{
    int victim;
    switch (c->op) {
    case OP_REDUCE:
    case OP_GATHER:
    case OP_GATHERV:
        victim = c->root;        /* the only rank with a result */
        break;
    case OP_EXSCAN:
        victim = c->np - 1;      /* rank 0 has no defined result */
        break;
    default:
        victim = (c->root + 1) % c->np;
        break;
    }
    if (c->rank != victim)
        return;
    unsigned char *rb = c->rbuf;
    switch (c->op) {
    case OP_BCAST:
        ((unsigned char *)c->sbuf)[c->bytes / 2] ^= 0x10;
        break;
    case OP_REDUCE:
    case OP_ALLREDUCE:
    case OP_REDUCE_SCATTER_BLOCK:
    case OP_REDUCE_SCATTER:
    case OP_SCAN:
    case OP_EXSCAN:
        ((float *)c->rbuf)[c->count / 2] += 1.0f;
        break;
    case OP_ALLGATHER:
    case OP_GATHER:
    case OP_ALLTOALL:
        rb[c->bytes * (size_t)c->np / 2] ^= 0x10;
        break;
    case OP_ALLGATHERV:
    case OP_GATHERV:
    case OP_SCATTERV:
    case OP_ALLTOALLV:
        rb[c->rbytes / 2] ^= 0x10;
        break;
    case OP_SCATTER:
        rb[c->bytes / 2] ^= 0x10;
        break;
    case OP_BARRIER:
    case OP_COUNT:
        break;
    }
}

/* ------------------------------------------------------------------ */
/* sharm's MPI_T counters (--counters)                                 */
/* ------------------------------------------------------------------ */

/*
 * With --counters every (op, size) is bracketed by reads of sharm's
 * performance variables (outside all timed regions): the op's served,
 * fallbacks and hierarchical counts, and the traffic of the process over
 * all collectives (PML messages/bytes, the part of them sent to other
 * nodes, shared-memory fragments/bytes).  The differences, summed over
 * ranks, are printed by rank 0 as
 *
 *   COUNTERS op=bcast bytes=8 np=4 calls=1000 served=4000 fallbacks=0
 *            hierarchical=4000 pml_messages=... pml_bytes=...
 *            internode_messages=... internode_bytes=... shm_messages=...
 *            shm_bytes=... status=OK
 *
 * calls = calls per rank (probe, warm-up and measured); status=absent when
 * the variables do not exist (sharm not loaded), so a configuration that
 * claims sharm without it is caught by the report.
 */
enum { PV_SERVED, PV_FALLBACKS, PV_HIERARCHICAL, PV_PML_MSGS, PV_PML_BYTES,
       PV_INTER_MSGS, PV_INTER_BYTES, PV_SHM_MSGS, PV_SHM_BYTES, PV_COUNT };
static const char *const pv_kinds[PV_COUNT] = {
    "served", "fallbacks", "hierarchical", "pml_messages", "pml_bytes",
    "internode_messages", "internode_bytes", "shm_messages", "shm_bytes"
};
#define PV_PER_OP 3 /* the first three are per operation */

static int pv_on;                 /* 1: every handle below was allocated */
static MPI_T_pvar_session pv_session;
static MPI_T_pvar_handle pv_op[OP_COUNT][PV_PER_OP];
static MPI_T_pvar_handle pv_traffic[PV_COUNT - PV_PER_OP];

/* Index of counter `name` by searching the list (portable to MPI 3). */
static int pv_find(const char *name)
{
    int num = 0;
    if (MPI_T_pvar_get_num(&num) != MPI_SUCCESS)
        return -1;
    for (int i = 0; i < num; i++) {
        char n[256], desc[8];
        int nlen = sizeof n, dlen = sizeof desc, verb, cls, bind, ro, cont, atom;
        MPI_Datatype dt;
        MPI_T_enum en;
        if (MPI_T_pvar_get_info(i, n, &nlen, &verb, &cls, &dt, &en, desc, &dlen,
                                &bind, &ro, &cont, &atom) == MPI_SUCCESS &&
            strcmp(n, name) == 0)
            return i;
    }
    return -1;
}

static int pv_alloc(const char *name, MPI_T_pvar_handle *h)
{
    int idx = pv_find(name), count = 0;
    return idx >= 0 &&
           MPI_T_pvar_handle_alloc(pv_session, idx, NULL, h, &count) ==
               MPI_SUCCESS && count == 1;
}

/* Allocates every handle; pv_on stays 0 when any variable is missing. */
static void pv_init(void)
{
    int provided;
    if (MPI_T_init_thread(MPI_THREAD_SINGLE, &provided) != MPI_SUCCESS ||
        MPI_T_pvar_session_create(&pv_session) != MPI_SUCCESS)
        return;
    char name[96];
    for (int op = 0; op < OP_COUNT; op++)
        for (int k = 0; k < PV_PER_OP; k++) {
            snprintf(name, sizeof name, "coll_sharm_%s_%s", op_names[op],
                     pv_kinds[k]);
            if (!pv_alloc(name, &pv_op[op][k]))
                return;
        }
    for (int k = PV_PER_OP; k < PV_COUNT; k++) {
        snprintf(name, sizeof name, "coll_sharm_%s", pv_kinds[k]);
        if (!pv_alloc(name, &pv_traffic[k - PV_PER_OP]))
            return;
    }
    pv_on = 1;
}

static void pv_read(enum op_id op, unsigned long long v[PV_COUNT])
{
    for (int k = 0; k < PV_COUNT; k++) {
        v[k] = 0;
        if (pv_on)
            MPI_T_pvar_read(pv_session, k < PV_PER_OP ? pv_op[op][k]
                                                       : pv_traffic[k - PV_PER_OP],
                            &v[k]);
    }
}

/* Sums `after - before` over ranks and prints rank 0's COUNTERS line. */
static void pv_report(enum op_id op, size_t bytes, unsigned calls,
                      const unsigned long long before[PV_COUNT]);

/* ------------------------------------------------------------------ */
/* Measurement loop                                                    */
/* ------------------------------------------------------------------ */

#define DETAIL_LEN 160

typedef struct {
    unsigned inject_mask;     /* ops to corrupt (self-test) */
    int reuse, sync_osu;      /* OSU-style loop (see the file comment) */
    unsigned iter;            /* global pattern counter, same on all ranks */
    unsigned pattern;         /* --data reuse: this (op, size)'s pattern */
    int prepared;             /* --data reuse: buffers hold `pattern` */
    unsigned calls;           /* calls of the current (op, size) */
    int wrong;                /* this rank saw a wrong result */
    char detail[DETAIL_LEN];  /* first problem seen by this rank */
    double rtt_ns;            /* rank 0: the last iteration's probe, or 0 */
} run_state_t;

/* One iteration: prepare, fixed barrier, timed call, check (when `check`
 * is set).  Default method: fresh data and the point-to-point barrier
 * before the call; OSU's (st->reuse, st->sync_osu): data written once per
 * (op, size) and MPI_Barrier after the call.
 * Stores the call's entry and exit times (CLOCK_MONOTONIC, seconds) in
 * stamp[0] and stamp[1]. */
static void one_iteration(ctx_t *c, run_state_t *st, double stamp[2],
                          int check)
{
    unsigned iter;
    if (st->reuse) {
        iter = st->pattern;
        if (!st->prepared)
            op_prepare(c, iter);
        st->prepared = 1;
    } else {
        iter = st->iter++;
        op_prepare(c, iter);
    }
    /* OSU's loop has no barrier before the call, and a probe would add
     * one between ranks 0 and 1 */
    st->rtt_ns = st->sync_osu ? 0.0 : probe_rtt();
    if (!st->sync_osu)
        ctl_barrier();
    st->calls++;
    double t0 = now_s();
    int rc = op_execute(c);
    double t1 = now_s();
    if (st->sync_osu)
        MPI_Barrier(MPI_COMM_WORLD);
    stamp[0] = t0;
    stamp[1] = t1;
    if (st->inject_mask & (1u << c->op))
        op_corrupt(c);
    if (st->wrong || (!check && rc == MPI_SUCCESS))
        return; /* already reported, or not checked this time */
    if (rc != MPI_SUCCESS) {
        char msg[MPI_MAX_ERROR_STRING];
        int len = 0;
        MPI_Error_string(rc, msg, &len);
        snprintf(st->detail, DETAIL_LEN, "iter %u: MPI error: %.100s", iter, msg);
        st->wrong = 1;
    } else {
        char d[DETAIL_LEN - 32];
        if (op_check(c, iter, d, sizeof d)) {
            snprintf(st->detail, DETAIL_LEN, "iter %u: %s", iter, d);
            st->wrong = 1;
        }
    }
}

static int clamp_int(double v, int lo, int hi)
{
    if (v < lo)
        return lo;
    if (v > hi)
        return hi;
    return (int)v;
}

/* Rank 0 collects everybody's per-iteration (entry, exit) stamps and
 * computes per iteration: dur[i] = max over ranks of exit - entry, and
 * span[i] = max over ranks of exit - min over ranks of entry; and OSU's
 * figure, *rank_avg = mean over ranks of each rank's mean duration. */
static void collect_times(const double *stamps, double *dur, double *span,
                          int iters, double *rank_avg)
{
    if (g_rank != 0) {
        MPI_Send(stamps, 2 * iters, MPI_DOUBLE, 0, TAG_TIMES, ctl_comm);
        return;
    }
    double *first = malloc((size_t)iters * sizeof *first);
    double *last = malloc((size_t)iters * sizeof *last);
    double *tmp = malloc((size_t)iters * 2 * sizeof *tmp);
    if (!first || !last || !tmp)
        MPI_Abort(MPI_COMM_WORLD, 2);
    double sum = 0.0;
    for (int i = 0; i < iters; i++) {
        first[i] = stamps[2 * i];
        last[i] = stamps[2 * i + 1];
        dur[i] = last[i] - first[i];
        sum += dur[i];
    }
    for (int r = 1; r < g_np; r++) {
        MPI_Recv(tmp, 2 * iters, MPI_DOUBLE, r, TAG_TIMES, ctl_comm,
                 MPI_STATUS_IGNORE);
        for (int i = 0; i < iters; i++) {
            double t0 = tmp[2 * i], t1 = tmp[2 * i + 1];
            sum += t1 - t0;
            if (t1 - t0 > dur[i])
                dur[i] = t1 - t0;
            if (t0 < first[i])
                first[i] = t0;
            if (t1 > last[i])
                last[i] = t1;
        }
    }
    for (int i = 0; i < iters; i++)
        span[i] = last[i] - first[i];
    /* every rank ran `iters` iterations, so the mean of the per-rank means
     * is the mean of all durations */
    *rank_avg = sum / ((double)iters * g_np);
    free(first);
    free(last);
    free(tmp);
}

/* Median of v[0..n) (sorts v). */
static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return (n % 2) ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* Called on all ranks when some rank saw a wrong result: every rank sends
 * its (possibly empty) description and rank 0 prints the non-empty ones. */
static void report_wrong(const run_state_t *st, const char *op, size_t bytes)
{
    if (g_rank != 0) {
        MPI_Send(st->detail, DETAIL_LEN, MPI_CHAR, 0, TAG_DETAIL, ctl_comm);
        return;
    }
    for (int r = 0; r < g_np; r++) {
        char d[DETAIL_LEN];
        if (r == 0)
            memcpy(d, st->detail, DETAIL_LEN);
        else
            MPI_Recv(d, DETAIL_LEN, MPI_CHAR, r, TAG_DETAIL, ctl_comm,
                     MPI_STATUS_IGNORE);
        d[DETAIL_LEN - 1] = 0;
        if (d[0])
            printf("WRONG op=%s bytes=%zu np=%d rank=%d detail=\"%s\"\n", op,
                   bytes, g_np, r, d);
    }
}

/* The RESULT fields of the placement split (file comment): per placement
 * the median of the iterations' durations (dur, seconds, in probe order)
 * that began there (rtt, ns), and their number; a placement no iteration
 * began in has no median. */
static void placement_fields(const double *dur, const double *rtt, int iters,
                             char *out, size_t len)
{
    double *near = malloc((size_t)iters * sizeof *near);
    double *far = malloc((size_t)iters * sizeof *far);
    if (!near || !far)
        MPI_Abort(MPI_COMM_WORLD, 2);
    int nn = 0, nf = 0;
    double lo = rtt[0], hi = rtt[0];
    for (int i = 0; i < iters; i++) {
        if (rtt[i] < PROBE_NEAR_NS)
            near[nn++] = dur[i];
        else
            far[nf++] = dur[i];
        lo = rtt[i] < lo ? rtt[i] : lo;
        hi = rtt[i] > hi ? rtt[i] : hi;
    }
    char a[40] = "", b[40] = "";
    if (nn)
        snprintf(a, sizeof a, "near_us=%.3f ", median(near, nn) * 1e6);
    if (nf)
        snprintf(b, sizeof b, "far_us=%.3f ", median(far, nf) * 1e6);
    snprintf(out, len, "%snear_iters=%d %sfar_iters=%d rtt_ns=%.0f-%.0f ", a,
             nn, b, nf, lo, hi);
    free(near);
    free(far);
}

/* Measures one (op, size).  Returns 1 if any rank saw a wrong result. */
static int measure(const options_t *o, enum op_id op, size_t bytes,
                   run_state_t *st)
{
    ctx_t c = { .op = op, .rank = g_rank, .np = g_np, .root = o->root,
                .bytes = bytes };
    ctx_setup(&c);
    unsigned long long pv_before[PV_COUNT];
    if (o->counters)
        pv_read(op, pv_before);
    st->calls = 0;
    st->wrong = 0;
    st->detail[0] = 0;
    st->pattern = st->iter++;
    st->prepared = 0;

    /* Probe: the first iteration absorbs one-time costs (first use of the
     * communicator, segment mapping); the median wall time of the next
     * three (including pattern writing and checking) estimates the cost
     * of one iteration, robust against a single descheduling hiccup. */
    double stamp[2];
    one_iteration(&c, st, stamp, 1);
    double probe[3];
    for (int i = 0; i < 3; i++) {
        double w0 = now_s();
        one_iteration(&c, st, stamp, 1);
        probe[i] = now_s() - w0;
    }
    qsort(probe, 3, sizeof probe[0], cmp_double);
    double est = ctl_max(probe[1]);
    if (est < 1e-7)
        est = 1e-7;

    /* Every rank derives the same counts from the same `est`.  At least
     * `min_warmup` more calls before measuring, whatever the budget: a
     * library that learns from its first calls (sharm's trials take the
     * first 9 calls of a size class for its path and, from 2 MiB in all,
     * 17 for its path and landing together, then checks the verdict on the
     * next 5, and 5 more when it changes it: up to 27, `src/shm/trials.rs`)
     * is then
     * measured as an application's loop sees it once they are done.  OSU
     * skips 10 calls of a large message, so its first measured calls of
     * 2 MiB and more include sharm's trials. */
    int lo = o->min_warmup < o->max_warmup ? o->min_warmup : o->max_warmup;
    int warmup = clamp_int(0.1 * o->budget_s / est, lo, o->max_warmup);
    int iters = clamp_int(0.9 * o->budget_s / est, o->min_iters, o->max_iters);

    /* With reused data only the probe and the last measured iteration
     * are checked (see the file comment). */
    for (int i = 0; i < warmup; i++)
        one_iteration(&c, st, stamp, !st->reuse);

    double *stamps = malloc((size_t)iters * 2 * sizeof *stamps);
    double *tmax = malloc((size_t)iters * sizeof *tmax);
    double *span = malloc((size_t)iters * sizeof *span);
    double *rtt = malloc((size_t)iters * sizeof *rtt);
    if (!stamps || !tmax || !span || !rtt)
        MPI_Abort(MPI_COMM_WORLD, 2);
    if (st->sync_osu)
        MPI_Barrier(MPI_COMM_WORLD); /* OSU: one barrier before the loop */
    for (int i = 0; i < iters; i++) {
        one_iteration(&c, st, &stamps[2 * i], !st->reuse || i == iters - 1);
        rtt[i] = st->rtt_ns;
    }
    ctx_free(&c);

    if (o->counters)
        pv_report(op, bytes, st->calls, pv_before);

    double rank_avg = 0.0;
    collect_times(stamps, tmax, span, iters, &rank_avg);
    int any_wrong = ctl_max(st->wrong) > 0.0;
    if (any_wrong)
        report_wrong(st, op_names[op], bytes);

    if (g_rank == 0) {
        printf("RESULT op=%s bytes=%zu np=%d ", op_names[op], bytes, g_np);
        if (any_wrong) {
            printf("iters=%d warmup=%d status=WRONG\n", iters, warmup + 4);
        } else {
            double sum = 0.0;
            for (int i = 0; i < iters; i++)
                sum += tmax[i];
            /* before median() sorts tmax out of the probes' order */
            char placed[128] = "";
            if (probe_line && rtt[0] > 0)
                placement_fields(tmax, rtt, iters, placed, sizeof placed);
            double med = median(tmax, iters); /* sorts tmax */
            printf("median_us=%.3f min_us=%.3f mean_us=%.3f max_us=%.3f "
                   "span_us=%.3f osu_avg_us=%.3f iters=%d warmup=%d "
                   "%sstatus=OK\n", med * 1e6, tmax[0] * 1e6,
                   sum / iters * 1e6, tmax[iters - 1] * 1e6,
                   median(span, iters) * 1e6, rank_avg * 1e6, iters,
                   warmup + 4, placed);
        }
        fflush(stdout);
    }
    free(stamps);
    free(tmax);
    free(span);
    free(rtt);
    return any_wrong;
}

static void pv_report(enum op_id op, size_t bytes, unsigned calls,
                      const unsigned long long before[PV_COUNT])
{
    unsigned long long d[PV_COUNT];
    pv_read(op, d);
    for (int k = 0; k < PV_COUNT; k++)
        d[k] -= before[k];
    if (g_rank != 0) {
        MPI_Send(d, PV_COUNT, MPI_UNSIGNED_LONG_LONG, 0, TAG_COUNTERS, ctl_comm);
        return;
    }
    for (int r = 1; r < g_np; r++) {
        unsigned long long x[PV_COUNT];
        MPI_Recv(x, PV_COUNT, MPI_UNSIGNED_LONG_LONG, r, TAG_COUNTERS, ctl_comm,
                 MPI_STATUS_IGNORE);
        for (int k = 0; k < PV_COUNT; k++)
            d[k] += x[k];
    }
    printf("COUNTERS op=%s bytes=%zu np=%d calls=%u", op_names[op], bytes,
           g_np, calls);
    if (pv_on) {
        for (int k = 0; k < PV_COUNT; k++)
            printf(" %s=%llu", pv_kinds[k], d[k]);
        printf(" status=OK\n");
    } else {
        printf(" status=absent\n");
    }
    fflush(stdout);
}

enum { BIND_LEN = 64 };

/* This process's allowed CPUs as "0" or "0,1" ("all" with none missing
 * out of the machine's online CPUs would hide nothing, so it is listed). */
static void my_binding(char out[BIND_LEN])
{
    cpu_set_t set;
    size_t len = 0;
    out[0] = 0;
    if (sched_getaffinity(0, sizeof set, &set) != 0) {
        snprintf(out, BIND_LEN, "?");
        return;
    }
    for (int cpu = 0; cpu < CPU_SETSIZE && len + 8 < BIND_LEN; cpu++)
        if (CPU_ISSET(cpu, &set))
            len += (size_t)snprintf(out + len, BIND_LEN - len, "%s%d",
                                    len ? "," : "", cpu);
}

/* Called on all ranks; rank 0 prints the MPI library identification
 * (first line only), the loop method and every rank's CPU binding
 * ("0;1": rank 0 on cpu 0, rank 1 on cpu 1). */
static void print_info(const options_t *o)
{
    char mine[BIND_LEN];
    my_binding(mine);
    if (g_rank != 0) {
        MPI_Send(mine, BIND_LEN, MPI_CHAR, 0, TAG_DETAIL, ctl_comm);
        return;
    }
    char lib[MPI_MAX_LIBRARY_VERSION_STRING];
    int len = 0;
    MPI_Get_library_version(lib, &len);
    lib[strcspn(lib, "\n\r")] = 0;
    for (char *s = lib; *s; s++)
        if (*s == '"')
            *s = '\'';
    printf("INFO np=%d root=%d budget_ms=%.0f data=%s sync=%s library=\"%s\" "
           "binding=\"%s", g_np, o->root, o->budget_s * 1e3,
           o->reuse ? "reuse" : "fresh", o->sync_osu ? "osu" : "pre", lib,
           mine);
    for (int r = 1; r < g_np; r++) {
        char b[BIND_LEN];
        MPI_Recv(b, BIND_LEN, MPI_CHAR, r, TAG_DETAIL, ctl_comm,
                 MPI_STATUS_IGNORE);
        b[BIND_LEN - 1] = 0;
        printf(";%s", b);
    }
    printf("\"\n");
    fflush(stdout);
}

int main(int argc, char **argv)
{
    options_t o;
    if (parse_options(argc, argv, &o) != 0)
        return 2;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &g_np);
    MPI_Comm_dup(MPI_COMM_WORLD, &ctl_comm);
    /* Errors of the measured calls are reported, not fatal. */
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);

    if (o.root >= g_np) {
        if (g_rank == 0)
            fprintf(stderr, "sharm_bench: root %d >= np %d\n", o.root, g_np);
        MPI_Finalize();
        return 2;
    }
    print_info(&o);
    if (!o.sync_osu)
        probe_init();
    if (o.counters)
        pv_init();

    run_state_t st = { .inject_mask = o.inject_mask, .reuse = o.reuse,
                       .sync_osu = o.sync_osu };
    int wrong = 0;
    /* --counters: one untimed call of every measured op first, so the
     * one-time set-up (segments, calibration, group tree, remapping) is
     * not counted against the first (op, size) measured. */
    if (o.counters)
        for (int op = 0; op < OP_COUNT; op++)
            if (o.ops_mask & (1u << op)) {
                ctx_t c = { .op = (enum op_id)op, .rank = g_rank, .np = g_np,
                            .root = o.root,
                            .bytes = op == OP_BARRIER ? 0 : o.sizes[0] };
                ctx_setup(&c);
                op_prepare(&c, 0);
                op_execute(&c);
                ctx_free(&c);
            }
    /* Barrier has no message size: measured once, reported as bytes=0. */
    if (o.ops_mask & (1u << OP_BARRIER))
        wrong |= measure(&o, OP_BARRIER, 0, &st);
    for (int s = 0; s < o.nsizes; s++)
        for (int op = 0; op < OP_BARRIER; op++)
            if (o.ops_mask & (1u << op))
                wrong |= measure(&o, (enum op_id)op, o.sizes[s], &st);

    if (o.counters) {
        /* before MPI_Finalize (the other order crashes Open MPI 4.1.4) */
        if (pv_on)
            MPI_T_pvar_session_free(&pv_session);
        MPI_T_finalize();
    }
    probe_free();
    MPI_Comm_free(&ctl_comm);
    MPI_Finalize();
    return wrong ? 1 : 0;
}
