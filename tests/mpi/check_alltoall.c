/*
 * check_alltoall.c: Alltoall and Alltoallv, with and without MPI_IN_PLACE
 * (symmetric counts, as MPI requires), every datatype pair; and how much
 * memory an in-place call takes (scenario inplace_memory).
 */
#include "check_support.h"

void t_alltoall(const struct cinfo *c, const struct pair *pr, size_t units, int ip, uint64_t seed)
{
    const struct mtype *st = &mt[pr->st], *rt = &mt[pr->rt];
    const int me = c->rank, p = c->size;
    const size_t sn = units * (size_t) pr->smul, rn = units * (size_t) pr->rmul;
    setctx(c, C_ALLTOALL, "sendtype=%s sendcount=%zu recvtype=%s recvcount=%zu root=-%s", st->name, sn,
           rt->name, rn, ip_str(ip));
    struct buf sb, rb;
    buf_init(&sb, st, ip ? 0 : sn * (size_t) p, SEND_BG, "send buffer (must stay unchanged)");
    for (int d = 0; !ip && d < p; ++d) buf_put(&sb, (size_t) d * sn, sn, stream(seed, me, d), me, TO_BOTH);
    buf_init(&rb, rt, rn * (size_t) p, SENTINEL, "receive buffer");
    for (int j = 0; j < p; ++j) {
        buf_put(&rb, (size_t) j * rn, rn, stream(seed, j, me), j, TO_IMG);
        if (ip) buf_put(&rb, (size_t) j * rn, rn, stream(seed, me, j), me, TO_REG); /* what I send to j */
    }
    enum expect e = expect_call(c, (long long) (units * unit_bytes(pr) * (size_t) p), EX_SERVE);
    struct snap s = pv_snap(C_ALLTOALL);
    MPI_CHECK(MPI_Alltoall(ip ? MPI_IN_PLACE : buf_mpi(&sb), (int) sn, st->dt, buf_mpi(&rb), (int) rn, rt->dt,
                           c->comm));
    pv_check(C_ALLTOALL, s, e);
    buf_check(&sb);
    buf_check(&rb);
    buf_free(&sb);
    buf_free(&rb);
}

/* Units process a sends to process b (symmetric in place: MPI requires it). */
static int a2a_count(uint64_t seed, int a, int b, size_t units, int symmetric)
{
    if (symmetric && a > b) {
        int x = a;
        a = b;
        b = x;
    }
    return vcount(seed * 131 + (uint64_t) (a * 64 + b), units);
}

void t_alltoallv(const struct cinfo *c, const struct pair *pr, size_t units, int ip, uint64_t seed)
{
    const struct mtype *st = &mt[pr->st], *rt = &mt[pr->rt];
    const int me = c->rank, p = c->size;
    int *sc = xmalloc(sizeof(int) * (size_t) p), *sd = xmalloc(sizeof(int) * (size_t) p);
    int *rc = xmalloc(sizeof(int) * (size_t) p), *rd = xmalloc(sizeof(int) * (size_t) p);
    for (int j = 0; j < p; ++j) {
        sc[j] = a2a_count(seed, me, j, units, ip) * pr->smul;
        rc[j] = a2a_count(seed, j, me, units, ip) * pr->rmul;
    }
    size_t stotal = vlayout(seed ^ (0x1000u + (uint64_t) me), p, sc, sd);
    size_t rtotal = vlayout(seed ^ (0x2001u + (uint64_t) me * 2), p, rc, rd);
    setctx(c, C_ALLTOALLV, "sendtype=%s sendcounts=%s sdispls=%s recvtype=%s recvcounts=%s rdispls=%s root=-%s",
           st->name, ints(sc, p), ints(sd, p), rt->name, ints(rc, p), ints(rd, p), ip_str(ip));
    struct buf sb, rb;
    buf_init(&sb, st, ip ? 0 : stotal, SEND_BG, "send buffer (must stay unchanged)");
    for (int d = 0; !ip && d < p; ++d) buf_put(&sb, (size_t) sd[d], (size_t) sc[d], stream(seed, me, d), me, TO_BOTH);
    buf_init(&rb, rt, rtotal, SENTINEL, "receive buffer");
    for (int j = 0; j < p; ++j) {
        buf_put(&rb, (size_t) rd[j], (size_t) rc[j], stream(seed, j, me), j, TO_IMG);
        if (ip) buf_put(&rb, (size_t) rd[j], (size_t) rc[j], stream(seed, me, j), me, TO_REG);
    }
    enum expect e = expect_call(c, -1, EX_SERVE);
    struct snap s = pv_snap(C_ALLTOALLV);
    MPI_CHECK(MPI_Alltoallv(ip ? MPI_IN_PLACE : buf_mpi(&sb), sc, sd, st->dt, buf_mpi(&rb), rc, rd, rt->dt,
                            c->comm));
    pv_check(C_ALLTOALLV, s, e);
    buf_check(&sb);
    buf_check(&rb);
    buf_free(&sb);
    buf_free(&rb);
    free(sc);
    free(sd);
    free(rc);
    free(rd);
}

