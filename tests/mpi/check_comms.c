/*
 * check_comms.c: the collectives on communicators other than
 * MPI_COMM_WORLD.  comms: Bcast/Reduce/Allreduce on split (by parity, with
 * shuffled keys, by type shared) and dup'ed communicators used in
 * alternation with MPI_COMM_WORLD and MPI_COMM_SELF, repeated dup/free, an
 * intercommunicator Bcast.  comms_others: every other collective on split
 * and dup'ed communicators in alternation, dup/free cycles.
 */
#include "check_support.h"

void scenario_comms(void)
{
    uint64_t seed = 4000000;
    MPI_Comm parity, shuffled, dup, node;
    MPI_CHECK(MPI_Comm_split(MPI_COMM_WORLD, w_rank % 2, w_rank, &parity));
    MPI_CHECK(MPI_Comm_set_name(parity, "split-by-parity"));
    /* Shuffled keys: new rank order is a fixed permutation of the world. */
    int key = (int) (mix64((uint64_t) w_rank + 77) % 1000) * 64 + w_rank;
    MPI_CHECK(MPI_Comm_split(MPI_COMM_WORLD, 0, key, &shuffled));
    MPI_CHECK(MPI_Comm_set_name(shuffled, "split-shuffled"));
    MPI_CHECK(MPI_Comm_dup(MPI_COMM_WORLD, &dup));
    MPI_CHECK(MPI_Comm_set_name(dup, "dup-of-world"));
    MPI_CHECK(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node));
    MPI_CHECK(MPI_Comm_set_name(node, "split-type-shared"));
    struct cinfo cs[6] = {cinfo_of(MPI_COMM_WORLD), cinfo_of(parity), cinfo_of(shuffled),
                          cinfo_of(dup), cinfo_of(MPI_COMM_SELF), cinfo_of(node)};
    size_t counts[] = {16, 148, (size_t) opt_f - 4, (size_t) opt_f + 12, 4 * (size_t) opt_f}; /* bytes */
    for (unsigned i = 0; i < 180; ++i) {
        struct cinfo *c = &cs[i % 6];
        bcast_reduce_call(c, mix64(i), counts[(i / 3) % 5], ++seed);
    }
    for (int k = 0; k < 6; ++k) cinfo_free(&cs[k]);
    MPI_CHECK(MPI_Comm_free(&parity));
    MPI_CHECK(MPI_Comm_free(&shuffled));
    MPI_CHECK(MPI_Comm_free(&dup));
    MPI_CHECK(MPI_Comm_free(&node));

    /* Communicators created and freed repeatedly (segments set up and released). */
    for (int rep = 0; rep < 20; ++rep) {
        MPI_Comm d2;
        MPI_CHECK(MPI_Comm_dup(MPI_COMM_WORLD, &d2));
        MPI_CHECK(MPI_Comm_set_name(d2, "dup-freed"));
        struct cinfo c = cinfo_of(d2);
        bcast_reduce_call(&c, mix64((uint64_t) rep + 1000), 4000 + (size_t) rep * 388, ++seed);
        cinfo_free(&c);
        MPI_CHECK(MPI_Comm_free(&d2));
    }

    /* An intercommunicator between the two parity groups: one Bcast. */
    if (w_size >= 2) {
        MPI_Comm local, inter;
        int color = w_rank % 2;
        MPI_CHECK(MPI_Comm_split(MPI_COMM_WORLD, color, w_rank, &local));
        MPI_CHECK(MPI_Intercomm_create(local, 0, MPI_COMM_WORLD, color == 0 ? 1 : 0, 77, &inter));
        int lrank, lsize;
        MPI_CHECK(MPI_Comm_rank(local, &lrank));
        MPI_CHECK(MPI_Comm_size(local, &lsize));
        const int n = 3000;
        int *buf = xmalloc(sizeof(int) * n);
        for (int j = 0; j < n; ++j) buf[j] = color == 0 && lrank == 0 ? (int) raw(seed, 0, (size_t) j) : -1;
        int root = color == 0 ? (lrank == 0 ? MPI_ROOT : MPI_PROC_NULL) : 0;
        snprintf(ctx, sizeof(ctx), "call #%llu: MPI_Bcast on an intercommunicator (parity groups), count=%d, root=%s",
                 ++call_seq, n, root == MPI_ROOT ? "MPI_ROOT" : root == MPI_PROC_NULL ? "MPI_PROC_NULL" : "0");
        /* The sending group never involves sharm.  In the receiving group,
         * coll/inter forwards the data over the local intracommunicator,
         * which sharm serves like any other (if it has 2+ processes). */
        struct cinfo lc = cinfo_of(local);
        enum expect ex = color == 1 ? expect_bcast_reduce(&lc, n, (unsigned long long) n * 4, EX_SERVE, 1) : EX_NONE;
        enum hier h = color == 1 ? hier_for(&lc, (unsigned long long) n * 4, 1) : HIER_NO;
        struct snap before = pv_snap(C_BCAST);
        MPI_CHECK(MPI_Bcast(buf, n, MPI_INT, root, inter));
        pv_check_full(C_BCAST, before, ex, 1, h);
        cinfo_free(&lc);
        for (int j = 0; j < n; ++j) {
            int e = color == 1 || lrank == 0 ? (int) raw(seed, 0, (size_t) j) : -1;
            if (buf[j] != e) die("index %d: expected %d, got %d", j, e, buf[j]);
        }
        free(buf);
        MPI_CHECK(MPI_Comm_free(&inter));
        MPI_CHECK(MPI_Comm_free(&local));
    }
}

