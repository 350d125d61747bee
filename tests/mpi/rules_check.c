/*
 * rules_check.c - MPI side of tests/rules.rs: runs Allreduce, Bcast,
 * Reduce and Alltoall, then Gather, Scatter, Allgather, the v-variants
 * Gatherv, Scatterv, Allgatherv and Alltoallv with irregular counts, Scan,
 * Exscan, Reduce_scatter_block and Reduce_scatter, each of these with a
 * send buffer and in place, then a Barrier, at a few sizes on
 * MPI_COMM_WORLD and on a
 * duplicate of it (a second segment, so a malformed rule must still be
 * reported only once), checks every result, and prints "rules_check: OK
 * np=<p>".  Which algorithm ran is read by the Rust side from sharm's output
 * at coll_sharm_verbose 100.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#include "stderr_file.h"

static int failures = 0;

static void check(int ok, const char *what, int bytes, int rank)
{
    if (!ok) {
        fprintf(stderr, "rules_check: rank %d: wrong %s result at %d bytes\n", rank, what, bytes);
        failures++;
    }
}

static void run(MPI_Comm comm, int bytes)
{
    int me, p, n = bytes / (int) sizeof(float);
    MPI_Comm_rank(comm, &me);
    MPI_Comm_size(comm, &p);
    float *in = malloc(bytes), *out = malloc(bytes);
    for (int i = 0; i < n; i++) in[i] = (float) (me + i % 7);
    float sum_base = (float) (p * (p - 1) / 2);

    MPI_Allreduce(in, out, n, MPI_FLOAT, MPI_SUM, comm);
    int ok = 1;
    for (int i = 0; i < n; i++) ok &= out[i] == sum_base + (float) (p * (i % 7));
    check(ok, "Allreduce", bytes, me);

    int root = p - 1;
    for (int i = 0; i < n; i++) out[i] = me == root ? (float) (i % 13) : -1.0f;
    MPI_Bcast(out, n, MPI_FLOAT, root, comm);
    ok = 1;
    for (int i = 0; i < n; i++) ok &= out[i] == (float) (i % 13);
    check(ok, "Bcast", bytes, me);

    MPI_Reduce(in, out, n, MPI_FLOAT, MPI_SUM, root, comm);
    if (me == root) {
        ok = 1;
        for (int i = 0; i < n; i++) ok &= out[i] == sum_base + (float) (p * (i % 7));
        check(ok, "Reduce", bytes, me);
    }

    /* Alltoall of `bytes` per block: block j of process i holds i*p + j. */
    float *all_in = malloc((size_t) bytes * (size_t) p), *all_out = malloc((size_t) bytes * (size_t) p);
    for (int j = 0; j < p; j++)
        for (int i = 0; i < n; i++) all_in[j * n + i] = (float) (me * p + j);
    MPI_Alltoall(all_in, n, MPI_FLOAT, all_out, n, MPI_FLOAT, comm);
    ok = 1;
    for (int j = 0; j < p; j++)
        for (int i = 0; i < n; i++) ok &= all_out[j * n + i] == (float) (j * p + me);
    check(ok, "Alltoall", bytes, me);

    /* Gather and Scatter at root p-1, Allgather; each once with a send
     * buffer and once in place.  Block j of the whole buffer holds j + k/8
     * for element k: the whole buffer is checked, the root's own block
     * included. */
    for (int in_place = 0; in_place < 2; in_place++) {
        int mine = me == root && in_place;
        for (int i = 0; i < n; i++) in[i] = (float) me + (float) (i % 8) / 8;
        for (int j = 0; j < p; j++)
            for (int i = 0; i < n; i++)
                all_out[j * n + i] = j == me && in_place ? in[i] : -1.0f;
        MPI_Gather(mine ? MPI_IN_PLACE : in, n, MPI_FLOAT, all_out, n, MPI_FLOAT, root, comm);
        if (me == root) {
            ok = 1;
            for (int j = 0; j < p; j++)
                for (int i = 0; i < n; i++) ok &= all_out[j * n + i] == (float) j + (float) (i % 8) / 8;
            check(ok, in_place ? "Gather (in place)" : "Gather", bytes, me);
        }
        /* The root scatters what it gathered. */
        for (int i = 0; i < n; i++) in[i] = me == root && in_place ? all_out[me * n + i] : -1.0f;
        MPI_Scatter(all_out, n, MPI_FLOAT, mine ? MPI_IN_PLACE : in, n, MPI_FLOAT, root, comm);
        ok = 1;
        for (int i = 0; i < n; i++) ok &= in[i] == (float) me + (float) (i % 8) / 8;
        check(ok, in_place ? "Scatter (in place)" : "Scatter", bytes, me);

        for (int j = 0; j < p; j++)
            for (int i = 0; i < n; i++)
                all_out[j * n + i] = j == me && in_place ? in[i] : -1.0f;
        MPI_Allgather(in_place ? MPI_IN_PLACE : in, n, MPI_FLOAT, all_out, n, MPI_FLOAT, comm);
        ok = 1;
        for (int j = 0; j < p; j++)
            for (int i = 0; i < n; i++) ok &= all_out[j * n + i] == (float) j + (float) (i % 8) / 8;
        check(ok, in_place ? "Allgather (in place)" : "Allgather", bytes, me);
    }

    /* Gatherv, Scatterv and Allgatherv at root p-1, each once with a send
     * buffer and once in place: block j holds n elements for even j and
     * n - n/2 for odd j, placed in reverse (block p-1 first), and element k
     * of block j holds j + k/8.  At 129 elements and three processes the
     * middle process's 65 fit the express lane's 512 bytes and the others'
     * do not: that process alone takes the lane. */
    int *vc = malloc((size_t) p * sizeof(int)), *vd = malloc((size_t) p * sizeof(int));
    for (int j = p - 1, at = 0; j >= 0; j--) {
        vc[j] = n - (j % 2) * (n / 2);
        vd[j] = at;
        at += vc[j];
    }
    for (int in_place = 0; in_place < 2; in_place++) {
        int mine = me == root && in_place, m = vc[me];
        for (int i = 0; i < m; i++) in[i] = (float) me + (float) (i % 8) / 8;
        for (int j = 0; j < p; j++)
            for (int i = 0; i < vc[j]; i++)
                all_out[vd[j] + i] = j == me && in_place ? in[i] : -1.0f;
        MPI_Gatherv(mine ? MPI_IN_PLACE : in, m, MPI_FLOAT, all_out, vc, vd, MPI_FLOAT, root,
                    comm);
        if (me == root) {
            ok = 1;
            for (int j = 0; j < p; j++)
                for (int i = 0; i < vc[j]; i++)
                    ok &= all_out[vd[j] + i] == (float) j + (float) (i % 8) / 8;
            check(ok, in_place ? "Gatherv (in place)" : "Gatherv", bytes, me);
        }
        /* The root scatters what it gathered. */
        for (int i = 0; i < m; i++) in[i] = me == root && in_place ? all_out[vd[me] + i] : -1.0f;
        MPI_Scatterv(all_out, vc, vd, MPI_FLOAT, mine ? MPI_IN_PLACE : in, m, MPI_FLOAT, root,
                     comm);
        ok = 1;
        for (int i = 0; i < m; i++) ok &= in[i] == (float) me + (float) (i % 8) / 8;
        check(ok, in_place ? "Scatterv (in place)" : "Scatterv", bytes, me);

        for (int j = 0; j < p; j++)
            for (int i = 0; i < vc[j]; i++)
                all_out[vd[j] + i] = j == me && in_place ? in[i] : -1.0f;
        MPI_Allgatherv(in_place ? MPI_IN_PLACE : in, m, MPI_FLOAT, all_out, vc, vd, MPI_FLOAT,
                       comm);
        ok = 1;
        for (int j = 0; j < p; j++)
            for (int i = 0; i < vc[j]; i++)
                ok &= all_out[vd[j] + i] == (float) j + (float) (i % 8) / 8;
        check(ok, in_place ? "Allgatherv (in place)" : "Allgatherv", bytes, me);
    }
    free(vc);
    free(vd);

    /* Alltoallv, with a send buffer and in place: the block from s to d
     * holds n elements when s + d is even and n - n/2 when it is odd,
     * placed in reverse on both sides (the block for or from p-1 first),
     * and element k of it holds s * p + d + k / 8.  At 129 elements and
     * three processes the middle process's blocks all take 260 bytes and
     * travel with their headers, the others' between them 516 bytes. */
    int *ac = malloc((size_t) p * sizeof(int)), *ad = malloc((size_t) p * sizeof(int));
    int *bc = malloc((size_t) p * sizeof(int)), *bd = malloc((size_t) p * sizeof(int));
    for (int j = p - 1, at = 0, bt = 0; j >= 0; j--) {
        ac[j] = n - ((me + j) % 2) * (n / 2); /* to j, and from j: the same size */
        bc[j] = ac[j];
        ad[j] = at;
        bd[j] = bt;
        at += ac[j];
        bt += bc[j];
    }
    for (int in_place = 0; in_place < 2; in_place++) {
        float *sendv = in_place ? all_out : all_in;
        for (int j = 0; j < p; j++)
            for (int i = 0; i < ac[j]; i++)
                sendv[ad[j] + i] = (float) (me * p + j) + (float) (i % 8) / 8;
        if (!in_place)
            for (int j = 0; j < p; j++)
                for (int i = 0; i < bc[j]; i++) all_out[bd[j] + i] = -1.0f;
        MPI_Alltoallv(in_place ? MPI_IN_PLACE : all_in, ac, ad, MPI_FLOAT, all_out, bc, bd,
                      MPI_FLOAT, comm);
        ok = 1;
        for (int j = 0; j < p; j++)
            for (int i = 0; i < bc[j]; i++)
                ok &= all_out[bd[j] + i] == (float) (j * p + me) + (float) (i % 8) / 8;
        check(ok, in_place ? "Alltoallv (in place)" : "Alltoallv", bytes, me);
    }
    free(ac);
    free(ad);
    free(bc);
    free(bd);

    /* Scan and Exscan, each once with a send buffer and once in place:
     * element i of process r holds r + i % 5, so the prefix over ranks
     * 0..k-1 holds k(k-1)/2 + k (i % 5). */
    for (int in_place = 0; in_place < 2; in_place++) {
        for (int i = 0; i < n; i++) in[i] = (float) (me + i % 5);
        for (int i = 0; i < n; i++) out[i] = in_place ? in[i] : -1.0f;
        MPI_Scan(in_place ? MPI_IN_PLACE : in, out, n, MPI_FLOAT, MPI_SUM, comm);
        ok = 1;
        for (int i = 0; i < n; i++)
            ok &= out[i] == (float) ((me + 1) * me / 2 + (me + 1) * (i % 5));
        check(ok, in_place ? "Scan (in place)" : "Scan", bytes, me);

        for (int i = 0; i < n; i++) out[i] = in_place ? in[i] : -1.0f;
        MPI_Exscan(in_place ? MPI_IN_PLACE : in, out, n, MPI_FLOAT, MPI_SUM, comm);
        if (me > 0) {
            ok = 1;
            for (int i = 0; i < n; i++)
                ok &= out[i] == (float) (me * (me - 1) / 2 + me * (i % 5));
            check(ok, in_place ? "Exscan (in place)" : "Exscan", bytes, me);
        }
    }

    /* Reduce_scatter_block of `bytes` per block, with a send buffer and in
     * place: element i of block j of process r holds r + (j + i) % 3. */
    for (int in_place = 0; in_place < 2; in_place++) {
        float *input = in_place ? all_out : all_in;
        for (int j = 0; j < p; j++)
            for (int i = 0; i < n; i++) input[j * n + i] = (float) (me + (j + i) % 3);
        if (!in_place)
            for (int i = 0; i < n; i++) all_out[i] = -1.0f;
        MPI_Reduce_scatter_block(in_place ? MPI_IN_PLACE : all_in, all_out, n, MPI_FLOAT, MPI_SUM,
                                 comm);
        ok = 1;
        for (int i = 0; i < n; i++) ok &= all_out[i] == sum_base + (float) (p * ((me + i) % 3));
        check(ok, in_place ? "Reduce_scatter_block (in place)" : "Reduce_scatter_block", bytes, me);
    }

    /* Reduce_scatter with rules_check's irregular counts (block j: n
     * elements for even j, n - n/2 for odd j), with a send buffer and in
     * place: element i of block j of process r holds r + (j + i) % 3. */
    int *rc = malloc((size_t) p * sizeof(int));
    for (int j = 0; j < p; j++) rc[j] = n - (j % 2) * (n / 2);
    for (int in_place = 0; in_place < 2; in_place++) {
        float *input = in_place ? all_out : all_in;
        for (int j = 0, at = 0; j < p; at += rc[j], j++)
            for (int i = 0; i < rc[j]; i++) input[at + i] = (float) (me + (j + i) % 3);
        if (!in_place)
            for (int i = 0; i < rc[me]; i++) all_out[i] = -1.0f;
        MPI_Reduce_scatter(in_place ? MPI_IN_PLACE : all_in, all_out, rc, MPI_FLOAT, MPI_SUM,
                           comm);
        ok = 1;
        for (int i = 0; i < rc[me]; i++)
            ok &= all_out[i] == sum_base + (float) (p * ((me + i) % 3));
        check(ok, in_place ? "Reduce_scatter (in place)" : "Reduce_scatter", bytes, me);
    }
    free(rc);
    free(in);
    free(out);
    free(all_in);
    free(all_out);
    MPI_Barrier(comm);
}

