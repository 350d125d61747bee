/*
 * check_scan.c: Scan (inclusive) and Exscan over every type/op combination
 * of red_combos, with and without MPI_IN_PLACE; rank r's result against the
 * reference fold of ranks below it.  The same check serves Allreduce (the
 * fold of all ranks), which the "allreduce" scenario of check_reduce.c runs.
 */
#include "check_support.h"

/* Scan, Exscan or Allreduce (kind = C_SCAN, C_EXSCAN, C_ALLREDUCE). */
void t_prefix(const struct cinfo *c, const struct combo *cb, enum coll kind, size_t n, int ip, uint64_t seed)
{
    const int me = c->rank, p = c->size;
    const size_t ext = types[cb->t].extent, bytes = n * ext;
    setctx(c, kind, "datatype=%s op=%s count=%zu root=-%s", types[cb->t].name, op_names[cb->o], n, ip_str(ip));
    unsigned char *sb = rbuf_new(bytes, SEND_BG), *rb = rbuf_new(bytes, SENTINEL);
    gen(cb->t, cb->o, ip ? rb : sb, 0, n, seed, me);
    unsigned char *sb0 = dup_bytes(sb, bytes + GUARD), *rb0 = dup_bytes(rb, bytes + GUARD);
    const enum expect policy = cb->served ? EX_SERVE : EX_FALLBACK;
    /* Allreduce also goes through the hierarchy across nodes. */
    enum expect e = kind == C_ALLREDUCE
                        ? expect_bcast_reduce(c, (long) n, n * data_size(cb->t), policy, op_commutative(cb->o))
                        : expect_call(c, (long long) (n * data_size(cb->t)), policy);
    enum hier h = kind == C_ALLREDUCE ? hier_for(c, n * data_size(cb->t), op_commutative(cb->o)) : HIER_NO;
    struct snap s = pv_snap(kind);
    const void *sarg = ip ? MPI_IN_PLACE : sb;
    if (kind == C_SCAN) {
        MPI_CHECK(MPI_Scan(sarg, rb, (int) n, types[cb->t].dt, ops[cb->o], c->comm));
    } else if (kind == C_EXSCAN) {
        MPI_CHECK(MPI_Exscan(sarg, rb, (int) n, types[cb->t].dt, ops[cb->o], c->comm));
    } else {
        MPI_CHECK(MPI_Allreduce(sarg, rb, (int) n, types[cb->t].dt, ops[cb->o], c->comm));
    }
    pv_check_full(kind, s, e, 0, h);
    check_same(sb, sb0, bytes + GUARD, ext, "send buffer (must stay unchanged)");
    if (kind == C_EXSCAN && me == 0) {
        check_same(rb, rb0, bytes + GUARD, ext, "rank 0's receive buffer (must stay untouched)");
    } else {
        int upto = kind == C_SCAN ? me + 1 : kind == C_EXSCAN ? me : p;
        unsigned char *exp = xmalloc(bytes + 1);
        rexpect(cb, exp, 0, n, seed, upto);
        rcheck(cb, rb, exp, n, 0, "receive buffer", e == EX_SERVE);
        free(exp);
        check_guard(rb + bytes, "receive buffer");
    }
    free(sb);
    free(sb0);
    free(rb);
    free(rb0);
}

static void scan(const struct cinfo *c, const struct combo *cb, size_t n, int ip, uint64_t seed)
{
    t_prefix(c, cb, C_SCAN, n, ip, seed);
}

static void exscan(const struct cinfo *c, const struct combo *cb, size_t n, int ip, uint64_t seed)
{
    t_prefix(c, cb, C_EXSCAN, n, ip, seed);
}

void scenario_scan(void)
{
    struct cinfo w = cinfo_of(MPI_COMM_WORLD);
    run_reductions(&w, scan, 0);
    run_reductions(&w, exscan, 0);
    cinfo_free(&w);
}
