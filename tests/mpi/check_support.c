/*
 * check_support.c: failure reporting, options, communicators under test and
 * sharm's MPI_T counters for every scenario of sharm_check (see
 * check_support.h).
 */
#include "check_support.h"

#include <signal.h>
#include <stdarg.h>
#include <unistd.h>

/* ------------------------------------------------------------------------ */
/* Failure reporting                                                         */

int w_rank = 0, w_size = 1;
const char *cur_scenario = "start-up";
char ctx[1536] = "start-up";
unsigned long long call_seq;

void die(const char *fmt, ...)
{
    char msg[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    fprintf(stderr, CHECK_NAME ": FAIL rank %d scenario %s: %s: %s\n", w_rank, cur_scenario, ctx, msg);
    fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, 1);
    exit(1);
}

void *xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p) die("out of memory (%zu bytes)", n);
    return p;
}

uint64_t mix64(uint64_t z)
{
    z += 0x9e3779b97f4a7c15ULL;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static uint64_t seed_ctr = 1;
uint64_t next_seed(void) { return mix64(++seed_ctr * 0x51ed2701ULL); }

long first_dirty(const unsigned char *p, size_t n)
{
    for (size_t k = 0; k < n; ++k) {
        if (p[k] != SENTINEL) return (long) k;
    }
    return -1;
}

const char *ints(const int *v, int p)
{
    static char out[4][256];
    static int which;
    char *s = out[which = (which + 1) % 4];
    size_t n = 0;
    s[n++] = '[';
    for (int j = 0; j < p && n < 200; ++j) n += (size_t) snprintf(s + n, 256 - n, j ? ",%d" : "%d", v[j]);
    snprintf(s + n, 256 - n, "]");
    return s;
}

const char *ip_str(int in_place) { return in_place ? " MPI_IN_PLACE" : ""; }

/* ------------------------------------------------------------------------ */
/* Options                                                                   */

long opt_f = 8192, opt_s = 32;
enum expect_mode opt_mode = MODE_SERVE;
long opt_iters = 400, opt_alarm = 240;
enum hier_mode opt_hierarchy = HIER_MODE_AUTO;
long opt_vnode = 0;
/* -1: not given, each scenario has its own default */
long opt_big = -1, opt_calls = -1;

long opt_big_or(long dflt) { return opt_big < 0 ? dflt : opt_big; }
long opt_calls_or(long dflt) { return opt_calls < 0 ? dflt : opt_calls; }

/* ------------------------------------------------------------------------ */
/* Communicators                                                             */

struct cinfo cinfo_of(MPI_Comm comm)
{
    struct cinfo c;
    MPI_Group g, wg;
    int len;
    c.comm = comm;
    MPI_CHECK(MPI_Comm_rank(comm, &c.rank));
    MPI_CHECK(MPI_Comm_size(comm, &c.size));
    MPI_CHECK(MPI_Comm_get_name(comm, c.name, &len));
    c.world = xmalloc(sizeof(int) * (size_t) c.size);
    int *ranks = xmalloc(sizeof(int) * (size_t) c.size);
    for (int r = 0; r < c.size; ++r) ranks[r] = r;
    MPI_CHECK(MPI_Comm_group(comm, &g));
    MPI_CHECK(MPI_Comm_group(MPI_COMM_WORLD, &wg));
    MPI_CHECK(MPI_Group_translate_ranks(g, c.size, ranks, wg, c.world));
    MPI_CHECK(MPI_Group_free(&g));
    MPI_CHECK(MPI_Group_free(&wg));
    free(ranks);
    /* sharm's rule (coll_sharm_hierarchy): `on` serves every communicator
     * of 2+ processes through the hierarchy, `auto` those spanning several
     * nodes, real ones or virtual ones of --vnode consecutive ranks. */
    c.multi_node = 0;
    if (c.size >= 2) {
        MPI_Comm node;
        int node_size;
        MPI_CHECK(MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node));
        MPI_CHECK(MPI_Comm_size(node, &node_size));
        MPI_CHECK(MPI_Comm_free(&node));
        c.multi_node = node_size < c.size; /* alike in every process of comm */
    }
    c.sharm = c.size >= 2 && !(c.multi_node && opt_hierarchy == HIER_MODE_OFF);
    int spans = c.multi_node || (opt_vnode > 0 && c.size > opt_vnode);
    c.hier = c.sharm && (opt_hierarchy == HIER_MODE_ON || (opt_hierarchy == HIER_MODE_AUTO && spans));
    return c;
}

