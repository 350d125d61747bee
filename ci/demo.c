/*
 * Shows sharm at work: runs a few collectives and prints, per operation, how
 * many calls sharm served and how many it handed to the next component, read
 * from its MPI_T performance variables (coll_sharm_<op>_served/_fallbacks).
 */
#include <mpi.h>
#include <stdio.h>
#include <string.h>

/* Open MPI counts a counter from the moment its handle is allocated. */
static MPI_T_pvar_handle start_pvar(MPI_T_pvar_session session, const char *name)
{
    int n, idx = -1;
    MPI_T_pvar_get_num(&n);
    for (int i = 0; i < n && idx < 0; i++) {
        char pname[256], desc[256];
        int plen = sizeof(pname), dlen = sizeof(desc), verb, cls, bind, ro, cont, atomic;
        MPI_Datatype dt;
        MPI_T_enum en;
        if (MPI_T_pvar_get_info(i, pname, &plen, &verb, &cls, &dt, &en, desc, &dlen, &bind, &ro,
                                &cont, &atomic) == MPI_SUCCESS && strcmp(pname, name) == 0)
            idx = i;
    }
    MPI_T_pvar_handle h = MPI_T_PVAR_HANDLE_NULL;
    int count;
    if (idx >= 0)
        MPI_T_pvar_handle_alloc(session, idx, NULL, &h, &count);
    return h;
}

int main(int argc, char **argv)
{
    int provided, rank, size;
    /* MPI_T strictly inside MPI_Init/MPI_Finalize: Open MPI 4.1.4 crashes in
     * its shared-memory BTL at exit when MPI_T outlives MPI_Finalize. */
    MPI_Init(&argc, &argv);
    MPI_T_init_thread(MPI_THREAD_SINGLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    const char *ops[] = {"allreduce", "bcast", "barrier"};
    MPI_T_pvar_session session;
    MPI_T_pvar_handle served[3], fell[3];
    MPI_T_pvar_session_create(&session);
    for (int i = 0; i < 3; i++) {
        char s[64], f[64];
        snprintf(s, sizeof(s), "coll_sharm_%s_served", ops[i]);
        snprintf(f, sizeof(f), "coll_sharm_%s_fallbacks", ops[i]);
        served[i] = start_pvar(session, s);
        fell[i] = start_pvar(session, f);
    }

    double x = rank + 1, sum = 0;
    int ok = 1;
    for (int i = 0; i < 1000; i++) {
        MPI_Allreduce(&x, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        ok &= sum == size * (size + 1) / 2.0;
        double b = rank == 0 ? i : -1;
        MPI_Bcast(&b, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
        ok &= b == i;
        MPI_Barrier(MPI_COMM_WORLD);
    }

    if (rank == 0) {
        printf("sharm demo: %d processes, results %s\n", size, ok ? "correct" : "WRONG");
        for (int i = 0; i < 3; i++) {
            unsigned long long s = 0, f = 0;
            if (served[i] == MPI_T_PVAR_HANDLE_NULL) {
                printf("  MPI_%-10s sharm is not loaded\n", ops[i]);
                continue;
            }
            MPI_T_pvar_read(session, served[i], &s);
            MPI_T_pvar_read(session, fell[i], &f);
            printf("  MPI_%-10s served by sharm: %llu, handed over: %llu\n", ops[i], s, f);
        }
    }
    for (int i = 0; i < 3; i++) {
        if (served[i] != MPI_T_PVAR_HANDLE_NULL) {
            MPI_T_pvar_handle_free(session, &served[i]);
            MPI_T_pvar_handle_free(session, &fell[i]);
        }
    }
    MPI_T_pvar_session_free(&session);
    MPI_T_finalize();
    MPI_Finalize();
    return ok ? 0 : 1;
}
