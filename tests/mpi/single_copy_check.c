/*
 * Checks sharm's single-copy (CMA) path: every collective it serves that way
 * (Bcast, Gather(v), Scatter(v), Allgather(v), Alltoall(v), Reduce,
 * Allreduce), with MPI_IN_PLACE, unequal v-counts, a non-contiguous datatype
 * on one side and a non-commutative operation.  Results are compared with
 * values computed here; the MPI_T counter coll_sharm_<op>_single_copy must
 * grow around every large call when argv[1] is "cma" and never when it is
 * "queues", and never for a small call (below the min size the tests set:
 * 4096 bytes).
 *
 *   single_copy_check cma|queues|any|crowded [undumpable|trials=T|landing_trials=T|...]
 *
 * ("trials=T": each collective whose path sharm learns from its first calls
 * is called 2T + 3 times; its counter must move in the single-copy trials
 * only (runs of two: calls 2, 3, 6, 7, ... below 2T), and from call 2T on
 * in all or none.  "trials=T,R": with
 * coll_sharm_single_copy_retry_after R, 2T + 1 + R + 2T + 3 times: the R
 * calls after the deciding one keep its path, then the class is tried
 * again as at first and decides again.  "landing_trials=T": the landing
 * trials, see test_landing_trials.)
 * ("any": results only, e.g. when a calibration chose the path; "crowded":
 * every Scatter, small ones included, and Alltoalls of 1 MiB blocks must
 * move the counter, the other operations are not checked: more processes
 * than cores, a min size below the small calls, and a calibration that may
 * have chosen either path.)
 *
 * "undumpable" makes every process non-dumpable before MPI_Init: without
 * CAP_SYS_PTRACE no peer may then read its memory (the refusal test).
 * Prints "single_copy_check: OK np=N mode=M" on success.
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>

#include "stderr_file.h"

static int rank, size, expect_cma, crowded, failures;
/* Crowded mode, around calls whose blocks reach sharm's crowded pull size
 * (1 MiB): their counter must move too. */
static int crowded_pulls;

#define CHECK(cond, ...)                                                                           \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "rank %d: ", rank);                                                    \
            fprintf(stderr, __VA_ARGS__);                                                          \
            fprintf(stderr, "\n");                                                                 \
            failures++;                                                                            \
        }                                                                                          \
    } while (0)

/* ---- MPI_T: coll_sharm_<op>_single_copy ---- */
static MPI_T_pvar_session session;

static MPI_T_pvar_handle pvar_named(const char *want)
{
    int n;
    MPI_T_pvar_get_num(&n);
    for (int i = 0; i < n; i++) {
        char name[256], desc[256];
        int nlen = sizeof(name), dlen = sizeof(desc), verb, cls, bind, ro, cont, atomic;
        MPI_Datatype dt;
        MPI_T_enum en;
        if (MPI_T_pvar_get_info(i, name, &nlen, &verb, &cls, &dt, &en, desc, &dlen, &bind, &ro,
                                &cont, &atomic) == MPI_SUCCESS &&
            strcmp(name, want) == 0) {
            MPI_T_pvar_handle h;
            int count;
            MPI_T_pvar_handle_alloc(session, i, NULL, &h, &count);
            return h;
        }
    }
    fprintf(stderr, "rank %d: no MPI_T variable %s (is sharm loaded?)\n", rank, want);
    MPI_Abort(MPI_COMM_WORLD, 2);
    return MPI_T_PVAR_HANDLE_NULL;
}

/* coll_sharm_<op>_<kind> */
static MPI_T_pvar_handle pvar_of(const char *op, const char *kind)
{
    char want[128];
    snprintf(want, sizeof(want), "coll_sharm_%s_%s", op, kind);
    return pvar_named(want);
}

/* coll_sharm_<op>_single_copy */
static MPI_T_pvar_handle pvar(const char *op) { return pvar_of(op, "single_copy"); }

static unsigned long long read_pvar(MPI_T_pvar_handle h)
{
    unsigned long long v = 0;
    MPI_T_pvar_read(session, h, &v);
    return v;
}

/* Runs `call` and checks the op's single-copy counter moved as expected. */
#define COUNTED(opname, large, call)                                                               \
    do {                                                                                           \
        MPI_T_pvar_handle h_ = pvar(opname);                                                       \
        unsigned long long before_ = read_pvar(h_);                                                \
        call;                                                                                      \
        unsigned long long moved_ = read_pvar(h_) - before_;                                       \
        int want_ = ((large) && expect_cma == 1) || crowded;                                       \
        int checked_ = crowded ? strcmp(opname, "scatter") == 0 || crowded_pulls : expect_cma >= 0; \
        CHECK(!checked_ || (want_ ? moved_ >= 1 : moved_ == 0),                                    \
              "%s (%s): single-copy counter moved by %llu", opname, (large) ? "large" : "small",   \
              moved_);                                                                             \
        MPI_T_pvar_handle_free(session, &h_);                                                      \
    } while (0)

static int val(int r, long i) { return (int) (r * 1000003L + i * 7 + 1); }

/* Elements for rank r in the v-variants: unequal, all large. */
static int vcount(int r, int n) { return n + r * 1237; }

/* Microseconds a Bcast's root spins before the call (0: none), so that
 * every other process is already waiting for its header: the "bcasts=N"
 * mode's tests need headers that readers spin for, and without the lag
 * which process arrived first was up to the scheduler (a reader that came
 * after the header timed none; in 1 run of 40, 2026-11-29, one process
 * timed too few of its peer's headers to report them). */
static int root_lag_us;

/* Spins (no sleep: the other processes must find us running, not waking)
 * for `us` microseconds. */
static void spin_for_us(int us)
{
    double until = MPI_Wtime() + us * 1e-6;
    while (MPI_Wtime() < until)
        ;
}

static void test_bcast(int n, int large)
{
    for (int root = 0; root < size; root++) {
        int *buf = malloc(sizeof(int) * n);
        for (int i = 0; i < n; i++)
            buf[i] = rank == root ? val(root, i) : -1;
        if (rank == root && root_lag_us > 0)
            spin_for_us(root_lag_us);
        COUNTED("bcast", large, MPI_Bcast(buf, n, MPI_INT, root, MPI_COMM_WORLD));
        for (int i = 0; i < n; i++)
            if (buf[i] != val(root, i)) {
                CHECK(0, "bcast n=%d root=%d: [%d] = %d", n, root, i, buf[i]);
                break;
            }
        free(buf);
    }
}

/* Bcast with a strided vector at the root and contiguous ints elsewhere:
 * the root's buffer is packed before it is offered. */
static void test_bcast_vector(int n)
{
    MPI_Datatype every_other;
    MPI_Type_vector(n, 1, 2, MPI_INT, &every_other);
    MPI_Type_commit(&every_other);
    int *buf = malloc(sizeof(int) * 2 * n);
    for (int i = 0; i < 2 * n; i++)
        buf[i] = rank == 0 ? (i % 2 ? -7 : val(0, i / 2)) : -1;
    if (rank == 0)
        COUNTED("bcast", 1, MPI_Bcast(buf, 1, every_other, 0, MPI_COMM_WORLD));
    else
        COUNTED("bcast", 1, MPI_Bcast(buf, n, MPI_INT, 0, MPI_COMM_WORLD));
    if (rank != 0)
        for (int i = 0; i < n; i++)
            if (buf[i] != val(0, i)) {
                CHECK(0, "bcast vector: [%d] = %d", i, buf[i]);
                break;
            }
    /* And the other way: contiguous root, strided receivers (unpacked
     * through the staging buffer). */
    for (int i = 0; i < 2 * n; i++)
        buf[i] = rank == 0 ? val(0, i) : -1;
    if (rank == 0)
        COUNTED("bcast", 1, MPI_Bcast(buf, n, MPI_INT, 0, MPI_COMM_WORLD));
    else
        COUNTED("bcast", 1, MPI_Bcast(buf, 1, every_other, 0, MPI_COMM_WORLD));
    if (rank != 0)
        for (int i = 0; i < 2 * n; i++) {
            int want = i % 2 ? -1 : val(0, i / 2);
            if (buf[i] != want) {
                CHECK(0, "bcast into vector: [%d] = %d, want %d", i, buf[i], want);
                break;
            }
        }
    free(buf);
    MPI_Type_free(&every_other);
}