struct cinfo cinfo_named(MPI_Comm comm, const char *name)
{
    MPI_CHECK(MPI_Comm_set_name(comm, name));
    return cinfo_of(comm);
}

void cinfo_free(struct cinfo *c)
{
    free(c->world);
    c->world = NULL;
}

/* ------------------------------------------------------------------------ */
/* sharm's performance variables                                              */

const char *const coll_pv_names[NCOLL] = {
    "barrier", "bcast", "reduce", "allreduce", "gather", "gatherv", "scatter", "scatterv",
    "allgather", "allgatherv", "alltoall", "alltoallv", "reduce_scatter_block",
    "reduce_scatter", "scan", "exscan",
};
const char *const coll_mpi_names[NCOLL] = {
    "MPI_Barrier", "MPI_Bcast", "MPI_Reduce", "MPI_Allreduce", "MPI_Gather", "MPI_Gatherv",
    "MPI_Scatter", "MPI_Scatterv", "MPI_Allgather", "MPI_Allgatherv", "MPI_Alltoall",
    "MPI_Alltoallv", "MPI_Reduce_scatter_block", "MPI_Reduce_scatter", "MPI_Scan", "MPI_Exscan"};

#define NKINDS 3
static const char *const kind_names[NKINDS] = {"served", "fallbacks", "hierarchical"};
static MPI_T_pvar_session pv_session;
static MPI_T_pvar_handle pv_handle[NCOLL][NKINDS];

/* Totals for the summary line. */
unsigned long long n_calls, n_served, n_fallbacks, n_hierarchical, n_hier_expected;

/* Index of the counter `name` (MPI_T_pvar_get_index is MPI 4.0; Open MPI 4.1
 * has it although it reports MPI 3.1, elsewhere search the list). */
static int find_pvar(const char *name, int *idx)
{
#if defined(OPEN_MPI) || MPI_VERSION >= 4
    return MPI_T_pvar_get_index(name, MPI_T_PVAR_CLASS_COUNTER, idx);
#else
    int num;
    MPI_CHECK(MPI_T_pvar_get_num(&num));
    for (int i = 0; i < num; ++i) {
        char n[256], desc[16];
        int nlen = sizeof(n), dlen = sizeof(desc), verb, cls, bind, ro, cont, atomic;
        MPI_Datatype dt;
        MPI_T_enum en;
        if (MPI_T_pvar_get_info(i, n, &nlen, &verb, &cls, &dt, &en, desc, &dlen, &bind, &ro,
                                &cont, &atomic) == MPI_SUCCESS &&
            cls == MPI_T_PVAR_CLASS_COUNTER && strcmp(n, name) == 0) {
            *idx = i;
            return MPI_SUCCESS;
        }
    }
    return MPI_T_ERR_INVALID_NAME;
#endif
}

/* Right after MPI_Init: Open MPI counts from a handle's allocation. */
void pv_init(void)
{
    int provided, idx, count;
    MPI_CHECK(MPI_T_init_thread(MPI_THREAD_SINGLE, &provided));
    MPI_CHECK(MPI_T_pvar_session_create(&pv_session));
    for (int c = 0; c < NCOLL; ++c) {
        for (int k = 0; k < NKINDS; ++k) {
            char name[96];
            snprintf(name, sizeof(name), "coll_sharm_%s_%s", coll_pv_names[c], kind_names[k]);
            int rc = find_pvar(name, &idx);
            if (rc != MPI_SUCCESS) {
                die("performance variable %s not found (rc %d): is the sharm component "
                    "loaded (mca_base_component_path)?", name, rc);
            }
            MPI_CHECK(MPI_T_pvar_handle_alloc(pv_session, idx, NULL, &pv_handle[c][k], &count));
            if (count != 1) die("performance variable %s has count %d, expected 1", name, count);
        }
    }
}

void pv_finish(void)
{
    MPI_CHECK(MPI_T_pvar_session_free(&pv_session));
    /* before MPI_Finalize (the other order crashes Open MPI 4.1.4) */
    MPI_CHECK(MPI_T_finalize());
}

