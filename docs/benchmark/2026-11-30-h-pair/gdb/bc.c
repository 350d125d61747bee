#include <mpi.h>
#include <stdlib.h>
#include <string.h>
#include <stdio.h>
int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int n = argc > 1 ? atoi(argv[1]) : 262144, iters = argc > 2 ? atoi(argv[2]) : 50, me;
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    char *s = malloc(n), *r = malloc(2 * (size_t)n);
    for (int i = 0; i < iters; i++) {
        memset(s, i + me, n);
        MPI_Barrier(MPI_COMM_WORLD);
        if (me == 0) memcpy(r, s, n); MPI_Bcast(r, n, MPI_CHAR, 0, MPI_COMM_WORLD);
    }
    if (me == 0) printf("done %d\n", r[2 * n - 1]);
    MPI_Finalize();
    return 0;
}