void scenario_comms_others(void)
{
    MPI_Comm parity, shuffled, dup, dup_parity;
    MPI_CHECK(MPI_Comm_split(MPI_COMM_WORLD, w_rank % 2, w_rank, &parity));
    MPI_CHECK(MPI_Comm_split(MPI_COMM_WORLD, 0, (int) (mix64((uint64_t) w_rank + 99) % 1000), &shuffled));
    MPI_CHECK(MPI_Comm_dup(MPI_COMM_WORLD, &dup));
    MPI_CHECK(MPI_Comm_dup(parity, &dup_parity));
    struct cinfo cs[5] = {cinfo_named(parity, "split-by-parity"), cinfo_named(shuffled, "split-shuffled-keys"),
                          cinfo_named(dup, "dup-of-world"), cinfo_named(MPI_COMM_WORLD, "MPI_COMM_WORLD"),
                          cinfo_named(dup_parity, "dup-of-parity-split")};
    size_t units[3] = {1, (size_t) opt_f / 4 + 1, 2 * (size_t) opt_s * (size_t) opt_f / 4 + 3};
    for (int i = 0; i < 5 * 14 * 2; ++i) {
        const struct cinfo *c = &cs[i % 5];
        int which = (i / 5 + i / 70) % 14; /* every op on every communicator */
        any_call(c, which, units[i % 3], i % c->size, next_seed());
    }
    for (int k = 0; k < 5; ++k) cinfo_free(&cs[k]);
    MPI_CHECK(MPI_Comm_free(&parity));
    MPI_CHECK(MPI_Comm_free(&shuffled));
    MPI_CHECK(MPI_Comm_free(&dup));
    MPI_CHECK(MPI_Comm_free(&dup_parity));
    /* Communicators created and freed again and again (segments set up and released). */
    for (int rep = 0; rep < 8; ++rep) {
        MPI_Comm d;
        MPI_CHECK(MPI_Comm_dup(MPI_COMM_WORLD, &d));
        struct cinfo c = cinfo_named(d, "dup-then-freed");
        any_call(&c, 7, 100 + (size_t) rep * 300, 0, next_seed());
        any_call(&c, 11, 100 + (size_t) rep * 300, 0, next_seed());
        cinfo_free(&c);
        MPI_CHECK(MPI_Comm_free(&d));
    }
}