struct snap pv_snap(enum coll c)
{
    struct snap s;
    MPI_CHECK(MPI_T_pvar_read(pv_session, pv_handle[c][0], &s.served));
    MPI_CHECK(MPI_T_pvar_read(pv_session, pv_handle[c][1], &s.fallbacks));
    MPI_CHECK(MPI_T_pvar_read(pv_session, pv_handle[c][2], &s.hierarchical));
    return s;
}

static const char *const expect_names[] = {"served", "handed to the next component",
                                           "served or handed over", "not seen by sharm",
                                           "served or not seen"};

void pv_check_full(enum coll c, struct snap before, enum expect ex, int or_none, enum hier h)
{
    struct snap after = pv_snap(c);
    unsigned long long ds = after.served - before.served;
    unsigned long long df = after.fallbacks - before.fallbacks;
    unsigned long long dh = after.hierarchical - before.hierarchical;
    int ok;
    switch (ex) {
    case EX_SERVE: ok = ds == 1 && df == 0; break;
    case EX_FALLBACK: ok = ds == 0 && df == 1; break;
    case EX_EITHER: ok = ds + df == 1; break;
    case EX_NONE: ok = ds == 0 && df == 0; break;
    default: ok = ds <= 1 && df == 0; break;
    }
    if (or_none && ds == 0 && df == 0) ok = 1;
    if (!ok) {
        die("counters coll_sharm_%s_served/_fallbacks moved by +%llu/+%llu; the call should have "
            "been %s%s", coll_pv_names[c], ds, df, expect_names[ex], or_none ? " (or not seen)" : "");
    }
    /* A call the hierarchy was to serve and the flat path served instead
     * (the hierarchy could not be built) fails here. */
    unsigned long long want = h == HIER_IF_SERVED ? ds : 0;
    if (h != HIER_ANY && dh != want) {
        die("counter coll_sharm_%s_hierarchical moved by +%llu, expected +%llu (served +%llu): the "
            "call %s through the hierarchy (run's coll_sharm_hierarchy %s, virtual node size %ld)",
            coll_pv_names[c], dh, want, ds, want ? "should have gone" : "should not have gone",
            opt_hierarchy == HIER_MODE_ON ? "on" : opt_hierarchy == HIER_MODE_OFF ? "off" : "auto",
            opt_vnode);
    }
    n_calls++;
    n_served += ds;
    n_fallbacks += df;
    n_hierarchical += dh;
    n_hier_expected += h == HIER_IF_SERVED ? ds : 0;
}

void pv_check(enum coll c, struct snap before, enum expect ex)
{
    pv_check_full(c, before, ex, 0, HIER_NO);
}

enum expect expect_bcast_reduce(const struct cinfo *c, long count, unsigned long long bytes,
                                enum expect policy, int commutative)
{
    if (!c->sharm) return EX_NONE;
    if (count == 0) return EX_NONE;
    if (bytes == 0) return EX_SERVE; /* nothing to move (a datatype of size 0) */
    /* Across nodes only the hierarchy serves: commutative ops always,
     * non-commutative ones when the placement keeps groups rank-contiguous. */
    if (c->multi_node && !c->hier) return EX_FALLBACK;
    if (c->multi_node && !commutative) return EX_EITHER;
    if (opt_mode == MODE_BUDGET1) return EX_FALLBACK;
    if (opt_mode == MODE_MAX1 && bytes > 1) return EX_FALLBACK;
    return policy;
}

enum expect expect_hier_call(const struct cinfo *c, long long bytes, enum expect policy)
{
    /* Barrier and Allgather: across nodes the hierarchy serves them. */
    if (c->sharm && c->multi_node && c->hier && bytes != 0) {
        if (opt_mode == MODE_MAX1 && bytes > 1) return EX_FALLBACK;
        return EX_SERVE;
    }
    return expect_call(c, bytes, policy);
}

enum expect expect_call(const struct cinfo *c, long long bytes, enum expect policy)
{
    if (!c->sharm) return EX_NONE;
    if (bytes == 0) return EX_SERVE_OR_NONE;
    if (c->multi_node) return EX_FALLBACK; /* no shared memory across nodes */
    if (opt_mode == MODE_BUDGET1) return EX_FALLBACK;
    if (bytes < 0) return EX_SERVE;
    if (opt_mode == MODE_MAX1 && bytes > 1) return EX_FALLBACK;
    return policy;
}

