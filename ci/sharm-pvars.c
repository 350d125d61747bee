/*
 * LD_PRELOAD library for ci/mpi4py.sh and ci/external-suites.sh: counts,
 * through sharm's MPI_T performance variables, what sharm served in a
 * program that knows nothing of MPI_T (mpi4py's tests, MPICH's).  It wraps
 * MPI_Init/MPI_Init_thread (allocating a handle for every
 * coll_sharm_<op>_served / _fallbacks / _hierarchical / _pair_buffer counter right after MPI
 * is up: Open MPI counts a counter from the moment its handle is allocated)
 * and MPI_Finalize (reading them and printing, per process, one line
 *
 *   sharm-pvars: rank R served op=N ... fallbacks op=N ... hierarchical op=N ...
 *                pair_buffer op=N ...
 *
 * (on one line) with the operations whose counters are not 0 (hierarchical:
 * the served calls that went through the hierarchy's levels; pair_buffer:
 * those that moved data through a two-process pair buffer); "sharm-pvars: rank R sharm
 * not loaded" when no such counter exists).
 */
#include <mpi.h>
#include <stdio.h>
#include <string.h>
#include <errno.h>
#include <unistd.h>

#define MAX_PVARS 256

/* The counters read, coll_sharm_<op>_<group>, printed group by group. */
enum { GROUPS = 4 };
static const char *const groups[GROUPS] = {"served", "fallbacks", "hierarchical", "pair_buffer"};

static MPI_T_pvar_session session;
static MPI_T_pvar_handle handles[MAX_PVARS];
static char ops[MAX_PVARS][64]; /* <op> of each handle */
static int group_of[MAX_PVARS];
static int npvars = -1;

/* The group whose "_<group>" ends `name` (-1: none); its length goes to
 * *op_len, the part of `name` before it. */
static int group_named(const char *name, size_t *op_len)
{
    size_t n = strlen(name);
    for (int g = 0; g < GROUPS; g++) {
        size_t m = strlen(groups[g]) + 1;
        if (n > m && name[n - m] == '_' && strcmp(name + n - m + 1, groups[g]) == 0) {
            *op_len = n - m;
            return g;
        }
    }
    return -1;
}

static void start_counting(void)
{
    int level = MPI_THREAD_SINGLE, provided, n;
    /* The level MPI already provides: Open MPI 4.1's MPI_T_init_thread sets
     * the MPI library's thread level too (MPI_Query_thread then answers
     * with the level asked for here), so anything lower would change the
     * program under test (mpi4py asks for MPI_THREAD_MULTIPLE). */
    PMPI_Query_thread(&level);
    if (MPI_T_init_thread(level, &provided) != MPI_SUCCESS)
        return;
    if (MPI_T_pvar_session_create(&session) != MPI_SUCCESS)
        return;
    npvars = 0;
    MPI_T_pvar_get_num(&n);
    for (int i = 0; i < n && npvars < MAX_PVARS; i++) {
        char name[256], desc[256];
        int nlen = sizeof(name), dlen = sizeof(desc), verb, cls, bind, ro, cont, atomic, count;
        MPI_Datatype dt;
        MPI_T_enum en;
        if (MPI_T_pvar_get_info(i, name, &nlen, &verb, &cls, &dt, &en, desc, &dlen, &bind, &ro,
                                &cont, &atomic) != MPI_SUCCESS)
            continue;
        size_t op_len = 0;
        int g = strncmp(name, "coll_sharm_", 11) == 0 ? group_named(name + 11, &op_len) : -1;
        if (g < 0 || op_len >= sizeof(ops[0]))
            continue;
        if (MPI_T_pvar_handle_alloc(session, i, NULL, &handles[npvars], &count) != MPI_SUCCESS)
            continue;
        if (!cont)
            MPI_T_pvar_start(session, handles[npvars]);
        memcpy(ops[npvars], name + 11, op_len);
        ops[npvars][op_len] = '\0';
        group_of[npvars] = g;
        npvars++;
    }
}

int MPI_Init(int *argc, char ***argv)
{
    int rc = PMPI_Init(argc, argv);
    if (rc == MPI_SUCCESS)
        start_counting();
    return rc;
}

int MPI_Init_thread(int *argc, char ***argv, int required, int *provided)
{
    int rc = PMPI_Init_thread(argc, argv, required, provided);
    if (rc == MPI_SUCCESS)
        start_counting();
    return rc;
}

/* Writes buf[0..n) to standard output, resuming after a short write. */
static void write_all(const char *buf, size_t n)
{
    while (n > 0) {
        ssize_t w = write(STDOUT_FILENO, buf, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return;
        buf += w;
        n -= (size_t)w;
    }
}

int MPI_Finalize(void)
{
    if (npvars >= 0) {
        int rank = -1;
        static char text[GROUPS][4096]; /* " op=N" for each counter not 0 */
        PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
        for (int i = 0; i < npvars; i++) {
            unsigned long long v = 0;
            char item[96];
            MPI_T_pvar_read(session, handles[i], &v);
            MPI_T_pvar_handle_free(session, &handles[i]);
            if (v == 0)
                continue;
            char *group = text[group_of[i]];
            snprintf(item, sizeof(item), " %s=%llu", ops[i], v);
            strncat(group, item, sizeof(text[0]) - strlen(group) - 1);
        }
        /* The whole line goes out in one write(2): the processes' outputs
         * meet in mpirun's, and a line written in pieces (stdio flushes a
         * terminal's buffer when it likes) was once cut in two by another
         * process's line, which ci/mpi4py.sh then could not count. */
        static char line[GROUPS * sizeof(text[0]) + 256]; /* room for every group full */
        int len;
        if (npvars == 0) {
            len = snprintf(line, sizeof(line), "sharm-pvars: rank %d sharm not loaded\n", rank);
        } else {
            len = snprintf(line, sizeof(line), "sharm-pvars: rank %d", rank);
            for (int g = 0; g < GROUPS; g++)
                len += snprintf(line + len, sizeof(line) - len, " %s%s", groups[g], text[g]);
            len += snprintf(line + len, sizeof(line) - len, "\n");
        }
        fflush(stdout); /* the program's own output first */
        write_all(line, (size_t)len);
        MPI_T_pvar_session_free(&session);
        MPI_T_finalize();
    }
    return PMPI_Finalize();
}
