/*
 * check_gather.c: Gather, Gatherv, Scatter and Scatterv: every root, with and
 * without MPI_IN_PLACE at the root, every datatype pair; v-variants with
 * irregular counts (zeros included) at reversed or shuffled displacements.
 */
#include "check_support.h"

void t_gather(const struct cinfo *c, const struct pair *pr, size_t units, int root, int in_place,
              uint64_t seed)
{
    const struct mtype *st = &mt[pr->st], *rt = &mt[pr->rt];
    const int me = c->rank, p = c->size, isroot = me == root, ip = in_place && isroot;
    const size_t sn = units * (size_t) pr->smul, rn = units * (size_t) pr->rmul;
    setctx(c, C_GATHER, "sendtype=%s sendcount=%zu recvtype=%s recvcount=%zu root=%d%s", st->name, sn,
           rt->name, rn, root, ip_str(in_place));
    struct buf sb, rb;
    gather_send_buf(&sb, st, sn, ip, seed, me, root);
    buf_init(&rb, rt, rn * (size_t) p, SENTINEL, isroot ? "receive buffer" : "non-root receive buffer (must stay untouched)");
    if (isroot) gather_recv_img(&rb, p, NULL, NULL, rn, ip, seed, me, root);
    enum expect e = expect_call(c, (long long) (units * unit_bytes(pr) * (size_t) p), EX_SERVE);
    struct snap s = pv_snap(C_GATHER);
    MPI_CHECK(MPI_Gather(ip ? MPI_IN_PLACE : buf_mpi(&sb), (int) sn, st->dt, buf_mpi(&rb), (int) rn, rt->dt,
                         root, c->comm));
    pv_check(C_GATHER, s, e);
    buf_check(&sb);
    buf_check(&rb);
    buf_free(&sb);
    buf_free(&rb);
}

void t_gatherv(const struct cinfo *c, const struct pair *pr, size_t units, int root, int in_place,
               uint64_t seed)
{
    const struct mtype *st = &mt[pr->st], *rt = &mt[pr->rt];
    const int me = c->rank, p = c->size, isroot = me == root, ip = in_place && isroot;
    int *rc = xmalloc(sizeof(int) * (size_t) p), *dis = xmalloc(sizeof(int) * (size_t) p);
    for (int j = 0; j < p; ++j) rc[j] = vcount(seed * 31 + (uint64_t) j, units) * pr->rmul;
    size_t total = vlayout(seed, p, rc, dis);
    const size_t sn = (size_t) (rc[me] / pr->rmul) * (size_t) pr->smul;
    setctx(c, C_GATHERV, "sendtype=%s sendcount=%zu recvtype=%s recvcounts=%s displs=%s root=%d%s", st->name,
           sn, rt->name, ints(rc, p), ints(dis, p), root, ip_str(in_place));
    struct buf sb, rb;
    gather_send_buf(&sb, st, sn, ip, seed, me, root);
    buf_init(&rb, rt, isroot ? total : 4, SENTINEL, isroot ? "receive buffer" : "non-root receive buffer (must stay untouched)");
    if (isroot) gather_recv_img(&rb, p, rc, dis, 0, ip, seed, me, root);
    enum expect e = expect_call(c, -1, EX_SERVE);
    struct snap s = pv_snap(C_GATHERV);
    MPI_CHECK(MPI_Gatherv(ip ? MPI_IN_PLACE : buf_mpi(&sb), (int) sn, st->dt, buf_mpi(&rb), rc, dis, rt->dt,
                          root, c->comm));
    pv_check(C_GATHERV, s, e);
    buf_check(&sb);
    buf_check(&rb);
    buf_free(&sb);
    buf_free(&rb);
    free(rc);
    free(dis);
}

