/*
 * check_big.c: the "big" scenarios.  big: Bcast, Reduce and Allreduce at
 * counts of several times s*f (every root, representative type/op pairs),
 * exactly s*f/2 and s*f bytes and one element either side, and a few
 * messages of --big bytes [16 MiB].  big_others: every other collective
 * (and Allreduce over red_combos) once or twice with about --big bytes in
 * total [4 MiB].
 */
#include "check_support.h"

void scenario_big(void)
{
    struct cinfo w = cinfo_of(MPI_COMM_WORLD);
    uint64_t seed = 2000000;
    /* Several times s*f: every root, a few representative op/type pairs. */
    struct { enum tid t; enum opk o; } combos[] = {
        {T_INT32, O_SUM}, {T_DOUBLE, O_MAX}, {T_UINT8, O_BXOR}, {T_DOUBLE_INT, O_MINLOC},
        {T_MAT, O_MATMUL}, {T_INT64, O_PROD}, {T_AFF, O_AFFINE},
    };
    for (size_t k = 0; k < sizeof(combos) / sizeof(combos[0]); ++k) {
        size_t sf = (size_t) (opt_s * opt_f) / types[combos[k].t].extent;
        size_t counts[] = {2 * sf + 3, 3 * sf - 1};
        for (size_t ci = 0; ci < 2; ++ci) {
            for (int root = 0; root < w.size; ++root) {
                reduction(&w, combos[k].t, combos[k].o, counts[ci], root, root == w.size - 1, ++seed);
            }
            reduction(&w, combos[k].t, combos[k].o, counts[ci], -1, (int) ci, ++seed);
        }
    }
    /* Exactly s*f/2 and s*f bytes, and one element either side. */
    for (int k = 0; k < 4; ++k) {
        enum tid t = k % 2 == 0 ? T_INT32 : T_MAT;
        enum opk o = k % 2 == 0 ? O_SUM : O_MATMUL;
        size_t sf = (size_t) (opt_s * opt_f) / types[t].extent / (k < 2 ? 2 : 1);
        for (size_t cnt = sf - 1; cnt <= sf + 1; ++cnt) {
            reduction(&w, t, o, cnt, (int) (cnt % (size_t) w.size), 0, ++seed);
            reduction(&w, t, o, cnt, -1, (int) (cnt & 1), ++seed);
            bcast_typed(&w, t, cnt, (int) ((cnt + 1) % (size_t) w.size), ++seed);
        }
    }
    enum tid bt[] = {T_UINT8, T_DOUBLE_INT};
    for (size_t k = 0; k < 2; ++k) {
        size_t sf = (size_t) (opt_s * opt_f) / types[bt[k]].extent;
        for (int root = 0; root < w.size; ++root) {
            bcast_typed(&w, bt[k], 2 * sf + 1, root, ++seed);
            bcast_typed(&w, bt[k], 3 * sf - 7, root, ++seed);
        }
    }
    /* The largest messages: a few calls only. */
    size_t big = (size_t) opt_big_or(16L << 20);
    int last = w.size - 1;
    bcast_typed(&w, T_UINT8, big, last, ++seed);
    reduction(&w, T_INT32, O_SUM, big / 4, -1, 0, ++seed);
    reduction(&w, T_DOUBLE, O_MAX, big / 8, 0, 1, ++seed);
    reduction(&w, T_MAT, O_MATMUL, big / sizeof(struct mat), last, 0, ++seed);
    reduction(&w, T_UINT64, O_BXOR, big / 8, -1, 1, ++seed);
    cinfo_free(&w);
}

/* The data-movement and the other reduction families, large. */
void scenario_big_others(void)
{
    struct cinfo w = cinfo_of(MPI_COMM_WORLD);
    const struct cinfo *c = &w;
    const size_t big = (size_t) opt_big_or(4L << 20);
    const int p = c->size;
    const struct pair *pi = &pairs[P_INT], *pv = &pairs[P_VEC_RLB];
    size_t u = big / ((size_t) p * unit_bytes(pi)), uv = big / ((size_t) p * unit_bytes(pv));
    t_gather(c, pi, u, 0, 0, next_seed());
    t_gather(c, pv, uv, p - 1, 1, next_seed());
    t_gatherv(c, pi, u, p / 2, 1, next_seed());
    t_scatter(c, pi, u, p - 1, 0, next_seed());
    t_scatter(c, pv, uv, 0, 1, next_seed());
    t_scatterv(c, pi, u, p / 2, 0, next_seed());
    t_allgather(c, pi, u, 0, next_seed());
    t_allgather(c, pv, uv, 1, next_seed());
    t_allgatherv(c, pi, u, 1, next_seed());
    t_alltoall(c, pi, u, 0, next_seed());
    t_alltoall(c, pv, uv, 1, next_seed());
    t_alltoallv(c, pi, u, 0, next_seed());
    t_alltoallv(c, pv, uv, 1, next_seed());
    const struct combo *sum = &red_combos[CB_I32_SUM], *mat = &red_combos[CB_MAT], *dbl = &red_combos[CB_DBLINT_MINLOC];
    size_t n = big / 4;
    t_reduce_scatter(c, sum, n / (size_t) p, 1, 0, next_seed());
    t_reduce_scatter(c, mat, big / 16 / (size_t) p, 1, 1, next_seed());
    t_reduce_scatter(c, sum, n / (size_t) p, 0, 1, next_seed());
    t_prefix(c, sum, C_SCAN, n, 0, next_seed());
    t_prefix(c, mat, C_SCAN, big / 16, 1, next_seed());
    t_prefix(c, sum, C_EXSCAN, n, 1, next_seed());
    t_prefix(c, dbl, C_EXSCAN, big / 16, 0, next_seed());
    t_prefix(c, sum, C_ALLREDUCE, n + 1, 0, next_seed());
    t_prefix(c, sum, C_ALLREDUCE, n - 1, 1, next_seed());
    t_prefix(c, mat, C_ALLREDUCE, big / 16 + 3, 0, next_seed());
    t_prefix(c, dbl, C_ALLREDUCE, big / 16 + 1, 1, next_seed());
    cinfo_free(&w);
}