static void test_gather(int n, int large, int in_place)
{
    int root = size - 1;
    int *mine = malloc(sizeof(int) * n), *all = malloc(sizeof(int) * n * size);
    for (int i = 0; i < n; i++)
        mine[i] = val(rank, i);
    for (long i = 0; i < (long) n * size; i++)
        all[i] = rank == root && in_place ? val((int) (i / n), i % n) : -1;
    const void *s = rank == root && in_place ? MPI_IN_PLACE : mine;
    COUNTED("gather", large, MPI_Gather(s, n, MPI_INT, all, n, MPI_INT, root, MPI_COMM_WORLD));
    if (rank == root)
        for (long i = 0; i < (long) n * size; i++)
            if (all[i] != val((int) (i / n), i % n)) {
                CHECK(0, "gather n=%d in_place=%d: [%ld] = %d", n, in_place, i, all[i]);
                break;
            }
    free(mine);
    free(all);
}

/* Gather with a strided vector on one side: senders' blocks packed before
 * they are written (or offered), then the root's places strided (written
 * into a private buffer and unpacked). */
static void test_gather_vector(int n)
{
    int root = 0;
    MPI_Datatype every_other, slot;
    MPI_Type_vector(n, 1, 2, MPI_INT, &every_other);
    MPI_Type_create_resized(every_other, 0, (MPI_Aint) sizeof(int) * 2 * n, &slot);
    MPI_Type_commit(&every_other);
    MPI_Type_commit(&slot);
    int *mine = malloc(sizeof(int) * 2 * n), *all = malloc(sizeof(int) * 2 * n * size);
    for (int i = 0; i < 2 * n; i++)
        mine[i] = i % 2 ? -7 : val(rank, i / 2);
    for (long i = 0; i < 2L * n * size; i++)
        all[i] = -1;
    COUNTED("gather", 1,
            MPI_Gather(mine, 1, every_other, all, n, MPI_INT, root, MPI_COMM_WORLD));
    if (rank == root)
        for (long i = 0; i < (long) n * size; i++)
            if (all[i] != val((int) (i / n), i % n)) {
                CHECK(0, "gather from vectors: [%ld] = %d", i, all[i]);
                break;
            }
    for (int i = 0; i < n; i++)
        mine[i] = val(rank, i);
    for (long i = 0; i < 2L * n * size; i++)
        all[i] = -1;
    COUNTED("gather", 1, MPI_Gather(mine, n, MPI_INT, all, 1, slot, root, MPI_COMM_WORLD));
    if (rank == root)
        for (long i = 0; i < 2L * n * size; i++) {
            long r = i / (2L * n), k = i % (2L * n);
            int want = k % 2 ? -1 : val((int) r, (int) (k / 2));
            if (all[i] != want) {
                CHECK(0, "gather into vectors: [%ld] = %d, want %d", i, all[i], want);
                break;
            }
        }
    free(mine);
    free(all);
    MPI_Type_free(&slot);
    MPI_Type_free(&every_other);
}

static void test_gatherv_scatterv(int n)
{
    int root = 1 % size, total = 0;
    int *counts = malloc(sizeof(int) * size), *displs = malloc(sizeof(int) * size);
    for (int r = 0; r < size; r++) {
        counts[r] = vcount(r, n);
        displs[r] = total + 3; /* gaps between blocks stay untouched */
        total += counts[r] + 3;
    }
    int *mine = malloc(sizeof(int) * counts[rank]), *all = malloc(sizeof(int) * total);
    for (int i = 0; i < counts[rank]; i++)
        mine[i] = val(rank, i);
    for (int i = 0; i < total; i++)
        all[i] = -5;
    COUNTED("gatherv", 1,
            MPI_Gatherv(mine, counts[rank], MPI_INT, all, counts, displs, MPI_INT, root,
                        MPI_COMM_WORLD));
    if (rank == root)
        for (int r = 0; r < size; r++)
            for (int i = 0; i < counts[r]; i++)
                if (all[displs[r] + i] != val(r, i)) {
                    CHECK(0, "gatherv: block %d [%d] = %d", r, i, all[displs[r] + i]);
                    r = size;
                    break;
                }
    /* Scatterv back, the root's own block in place. */
    for (int i = 0; i < counts[rank]; i++)
        mine[i] = rank == root ? val(rank, i) : -1;
    if (rank == root)
        for (int r = 0; r < size; r++)
            for (int i = 0; i < counts[r]; i++)
                all[displs[r] + i] = val(r, i) ^ 0x5a5a;
    void *rb = rank == root ? MPI_IN_PLACE : (void *) mine;
    COUNTED("scatterv", 1,
            MPI_Scatterv(all, counts, displs, MPI_INT, rb, counts[rank], MPI_INT, root,
                         MPI_COMM_WORLD));
    if (rank != root)
        for (int i = 0; i < counts[rank]; i++)
            if (mine[i] != (val(rank, i) ^ 0x5a5a)) {
                CHECK(0, "scatterv: [%d] = %d", i, mine[i]);
                break;
            }
    free(mine);
    free(all);
    free(counts);
    free(displs);
}

static void test_scatter(int n, int large)
{
    int root = 0;
    int *all = malloc(sizeof(int) * n * size), *mine = malloc(sizeof(int) * n);
    for (long i = 0; i < (long) n * size; i++)
        all[i] = val((int) (i / n), i % n) + 11;
    for (int i = 0; i < n; i++)
        mine[i] = -1;
    COUNTED("scatter", large, MPI_Scatter(all, n, MPI_INT, mine, n, MPI_INT, root, MPI_COMM_WORLD));
    for (int i = 0; i < n; i++)
        if (mine[i] != val(rank, i) + 11) {
            CHECK(0, "scatter n=%d: [%d] = %d", n, i, mine[i]);
            break;
        }
    free(all);
    free(mine);
}

static void test_allgather(int n, int large, int in_place, int v)
{
    int total = 0;
    int *counts = malloc(sizeof(int) * size), *displs = malloc(sizeof(int) * size);
    for (int r = 0; r < size; r++) {
        counts[r] = v ? vcount(r, n) : n;
        displs[r] = total;
        total += counts[r];
    }
    int *mine = malloc(sizeof(int) * counts[rank]), *all = malloc(sizeof(int) * total);
    for (int i = 0; i < counts[rank]; i++)
        mine[i] = val(rank, i);
    for (int r = 0; r < size; r++)
        for (int i = 0; i < counts[r]; i++)
            all[displs[r] + i] = in_place && r == rank ? val(r, i) : -1;
    const void *s = in_place ? MPI_IN_PLACE : mine;
    if (v)
        COUNTED("allgatherv", large,
                MPI_Allgatherv(s, counts[rank], MPI_INT, all, counts, displs, MPI_INT,
                               MPI_COMM_WORLD));
    else
        COUNTED("allgather", large,
                MPI_Allgather(s, n, MPI_INT, all, n, MPI_INT, MPI_COMM_WORLD));
    for (int r = 0; r < size; r++)
        for (int i = 0; i < counts[r]; i++)
            if (all[displs[r] + i] != val(r, i)) {
                CHECK(0, "allgather%s n=%d in_place=%d: block %d [%d] = %d", v ? "v" : "", n,
                      in_place, r, i, all[displs[r] + i]);
                r = size;
                break;
            }
    free(mine);
    free(all);
    free(counts);
    free(displs);
}

/* Block from s to d in the Alltoall(v) tests. */
static int a2a(int s, int d, int i) { return val(s, i) * 3 + d; }

static void test_alltoall(int n, int large, int in_place)
{
    int *sb = malloc(sizeof(int) * n * size), *rb = malloc(sizeof(int) * n * size);
    for (int d = 0; d < size; d++)
        for (int i = 0; i < n; i++) {
            sb[d * n + i] = a2a(rank, d, i);
            rb[d * n + i] = in_place ? a2a(rank, d, i) : -1;
        }
    COUNTED("alltoall", large,
            MPI_Alltoall(in_place ? MPI_IN_PLACE : sb, n, MPI_INT, rb, n, MPI_INT,
                         MPI_COMM_WORLD));
    for (int s = 0; s < size; s++)
        for (int i = 0; i < n; i++)
            if (rb[s * n + i] != a2a(s, rank, i)) {
                CHECK(0, "alltoall n=%d in_place=%d: from %d [%d] = %d", n, in_place, s, i,
                      rb[s * n + i]);
                s = size;
                break;
            }
    free(sb);
    free(rb);
}