void t_scatter(const struct cinfo *c, const struct pair *pr, size_t units, int root, int in_place,
               uint64_t seed)
{
    const struct mtype *st = &mt[pr->st], *rt = &mt[pr->rt];
    const int me = c->rank, p = c->size, isroot = me == root, ip = in_place && isroot;
    const size_t sn = units * (size_t) pr->smul, rn = units * (size_t) pr->rmul;
    setctx(c, C_SCATTER, "sendtype=%s sendcount=%zu recvtype=%s recvcount=%zu root=%d%s", st->name, sn,
           rt->name, rn, root, ip_str(in_place));
    struct buf sb, rb;
    buf_init(&sb, st, sn * (size_t) p, SEND_BG, isroot ? "send buffer (must stay unchanged)"
                                              : "non-root send buffer (must stay untouched)");
    for (int j = 0; isroot && j < p; ++j) buf_put(&sb, (size_t) j * sn, sn, stream(seed, root, j), root, TO_BOTH);
    buf_init(&rb, rt, ip ? 0 : rn, SENTINEL, "receive buffer");
    if (!ip) buf_put(&rb, 0, rn, stream(seed, root, me), root, TO_IMG);
    enum expect e = expect_call(c, (long long) (units * unit_bytes(pr) * (size_t) p), EX_SERVE);
    struct snap s = pv_snap(C_SCATTER);
    MPI_CHECK(MPI_Scatter(buf_mpi(&sb), (int) sn, st->dt, ip ? MPI_IN_PLACE : buf_mpi(&rb), (int) rn, rt->dt,
                          root, c->comm));
    pv_check(C_SCATTER, s, e);
    buf_check(&sb);
    buf_check(&rb);
    buf_free(&sb);
    buf_free(&rb);
}

void t_scatterv(const struct cinfo *c, const struct pair *pr, size_t units, int root, int in_place,
                uint64_t seed)
{
    const struct mtype *st = &mt[pr->st], *rt = &mt[pr->rt];
    const int me = c->rank, p = c->size, isroot = me == root, ip = in_place && isroot;
    int *sc = xmalloc(sizeof(int) * (size_t) p), *dis = xmalloc(sizeof(int) * (size_t) p);
    for (int j = 0; j < p; ++j) sc[j] = vcount(seed * 31 + (uint64_t) j, units) * pr->smul;
    size_t total = vlayout(seed, p, sc, dis);
    const size_t rn = (size_t) (sc[me] / pr->smul) * (size_t) pr->rmul;
    setctx(c, C_SCATTERV, "sendtype=%s sendcounts=%s displs=%s recvtype=%s recvcount=%zu root=%d%s", st->name,
           ints(sc, p), ints(dis, p), rt->name, rn, root, ip_str(in_place));
    struct buf sb, rb;
    buf_init(&sb, st, isroot ? total : 4, SEND_BG, isroot ? "send buffer (must stay unchanged)"
                                                 : "non-root send buffer (must stay untouched)");
    for (int j = 0; isroot && j < p; ++j) buf_put(&sb, (size_t) dis[j], (size_t) sc[j], stream(seed, root, j), root, TO_BOTH);
    buf_init(&rb, rt, ip ? 0 : rn, SENTINEL, "receive buffer");
    if (!ip) buf_put(&rb, 0, rn, stream(seed, root, me), root, TO_IMG);
    enum expect e = expect_call(c, -1, EX_SERVE);
    struct snap s = pv_snap(C_SCATTERV);
    MPI_CHECK(MPI_Scatterv(buf_mpi(&sb), sc, dis, st->dt, ip ? MPI_IN_PLACE : buf_mpi(&rb), (int) rn, rt->dt,
                           root, c->comm));
    pv_check(C_SCATTERV, s, e);
    buf_check(&sb);
    buf_check(&rb);
    buf_free(&sb);
    buf_free(&rb);
    free(sc);
    free(dis);
}

void scenario_gather(void)
{
    struct cinfo w = cinfo_of(MPI_COMM_WORLD);
    run_rooted(&w, t_gather);
    run_rooted(&w, t_gatherv);
    cinfo_free(&w);
}

void scenario_scatter(void)
{
    struct cinfo w = cinfo_of(MPI_COMM_WORLD);
    run_rooted(&w, t_scatter);
    run_rooted(&w, t_scatterv);
    cinfo_free(&w);
}
