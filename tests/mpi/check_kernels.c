/*
 * check_kernels.c: 8-bit integer MPI_SUM must wrap (two's complement), as
 * MPI's reference behaviour does, through every reduction sharm serves:
 * Reduce (two roots), Allreduce, Reduce_scatter_block, Reduce_scatter,
 * Scan, Exscan, on 1000 elements of MPI_INT8_T, MPI_UINT8_T and
 * MPI_SIGNED_CHAR.  Open MPI 4.1's op/avx saturates such sums from 16
 * elements (Open MPI issue 8045); sharm's own kernels wrap.  Run with each
 * Allreduce algorithm forced by the Rust side (tests/kernels.rs).
 */
#include "check_support.h"

#define WRAP_N 1000

/* Rank r's element i: large enough that sums of 2+ processes overflow. */
static unsigned char input(int r, int i) { return (unsigned char) (97 + 31 * r + 7 * (i % 13)); }

/* The wrapped sum of ranks [lo, hi) at element i, as the type's bits. */
static unsigned char wrapped(int lo, int hi, int i)
{
    unsigned s = 0;
    for (int r = lo; r < hi; ++r) s += input(r, i);
    return (unsigned char) s; /* two's complement: the low 8 bits, any signedness */
}

static void expect_bytes(const unsigned char *got, int lo, int hi, int first, int n, const char *what)
{
    for (int i = 0; i < n; ++i) {
        unsigned char want = wrapped(lo, hi, first + i);
        if (got[i] != want) {
            die("%s element %d: expected %u (the wrapped sum of ranks %d..%d), got %u%s", what, first + i,
                want, lo, hi - 1, got[i],
                (got[i] == 127 || got[i] == 128 || got[i] == 255) ? " (saturated?)" : "");
        }
    }
}

static void wrap_type(const struct cinfo *c, MPI_Datatype dt, const char *name)
{
    const int p = c->size, me = c->rank;
    unsigned char *in = xmalloc(WRAP_N), *out = xmalloc(WRAP_N);
    for (int i = 0; i < WRAP_N; ++i) in[i] = input(me, i);
    struct snap s;

    for (int root = 0; root < p; root += p - 1 > 0 ? p - 1 : 1) {
        setctx(c, C_REDUCE, "op=MPI_SUM type=%s count=%d root=%d", name, WRAP_N, root);
        memset(out, 0, WRAP_N);
        s = pv_snap(C_REDUCE);
        MPI_CHECK(MPI_Reduce(in, out, WRAP_N, dt, MPI_SUM, root, c->comm));
        pv_check_full(C_REDUCE, s, expect_bcast_reduce(c, WRAP_N, WRAP_N, EX_SERVE, 1), 0,
                      hier_for(c, WRAP_N, 1));
        if (me == root) expect_bytes(out, 0, p, 0, WRAP_N, "MPI_Reduce result");
        if (p == 1) break;
    }

    setctx(c, C_ALLREDUCE, "op=MPI_SUM type=%s count=%d", name, WRAP_N);
    s = pv_snap(C_ALLREDUCE);
    MPI_CHECK(MPI_Allreduce(in, out, WRAP_N, dt, MPI_SUM, c->comm));
    pv_check_full(C_ALLREDUCE, s, expect_bcast_reduce(c, WRAP_N, WRAP_N, EX_SERVE, 1), 0,
                  hier_for(c, WRAP_N, 1));
    expect_bytes(out, 0, p, 0, WRAP_N, "MPI_Allreduce result");

    /* In place too: the receive buffer holds the contribution. */
    memcpy(out, in, WRAP_N);
    s = pv_snap(C_ALLREDUCE);
    MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, out, WRAP_N, dt, MPI_SUM, c->comm));
    pv_check_full(C_ALLREDUCE, s, expect_bcast_reduce(c, WRAP_N, WRAP_N, EX_SERVE, 1), 0,
                  hier_for(c, WRAP_N, 1));
    expect_bytes(out, 0, p, 0, WRAP_N, "MPI_Allreduce (in place) result");

    const int block = WRAP_N / p;
    unsigned char *all = xmalloc((size_t) block * (size_t) p);
    for (int i = 0; i < block * p; ++i) all[i] = input(me, i);
    setctx(c, C_RSB, "op=MPI_SUM type=%s recvcount=%d", name, block);
    s = pv_snap(C_RSB);
    MPI_CHECK(MPI_Reduce_scatter_block(all, out, block, dt, MPI_SUM, c->comm));
    pv_check(C_RSB, s, expect_call(c, (long long) block * p, EX_SERVE));
    expect_bytes(out, 0, p, me * block, block, "MPI_Reduce_scatter_block slice");

    int *counts = xmalloc(sizeof(int) * (size_t) p);
    int total = 0;
    for (int r = 0; r < p; ++r) total += counts[r] = block - (r % 3);
    setctx(c, C_RS, "op=MPI_SUM type=%s recvcounts=%s", name, ints(counts, p));
    int offset = 0;
    for (int r = 0; r < me; ++r) offset += counts[r];
    s = pv_snap(C_RS);
    MPI_CHECK(MPI_Reduce_scatter(all, out, counts, dt, MPI_SUM, c->comm));
    pv_check(C_RS, s, expect_call(c, total, EX_SERVE));
    expect_bytes(out, 0, p, offset, counts[me], "MPI_Reduce_scatter slice");

    setctx(c, C_SCAN, "op=MPI_SUM type=%s count=%d", name, WRAP_N);
    s = pv_snap(C_SCAN);
    MPI_CHECK(MPI_Scan(in, out, WRAP_N, dt, MPI_SUM, c->comm));
    pv_check(C_SCAN, s, expect_call(c, WRAP_N, EX_SERVE));
    expect_bytes(out, 0, me + 1, 0, WRAP_N, "MPI_Scan prefix");

    setctx(c, C_EXSCAN, "op=MPI_SUM type=%s count=%d", name, WRAP_N);
    s = pv_snap(C_EXSCAN);
    MPI_CHECK(MPI_Exscan(in, out, WRAP_N, dt, MPI_SUM, c->comm));
    pv_check(C_EXSCAN, s, expect_call(c, WRAP_N, EX_SERVE));
    if (me > 0) expect_bytes(out, 0, me, 0, WRAP_N, "MPI_Exscan prefix");

    free(counts);
    free(all);
    free(in);
    free(out);
}

void scenario_wrap8(void)
{
    struct cinfo c = cinfo_named(MPI_COMM_WORLD, "MPI_COMM_WORLD");
    wrap_type(&c, MPI_INT8_T, "MPI_INT8_T");
    wrap_type(&c, MPI_UINT8_T, "MPI_UINT8_T");
    wrap_type(&c, MPI_SIGNED_CHAR, "MPI_SIGNED_CHAR");
    cinfo_free(&c);
}