static void test_alltoallv(int n)
{
    /* Pair (s, d) moves vcount(s + d, n) elements. */
    int *sc = malloc(sizeof(int) * size), *sd = malloc(sizeof(int) * size);
    int *rc = malloc(sizeof(int) * size), *rd = malloc(sizeof(int) * size);
    int st = 0, rt = 0;
    for (int r = 0; r < size; r++) {
        sc[r] = vcount(rank + r, n);
        sd[r] = st;
        st += sc[r];
        rc[r] = vcount(r + rank, n);
        rd[r] = rt;
        rt += rc[r];
    }
    int *sb = malloc(sizeof(int) * st), *rb = malloc(sizeof(int) * rt);
    for (int d = 0; d < size; d++)
        for (int i = 0; i < sc[d]; i++)
            sb[sd[d] + i] = a2a(rank, d, i);
    for (int i = 0; i < rt; i++)
        rb[i] = -1;
    COUNTED("alltoallv", 1,
            MPI_Alltoallv(sb, sc, sd, MPI_INT, rb, rc, rd, MPI_INT, MPI_COMM_WORLD));
    for (int s = 0; s < size; s++)
        for (int i = 0; i < rc[s]; i++)
            if (rb[rd[s] + i] != a2a(s, rank, i)) {
                CHECK(0, "alltoallv: from %d [%d] = %d", s, i, rb[rd[s] + i]);
                s = size;
                break;
            }
    free(sb);
    free(rb);
    free(sc);
    free(sd);
    free(rc);
    free(rd);
}

/* Affine maps x -> m·x + c composed: associative, not commutative.
 * inout = in ∘ inout (MPI's order: the left operand is `in`). */
static void compose(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    (void) dt;
    uint32_t *a = in, *b = inout;
    for (int i = 0; i < *len; i++) {
        uint32_t m = a[2 * i] * b[2 * i], c = a[2 * i] * b[2 * i + 1] + a[2 * i + 1];
        b[2 * i] = m;
        b[2 * i + 1] = c;
    }
}

/* MPI_Allreduce of n longs under MPI_MAX, in place and not. */
static void test_allreduce(int n, int large)
{
    long *sb = malloc(sizeof(long) * n), *rb = malloc(sizeof(long) * n);
    for (int in_place = 0; in_place < 2; in_place++) {
        for (int i = 0; i < n; i++) {
            sb[i] = val(rank, i);
            rb[i] = in_place ? val(rank, i) : -1;
        }
        COUNTED("allreduce", large,
                MPI_Allreduce(in_place ? MPI_IN_PLACE : sb, rb, n, MPI_LONG, MPI_MAX,
                              MPI_COMM_WORLD));
        for (int i = 0; i < n; i++)
            if (rb[i] != val(size - 1, i)) {
                CHECK(0, "allreduce n=%d in_place=%d: [%d] = %ld", n, in_place, i, rb[i]);
                break;
            }
    }
    free(sb);
    free(rb);
}

static void test_reductions(int n, int large)
{
    long *sb = malloc(sizeof(long) * n), *rb = malloc(sizeof(long) * n);
    for (int root = 0; root < size; root += size - 1 ? size - 1 : 1) {
        for (int in_place = 0; in_place < 2; in_place++) {
            for (int i = 0; i < n; i++) {
                sb[i] = val(rank, i);
                rb[i] = in_place && rank == root ? val(rank, i) : -1;
            }
            const void *s = in_place && rank == root ? MPI_IN_PLACE : sb;
            COUNTED("reduce", large, MPI_Reduce(s, rb, n, MPI_LONG, MPI_SUM, root, MPI_COMM_WORLD));
            if (rank == root)
                for (int i = 0; i < n; i++) {
                    long want = 0;
                    for (int r = 0; r < size; r++)
                        want += val(r, i);
                    if (rb[i] != want) {
                        CHECK(0, "reduce n=%d root=%d in_place=%d: [%d] = %ld, want %ld", n, root,
                              in_place, i, rb[i], want);
                        break;
                    }
                }
        }
    }
    free(sb);
    free(rb);
    test_allreduce(n, large);

    /* Non-commutative: pairs (m, c), composed in rank order. */
    MPI_Datatype pair;
    MPI_Type_contiguous(2, MPI_UINT32_T, &pair);
    MPI_Type_commit(&pair);
    MPI_Op op;
    MPI_Op_create(compose, 0, &op);
    uint32_t *x = malloc(8 * (size_t) n), *y = malloc(8 * (size_t) n), *z = malloc(8 * (size_t) n);
    for (int in_place = 0; in_place < 2; in_place++) {
        for (int i = 0; i < n; i++) {
            x[2 * i] = 2 * (uint32_t) val(rank, i) + 1;
            x[2 * i + 1] = (uint32_t) val(rank, i) ^ 77u;
            y[2 * i] = x[2 * i];
            y[2 * i + 1] = x[2 * i + 1];
        }
        COUNTED("allreduce", large,
                MPI_Allreduce(in_place ? MPI_IN_PLACE : x, y, n, pair, op, MPI_COMM_WORLD));
        /* To the last rank and to rank 0 (on two processes the non-root's
         * reduced slice then lies beside or over the root's operand in the
         * pair buffer, `coll::pair::reduced_at`), in place at the root in
         * the second pass. */
        int root = in_place ? 0 : size - 1;
        if (in_place && rank == root)
            memcpy(z, x, 8 * (size_t) n);
        else
            memset(z, 0, 8 * (size_t) n);
        COUNTED("reduce", large,
                MPI_Reduce(in_place && rank == root ? MPI_IN_PLACE : x, z, n, pair, op, root,
                           MPI_COMM_WORLD));
        for (int i = 0; i < n; i++) {
            /* x_0 ∘ (x_1 ∘ (... ∘ x_{p-1})), folded right to left. */
            uint32_t m = 2 * (uint32_t) val(size - 1, i) + 1,
                     c = (uint32_t) val(size - 1, i) ^ 77u;
            for (int r = size - 2; r >= 0; r--) {
                uint32_t am = 2 * (uint32_t) val(r, i) + 1, ac = (uint32_t) val(r, i) ^ 77u;
                uint32_t nm = am * m, nc = am * c + ac;
                m = nm;
                c = nc;
            }
            if (rank == root && (z[2 * i] != m || z[2 * i + 1] != c)) {
                CHECK(0, "non-commutative reduce n=%d root=%d in_place=%d: [%d] = (%u, %u), want "
                         "(%u, %u)",
                      n, root, in_place, i, z[2 * i], z[2 * i + 1], m, c);
                break;
            }
            if (y[2 * i] != m || y[2 * i + 1] != c) {
                CHECK(0, "non-commutative allreduce n=%d in_place=%d: [%d] = (%u, %u), want "
                         "(%u, %u)",
                      n, in_place, i, y[2 * i], y[2 * i + 1], m, c);
                break;
            }
        }
    }
    free(x);
    free(y);
    free(z);
    MPI_Op_free(&op);
    MPI_Type_free(&pair);
}

/* ---- "trials=T": the calls whose path sharm's trials learn ----
 * One call of each collective sharm tries both ways (`src/shm/trials.rs`),
 * N ints a block (at least the 256 KiB single-copy floor in all), root 0,
 * its result checked. */
enum { TRIAL_INTS = 70001 };
/* Ints a block in the calls tried: TRIAL_INTS, or more for the landing. */
static long trial_ints = TRIAL_INTS;

static void trial_bcast(void)
{
    int *buf = malloc(sizeof(int) * trial_ints);
    for (int i = 0; i < trial_ints; i++)
        buf[i] = rank == 0 ? val(0, i) : -1;
    MPI_Bcast(buf, trial_ints, MPI_INT, 0, MPI_COMM_WORLD);
    for (int i = 0; i < trial_ints; i++)
        if (buf[i] != val(0, i)) {
            CHECK(0, "trial bcast: [%d] = %d", i, buf[i]);
            break;
        }
    free(buf);
}

