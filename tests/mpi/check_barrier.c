/*
 * check_barrier.c: Barrier correctness through a shared-memory window: rank
 * r sleeps, sets its flag, enters the barrier; after it every rank must see
 * every flag (a barrier that releases anyone early is caught); on
 * MPI_COMM_WORLD and split communicators, --iters times.
 */
#include "check_support.h"

#include <unistd.h>

/* One counted Barrier (from the mixed scenarios). */
void t_barrier_call(const struct cinfo *c)
{
    setctx(c, C_BARRIER, "datatype=- count=- root=-");
    enum expect e = expect_hier_call(c, -1, EX_SERVE);
    struct snap s = pv_snap(C_BARRIER);
    MPI_CHECK(MPI_Barrier(c->comm));
    pv_check_full(C_BARRIER, s, e, 0, hier_spanning(c, 1));
}

/* Rank r sets its flag in a shared window, the barrier, then every flag must
 * be set: a barrier that releases anyone early is caught. */
static void barrier_window(const struct cinfo *c, long iters)
{
    MPI_Win win;
    char *base;
    const int p = c->size, me = c->rank;
    MPI_CHECK(MPI_Win_allocate_shared(me == 0 ? 64 * (MPI_Aint) p : 0, 1, MPI_INFO_NULL, c->comm, &base, &win));
    MPI_Aint wsize;
    int disp;
    MPI_CHECK(MPI_Win_shared_query(win, 0, &wsize, &disp, &base));
    MPI_CHECK(MPI_Win_lock_all(MPI_MODE_NOCHECK, win));
    if (me == 0) memset(base, 0, 64 * (size_t) p);
    MPI_CHECK(MPI_Win_sync(win));
    MPI_CHECK(MPI_Barrier(c->comm));
    MPI_CHECK(MPI_Win_sync(win));
    for (long it = 0; it < iters; ++it) {
        uint64_t r = mix64((uint64_t) it * 7 + 3);
        if (it % 32 == 0) {
            usleep(1000 * (useconds_t) me); /* rank r arrives r ms late */
        } else if ((int) (r % (uint64_t) p) == me && it % 4 == 1) {
            usleep((useconds_t) ((r >> 32) % 400)); /* a random late comer */
        }
        int *mine = (int *) (base + 64 * me);
        __atomic_store_n(mine, (int) it + 1, __ATOMIC_RELEASE);
        MPI_CHECK(MPI_Win_sync(win));
        setctx(c, C_BARRIER, "datatype=- count=- root=- (iteration %ld of %ld)", it, iters);
        enum expect e = expect_hier_call(c, -1, EX_SERVE);
        struct snap s = pv_snap(C_BARRIER);
        MPI_CHECK(MPI_Barrier(c->comm));
        pv_check_full(C_BARRIER, s, e, 0, hier_spanning(c, 1));
        MPI_CHECK(MPI_Win_sync(win));
        for (int j = 0; j < p; ++j) {
            int v = __atomic_load_n((int *) (base + 64 * j), __ATOMIC_ACQUIRE);
            if (v != it + 1 && v != it + 2) {
                die("index %d (flag of rank %d after the barrier): expected %ld (or %ld), got %d", j, j, it + 1,
                    it + 2, v);
            }
        }
    }
    MPI_CHECK(MPI_Win_unlock_all(win));
    MPI_CHECK(MPI_Win_free(&win));
}

void scenario_barrier(void)
{
    MPI_Comm parity, shuffled;
    MPI_CHECK(MPI_Comm_split(MPI_COMM_WORLD, w_rank % 2, w_rank, &parity));
    MPI_CHECK(MPI_Comm_split(MPI_COMM_WORLD, 0, (int) (mix64((uint64_t) w_rank + 5) % 1000), &shuffled));
    struct cinfo w = cinfo_named(MPI_COMM_WORLD, "MPI_COMM_WORLD"), pc = cinfo_named(parity, "split-by-parity"),
                 sc = cinfo_named(shuffled, "split-shuffled-keys");
    barrier_window(&w, opt_iters);
    barrier_window(&pc, opt_iters / 2);
    barrier_window(&sc, opt_iters / 2);
    cinfo_free(&w);
    cinfo_free(&pc);
    cinfo_free(&sc);
    MPI_CHECK(MPI_Comm_free(&parity));
    MPI_CHECK(MPI_Comm_free(&shuffled));
}