enum hier hier_spanning(const struct cinfo *c, unsigned long long bytes)
{
    /* Barrier and Allgather take the hierarchy only across real nodes (on
     * one node, virtual nodes included, the flat path serves them). */
    return c->hier && c->multi_node && bytes > 0 ? HIER_IF_SERVED : HIER_NO;
}

enum hier hier_for(const struct cinfo *c, unsigned long long bytes, int commutative)
{
    /* sharm finishes a call with nothing to move before choosing a path. */
    if (!c->hier || bytes == 0) return HIER_NO;
    if (commutative) return HIER_IF_SERVED;
    /* A non-commutative operation follows the hierarchy when every group
     * carries a contiguous range of ranks: always so for virtual nodes (k
     * consecutive ranks) and the topology files of these tests; across real
     * nodes it depends on the placement, which the checker does not model. */
    return c->multi_node ? HIER_ANY : HIER_IF_SERVED;
}

void setctx(const struct cinfo *c, enum coll op, const char *fmt, ...)
{
    int n = snprintf(ctx, sizeof(ctx), "call #%llu %s on %s (size %d, my rank %d): ", ++call_seq,
                     coll_mpi_names[op], c->name, c->size, c->rank);
    if (n < 0 || (size_t) n >= sizeof(ctx)) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(ctx + n, sizeof(ctx) - (size_t) n, fmt, ap);
    va_end(ap);
}

/* ------------------------------------------------------------------------ */
/* Start-up, watchdog and summary                                            */

static void on_alarm(int sig)
{
    (void) sig;
    char msg[1800];
    int n = snprintf(msg, sizeof(msg), CHECK_NAME ": FAIL rank %d scenario %s: timed out (--alarm) during: %s\n",
                     w_rank, cur_scenario, ctx);
    if (n > 0) {
        ssize_t ignored = write(2, msg, (size_t) n < sizeof(msg) ? (size_t) n : sizeof(msg) - 1);
        (void) ignored;
    }
    _exit(3);
}

static long parse_num(const char *opt, const char *s)
{
    char *end;
    long v = strtol(s ? s : "", &end, 10);
    if (!s || !*s || *end != '\0' || v < 0) {
        fprintf(stderr, CHECK_NAME ": bad value for %s: %s\n", opt, s ? s : "(missing)");
        exit(2);
    }
    return v;
}

void parse_options(int argc, char **argv)
{
    for (int a = 2; a < argc; a += 2) {
        const char *o = argv[a], *v = a + 1 < argc ? argv[a + 1] : NULL;
        if (!strcmp(o, "--f")) opt_f = parse_num(o, v);
        else if (!strcmp(o, "--s")) opt_s = parse_num(o, v);
        else if (!strcmp(o, "--big")) opt_big = parse_num(o, v);
        else if (!strcmp(o, "--calls")) opt_calls = parse_num(o, v);
        else if (!strcmp(o, "--iters")) opt_iters = parse_num(o, v);
        else if (!strcmp(o, "--alarm")) opt_alarm = parse_num(o, v);
        else if (!strcmp(o, "--vnode")) opt_vnode = parse_num(o, v);
        else if (!strcmp(o, "--expect") && v && !strcmp(v, "serve")) opt_mode = MODE_SERVE;
        else if (!strcmp(o, "--expect") && v && !strcmp(v, "max1")) opt_mode = MODE_MAX1;
        else if (!strcmp(o, "--expect") && v && !strcmp(v, "budget1")) opt_mode = MODE_BUDGET1;
        else if (!strcmp(o, "--hierarchy") && v && !strcmp(v, "auto")) opt_hierarchy = HIER_MODE_AUTO;
        else if (!strcmp(o, "--hierarchy") && v && !strcmp(v, "off")) opt_hierarchy = HIER_MODE_OFF;
        else if (!strcmp(o, "--hierarchy") && v && !strcmp(v, "on")) opt_hierarchy = HIER_MODE_ON;
        else {
            fprintf(stderr, CHECK_NAME ": bad option %s %s\n", o, v ? v : "");
            exit(2);
        }
    }
    if (opt_f < 64 || opt_s < 2 || (opt_big >= 0 && opt_big < 1024)) {
        fprintf(stderr, CHECK_NAME ": need --f >= 64, --s >= 2, --big >= 1024\n");
        exit(2);
    }
}

