/*
 * check_stress.c: many calls back to back.  stress: --calls [10000] mixed
 * Bcast/Reduce/Allreduce calls on MPI_COMM_WORLD and a dup.  mixed: --calls
 * [2000] random calls of every other collective.  crash: the last rank dies
 * while the others wait in a Bcast (the job must fail, end, and leave no
 * shared-memory files).
 */
#include "check_support.h"

/* Every (type, op) pair of the tests. */
static struct {
    enum tid t;
    enum opk o;
} combos[NTYPES * NOPS];
static int n_combos;

static void combos_init(void)
{
    for (int t = 0; t < NTYPES; ++t) {
        for (int o = 0; o < O_NONE; ++o) {
            if (op_applies((enum opk) o, (enum tid) t)) {
                combos[n_combos].t = (enum tid) t;
                combos[n_combos].o = (enum opk) o;
                n_combos++;
            }
        }
    }
}

/* One checked call on c chosen by `sel`, moving about `bytes` bytes: a Bcast
 * of any type but MPI_SHORT_INT (see "packed"), or a Reduce at any root or an
 * Allreduce of any (type, op) pair, in place or not. */
void bcast_reduce_call(struct cinfo *c, uint64_t sel, size_t bytes, uint64_t seed)
{
    int root = (int) ((sel >> 8) % (uint64_t) c->size);
    int in_place = (int) ((sel >> 20) & 1);
    if (sel % 4 == 0) {
        enum tid t = (enum tid) ((sel >> 24) % NTYPES);
        if (t == T_SHORT_INT) t = T_INT16;
        bcast_typed(c, t, bytes / types[t].extent, root, seed);
    } else {
        if (!n_combos) combos_init();
        int k = (int) ((sel >> 24) % (uint64_t) n_combos);
        size_t count = bytes / types[combos[k].t].extent;
        reduction(c, combos[k].t, combos[k].o, count, sel % 4 == 1 ? -1 : root, in_place, seed);
    }
}

/* One call of operation `which` (0..13): `units` units of datatype pair pr
 * (data movement) or elements of combination cb (reductions). */
static void op_call(const struct cinfo *c, int which, const struct pair *pr, const struct combo *cb, size_t units,
                    int root, int ip, uint64_t seed)
{
    switch (which) {
    case 0: t_gather(c, pr, units, root, ip, seed); break;
    case 1: t_gatherv(c, pr, units, root, ip, seed); break;
    case 2: t_scatter(c, pr, units, root, ip, seed); break;
    case 3: t_scatterv(c, pr, units, root, ip, seed); break;
    case 4: t_allgather(c, pr, units, ip, seed); break;
    case 5: t_allgatherv(c, pr, units, ip, seed); break;
    case 6: t_alltoall(c, pr, units, ip, seed); break;
    case 7: t_alltoallv(c, pr, units, ip, seed); break;
    case 8: t_reduce_scatter(c, cb, units, 1, ip, seed); break;
    case 9: t_reduce_scatter(c, cb, units, 0, ip, seed); break;
    case 10: t_prefix(c, cb, C_SCAN, units, ip, seed); break;
    case 11: t_prefix(c, cb, C_EXSCAN, units, ip, seed); break;
    case 12: t_prefix(c, cb, C_ALLREDUCE, units, ip, seed); break;
    default: t_barrier_call(c); break;
    }
}

/* A call of operation `which` with the INT or the vector/resized pair and
 * one of the primary reduction combinations, chosen by the seed. */
void any_call(const struct cinfo *c, int which, size_t units, int root, uint64_t seed)
{
    const struct pair *pr = &pairs[(seed >> 8) & 1 ? P_INT : P_VEC_RLB];
    const struct combo *cb = &red_combos[(seed >> 9) % 3];
    op_call(c, which, pr, cb, units, root, (int) (seed >> 10) & 1, seed);
}

/* --calls random calls back to back on MPI_COMM_WORLD and a dup of it: any
 * operation, datatype pair or combination, root, MPI_IN_PLACE or not; mostly
 * small messages, some around a fragment, a few of several s*f. */
