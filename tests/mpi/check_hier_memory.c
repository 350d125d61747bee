/*
 * check_hier_memory.c: the memory a large hierarchical call takes across
 * nodes (scenario hier_memory).  Five calls of `--big` bytes (512 MiB by
 * default) per process, each through the hierarchy (its MPI_T counters
 * say so), each checked element by element, and each allowed to grow the
 * peak resident set by less than half its message: sharm stages such calls
 * in pieces of at most coll_sharm_hierarchy_piece_size (64 MiB by default:
 * about 128-192 MiB in all, whatever the message, so below 512 MiB the
 * limit is too tight for the default; a run with smaller pieces can use
 * smaller messages), where handling the whole message would take all of it
 * again (and did: an in-place Allgatherv of 8 GB per process across two
 * nodes was stopped by the OOM killer).
 *
 *   - an in-place Allgatherv of MPI_INT, equal counts, blocks adjacent;
 *   - an Allgather into a non-contiguous receive type (one int, then a
 *     4-byte hole), which sharm packs;
 *   - a Bcast from the last rank of the same non-contiguous type;
 *   - a Reduce to the last rank and an Allreduce of MPI_INT sums.
 */
#include "check_support.h"

/* One int followed by a 4-byte hole: a type sharm moves packed. */
static MPI_Datatype holey_int(void)
{
    MPI_Datatype t;
    MPI_CHECK(MPI_Type_create_resized(MPI_INT, 0, 2 * (MPI_Aint) sizeof(int), &t));
    MPI_CHECK(MPI_Type_commit(&t));
    return t;
}

static int value(uint64_t seed, int from, size_t i) { return (int) (seed + (uint64_t) from * 1000003u + i * 7u); }

/* Checks the resident-set growth since `mark` (peak_mark) of a call moving
 * `message` bytes per process, and reports it once; not for the small
 * calls that come first (`judged` 0), whose set-up costs more than they
 * move. */
static void memory_verdict(const char *what, long mark, size_t message, int judged)
{
    long grew = peak_growth(mark);
    if (!judged) return;
    long limit = (long) (message / 2 / 1024);
    if (grew > limit)
        die("%s: the peak resident set grew by %ld KiB over the call, more than %ld (the message is %zu KiB)",
            what, grew, limit, message / 1024);
    if (w_rank == 0) {
        printf(CHECK_NAME ": hierarchical %s of %zu KiB: peak resident set +%ld KiB (limit %ld)\n", what,
               message / 1024, grew, limit);
        fflush(stdout);
    }
}

static void allgatherv_in_place(const struct cinfo *c, size_t whole, uint64_t seed, int judged)
{
    const int me = c->rank, p = c->size;
    const size_t n = whole / sizeof(int) / (size_t) p;
    int *counts = xmalloc(sizeof(int) * (size_t) p), *displs = xmalloc(sizeof(int) * (size_t) p);
    for (int j = 0; j < p; ++j) {
        counts[j] = (int) n;
        displs[j] = (int) ((size_t) j * n);
    }
    int *buf = xmalloc(n * sizeof(int) * (size_t) p);
    for (int j = 0; j < p; ++j)
        for (size_t i = 0; i < n; ++i) buf[(size_t) j * n + i] = j == me ? value(seed, j, i) : -1;
    setctx(c, C_ALLGATHERV, "MPI_INT count=%zu per block, in place (memory check)", n);
    const unsigned long long bytes = (unsigned long long) n * sizeof(int) * (unsigned long long) p;
    enum expect e = expect_hier_call(c, (long long) bytes, EX_SERVE);
    struct snap s = pv_snap(C_ALLGATHERV);
    long mark = peak_mark(c->comm);
    MPI_CHECK(MPI_Allgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, buf, counts, displs, MPI_INT, c->comm));
    memory_verdict("in-place Allgatherv", mark, (size_t) bytes, judged);
    pv_check_full(C_ALLGATHERV, s, e, 0, hier_spanning(c, bytes));
    for (int j = 0; j < p; ++j)
        for (size_t i = 0; i < n; ++i)
            if (buf[(size_t) j * n + i] != value(seed, j, i))
                die("block %d, element %zu: %d, expected %d", j, i, buf[(size_t) j * n + i], value(seed, j, i));
    free(buf);
    free(counts);
    free(displs);
}

static void allgather_packed(const struct cinfo *c, size_t whole, uint64_t seed, int judged)
{
    const int me = c->rank, p = c->size;
    const size_t n = whole / sizeof(int) / (size_t) p;
    MPI_Datatype holey = holey_int();
    int *send = xmalloc(n * sizeof(int));
    for (size_t i = 0; i < n; ++i) send[i] = value(seed, me, i);
    /* Two ints per element: the value, then the hole (must stay as it was). */
    int *recv = xmalloc(2 * n * sizeof(int) * (size_t) p);
    for (size_t k = 0; k < 2 * n * (size_t) p; ++k) recv[k] = -7;
    setctx(c, C_ALLGATHER, "MPI_INT count=%zu into one int and a hole each (memory check)", n);
    const unsigned long long bytes = (unsigned long long) n * sizeof(int) * (unsigned long long) p;
    enum expect e = expect_hier_call(c, (long long) bytes, EX_SERVE);
    struct snap s = pv_snap(C_ALLGATHER);
    long mark = peak_mark(c->comm);
    MPI_CHECK(MPI_Allgather(send, (int) n, MPI_INT, recv, (int) n, holey, c->comm));
    memory_verdict("Allgather into a non-contiguous type", mark, (size_t) bytes, judged);
    pv_check_full(C_ALLGATHER, s, e, 0, hier_spanning(c, bytes));
    for (int j = 0; j < p; ++j)
        for (size_t i = 0; i < n; ++i) {
            size_t at = 2 * ((size_t) j * n + i);
            if (recv[at] != value(seed, j, i) || recv[at + 1] != -7)
                die("block %d, element %zu: %d (hole %d), expected %d (hole -7)", j, i, recv[at], recv[at + 1],
                    value(seed, j, i));
        }
    MPI_CHECK(MPI_Type_free(&holey));
    free(send);
    free(recv);
}