void start(int *argc, char ***argv)
{
    signal(SIGALRM, on_alarm);
    alarm((unsigned) opt_alarm);
    MPI_Init(argc, argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &w_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &w_size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
    pv_init();

    /* The job's pids, for the harness: its /dev/shm check and, after a
     * timeout, killing exactly these processes (point-to-point only: not
     * through the component under test). */
    long long pid = (long long) getpid();
    if (w_rank == 0) {
        printf(CHECK_NAME ": start np=%d pids=%lld", w_size, pid);
        for (int r = 1; r < w_size; ++r) {
            long long o;
            MPI_CHECK(MPI_Recv(&o, 1, MPI_LONG_LONG, r, 98, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
            printf(",%lld", o);
        }
        printf("\n");
        fflush(stdout);
    } else {
        MPI_CHECK(MPI_Send(&pid, 1, MPI_LONG_LONG, 0, 98, MPI_COMM_WORLD));
    }
}

void summary(const char *scenarios, double elapsed)
{
    cur_scenario = "summary";
    snprintf(ctx, sizeof(ctx), "summary");
    /* Totals over all processes (point-to-point: not through sharm). */
    enum { N = 5 };
    unsigned long long mine[N] = {n_calls, n_served, n_fallbacks, n_hierarchical, n_hier_expected};
    if (w_rank == 0) {
        unsigned long long tot[N];
        memcpy(tot, mine, sizeof(tot));
        for (int r = 1; r < w_size; ++r) {
            unsigned long long o[N];
            MPI_CHECK(MPI_Recv(o, N, MPI_UNSIGNED_LONG_LONG, r, 99, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
            for (int k = 0; k < N; ++k) tot[k] += o[k];
        }
        printf(CHECK_NAME ": OK np=%d scenarios=%s calls=%llu served=%llu fallbacks=%llu "
               "hierarchical=%llu hier_expected=%llu time=%.2fs\n",
               w_size, scenarios, tot[0], tot[1], tot[2], tot[3], tot[4], elapsed);
        fflush(stdout);
    } else {
        MPI_CHECK(MPI_Send(mine, N, MPI_UNSIGNED_LONG_LONG, 0, 99, MPI_COMM_WORLD));
    }
}

void gather_send_buf(struct buf *sb, const struct mtype *st, size_t sn, int ip, uint64_t seed, int me,
                     int dst)
{
    buf_init(sb, st, ip ? 0 : sn, SEND_BG, "send buffer (must stay unchanged)");
    if (!ip) buf_put(sb, 0, sn, stream(seed, me, dst), me, TO_BOTH);
}

void gather_recv_img(struct buf *rb, int p, const int *cnt, const int *dis, size_t n, int ip, uint64_t seed,
                     int me, int dst)
{
    for (int j = 0; j < p; ++j) {
        size_t at = cnt ? (size_t) dis[j] : (size_t) j * n, len = cnt ? (size_t) cnt[j] : n;
        buf_put(rb, at, len, stream(seed, j, dst), j, ip && j == me ? TO_BOTH : TO_IMG);
    }
}

/* ------------------------------------------------------------------------ */
/* Memory a call takes                                                       */

/* Kibibytes of the /proc/self/status line `field` ("VmRSS:", "VmHWM:"). */
static long status_kib(const char *field)
{
    FILE *f = fopen("/proc/self/status", "r");
    if (!f) die("cannot open /proc/self/status");
    char line[256];
    long kib = -1;
    while (fgets(line, sizeof(line), f)) {
        if (strncmp(line, field, strlen(field)) == 0) {
            kib = strtol(line + strlen(field), NULL, 10);
            break;
        }
    }
    fclose(f);
    if (kib < 0) die("no %s in /proc/self/status", field);
    return kib;
}

/* Makes VmHWM start again from the current resident set (Linux >= 4.0). */
static void reset_peak(void)
{
    FILE *f = fopen("/proc/self/clear_refs", "w");
    if (!f || fputs("5", f) < 0 || fclose(f) != 0) die("cannot reset the peak resident set");
}

long peak_mark(MPI_Comm comm)
{
    MPI_CHECK(MPI_Barrier(comm));
    reset_peak();
    return status_kib("VmRSS:");
}

long peak_growth(long mark) { return status_kib("VmHWM:") - mark; }
