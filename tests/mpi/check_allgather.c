/*
 * check_allgather.c: Allgather and Allgatherv, with and without
 * MPI_IN_PLACE, every datatype pair; Allgatherv with irregular counts and
 * (every third seed) equal counts at irregular displacements.
 */
#include "check_support.h"

void t_allgather(const struct cinfo *c, const struct pair *pr, size_t units, int ip, uint64_t seed)
{
    const struct mtype *st = &mt[pr->st], *rt = &mt[pr->rt];
    const int me = c->rank, p = c->size;
    const size_t sn = units * (size_t) pr->smul, rn = units * (size_t) pr->rmul;
    setctx(c, C_ALLGATHER, "sendtype=%s sendcount=%zu recvtype=%s recvcount=%zu root=-%s", st->name, sn,
           rt->name, rn, ip_str(ip));
    struct buf sb, rb;
    gather_send_buf(&sb, st, sn, ip, seed, me, -1);
    buf_init(&rb, rt, rn * (size_t) p, SENTINEL, "receive buffer");
    gather_recv_img(&rb, p, NULL, NULL, rn, ip, seed, me, -1);
    enum expect e = expect_hier_call(c, (long long) (units * unit_bytes(pr) * (size_t) p), EX_SERVE);
    struct snap s = pv_snap(C_ALLGATHER);
    MPI_CHECK(MPI_Allgather(ip ? MPI_IN_PLACE : buf_mpi(&sb), (int) sn, st->dt, buf_mpi(&rb), (int) rn, rt->dt,
                            c->comm));
    pv_check_full(C_ALLGATHER, s, e, 0, hier_spanning(c, units * unit_bytes(pr) * (size_t) p));
    buf_check(&sb);
    buf_check(&rb);
    buf_free(&sb);
    buf_free(&rb);
}

void t_allgatherv(const struct cinfo *c, const struct pair *pr, size_t units, int ip, uint64_t seed)
{
    const struct mtype *st = &mt[pr->st], *rt = &mt[pr->rt];
    const int me = c->rank, p = c->size;
    int *rc = xmalloc(sizeof(int) * (size_t) p), *dis = xmalloc(sizeof(int) * (size_t) p);
    long long sum = 0;
    /* Every third seed: all counts equal, which sharm serves like an
     * Allgather (through the hierarchy across nodes); irregular counts are
     * handed over across nodes. */
    const int equal = seed % 3 == 0;
    for (int j = 0; j < p; ++j) {
        rc[j] = vcount(seed * 31 + (uint64_t) (equal ? 0 : j), units) * pr->rmul;
        sum += rc[j] / pr->rmul;
    }
    int all_equal = 1;
    for (int j = 1; j < p; ++j) all_equal &= rc[j] == rc[0];
    size_t total = vlayout(seed, p, rc, dis);
    const size_t sn = (size_t) (rc[me] / pr->rmul) * (size_t) pr->smul;
    setctx(c, C_ALLGATHERV, "sendtype=%s sendcount=%zu recvtype=%s recvcounts=%s displs=%s root=-%s", st->name,
           sn, rt->name, ints(rc, p), ints(dis, p), ip_str(ip));
    struct buf sb, rb;
    gather_send_buf(&sb, st, sn, ip, seed, me, -1);
    buf_init(&rb, rt, total, SENTINEL, "receive buffer");
    gather_recv_img(&rb, p, rc, dis, 0, ip, seed, me, -1);
    const long long bytes = sum * (long long) unit_bytes(pr);
    enum expect e = all_equal ? expect_hier_call(c, bytes, EX_SERVE) : expect_call(c, bytes, EX_SERVE);
    struct snap s = pv_snap(C_ALLGATHERV);
    MPI_CHECK(MPI_Allgatherv(ip ? MPI_IN_PLACE : buf_mpi(&sb), (int) sn, st->dt, buf_mpi(&rb), rc, dis, rt->dt,
                             c->comm));
    pv_check_full(C_ALLGATHERV, s, e, 0, all_equal ? hier_spanning(c, (unsigned long long) bytes) : HIER_NO);
    buf_check(&sb);
    buf_check(&rb);
    buf_free(&sb);
    buf_free(&rb);
    free(rc);
    free(dis);
}

void scenario_allgather(void)
{
    struct cinfo w = cinfo_of(MPI_COMM_WORLD);
    run_flat(&w, t_allgather);
    run_flat(&w, t_allgatherv);
    cinfo_free(&w);
}
