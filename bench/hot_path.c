/* Calls one collective N times at np=2, each after a zero-byte point-to-point
 * barrier, for bench/hot_path.sh to count the plugin's instructions per call
 * under callgrind (bench/README.md, "Instructions per call").
 *
 *   hot_path OP BYTES N     OP: bcast reduce allreduce allgather gather
 *                               scatter alltoall scan exscan
 *                               reduce_scatter_block gatherv scatterv
 *                               allgatherv alltoallv reduce_scatter barrier
 *                               (root 0; the reductions sum BYTES/4 floats,
 *                               each process's block for the
 *                               Reduce_scatters; the v-variants' blocks
 *                               all hold BYTES)
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int call(const char *op, char *s, char *r, int n)
{
    MPI_Comm w = MPI_COMM_WORLD;
    /* The v-variants' counts and displacements (two processes). */
    int c[2] = {n, n}, d[2] = {0, n}, f[2] = {n / 4, n / 4};
    if (!strcmp(op, "bcast")) return MPI_Bcast(s, n, MPI_BYTE, 0, w);
    if (!strcmp(op, "reduce")) return MPI_Reduce(s, r, n / 4, MPI_FLOAT, MPI_SUM, 0, w);
    if (!strcmp(op, "allreduce")) return MPI_Allreduce(s, r, n / 4, MPI_FLOAT, MPI_SUM, w);
    if (!strcmp(op, "allgather")) return MPI_Allgather(s, n, MPI_BYTE, r, n, MPI_BYTE, w);
    if (!strcmp(op, "gather")) return MPI_Gather(s, n, MPI_BYTE, r, n, MPI_BYTE, 0, w);
    if (!strcmp(op, "scatter")) return MPI_Scatter(s, n, MPI_BYTE, r, n, MPI_BYTE, 0, w);
    if (!strcmp(op, "alltoall")) return MPI_Alltoall(s, n, MPI_BYTE, r, n, MPI_BYTE, w);
    if (!strcmp(op, "scan")) return MPI_Scan(s, r, n / 4, MPI_FLOAT, MPI_SUM, w);
    if (!strcmp(op, "exscan")) return MPI_Exscan(s, r, n / 4, MPI_FLOAT, MPI_SUM, w);
    if (!strcmp(op, "reduce_scatter_block"))
        return MPI_Reduce_scatter_block(s, r, n / 4, MPI_FLOAT, MPI_SUM, w);
    if (!strcmp(op, "gatherv")) return MPI_Gatherv(s, n, MPI_BYTE, r, c, d, MPI_BYTE, 0, w);
    if (!strcmp(op, "scatterv")) return MPI_Scatterv(s, c, d, MPI_BYTE, r, n, MPI_BYTE, 0, w);
    if (!strcmp(op, "allgatherv")) return MPI_Allgatherv(s, n, MPI_BYTE, r, c, d, MPI_BYTE, w);
    if (!strcmp(op, "alltoallv")) return MPI_Alltoallv(s, c, d, MPI_BYTE, r, c, d, MPI_BYTE, w);
    if (!strcmp(op, "reduce_scatter")) return MPI_Reduce_scatter(s, r, f, MPI_FLOAT, MPI_SUM, w);
    if (!strcmp(op, "barrier")) return MPI_Barrier(w);
    fprintf(stderr, "hot_path: unknown operation %s\n", op);
    return MPI_Abort(w, 2);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int me, p;
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &p);
    if (argc != 4 || p != 2) {
        if (me == 0) fprintf(stderr, "usage: mpirun -np 2 hot_path OP BYTES N\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    int n = atoi(argv[2]), calls = atoi(argv[3]);
    char *s = calloc((size_t)n * p + 64, 1), *r = calloc((size_t)n * p + 64, 1);
    for (int i = 0; i < calls; i++) {
        int peer = me ^ 1;
        MPI_Sendrecv(NULL, 0, MPI_BYTE, peer, 0, NULL, 0, MPI_BYTE, peer, 0,
                     MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        call(argv[1], s, r, n);
    }
    free(s);
    free(r);
    MPI_Finalize();
    return 0;
}
