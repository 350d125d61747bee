/*
 * check_reduce_scatter.c: Reduce_scatter_block and Reduce_scatter (irregular
 * counts, zeros included): every type/op combination of red_combos, with and
 * without MPI_IN_PLACE; each process's slice against the reference fold.
 */
#include "check_support.h"

/* Reduce_scatter_block (`block`: n per process) or Reduce_scatter. */
void t_reduce_scatter(const struct cinfo *c, const struct combo *cb, size_t n, int block, int ip, uint64_t seed)
{
    const int me = c->rank, p = c->size;
    const size_t ext = types[cb->t].extent;
    int *rc = xmalloc(sizeof(int) * (size_t) p);
    size_t total = 0, first = 0;
    for (int j = 0; j < p; ++j) {
        rc[j] = block ? (int) n : vcount(seed * 17 + (uint64_t) j, n);
        if (j < me) first += (size_t) rc[j];
        total += (size_t) rc[j];
    }
    const size_t mine = (size_t) rc[me];
    enum coll op = block ? C_RSB : C_RS;
    if (block) {
        setctx(c, op, "datatype=%s op=%s recvcount=%zu root=-%s", types[cb->t].name, op_names[cb->o], n, ip_str(ip));
    } else {
        setctx(c, op, "datatype=%s op=%s recvcounts=%s root=-%s", types[cb->t].name, op_names[cb->o], ints(rc, p),
               ip_str(ip));
    }
    unsigned char *sb = rbuf_new(total * ext, SEND_BG), *rb = rbuf_new((ip ? total : mine) * ext, SENTINEL);
    gen(cb->t, cb->o, ip ? rb : sb, 0, total, seed, me);
    unsigned char *sb0 = dup_bytes(sb, total * ext + GUARD);
    enum expect e = expect_call(c, (long long) (total * data_size(cb->t)), cb->served ? EX_SERVE : EX_FALLBACK);
    struct snap s = pv_snap(op);
    if (block) {
        MPI_CHECK(MPI_Reduce_scatter_block(ip ? MPI_IN_PLACE : sb, rb, (int) n, types[cb->t].dt, ops[cb->o], c->comm));
    } else {
        MPI_CHECK(MPI_Reduce_scatter(ip ? MPI_IN_PLACE : sb, rb, rc, types[cb->t].dt, ops[cb->o], c->comm));
    }
    pv_check(op, s, e);
    check_same(sb, sb0, total * ext + GUARD, ext, "send buffer (must stay unchanged)");
    unsigned char *exp = xmalloc(mine * ext + 1);
    rexpect(cb, exp, first, mine, seed, p);
    rcheck(cb, rb, exp, mine, first, "receive buffer", e == EX_SERVE);
    check_guard(rb + (ip ? total : mine) * ext, "receive buffer");
    free(exp);
    free(sb);
    free(sb0);
    free(rb);
    free(rc);
}

static void rsb(const struct cinfo *c, const struct combo *cb, size_t n, int ip, uint64_t seed)
{
    t_reduce_scatter(c, cb, n, 1, ip, seed);
}

static void rs(const struct cinfo *c, const struct combo *cb, size_t n, int ip, uint64_t seed)
{
    t_reduce_scatter(c, cb, n, 0, ip, seed);
}

void scenario_redscat(void)
{
    struct cinfo w = cinfo_of(MPI_COMM_WORLD);
    run_reductions(&w, rsb, 0);
    run_reductions(&w, rs, 0);
    cinfo_free(&w);
}