int main(int argc, char **argv)
{
    stderr_to_file();
    MPI_Init(&argc, &argv);
    int me, p;
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &p);
    /* Sizes: one Allgather-sized (8 B), one mid (64 KiB), one streamed in
     * wide fragments (1 MiB); or the byte counts given as arguments
     * (multiples of 4: the data are floats). */
    int sizes[16] = {8, 64 * 1024, 1024 * 1024}, nsizes = 3;
    if (argc > 1) {
        nsizes = 0;
        for (int a = 1; a < argc && nsizes < 16; a++) {
            int b = atoi(argv[a]);
            if (b <= 0 || b % 4 != 0) {
                if (me == 0) fprintf(stderr, "rules_check: bad size '%s'\n", argv[a]);
                MPI_Abort(MPI_COMM_WORLD, 2);
            }
            sizes[nsizes++] = b;
        }
    }
    MPI_Comm dup;
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    for (int s = 0; s < nsizes; s++) {
        run(MPI_COMM_WORLD, sizes[s]);
        run(dup, sizes[s]);
    }
    MPI_Comm_free(&dup);
    int all = 0;
    MPI_Allreduce(&failures, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (me == 0 && all == 0) printf("rules_check: OK np=%d\n", p);
    MPI_Finalize();
    return all != 0;
}
