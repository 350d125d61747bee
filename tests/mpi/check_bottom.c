/*
 * check_bottom.c: collectives on MPI_BOTTOM with datatypes of absolute
 * addresses (MPI_Get_address and a struct of one block), the way Fortran
 * and some C codes describe a buffer: Bcast at every root, Gather and
 * Scatter with MPI_BOTTOM on either side, Allgather and Alltoall from and
 * into it, at sizes from one int to past the single-copy threshold.  The
 * buffer pointer is NULL there, so a component that took a NULL pointer for
 * "no buffer", or added the address twice, would write elsewhere or crash;
 * every call must still be sharm's (MPI_T counters) and right.
 */
#include "check_support.h"

/* A datatype of `n` ints at the absolute address of `base`; extent n ints,
 * so block i of a receive with it lies at base + i * n ints. */
static MPI_Datatype at_address(const int *base, int n)
{
    MPI_Aint addr;
    MPI_CHECK(MPI_Get_address(base, &addr));
    MPI_Datatype block, t;
    MPI_CHECK(MPI_Type_contiguous(n, MPI_INT, &block));
    int one = 1;
    MPI_CHECK(MPI_Type_create_struct(1, &one, &addr, &block, &t));
    MPI_CHECK(MPI_Type_commit(&t));
    MPI_CHECK(MPI_Type_free(&block));
    return t;
}

/* The value of element i of the block that `from` sends to `to`. */
static int value(int from, int to, size_t i, uint64_t seed)
{
    return (int) (mix64(seed ^ ((uint64_t) from << 40) ^ ((uint64_t) to << 20) ^ i) & 0x7fffffff);
}

static void expect_block(const int *got, int from, int to, size_t n, uint64_t seed, const char *what)
{
    for (size_t i = 0; i < n; ++i)
        if (got[i] != value(from, to, i, seed))
            die("%s: element %zu of the block from rank %d: expected %d, got %d", what, i, from,
                value(from, to, i, seed), got[i]);
}

static void bottom_calls(struct cinfo *c, int n, uint64_t seed)
{
    const int me = c->rank, p = c->size;
    const size_t N = (size_t) n, bytes = N * sizeof(int);
    int *mine = xmalloc(bytes), *all = xmalloc(bytes * (size_t) p);

    for (int root = 0; root < p; ++root) {
        /* Bcast: the whole buffer is MPI_BOTTOM + the type's address. */
        for (size_t i = 0; i < N; ++i) mine[i] = me == root ? value(root, -1, i, seed) : -1;
        MPI_Datatype t = at_address(mine, n);
        setctx(c, C_BCAST, "MPI_BOTTOM, one struct of %d ints at its absolute address, root=%d", n, root);
        enum expect ex = expect_bcast_reduce(c, 1, bytes, EX_SERVE, 1);
        struct snap s = pv_snap(C_BCAST);
        MPI_CHECK(MPI_Bcast(MPI_BOTTOM, 1, t, root, c->comm));
        pv_check_full(C_BCAST, s, ex, 0, hier_for(c, bytes, 1));
        expect_block(mine, root, -1, N, seed, "Bcast");

        /* Gather: sent from MPI_BOTTOM, received as ints. */
        for (size_t i = 0; i < N; ++i) mine[i] = value(me, root, i, seed);
        setctx(c, C_GATHER, "sendbuf=MPI_BOTTOM (struct of %d ints), recvtype=MPI_INT root=%d", n, root);
        ex = expect_call(c, (long long) (bytes * (size_t) p), EX_SERVE);
        s = pv_snap(C_GATHER);
        MPI_CHECK(MPI_Gather(MPI_BOTTOM, 1, t, all, n, MPI_INT, root, c->comm));
        pv_check(C_GATHER, s, ex);
        for (int j = 0; me == root && j < p; ++j) expect_block(all + (size_t) j * N, j, root, N, seed, "Gather");

        /* Scatter: sent as ints, received into MPI_BOTTOM. */
        for (int j = 0; me == root && j < p; ++j)
            for (size_t i = 0; i < N; ++i) all[(size_t) j * N + i] = value(root, j, i, seed);
        for (size_t i = 0; i < N; ++i) mine[i] = -1;
        setctx(c, C_SCATTER, "sendtype=MPI_INT, recvbuf=MPI_BOTTOM (struct of %d ints) root=%d", n, root);
        ex = expect_call(c, (long long) (bytes * (size_t) p), EX_SERVE);
        s = pv_snap(C_SCATTER);
        MPI_CHECK(MPI_Scatter(all, n, MPI_INT, MPI_BOTTOM, 1, t, root, c->comm));
        pv_check(C_SCATTER, s, ex);
        expect_block(mine, root, me, N, seed, "Scatter");
        MPI_CHECK(MPI_Type_free(&t));
    }

    /* Allgather: sent from MPI_BOTTOM. */
    for (size_t i = 0; i < N; ++i) mine[i] = value(me, -2, i, seed);
    MPI_Datatype t = at_address(mine, n);
    setctx(c, C_ALLGATHER, "sendbuf=MPI_BOTTOM (struct of %d ints), recvtype=MPI_INT", n);
    enum expect ex = expect_hier_call(c, (long long) (bytes * (size_t) p), EX_SERVE);
    struct snap s = pv_snap(C_ALLGATHER);
    MPI_CHECK(MPI_Allgather(MPI_BOTTOM, 1, t, all, n, MPI_INT, c->comm));
    pv_check_full(C_ALLGATHER, s, ex, 0, hier_spanning(c, bytes * (size_t) p));
    for (int j = 0; j < p; ++j) expect_block(all + (size_t) j * N, j, -2, N, seed, "Allgather");
    MPI_CHECK(MPI_Type_free(&t));

    /* Alltoall: ints in, MPI_BOTTOM out (block j at the type's address + j
     * extents). */
    int *out = xmalloc(bytes * (size_t) p);
    for (int j = 0; j < p; ++j)
        for (size_t i = 0; i < N; ++i) all[(size_t) j * N + i] = value(me, j, i, seed);
    memset(out, 0xff, bytes * (size_t) p);
    t = at_address(out, n);
    setctx(c, C_ALLTOALL, "sendtype=MPI_INT, recvbuf=MPI_BOTTOM (struct of %d ints a block)", n);
    ex = expect_call(c, (long long) (bytes * (size_t) p), EX_SERVE);
    s = pv_snap(C_ALLTOALL);
    MPI_CHECK(MPI_Alltoall(all, n, MPI_INT, MPI_BOTTOM, 1, t, c->comm));
    pv_check(C_ALLTOALL, s, ex);
    for (int j = 0; j < p; ++j) expect_block(out + (size_t) j * N, j, me, N, seed, "Alltoall");
    MPI_CHECK(MPI_Type_free(&t));
    free(out);
    free(mine);
    free(all);
}

void scenario_bottom(void)
{
    struct cinfo c = cinfo_named(MPI_COMM_WORLD, "MPI_COMM_WORLD");
    /* One int, a short stream, one past a fragment, and blocks above the
     * single-copy threshold (256 KiB). */
    const int sizes[] = {1, 7, 2049, 70000};
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; ++k) bottom_calls(&c, sizes[k], next_seed());
    cinfo_free(&c);
}