/* Reduce (`all` 0) or Allreduce (1) of MPI_SUM over every rank's val(r, i). */
static void trial_reduction(int all)
{
    int *in = malloc(sizeof(int) * trial_ints), *out = malloc(sizeof(int) * trial_ints);
    for (int i = 0; i < trial_ints; i++) {
        in[i] = val(rank, i);
        out[i] = -1;
    }
    if (all)
        MPI_Allreduce(in, out, trial_ints, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    else
        MPI_Reduce(in, out, trial_ints, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
    if (all || rank == 0)
        for (int i = 0; i < trial_ints; i++) {
            int want = 0;
            for (int r = 0; r < size; r++)
                want += val(r, i);
            if (out[i] != want) {
                CHECK(0, "trial %s: [%d] = %d, want %d", all ? "allreduce" : "reduce", i, out[i],
                      want);
                break;
            }
        }
    free(in);
    free(out);
}

static void trial_reduce(void) { trial_reduction(0); }
static void trial_allreduce(void) { trial_reduction(1); }

/* Gather (`kind` 0), Allgather (1), Scatter (2) or Alltoall (3): block r
 * of rank s holds val(s * size + r, i) where there are blocks per peer. */
static void trial_movement(int kind)
{
    long n = trial_ints;
    int *send = malloc(sizeof(int) * n * size), *recv = malloc(sizeof(int) * n * size);
    for (int r = 0; r < size; r++)
        for (long i = 0; i < n; i++) {
            send[r * n + i] = val(rank * size + r, i);
            recv[r * n + i] = -1;
        }
    switch (kind) {
    case 0: MPI_Gather(send, n, MPI_INT, recv, n, MPI_INT, 0, MPI_COMM_WORLD); break;
    case 1: MPI_Allgather(send, n, MPI_INT, recv, n, MPI_INT, MPI_COMM_WORLD); break;
    case 2: MPI_Scatter(send, n, MPI_INT, recv, n, MPI_INT, 0, MPI_COMM_WORLD); break;
    default: MPI_Alltoall(send, n, MPI_INT, recv, n, MPI_INT, MPI_COMM_WORLD); break;
    }
    /* Which sender's which block lands in our block r. */
    int blocks = kind == 2 ? 1 : (kind == 0 && rank != 0 ? 0 : size);
    for (int r = 0; r < blocks; r++) {
        int from = kind == 2 ? 0 : r, which = kind == 3 ? rank : (kind == 2 ? rank : 0);
        for (long i = 0; i < n; i++)
            if (recv[r * n + i] != val(from * size + which, i)) {
                CHECK(0, "trial %s: block %d [%ld] = %d", kind == 0 ? "gather" : kind == 1 ?
                      "allgather" : kind == 2 ? "scatter" : "alltoall", r, i, recv[r * n + i]);
                break;
            }
    }
    free(send);
    free(recv);
}

static void trial_gather(void) { trial_movement(0); }
static void trial_allgather(void) { trial_movement(1); }
static void trial_scatter(void) { trial_movement(2); }
static void trial_alltoall(void) { trial_movement(3); }

/* Which route trial call k of T a route takes, as sharm's trials order
 * them (`route_of` in src/shm/trials.rs), `paths` paths for each landing:
 * the cached routes first, then the non-temporal ones; within a landing
 * the paths in runs of two in turn, 0 0 1 1 0 0 1 1 ..., an odd T ending
 * 0 1.  Route = landing * paths + path. */
static int tried_route(int k, int T, int paths)
{
    int landing = k / (paths * T), within = k % (paths * T), paired = 2 * paths * (T / 2);
    int path = within < paired ? (within / 2) % paths : (within - paired) % paths;
    return landing * paths + path;
}

/* The two paths alone. */
static int tried_way(int k, int T) { return tried_route(k, T, 2); }

/* One round of trials in `moved` from call `first`: call first + k, k < 2T,
 * must go by single copy exactly when tried_way(k) is 1 (its counter
 * moves), and the `keep` calls after call first + 2T as the call before
 * them went, the path decided; except that every (T + 1)th call after the
 * verdict may change it: it checks the verdict on the T calls before it
 * (`Check` in src/shm/trials.rs). */
static void check_round(const char *opname, const int *moved, int first, int T, int keep)
{
    for (int k = 0; k < 2 * T; k++)
        CHECK(moved[first + k] == tried_way(k, T), "%s call %d: single copy %d, but trials take "
              "the queues and single copy in runs of two", opname, first + k, moved[first + k]);
    int decided = first + 2 * T;
    for (int k = decided + 1; k <= decided + keep; k++)
        CHECK((k - decided) % (T + 1) == 0 || moved[k] == moved[k - 1],
              "%s call %d: single copy %d after call %d (verdict at call %d) went %d", opname, k,
              moved[k], k - 1, decided, moved[k - 1]);
}

/* The calls of `one`: without retries (R 0) 3T + 3, checked as one round
 * (the verdict checked on the T calls after it, at call 3T + 1); with
 * them, a round that keeps its path for R calls, then a second round
 * (tried again) that keeps it for 2. */
static void tried(const char *opname, int T, int R, void (*one)(void))
{
    enum { MOST = 200 };
    int calls = R > 0 ? 2 * T + 1 + R + 2 * T + 3 : 3 * T + 3, moved[MOST];
    if (calls > MOST) {
        CHECK(0, "trials=%d,%d: at most %d calls", T, R, MOST);
        return;
    }
    MPI_T_pvar_handle h = pvar(opname);
    for (int k = 0; k < calls; k++) {
        unsigned long long before = read_pvar(h);
        one();
        moved[k] = read_pvar(h) != before;
    }
    MPI_T_pvar_handle_free(session, &h);
    if (R == 0) {
        check_round(opname, moved, 0, T, T + 2);
        return;
    }
    check_round(opname, moved, 0, T, R);
    check_round(opname, moved, 2 * T + 1 + R, T, 2);
}

static void test_trials(int T, int R)
{
    tried("bcast", T, R, trial_bcast);
    tried("reduce", T, R, trial_reduce);
    tried("allreduce", T, R, trial_allreduce);
    tried("gather", T, R, trial_gather);
    tried("scatter", T, R, trial_scatter);
    tried("allgather", T, R, trial_allgather);
    tried("alltoall", T, R, trial_alltoall);
}

/* ---- "landing_trials=T[,cma]": the landing trials (`src/shm/trials.rs`) ----
 * Each of the collectives whose copies into receive buffers sharm times
 * both ways, of at least 2 MiB in all, is called R T + 3 times, R the
 * routes tried: under coll_sharm_single_copy none the two landings (R 2:
 * cached, non-temporal); with ",cma", under auto with single copy
 * permitted, each landing on each path (R 4: the queues cached, single
 * copy cached, the queues non-temporal, single copy non-temporal), in the
 * order of tried_route.  Around each call the counter
 * coll_sharm_nontemporal_bytes must grow by nothing on a cached route, by
 * what this process copies into its receive buffer (`lands`) on the
 * queues non-temporal, and by at most that on single copy non-temporal
 * (the pulls are the kernel's copies); coll_sharm_<op>_single_copy must
 * move exactly on the single-copy routes.  From call R T on, every call
 * as that one went. */
enum { LANDING_TRIAL_INTS = 600000 };

static void landing_tried(const char *opname, int T, int routes, void (*one)(void),
                          long long lands)
{
    enum { MOST = 200 };
    int calls = routes * T + 3;
    unsigned long long grew[MOST];
    int moved[MOST];
    if (calls > MOST) {
        CHECK(0, "landing trials=%d: at most %d calls", T, MOST);
        return;
    }
    MPI_T_pvar_handle h = pvar_named("coll_sharm_nontemporal_bytes"), single = pvar(opname);
    for (int k = 0; k < calls; k++) {
        unsigned long long before = read_pvar(h), single_before = read_pvar(single);
        one();
        grew[k] = read_pvar(h) - before;
        moved[k] = read_pvar(single) != single_before;
    }
    MPI_T_pvar_handle_free(session, &h);
    MPI_T_pvar_handle_free(session, &single);
    for (int k = 0; k < routes * T; k++) {
        int paths = routes / 2, way = tried_route(k, T, paths);
        int streamed = way >= paths, by_single = paths == 2 && way % 2;
        unsigned long long most = streamed ? (unsigned long long) lands : 0;
        int ok = by_single ? grew[k] <= most : grew[k] == most;
        CHECK(ok, "%s call %d (route %d of %d): %llu bytes landed non-temporally, want %s%llu",
              opname, k, way, routes, grew[k], by_single ? "at most " : "", most);
        CHECK(moved[k] == by_single, "%s call %d (route %d of %d): single copy %d", opname, k,
              way, routes, moved[k]);
    }
    int decided = routes * T;
    for (int k = decided; k < calls; k++)
        CHECK(grew[k] == grew[decided] && moved[k] == moved[decided],
              "%s call %d: %llu bytes landed non-temporally, single copy %d, after call %d "
              "decided %llu and %d", opname, k, grew[k], moved[k], decided, grew[decided],
              moved[decided]);
}

static void test_landing_trials(int T, int routes)
{
    trial_ints = LANDING_TRIAL_INTS;
    long long block = (long long) trial_ints * (long long) sizeof(int), all = block * size;
    landing_tried("bcast", T, routes, trial_bcast, rank == 0 ? 0 : block);
    landing_tried("gather", T, routes, trial_gather, rank == 0 ? all : 0);
    landing_tried("scatter", T, routes, trial_scatter, block);
    landing_tried("allgather", T, routes, trial_allgather, all);
    landing_tried("alltoall", T, routes, trial_alltoall, all);
}

/* "pair_streams": two processes only.  Rounds of a Bcast of 1 MiB + 4 KiB
 * from rank 0, then at once an Allgather of 128 KiB blocks and a second such
 * Bcast.  Rank 0 sends contiguous ints; rank 1 receives them as a vector
 * of stride 2, whose unpacking trails the root: the root of a Bcast
 * through the pair buffer's ring returns before its reader has read the
 * ring, and must not write the halves again (the Allgather's fill, the
 * next Bcast's chunks) until the reader has.  Each round ends with a Gather
 * (even rounds) or Gatherv (odd) of 256 KiB + 513 ints to rank round % 2,
 * which the root receives as vectors of stride 2, in place every fourth
 * round: the other's block streams through the same ring, its writer
 * being the non-root, whose next stream or exchange (the next round's
 * Bcast or Allgather) must wait for the root's trailing read in turn; then
 * a Scatter as large, through the same ring, and a Reduce as large,
 * streamed the same way.  Every value is checked. */
static void pair_streams_rooted(int round)
{
    const int gn = (1 << 16) + 513, ext = 2 * gn - 1; /* the vector's extent, in ints */
    int root = round % 2, in_place = round % 4 >= 2;
    int *send = malloc(sizeof(int) * (size_t) gn), *recv = calloc(2 * (size_t) ext + 1, sizeof(int));
    int counts[2] = {1, 1}, displs[2] = {0, 1};
    MPI_Datatype vec;
    MPI_Type_vector(gn, 1, 2, MPI_INT, &vec);
    MPI_Type_commit(&vec);
    for (int i = 0; i < gn; i++)
        send[i] = val(1000 + 2 * round + rank, i);
    if (rank == root && in_place)
        for (int i = 0; i < gn; i++)
            recv[rank * ext + 2 * i] = send[i];
    const void *sbuf = rank == root && in_place ? MPI_IN_PLACE : (const void *) send;
    if (round % 2 == 0)
        MPI_Gather(sbuf, gn, MPI_INT, recv, 1, vec, root, MPI_COMM_WORLD);
    else
        MPI_Gatherv(sbuf, gn, MPI_INT, recv, counts, displs, vec, root, MPI_COMM_WORLD);
    if (rank == root)
        for (int r = 0; r < 2; r++)
            for (int i = 0; i < gn; i++)
                if (recv[r * ext + 2 * i] != val(1000 + 2 * round + r, i)) {
                    CHECK(0, "pair streams: Gather%s %d (root %d%s): block %d [%d] = %d, want %d",
                          round % 2 ? "v" : "", round, root, in_place ? ", in place" : "", r, i,
                          recv[r * ext + 2 * i], val(1000 + 2 * round + r, i));
                    break;
                }
    /* A Scatter of blocks as large from the same root, through the same
     * ring: each process's block must be its own. */
    if (rank == root)
        for (int r = 0; r < 2; r++)
            for (int i = 0; i < gn; i++)
                recv[r * gn + i] = val(3000 + 2 * round + r, i);
    MPI_Scatter(recv, gn, MPI_INT, send, gn, MPI_INT, root, MPI_COMM_WORLD);
    for (int i = 0; i < gn; i++)
        if (send[i] != val(3000 + 2 * round + rank, i)) {
            CHECK(0, "pair streams: Scatter %d (root %d): [%d] = %d, want %d", round, root, i, send[i],
                  val(3000 + 2 * round + rank, i));
            break;
        }
    /* A Reduce of as many ints, streamed the same way and combined as it
     * arrives: MPI_SUM in odd rounds, the non-commutative `compose` on
     * pairs of ints in even rounds (gn / 2 of them), in place in rounds 2
     * and 3 of every four, to rank (round / 4) % 2, so that each operation
     * meets each root in place and not.  The root's operand is its own
     * input, in rank order with the other's. */
    int rroot = (round / 4) % 2;
    uint32_t *in = (uint32_t *) send, *out = (uint32_t *) recv;
    for (int i = 0; i < gn; i++)
        in[i] = (uint32_t) val(5000 + 2 * round + rank, i);
    if (rank == rroot && in_place)
        memcpy(out, in, sizeof(uint32_t) * (size_t) gn);
    const void *rsrc = rank == rroot && in_place ? MPI_IN_PLACE : (const void *) in;
    MPI_Datatype pair;
    MPI_Op op;
    MPI_Type_contiguous(2, MPI_UINT32_T, &pair);
    MPI_Type_commit(&pair);
    MPI_Op_create(compose, 0, &op);
    if (round % 2)
        MPI_Reduce(rsrc, out, gn, MPI_UINT32_T, MPI_SUM, rroot, MPI_COMM_WORLD);
    else
        MPI_Reduce(rsrc, out, gn / 2, pair, op, rroot, MPI_COMM_WORLD);
    if (rank == rroot)
        for (int i = 0; i < (round % 2 ? gn : gn / 2 * 2); i++) {
            uint32_t a = (uint32_t) val(5000 + 2 * round, i), b = (uint32_t) val(5000 + 2 * round + 1, i), want;
            if (round % 2)
                want = a + b;
            else if (i % 2 == 0) /* m0 * m1 */
                want = a * b;
            else /* m0 * c1 + c0: x0 ∘ x1 */
                want = (uint32_t) val(5000 + 2 * round, i - 1) * b + a;
            if (out[i] != want) {
                CHECK(0, "pair streams: Reduce %d (root %d%s, %s): [%d] = %u, want %u", round, rroot,
                      in_place ? ", in place" : "", round % 2 ? "sum" : "compose", i, out[i], want);
                break;
            }
        }
    MPI_Op_free(&op);
    MPI_Type_free(&pair);
    MPI_Type_free(&vec);
    free(send);
    free(recv);
}

/* Streams of 64 KiB to below 256 KiB go round the pair buffer's ring, each
 * starting where the last one ended; a root may rewrite a slot only once
 * its reader has read what the slot held.  Twelve Bcasts in a row from
 * rank 0 (1.6 MB, more than the 1 MiB ring) of 65,588 and 200,000 bytes:
 * the reader unpacks into a vector of stride 2 and checks each call, so it
 * trails, and the root comes round to slots it has not read yet.  Then two
 * from rank 1 (a root that was just a reader writes the slots it read),
 * a Gather of 100,000 bytes to rank `round % 2` (written
 * by the other) and a Scatter as large from it (written by it, read into a
 * vector), and eight Bcasts from rank 0, each after an Allgather of
 * 96 KiB blocks that rank 1 unpacks as a vector: an exchange the other may
 * still be reading when the next stream enters the half rank 0 filled,
 * wherever the last stream left the ring.
 * Every value is checked. */
static void pair_short_streams(int round)
{
    enum { SMALL = 16397, LARGE = 50000, GATHERED = 25000, BLK = 24576 };
    int *buf = malloc(sizeof(int) * 2 * LARGE), *mine = malloc(sizeof(int) * BLK);
    int *all = malloc(sizeof(int) * 4 * BLK);
    MPI_Datatype small_vec, large_vec, gather_vec, blk_vec;
    MPI_Type_vector(SMALL, 1, 2, MPI_INT, &small_vec);
    MPI_Type_vector(LARGE, 1, 2, MPI_INT, &large_vec);
    MPI_Type_vector(GATHERED, 1, 2, MPI_INT, &gather_vec);
    MPI_Type_vector(BLK, 1, 2, MPI_INT, &blk_vec);
    MPI_Type_commit(&small_vec);
    MPI_Type_commit(&large_vec);
    MPI_Type_commit(&gather_vec);
    MPI_Type_commit(&blk_vec);
    for (int call = 0; call < 22; call++) {
        int n = call % 2 ? LARGE : SMALL, root = call == 12 || call == 13 ? 1 : 0;
        int tag = 7000 + 32 * round + call;
        if (call == 14) {
            /* the Gather, between the two runs of Bcasts */
            int groot = round % 2;
            for (int i = 0; i < GATHERED; i++)
                buf[i] = val(tag + rank, i);
            int *got = calloc(4 * (size_t) GATHERED, sizeof(int));
            MPI_Gather(buf, GATHERED, MPI_INT, got, 1, gather_vec, groot, MPI_COMM_WORLD);
            if (rank == groot)
                for (int r = 0; r < 2; r++)
                    for (int i = 0; i < GATHERED; i++)
                        if (got[r * (2 * GATHERED - 1) + 2 * i] != val(tag + r, i)) {
                            CHECK(0, "pair short streams: Gather %d (root %d): block %d [%d]", round, groot, r, i);
                            break;
                        }
            free(got);
            /* a Scatter of 100,000-byte blocks from the same root, which
             * the other receives as a vector (it trails), then the Bcasts */
            int *blocks = malloc(sizeof(int) * 2 * GATHERED), *mine_s = calloc(2 * (size_t) GATHERED, sizeof(int));
            if (rank == groot)
                for (int r = 0; r < 2; r++)
                    for (int i = 0; i < GATHERED; i++)
                        blocks[r * GATHERED + i] = val(tag + 4 + r, i);
            if (rank == groot)
                MPI_Scatter(blocks, GATHERED, MPI_INT, mine_s, GATHERED, MPI_INT, groot, MPI_COMM_WORLD);
            else
                MPI_Scatter(blocks, GATHERED, MPI_INT, mine_s, 1, gather_vec, groot, MPI_COMM_WORLD);
            for (int i = 0; i < GATHERED; i++) {
                int got_v = rank == groot ? mine_s[i] : mine_s[2 * i];
                if (got_v != val(tag + 4 + rank, i)) {
                    CHECK(0, "pair short streams: Scatter %d (root %d): [%d] = %d", round, groot, i, got_v);
                    break;
                }
            }
            free(blocks);
            free(mine_s);
        }
        if (rank == root)
            for (int i = 0; i < n; i++)
                buf[i] = val(tag, i);
        if (call >= 14) {
            /* an Allgather right before each of the last Bcasts, checked
             * after it: rank 0 goes on to the Bcast at once */
            for (int i = 0; i < BLK; i++)
                mine[i] = val(tag + 2 + rank, i);
            memset(all, 0, sizeof(int) * 4 * BLK);
            if (rank == 1)
                MPI_Allgather(mine, BLK, MPI_INT, all, 1, blk_vec, MPI_COMM_WORLD);
            else
                MPI_Allgather(mine, BLK, MPI_INT, all, BLK, MPI_INT, MPI_COMM_WORLD);
        }
        if (rank == root) {
            MPI_Bcast(buf, n, MPI_INT, root, MPI_COMM_WORLD);
        } else {
            memset(buf, 0, sizeof(int) * 2 * (size_t) n);
            MPI_Bcast(buf, 1, n == LARGE ? large_vec : small_vec, root, MPI_COMM_WORLD);
            for (int i = 0; i < n; i++)
                if (buf[2 * i] != val(tag, i)) {
                    CHECK(0, "pair short streams: Bcast %d.%d (root %d, %d ints): [%d] = %d, want %d", round,
                          call, root, n, i, buf[2 * i], val(tag, i));
                    break;
                }
        }
        if (call >= 14)
            for (int r = 0; r < 2; r++)
                for (int i = 0; i < BLK; i++) {
                    int got_v = rank == 1 ? all[r * (2 * BLK - 1) + 2 * i] : all[r * BLK + i];
                    if (got_v != val(tag + 2 + r, i)) {
                        CHECK(0, "pair short streams: Allgather %d.%d: block %d [%d] = %d", round, call, r, i,
                              got_v);
                        break;
                    }
                }
    }
    MPI_Type_free(&small_vec);
    MPI_Type_free(&large_vec);
    MPI_Type_free(&gather_vec);
    MPI_Type_free(&blk_vec);
    free(buf);
    free(mine);
    free(all);
}

static void test_pair_streams(void)
{
    const int n = (1 << 18) + 1024, blk = 1 << 15;
    int *msg = malloc(sizeof(int) * (size_t) n), *strided = malloc(sizeof(int) * 2 * (size_t) n);
    int *mine = malloc(sizeof(int) * blk), *all = malloc(sizeof(int) * 2 * (size_t) blk);
    MPI_Datatype vec;
    MPI_Type_vector(n, 1, 2, MPI_INT, &vec);
    MPI_Type_commit(&vec);
    for (int round = 0; round < 60; round++) {
        for (int call = 0; call < 2; call++) {
            int tag = 2 * round + call;
            if (rank == 0) {
                for (int i = 0; i < n; i++)
                    msg[i] = val(tag, i);
                MPI_Bcast(msg, n, MPI_INT, 0, MPI_COMM_WORLD);
            } else {
                memset(strided, 0, sizeof(int) * 2 * (size_t) n);
                MPI_Bcast(strided, 1, vec, 0, MPI_COMM_WORLD);
                for (int i = 0; i < n; i++)
                    if (strided[2 * i] != val(tag, i)) {
                        CHECK(0, "pair streams: Bcast %d: [%d] = %d, want %d", tag, i, strided[2 * i],
                              val(tag, i));
                        break;
                    }
            }
            if (call == 1) {
                pair_streams_rooted(round);
                pair_short_streams(round);
                break;
            }
            for (int i = 0; i < blk; i++)
                mine[i] = -val(rank + 2 * round, i);
            MPI_Allgather(mine, blk, MPI_INT, all, blk, MPI_INT, MPI_COMM_WORLD);
            for (int r = 0; r < 2; r++)
                for (int i = 0; i < blk; i++)
                    if (all[r * blk + i] != -val(r + 2 * round, i)) {
                        CHECK(0, "pair streams: Allgather %d: block %d [%d] = %d", round, r, i,
                              all[r * blk + i]);
                        break;
                    }
        }
    }
    MPI_Type_free(&vec);
    free(msg);
    free(strided);
    free(mine);
    free(all);
}

/* Runs `call` and checks that coll_sharm_<opname>_pair_buffer grew by one in
 * this process when `want` (the call goes through the pair buffer) and by
 * nothing otherwise; values are checked by the caller. */
#define PAIRED(opname, want, call)                                                                 \
    do {                                                                                           \
        MPI_T_pvar_handle h_ = pvar_of(opname, "pair_buffer");                                     \
        unsigned long long before_ = read_pvar(h_);                                                \
        call;                                                                                      \
        unsigned long long moved_ = read_pvar(h_) - before_;                                       \
        CHECK(moved_ == ((want) ? 1u : 0u), "%s: pair-buffer counter moved by %llu, want %d",     \
              opname, moved_, (want) ? 1 : 0);                                                     \
        MPI_T_pvar_handle_free(session, &h_);                                                      \
    } while (0)

/* test_pair_counters' exchanges of `small` ints a block (Allgather(v),
 * Alltoall(v)) or a vector (Allreduce, Reduce to rank 1), each checked to
 * count once when `paired`, and not at all otherwise, and every value. */
static void pair_counter_exchanges(int small, int paired, int *a, int *b)
{
    int counts[2] = {small, small}, displs[2] = {0, small};
    int root = 1, other = 1 - rank;

    for (int i = 0; i < small; i++)
        a[i] = val(20 + rank, i);
    PAIRED("allgather", paired, MPI_Allgather(a, small, MPI_INT, b, small, MPI_INT, MPI_COMM_WORLD));
    PAIRED("allgatherv", paired,
           MPI_Allgatherv(a, small, MPI_INT, b + 2 * small, counts, displs, MPI_INT,
                          MPI_COMM_WORLD));
    for (int i = 0; i < 2 * small; i++)
        if (b[i] != val(20 + i / small, i % small) || b[2 * small + i] != b[i]) {
            CHECK(0, "pair counters: Allgather(v) of %d [%d] = %d / %d", small, i, b[i],
                  b[2 * small + i]);
            break;
        }

    for (int i = 0; i < 2 * small; i++)
        a[i] = val(30 + rank, i);
    PAIRED("alltoall", paired, MPI_Alltoall(a, small, MPI_INT, b, small, MPI_INT, MPI_COMM_WORLD));
    PAIRED("alltoallv", paired,
           MPI_Alltoallv(a, counts, displs, MPI_INT, b + 2 * small, counts, displs, MPI_INT,
                         MPI_COMM_WORLD));
    for (int i = 0; i < small; i++) {
        int want_own = val(30 + rank, rank * small + i), want_other = val(30 + other, rank * small + i);
        int *got = b + rank * small, *got_other = b + other * small;
        if (got[i] != want_own || got_other[i] != want_other || b[2 * small + i] != b[i] ||
            b[3 * small + i] != b[small + i]) {
            CHECK(0, "pair counters: Alltoall(v) of %d [%d] = %d / %d", small, i, got[i],
                  got_other[i]);
            break;
        }
    }

    for (int i = 0; i < small; i++)
        a[i] = val(rank, i) % 1000;
    PAIRED("allreduce", paired, MPI_Allreduce(a, b, small, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
    PAIRED("reduce", paired, MPI_Reduce(a, b + small, small, MPI_INT, MPI_SUM, root,
                                        MPI_COMM_WORLD));
    for (int i = 0; i < small; i++)
        if (b[i] != val(0, i) % 1000 + val(1, i) % 1000 ||
            (rank == root && b[small + i] != b[i])) {
            CHECK(0, "pair counters: Allreduce / Reduce of %d [%d] = %d", small, i, b[i]);
            break;
        }
}

/* An Allgather and an Alltoall of `n` ints a block in which rank 0 sends
 * through a strided vector, rank 1 contiguous ints (one type signature):
 * the short paths of coll::small look at a process's own send layout, so
 * that the two processes would go different ways if the pair buffer's
 * decision did too.  Counted once when `paired`, every value checked. */
static void pair_mixed_layouts(int n, int paired, int *a, int *b)
{
    MPI_Datatype strided;
    MPI_Type_vector(n, 1, 2, MPI_INT, &strided);
    MPI_Type_commit(&strided);
    /* Where element i of block k of our send buffer is. */
    const int stride = rank == 0 ? 2 : 1, extent = rank == 0 ? 2 * n - 1 : n;
    MPI_Datatype stype = rank == 0 ? strided : MPI_INT;
    const int scount = rank == 0 ? 1 : n;

    for (int i = 0; i < n; i++)
        a[i * stride] = val(40 + rank, i);
    PAIRED("allgather", paired, MPI_Allgather(a, scount, stype, b, n, MPI_INT, MPI_COMM_WORLD));
    for (int i = 0; i < 2 * n; i++)
        if (b[i] != val(40 + i / n, i % n)) {
            CHECK(0, "pair counters: mixed-layout Allgather of %d [%d] = %d", n, i, b[i]);
            break;
        }

    for (int k = 0; k < 2; k++)
        for (int i = 0; i < n; i++)
            a[k * extent + i * stride] = val(50 + 2 * rank + k, i);
    PAIRED("alltoall", paired, MPI_Alltoall(a, scount, stype, b, n, MPI_INT, MPI_COMM_WORLD));
    for (int i = 0; i < 2 * n; i++)
        if (b[i] != val(50 + 2 * (i / n) + rank, i % n)) {
            CHECK(0, "pair counters: mixed-layout Alltoall of %d [%d] = %d", n, i, b[i]);
            break;
        }
    MPI_Type_free(&strided);
}

/* "pair_counters=0|1": one call of each operation that the pair buffer
 * serves on two processes at a size it takes (1: it is there, so each
 * counts once in every process; 0: no pair buffer, none counts), and an
 * 8-byte Bcast, which stays on the queues either way.  Every value is
 * checked: the counters must follow the route, not the result. */
static void test_pair_counters(int paired)
{
    const int big = 25000; /* 100,000-byte blocks: the ring, going round */
    const int small = 1024; /* 4 KiB blocks and vectors: the halves */
    const int reduced = 80000; /* 320,000-byte vectors: the Reduce's ring */
    int *a = malloc(sizeof(int) * 2 * reduced), *b = malloc(sizeof(int) * 2 * reduced);
    int root = 1;

    for (int i = 0; i < big; i++)
        a[i] = val(7, i);
    PAIRED("bcast", paired, MPI_Bcast(a, big, MPI_INT, root, MPI_COMM_WORLD));
    for (int i = 0; i < big; i++)
        if (a[i] != val(7, i)) {
            CHECK(0, "pair counters: Bcast [%d] = %d", i, a[i]);
            break;
        }
    PAIRED("bcast", 0, MPI_Bcast(a, 2, MPI_INT, root, MPI_COMM_WORLD));

    for (int i = 0; i < big; i++)
        a[i] = val(rank, i);
    PAIRED("gather", paired, MPI_Gather(a, big, MPI_INT, b, big, MPI_INT, root, MPI_COMM_WORLD));
    if (rank == root)
        for (int i = 0; i < 2 * big; i++)
            if (b[i] != val(i / big, i % big)) {
                CHECK(0, "pair counters: Gather [%d] = %d", i, b[i]);
                break;
            }

    for (int i = 0; i < 2 * big; i++)
        a[i] = val(10 + i / big, i % big);
    PAIRED("scatter", paired, MPI_Scatter(a, big, MPI_INT, b, big, MPI_INT, root, MPI_COMM_WORLD));
    for (int i = 0; i < big; i++)
        if (b[i] != val(10 + rank, i)) {
            CHECK(0, "pair counters: Scatter [%d] = %d", i, b[i]);
            break;
        }

    /* The halves: 4 KiB, 512 B and 36 B, the least they take
     * (coll::pair::MIN_BYTES); 32 B fit a queue slot's header line, and
     * stay on the queues. */
    const int exchanged[][2] = {{small, paired}, {128, paired}, {9, paired}, {8, 0}};
    for (int k = 0; k < 4; k++) {
        pair_counter_exchanges(exchanged[k][0], exchanged[k][1], a, b);
        pair_mixed_layouts(exchanged[k][0], exchanged[k][1], a, b);
    }
    for (int i = 0; i < reduced; i++)
        a[i] = val(rank, i) % 1000;
    PAIRED("reduce", paired, MPI_Reduce(a, b, reduced, MPI_INT, MPI_SUM, root, MPI_COMM_WORLD));
    if (rank == root)
        for (int i = 0; i < reduced; i++)
            if (b[i] != val(0, i) % 1000 + val(1, i) % 1000) {
                CHECK(0, "pair counters: Reduce of %d [%d] = %d", reduced, i, b[i]);
                break;
            }
    free(a);
    free(b);
}

/* Checks sums of val(r, i) % 1000 over every process r (`holds`: this
 * process has them; `what` names the call in the message). */
static void check_sums(const int *sums, int n, int holds, const char *what)
{
    for (int i = 0; holds && i < n; i++) {
        int want = 0;
        for (int r = 0; r < size; r++)
            want += val(r, i) % 1000;
        if (sums[i] != want) {
            CHECK(0, "%s [%d] = %d, want %d", what, i, sums[i], want);
            break;
        }
    }
}

/* "pair_hier": with coll_sharm_hierarchy on, a Bcast of 100,000 bytes and
 * a Reduce of 320,000 (sums of ints) go through the hierarchy, whose groups
 * of two (two processes on one node, or two per simulated node) stream them
 * through their own pair buffer's ring: each must count once as
 * hierarchical and once as through a pair buffer; an 8-byte Bcast (the
 * groups' queues) as hierarchical only.  Every value is checked. */
static void test_pair_hier(void)
{
    const int n = 25000, reduced = 80000, root = 1;
    int *a = malloc(sizeof(int) * reduced), *b = malloc(sizeof(int) * reduced);
    MPI_T_pvar_handle hb = pvar_of("bcast", "hierarchical"), hr = pvar_of("reduce", "hierarchical");
    unsigned long long before;

    for (int i = 0; i < n; i++)
        a[i] = rank == root ? val(3, i) : -1;
    before = read_pvar(hb);
    PAIRED("bcast", 1, MPI_Bcast(a, n, MPI_INT, root, MPI_COMM_WORLD));
    CHECK(read_pvar(hb) - before == 1, "pair_hier: the Bcast of %d ints was not hierarchical", n);
    for (int i = 0; i < n; i++)
        if (a[i] != val(3, i)) {
            CHECK(0, "pair_hier: Bcast [%d] = %d", i, a[i]);
            break;
        }
    before = read_pvar(hb);
    PAIRED("bcast", 0, MPI_Bcast(a, 2, MPI_INT, root, MPI_COMM_WORLD));
    CHECK(read_pvar(hb) - before == 1, "pair_hier: the Bcast of 2 ints was not hierarchical");

    for (int i = 0; i < reduced; i++)
        a[i] = val(rank, i) % 1000;
    before = read_pvar(hr);
    PAIRED("reduce", 1, MPI_Reduce(a, b, reduced, MPI_INT, MPI_SUM, root, MPI_COMM_WORLD));
    CHECK(read_pvar(hr) - before == 1, "pair_hier: the Reduce was not hierarchical");
    check_sums(b, reduced, rank == root, "pair_hier: Reduce");
    MPI_T_pvar_handle_free(session, &hb);
    MPI_T_pvar_handle_free(session, &hr);
    free(a);
    free(b);
}

/* "single_hier": with coll_sharm_hierarchy on, a Bcast, a Reduce and an
 * Allreduce of `n` ints, each checked to be served through the hierarchy
 * and to count once in the single-copy counter when expect_cma is 1 (mode
 * cma: the groups' streams from coll_sharm_single_copy_min_size go by CMA)
 * and not at all when it is 0 (mode queues); an 8-byte Bcast never counts.
 * Every value is checked. */
#define HIER_SINGLE(opname, large, call)                                                           \
    do {                                                                                           \
        MPI_T_pvar_handle hh_ = pvar_of(opname, "hierarchical"), hs_ = pvar(opname);               \
        unsigned long long h0_ = read_pvar(hh_), s0_ = read_pvar(hs_);                             \
        call;                                                                                      \
        unsigned long long hm_ = read_pvar(hh_) - h0_, sm_ = read_pvar(hs_) - s0_;                 \
        unsigned long long want_ = (large) && expect_cma == 1;                                     \
        CHECK(hm_ == 1, "single_hier: %s: hierarchical counter moved by %llu, want 1", opname, hm_); \
        CHECK(sm_ == want_, "single_hier: %s: single-copy counter moved by %llu, want %llu",       \
              opname, sm_, want_);                                                                 \
        MPI_T_pvar_handle_free(session, &hh_);                                                     \
        MPI_T_pvar_handle_free(session, &hs_);                                                     \
    } while (0)

static void test_single_hier(int n)
{
    const int root = size - 1;
    int *a = malloc(sizeof(int) * (size_t) n), *b = malloc(sizeof(int) * (size_t) n);

    for (int i = 0; i < n; i++)
        a[i] = rank == root ? val(5, i) : -1;
    HIER_SINGLE("bcast", 1, MPI_Bcast(a, n, MPI_INT, root, MPI_COMM_WORLD));
    for (int i = 0; i < n; i++)
        if (a[i] != val(5, i)) {
            CHECK(0, "single_hier: Bcast [%d] = %d", i, a[i]);
            break;
        }
    HIER_SINGLE("bcast", 0, MPI_Bcast(a, 2, MPI_INT, 0, MPI_COMM_WORLD));

    for (int i = 0; i < n; i++)
        a[i] = val(rank, i) % 1000;
    HIER_SINGLE("reduce", 1, MPI_Reduce(a, b, n, MPI_INT, MPI_SUM, root, MPI_COMM_WORLD));
    check_sums(b, n, rank == root, "single_hier: Reduce");
    HIER_SINGLE("allreduce", 1, MPI_Allreduce(a, b, n, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
    check_sums(b, n, 1, "single_hier: Allreduce");
    free(a);
    free(b);
}

int main(int argc, char **argv)
{
    stderr_to_file();
    if (argc < 2 || (strcmp(argv[1], "cma") && strcmp(argv[1], "queues") && strcmp(argv[1], "any") &&
                     strcmp(argv[1], "crowded"))) {
        fprintf(stderr, "usage: single_copy_check cma|queues|any|crowded "
                        "[undumpable|landing=N|reductions=N|allreduce=N|bcasts=N|quiet=N|trials=T[,R]|"
                        "landing_trials=T[,cma]|split_class=BIG,SMALL]\n");
        return 2;
    }
    if (argc > 2 && strcmp(argv[2], "undumpable") == 0)
        prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
    /* "landing=N": only the gathering calls, with blocks of N ints. */
    int landing = 0;
    if (argc > 2 && strncmp(argv[2], "landing=", 8) == 0)
        landing = atoi(argv[2] + 8);
    /* "reductions=N": only the reductions, of N elements. */
    int reductions = 0;
    if (argc > 2 && strncmp(argv[2], "reductions=", 11) == 0)
        reductions = atoi(argv[2] + 11);
    crowded = strcmp(argv[1], "crowded") == 0;
    expect_cma = strcmp(argv[1], "any") == 0 || crowded ? -1 : strcmp(argv[1], "cma") == 0;
    int provided;
    MPI_Init(&argc, &argv);
    MPI_T_init_thread(MPI_THREAD_SINGLE, &provided);
    MPI_T_pvar_session_create(&session);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    if (landing > 0) {
        for (int in_place = 0; in_place < 2; in_place++) {
            test_allgather(landing, 1, in_place, 0);
            test_alltoall(landing, 1, in_place);
            test_gather(landing, 1, in_place);
        }
        goto done;
    }
    /* "landing_trials=T[,cma]": only the calls whose landing is tried. */
    if (argc > 2 && strncmp(argv[2], "landing_trials=", 15) == 0) {
        test_landing_trials(atoi(argv[2] + 15), strstr(argv[2], ",cma") ? 4 : 2);
        goto done;
    }
    /* "split_class=BIG,SMALL": Bcasts of BIG and of SMALL ints in turn, 24
     * rounds, the first of each pair from or above
     * coll_sharm_single_copy_min_size and the second below it, both in one
     * size class: the second must never go by single copy. */
    if (argc > 2 && strncmp(argv[2], "split_class=", 12) == 0) {
        const char *small = strchr(argv[2] + 12, ',');
        if (!small) {
            fprintf(stderr, "split_class=BIG,SMALL\n");
            return 2;
        }
        for (int round = 0; round < 24; round++) {
            expect_cma = -1;
            test_bcast(atoi(argv[2] + 12), 1);
            expect_cma = 0;
            test_bcast(atoi(small + 1), 1);
        }
        goto done;
    }
    /* "trials=T[,R]": only the calls whose path is tried, T calls a path,
     * tried again after R calls. */
    if (argc > 2 && strncmp(argv[2], "trials=", 7) == 0) {
        const char *again = strchr(argv[2] + 7, ',');
        test_trials(atoi(argv[2] + 7), again ? atoi(again + 1) : 0);
        goto done;
    }
    if (argc > 2 && strncmp(argv[2], "pair_counters=", 14) == 0) {
        test_pair_counters(atoi(argv[2] + 14));
        goto done;
    }
    if (argc > 2 && strncmp(argv[2], "single_hier=", 12) == 0) {
        test_single_hier(atoi(argv[2] + 12));
        goto done;
    }
    if (argc > 2 && strcmp(argv[2], "pair_hier") == 0) {
        test_pair_hier();
        goto done;
    }
    if (argc > 2 && strcmp(argv[2], "pair_streams") == 0) {
        test_pair_streams();
        goto done;
    }
    /* "allreduce=N": only test_allreduce, of N longs. */
    if (argc > 2 && strncmp(argv[2], "allreduce=", 10) == 0) {
        test_allreduce(atoi(argv[2] + 10), 1);
        goto done;
    }
    if (reductions > 0) {
        test_reductions(reductions, 1);
        goto done;
    }
    /* "bcasts=N": only Bcasts of N ints, 256 from each root (enough calls
     * for readers' reports about short streams to reach their writers),
     * each root 20 us behind its readers (`root_lag_us`). */
    if (argc > 2 && strncmp(argv[2], "bcasts=", 7) == 0) {
        root_lag_us = 20;
        for (int round = 0; round < 256; round++)
            test_bcast(atoi(argv[2] + 7), 0);
        goto done;
    }
    /* "quiet=N": Bcasts of N ints, long enough to fill the queues' rings
     * (so their writers time acknowledgements), then small ones that time
     * none, enough calls for the acknowledgements to go stale. */
    if (argc > 2 && strncmp(argv[2], "quiet=", 6) == 0) {
        for (int round = 0; round < 16; round++)
            test_bcast(atoi(argv[2] + 6), 1);
        for (int round = 0; round < 32; round++)
            test_bcast(2, 0);
        goto done;
    }
    /* ints: 280 KB (several chunks), 400 B; `mid` longs: 40,008 B, unequal
     * halves (on two processes the Reduce's slices through the pair
     * buffer, `coll::pair::reduce_exchange`) */
    const int big = 70001, small = 100, mid = 5001;
    test_bcast(small, 0);
    test_bcast(big, 1);
    test_bcast_vector(big);
    test_gather_vector(big);
    for (int in_place = 0; in_place < 2; in_place++) {
        test_gather(big, 1, in_place);
        test_allgather(big, 1, in_place, 0);
        test_allgather(big, 1, in_place, 1);
        test_alltoall(big / 4, 1, in_place);
    }
    test_gather(small, 0, 0);
    test_allgather(small, 0, 0, 0);
    test_alltoall(small, 0, 0);
    test_gatherv_scatterv(big);
    test_scatter(big, 1);
    test_scatter(small, 0);
    test_alltoallv(big / 4);
    test_reductions(small, 0);
    test_reductions(big, 1);
    test_reductions(mid, 1);
    test_reductions(7, 0);
    if (crowded) {
        /* Alltoall blocks of 256 KiB, the least that goes by single copy
         * on a crowded node whatever the calibration found
         * (`alltoall::CROWDED_PULL_MIN_BYTES`): pulled as offered. */
        crowded_pulls = 1;
        test_alltoall(1 << 16, 1, 0);
        test_alltoall(1 << 16, 1, 1);
        /* Pairs (s, d) of 62000 + (s + d) * 1237 ints: from s + d = 3 at
         * least 256 KiB (262844 bytes; 257896 at s + d = 2).  At np=4 rank
         * 3 has only such pairs and pulls as offered, while the others,
         * with a smaller pair, keep the rounds: both kinds in one call. */
        test_alltoallv(62000);
        crowded_pulls = 0;
    }

done:;
    int all_failures = 0;
    MPI_Allreduce(&failures, &all_failures, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    MPI_T_pvar_session_free(&session);
    MPI_T_finalize();
    if (rank == 0 && all_failures == 0)
        printf("single_copy_check: OK np=%d mode=%s\n", size, argv[1]);
    MPI_Finalize();
    return all_failures != 0;
}