void scenario_mixed(void)
{
    MPI_Comm dup;
    MPI_CHECK(MPI_Comm_dup(MPI_COMM_WORLD, &dup));
    struct cinfo cs[2] = {cinfo_named(MPI_COMM_WORLD, "MPI_COMM_WORLD"), cinfo_named(dup, "dup-of-world")};
    const long calls = opt_calls_or(2000);
    for (long i = 0; i < calls; ++i) {
        uint64_t r = mix64(0x5eed0000ULL + (uint64_t) i), r2 = mix64(r);
        const struct cinfo *c = &cs[r >> 63];
        int which = (int) (r % 14);
        const struct pair *pr = &pairs[(r >> 8) % n_pairs];
        const struct combo *cb = &red_combos[(r >> 16) % n_red_combos];
        size_t ub = which < 8 ? unit_bytes(pr) : types[cb->t].extent, bytes;
        switch ((r >> 24) % 8) {
        case 0: bytes = 0; break;
        case 1: case 2: case 3: case 4: bytes = r2 % 256; break;
        case 5: case 6: bytes = r2 % (2 * (size_t) opt_f + 64); break;
        default: bytes = r2 % (2 * (size_t) opt_s * (size_t) opt_f); break;
        }
        op_call(c, which, pr, cb, bytes / (ub ? ub : 8) + ((r >> 40) & 1), (int) ((r >> 44) % (uint64_t) c->size),
                 (int) (r >> 52) & 1, next_seed());
    }
    cinfo_free(&cs[0]);
    cinfo_free(&cs[1]);
    MPI_CHECK(MPI_Comm_free(&dup));
}

void scenario_stress(void)
{
    MPI_Comm dup;
    MPI_CHECK(MPI_Comm_dup(MPI_COMM_WORLD, &dup));
    MPI_CHECK(MPI_Comm_set_name(dup, "dup-of-world"));
    struct cinfo cs[2] = {cinfo_of(MPI_COMM_WORLD), cinfo_of(dup)};
    uint64_t st = 0x5eed;
    const long calls = opt_calls_or(10000);
    for (long i = 0; i < calls; ++i) {
        st = mix64(st);
        uint64_t r = mix64(st + 1);
        size_t bytes; /* mostly small, often around f, sometimes several s*f */
        switch (r % 10) {
        case 0: bytes = 0; break;
        case 1: case 2: case 3: case 4: bytes = 1 + (size_t) (r >> 8) % 256; break;
        case 5: case 6: case 7: case 8: bytes = (size_t) (r >> 8) % (size_t) (2 * opt_f + 32); break;
        default: bytes = (size_t) (r >> 8) % (size_t) (2 * opt_s * opt_f + 1); break;
        }
        bcast_reduce_call(&cs[(st >> 40) & 1], mix64(st + 2), bytes, st);
    }
    cinfo_free(&cs[0]);
    cinfo_free(&cs[1]);
    MPI_CHECK(MPI_Comm_free(&dup));
}

/* Sets up segments on two communicators, then the last rank dies (SIGABRT)
 * while the others wait in a Bcast: the job must end (mpirun kills the
 * waiting processes) and leave nothing in /dev/shm.  Never returns. */
void scenario_crash(void)
{
    MPI_Comm dup;
    MPI_CHECK(MPI_Comm_dup(MPI_COMM_WORLD, &dup));
    MPI_CHECK(MPI_Comm_set_name(dup, "dup-of-world"));
    struct cinfo cs[2] = {cinfo_of(MPI_COMM_WORLD), cinfo_of(dup)};
    for (int k = 0; k < 20; ++k) {
        bcast_reduce_call(&cs[k & 1], mix64((uint64_t) k + 7), 100000, (uint64_t) k + 8000000);
    }
    if (w_rank == 0) { /* before the barrier: printed before anybody dies */
        printf(CHECK_NAME ": crashing rank %d on purpose\n", w_size - 1);
        fflush(stdout);
    }
    MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
    if (w_rank == w_size - 1) {
        abort();
    }
    static char buf[1 << 20];
    snprintf(ctx, sizeof(ctx), "MPI_Bcast from the crashed rank");
    MPI_Bcast(buf, sizeof(buf), MPI_BYTE, w_size - 1, MPI_COMM_WORLD);
    die("the Bcast from a crashed rank returned");
}
