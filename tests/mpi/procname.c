/* Where did each rank run?  Rank 0 prints one line per rank, in rank order:
 *   procname: rank <r> node <MPI_Get_processor_name>
 * then checks one Allreduce and one Bcast over all ranks (the calls a
 * hierarchical collective component serves) and prints "procname: OK".  With --die <r>, rank r kills itself (SIGKILL) after
 * the names are out, while the others wait in a barrier: the launcher must
 * then tear the whole job down. */
#include <mpi.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "stderr_file.h"

int main(int argc, char **argv)
{
    stderr_to_file();
    char name[MPI_MAX_PROCESSOR_NAME] = {0};
    char *all = NULL;
    int rank, size, len, die = -1;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (argc == 3 && 0 == strcmp(argv[1], "--die")) {
        die = atoi(argv[2]);
    }
    MPI_Get_processor_name(name, &len);
    if (0 == rank) {
        all = malloc((size_t) size * MPI_MAX_PROCESSOR_NAME);
        if (NULL == all) {
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
    }
    MPI_Gather(name, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, all, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, 0,
               MPI_COMM_WORLD);
    if (0 == rank) {
        for (int r = 0; r < size; r++) {
            printf("procname: rank %d node %s\n", r, all + (size_t) r * MPI_MAX_PROCESSOR_NAME);
        }
        fflush(stdout);
        free(all);
    }
    if (die >= 0) {
        MPI_Barrier(MPI_COMM_WORLD);
        if (rank == die) {
            raise(SIGKILL);
        }
        /* Never completes: rank `die` is gone. */
        MPI_Barrier(MPI_COMM_WORLD);
    }
    int sum = 0, value = 0;
    MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (0 == rank) {
        value = 4242;
    }
    MPI_Bcast(&value, 1, MPI_INT, 0, MPI_COMM_WORLD);
    if (sum != size * (size - 1) / 2 || value != 4242) {
        printf("procname: rank %d: Allreduce gave %d, Bcast %d\n", rank, sum, value);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    if (0 == rank) {
        printf("procname: OK\n");
    }
    MPI_Finalize();
    return 0;
}