static void bcast_packed(const struct cinfo *c, size_t whole, uint64_t seed, int judged)
{
    const int me = c->rank, root = c->size - 1;
    const size_t n = whole / sizeof(int);
    MPI_Datatype holey = holey_int();
    int *buf = xmalloc(2 * n * sizeof(int));
    for (size_t i = 0; i < n; ++i) {
        buf[2 * i] = me == root ? value(seed, root, i) : -1;
        buf[2 * i + 1] = -7;
    }
    setctx(c, C_BCAST, "count=%zu of one int and a hole each, root=%d (memory check)", n, root);
    enum expect e = expect_bcast_reduce(c, (long) n, n * sizeof(int), EX_SERVE, 1);
    struct snap s = pv_snap(C_BCAST);
    long mark = peak_mark(c->comm);
    MPI_CHECK(MPI_Bcast(buf, (int) n, holey, root, c->comm));
    memory_verdict("Bcast of a non-contiguous type", mark, n * sizeof(int), judged);
    pv_check_full(C_BCAST, s, e, 0, hier_for(c, n * sizeof(int), 1));
    for (size_t i = 0; i < n; ++i)
        if (buf[2 * i] != value(seed, root, i) || buf[2 * i + 1] != -7)
            die("element %zu: %d (hole %d), expected %d (hole -7)", i, buf[2 * i], buf[2 * i + 1],
                value(seed, root, i));
    MPI_CHECK(MPI_Type_free(&holey));
    free(buf);
}

/* A Reduce (to the last rank) or an Allreduce of MPI_INT sums. */
static void sum_of_ints(const struct cinfo *c, size_t whole, uint64_t seed, int all, int judged)
{
    const int me = c->rank, p = c->size, root = p - 1;
    const size_t n = whole / sizeof(int);
    const enum coll kind = all ? C_ALLREDUCE : C_REDUCE;
    int *send = xmalloc(n * sizeof(int)), *recv = xmalloc(n * sizeof(int));
    for (size_t i = 0; i < n; ++i) {
        send[i] = value(seed, me, i) % 1000;
        recv[i] = -1;
    }
    setctx(c, kind, "MPI_INT count=%zu, MPI_SUM%s (memory check)", n, all ? "" : ", root=last");
    enum expect e = expect_bcast_reduce(c, (long) n, n * sizeof(int), EX_SERVE, 1);
    struct snap s = pv_snap(kind);
    long mark = peak_mark(c->comm);
    if (all)
        MPI_CHECK(MPI_Allreduce(send, recv, (int) n, MPI_INT, MPI_SUM, c->comm));
    else
        MPI_CHECK(MPI_Reduce(send, recv, (int) n, MPI_INT, MPI_SUM, root, c->comm));
    memory_verdict(all ? "Allreduce" : "Reduce", mark, n * sizeof(int), judged);
    pv_check_full(kind, s, e, 0, hier_for(c, n * sizeof(int), 1));
    for (size_t i = 0; all || me == root ? i < n : 0; ++i) {
        int want = 0;
        for (int j = 0; j < p; ++j) want += value(seed, j, i) % 1000;
        if (recv[i] != want) die("element %zu: %d, expected %d", i, recv[i], want);
    }
    free(send);
    free(recv);
}

void scenario_hier_memory(void)
{
    struct cinfo w = cinfo_of(MPI_COMM_WORLD);
    if (!w.multi_node || !w.hier) die("hier_memory needs processes on more than one node and the hierarchy on");
    const size_t whole = (size_t) opt_big_or(512L << 20);
    /* Small calls first: the hierarchy is built and the connections are
     * made before anything is measured. */
    allgatherv_in_place(&w, 4096, next_seed(), 0);
    allgather_packed(&w, 4096, next_seed(), 0);
    bcast_packed(&w, 4096, next_seed(), 0);
    sum_of_ints(&w, 4096, next_seed(), 0, 0);
    sum_of_ints(&w, 4096, next_seed(), 1, 0);
    allgatherv_in_place(&w, whole, next_seed(), 1);
    allgather_packed(&w, whole, next_seed(), 1);
    bcast_packed(&w, whole, next_seed(), 1);
    sum_of_ints(&w, whole, next_seed(), 0, 1);
    sum_of_ints(&w, whole, next_seed(), 1, 1);
    cinfo_free(&w);
}
