/* np=2 Allgather or Bcast of N bytes with fresh data, ITERS times, for gdb
 * (trace.py).  coll allgather|bcast [N] [ITERS] */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int bcast = argc > 1 && !strcmp(argv[1], "bcast");
    int n = argc > 2 ? atoi(argv[2]) : 262144, iters = argc > 3 ? atoi(argv[3]) : 50, me;
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    char *s = malloc(n), *r = malloc(2 * (size_t)n);
    for (int i = 0; i < iters; i++) {
        memset(s, i + me, n);
        MPI_Barrier(MPI_COMM_WORLD);
        if (bcast) {
            if (me == 0) memcpy(r, s, n);
            MPI_Bcast(r, n, MPI_CHAR, 0, MPI_COMM_WORLD);
        } else {
            MPI_Allgather(s, n, MPI_CHAR, r, n, MPI_CHAR, MPI_COMM_WORLD);
        }
    }
    if (me == 0) printf("done %d\n", r[n - 1]);
    MPI_Finalize();
    return 0;
}