void scenario_alltoall(void)
{
    struct cinfo w = cinfo_of(MPI_COMM_WORLD);
    run_flat(&w, t_alltoall);
    run_flat(&w, t_alltoallv);
    cinfo_free(&w);
}

/*
 * One in-place Alltoall (v: Alltoallv, equal counts) of `whole` bytes of
 * MPI_INT per process, checked for its result and for the memory it took:
 * with `aside` the peak resident set may grow by one block and some slack
 * (a block offered by single copy is copied aside first), without it by
 * less than half a block (through the queues nothing is), and never by a
 * copy of the whole buffer.  A warm-up call first, so that the queues and
 * the library's own buffers are resident before the peak is reset.
 */
static void inplace_memory_call(const struct cinfo *c, size_t whole, int v, int aside, uint64_t seed)
{
    const int me = c->rank, p = c->size;
    const size_t n = whole / sizeof(int) / (size_t) p, block = n * sizeof(int);
    int *counts = xmalloc(sizeof(int) * (size_t) p), *displs = xmalloc(sizeof(int) * (size_t) p);
    for (int j = 0; j < p; ++j) {
        counts[j] = (int) n;
        displs[j] = (int) ((size_t) j * n);
    }
    int *buf = xmalloc(block * (size_t) p);
    const enum coll kind = v ? C_ALLTOALLV : C_ALLTOALL;
    for (int round = 0; round < 2; ++round) {
        /* Element i of block j: what `me` sends to j, unique per (me, j, i). */
        for (int j = 0; j < p; ++j)
            for (size_t i = 0; i < n; ++i) buf[(size_t) j * n + i] = (int) (seed + (uint64_t) (me * 131 + j) * n + i);
        setctx(c, kind, "MPI_INT count=%zu per block, whole=%zu bytes, root=-in-place (memory check, call %d)", n,
               whole, round + 1);
        enum expect e = expect_call(c, v ? -1 : (long long) (block * (size_t) p), EX_SERVE);
        struct snap s = pv_snap(kind);
        long mark = peak_mark(c->comm);
        if (v)
            MPI_CHECK(MPI_Alltoallv(MPI_IN_PLACE, counts, displs, MPI_INT, buf, counts, displs, MPI_INT, c->comm));
        else
            MPI_CHECK(MPI_Alltoall(MPI_IN_PLACE, (int) n, MPI_INT, buf, (int) n, MPI_INT, c->comm));
        long grew = peak_growth(mark);
        pv_check(kind, s, e);
        for (int j = 0; j < p; ++j)
            for (size_t i = 0; i < n; ++i) {
                int want = (int) (seed + (uint64_t) (j * 131 + me) * n + i);
                if (buf[(size_t) j * n + i] != want)
                    die("block from %d, element %zu: %d, expected %d", j, i, buf[(size_t) j * n + i], want);
            }
        /* Halfway between one block aside and the whole buffer (a copy of
         * all of it), or between nothing and one block. */
        long limit = (long) ((aside ? block + block * (size_t) p : block) / 2 / 1024);
        if (round == 1 && grew > limit)
            die("the peak resident set grew by %ld KiB over the call, more than %ld (blocks of %zu KiB, %zu in all)",
                grew, limit, block / 1024, block * (size_t) p / 1024);
        if (round == 1 && w_rank == 0) {
            printf(CHECK_NAME ": in-place %s of %zu KiB: peak resident set +%ld KiB (limit %ld)\n",
                   v ? "Alltoallv" : "Alltoall", whole / 1024, grew, limit);
            fflush(stdout);
        }
    }
    free(buf);
    free(counts);
    free(displs);
}

static void inplace_memory(int aside)
{
    struct cinfo w = cinfo_of(MPI_COMM_WORLD);
    size_t whole = (size_t) opt_big_or(64L << 20);
    inplace_memory_call(&w, whole, 0, aside, next_seed());
    inplace_memory_call(&w, whole, 1, aside, next_seed());
    cinfo_free(&w);
}

void scenario_inplace_memory(void) { inplace_memory(0); }
void scenario_inplace_memory_aside(void) { inplace_memory(1); }
