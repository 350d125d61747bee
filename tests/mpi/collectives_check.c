/*
 * collectives_check: MPI correctness checks of the sharm coll component for
 * the collectives other than Bcast and Reduce (those are sharm_check.c's):
 * Barrier, Gather(v), Scatter(v), Allgather(v), Alltoall(v),
 * Reduce_scatter(_block), Scan, Exscan, and Allreduce (run it under the
 * allgather and reduce_scatter_allgather algorithms).
 *
 *   collectives_check SCENARIO[,SCENARIO...] [options]
 *
 * Scenarios:
 *   gather     Gather and Gatherv         every root, with and without MPI_IN_PLACE
 *   scatter    Scatter and Scatterv       (at the root), every datatype pair
 *   allgather  Allgather and Allgatherv   with and without MPI_IN_PLACE
 *   alltoall   Alltoall and Alltoallv     with and without MPI_IN_PLACE
 *   redscat    Reduce_scatter_block and Reduce_scatter   (type/op combinations,
 *   scan       Scan and Exscan                            with and without
 *   allreduce  Allreduce                                  MPI_IN_PLACE)
 *   big        every operation once or twice with about --big bytes in total
 *   comms      the operations on split (parity, shuffled keys) and dup'ed
 *              communicators used in alternation; dup/free cycles
 *   barrier    Barrier correctness through a shared-memory window: rank r
 *              sleeps, sets its flag, enters the barrier; after it every rank
 *              must see every flag; on MPI_COMM_WORLD and split communicators
 *   mixed      --calls random calls back to back (any operation, datatype,
 *              root, size, MPI_IN_PLACE or not) on MPI_COMM_WORLD and a dup
 *
 * Counts: 0, 1, f/size - 1, f/size, f/size + 1 and 3*s*f/size + 5 units per
 * block (a unit is one element of the send type, or as many as make up the
 * same type signature); v-variants use irregular counts (zeros included)
 * placed at reversed or shuffled displacements with gaps whose bytes must
 * stay untouched.  Data-movement operations run over pairs of datatypes of
 * the same signature: contiguous, vector, resized with a non-zero lower
 * bound, MPI_SHORT_INT and a struct with holes, 4 x MPI_INT vs
 * contiguous(4, MPI_INT), ...
 *
 * Options:
 *   --f BYTES       sharm's fragment size (coll_sharm_fragment_size)  [8192]
 *   --s SLOTS       sharm's queue slots (coll_sharm_queue_slots)      [8]
 *   --expect MODE   serve (default) | max1 (coll_sharm_max_message_size=1) |
 *                   budget1 (coll_sharm_shared_memory_budget=1): what the
 *                   MPI_T counters coll_sharm_<op>_served/_fallbacks must show
 *   --big BYTES     size of the "big" scenario                        [4194304]
 *   --iters N       barrier iterations per communicator               [400]
 *   --calls N       calls of the "mixed" scenario                      [2000]
 *   --alarm SECONDS abort, naming the pending call, after this long   [240]
 *
 * Expected values are computed here, independently of MPI: every byte of a
 * data-movement block is a hash of (seed, source, destination, byte index);
 * reductions fold the generated inputs in rank order with C arithmetic.
 * Whole receive buffers (gaps and 64 guard bytes after them included) are
 * compared with an expected image; send buffers must stay unchanged.  The
 * first difference aborts the job with a line naming the rank, the call (op,
 * datatypes, counts, root), the index, the expected and the actual value.
 * Output: "collectives_check: start np=N pids=..." first, and at the end
 * "collectives_check: OK np=N scenarios=... calls=... served=... fallbacks=...".
 */
#define _GNU_SOURCE
#include <mpi.h>

#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define SENT 0xA5 /* initial value of every receive-buffer byte nobody should write */
#define SEND_BG 0x3C /* gaps and padding of send buffers: copying them is seen */
#define GUARD 64  /* sentinel bytes after every buffer */

/* ------------------------------------------------------------------------ */
/* Failure reporting                                                         */

static int w_rank, w_size;
static const char *scen = "start-up";
static char ctx[1536] = "start-up";

static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void die(const char *fmt, ...)
{
    char msg[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    fprintf(stderr, "collectives_check: FAIL rank %d (world) scenario %s: %s: %s\n", w_rank, scen, ctx,
            msg);
    fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, 1);
    exit(1);
}

#define MPI_CHECK(call)                                                                    \
    do {                                                                                   \
        int rc_ = (call);                                                                  \
        if (rc_ != MPI_SUCCESS) {                                                          \
            char s_[MPI_MAX_ERROR_STRING];                                                 \
            int l_ = 0;                                                                    \
            MPI_Error_string(rc_, s_, &l_);                                                \
            die("%s returned %d (%s)", #call, rc_, s_);                                    \
        }                                                                                  \
    } while (0)

static void on_alarm(int sig)
{
    (void) sig;
    char msg[1800];
    int n = snprintf(msg, sizeof(msg), "collectives_check: FAIL rank %d (world) scenario %s: timed out "
                     "(--alarm) during: %s\n", w_rank, scen, ctx);
    if (n > 0) {
        ssize_t ignored = write(2, msg, (size_t) n < sizeof(msg) ? (size_t) n : sizeof(msg) - 1);
        (void) ignored;
    }
    _exit(3);
}

static void *xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p) die("out of memory (%zu bytes)", n);
    return p;
}

static uint64_t mix64(uint64_t z)
{
    z += 0x9e3779b97f4a7c15ULL;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

/* ------------------------------------------------------------------------ */
/* Options                                                                   */

enum mode { MODE_SERVE, MODE_MAX1, MODE_BUDGET1 };
static size_t opt_f = 8192, opt_s = 8, opt_big = 4u << 20;
static long opt_iters = 400, opt_alarm = 240, opt_calls = 2000;
static enum mode opt_mode = MODE_SERVE;

/* ------------------------------------------------------------------------ */
/* sharm's MPI_T counters                                                    */

enum coll {
    C_BARRIER, C_BCAST, C_REDUCE, C_ALLREDUCE, C_GATHER, C_GATHERV, C_SCATTER, C_SCATTERV,
    C_ALLGATHER, C_ALLGATHERV, C_ALLTOALL, C_ALLTOALLV, C_RSB, C_RS, C_SCAN, C_EXSCAN, NCOLL
};
static const char *const pv_name[NCOLL] = {
    "barrier", "bcast", "reduce", "allreduce", "gather", "gatherv", "scatter", "scatterv",
    "allgather", "allgatherv", "alltoall", "alltoallv", "reduce_scatter_block", "reduce_scatter",
    "scan", "exscan"};
static const char *const mpi_name[NCOLL] = {
    "MPI_Barrier", "MPI_Bcast", "MPI_Reduce", "MPI_Allreduce", "MPI_Gather", "MPI_Gatherv",
    "MPI_Scatter", "MPI_Scatterv", "MPI_Allgather", "MPI_Allgatherv", "MPI_Alltoall",
    "MPI_Alltoallv", "MPI_Reduce_scatter_block", "MPI_Reduce_scatter", "MPI_Scan", "MPI_Exscan"};

static MPI_T_pvar_session pv_session;
static MPI_T_pvar_handle pv_h[NCOLL][2]; /* [op][0 served, 1 fallbacks] */

/* Right after MPI_T_init_thread: Open MPI counts from a handle's allocation. */
static void pv_init(void)
{
    int provided;
    MPI_CHECK(MPI_T_init_thread(MPI_THREAD_SINGLE, &provided));
    MPI_CHECK(MPI_T_pvar_session_create(&pv_session));
    for (int c = 0; c < NCOLL; ++c) {
        for (int k = 0; k < 2; ++k) {
            char name[96];
            int idx, count;
            snprintf(name, sizeof(name), "coll_sharm_%s_%s", pv_name[c], k ? "fallbacks" : "served");
            int rc = MPI_T_pvar_get_index(name, MPI_T_PVAR_CLASS_COUNTER, &idx);
            if (rc != MPI_SUCCESS) {
                die("performance variable %s not found (rc %d): is sharm in mca_base_component_path?",
                    name, rc);
            }
            MPI_CHECK(MPI_T_pvar_handle_alloc(pv_session, idx, NULL, &pv_h[c][k], &count));
            if (count != 1) die("performance variable %s has count %d, expected 1", name, count);
        }
    }
}

struct snap {
    unsigned long long served, fallbacks;
};

static struct snap pv_snap(enum coll c)
{
    struct snap s;
    MPI_CHECK(MPI_T_pvar_read(pv_session, pv_h[c][0], &s.served));
    MPI_CHECK(MPI_T_pvar_read(pv_session, pv_h[c][1], &s.fallbacks));
    return s;
}

enum ex {
    EX_SERVE,        /* served +1 */
    EX_FALLBACK,     /* fallbacks +1 */
    EX_NONE,         /* the communicator is not sharm's: no change */
    EX_SERVE_OR_NONE /* nothing to move: Open MPI may return before any component */
};
static const char *const ex_name[] = {"served by sharm", "handed to the next component",
                                      "not seen by sharm", "served by sharm or not seen"};

static unsigned long long n_checked, n_served, n_fallbacks;

static void pv_check(enum coll c, struct snap before, enum ex e)
{
    struct snap after = pv_snap(c);
    unsigned long long ds = after.served - before.served, df = after.fallbacks - before.fallbacks;
    int ok;
    switch (e) {
    case EX_SERVE: ok = ds == 1 && df == 0; break;
    case EX_FALLBACK: ok = ds == 0 && df == 1; break;
    case EX_NONE: ok = ds == 0 && df == 0; break;
    default: ok = ds <= 1 && df == 0; break;
    }
    if (!ok) {
        die("counters coll_sharm_%s_served/_fallbacks moved by +%llu/+%llu: the call should have been %s",
            pv_name[c], ds, df, ex_name[e]);
    }
    n_checked++;
    n_served += ds;
    n_fallbacks += df;
}

/* A communicator under test. */
struct cx {
    MPI_Comm comm;
    int rank, size;
    char name[MPI_MAX_OBJECT_NAME];
};

static struct cx cx_of(MPI_Comm comm, const char *name)
{
    struct cx c;
    c.comm = comm;
    MPI_CHECK(MPI_Comm_rank(comm, &c.rank));
    MPI_CHECK(MPI_Comm_size(comm, &c.size));
    snprintf(c.name, sizeof(c.name), "%s", name);
    return c;
}

/* What sharm must do with a call moving `bytes` bytes in all (< 0: no size
 * every process knows: Gatherv, Scatterv, Alltoallv, Barrier).  `reducible`:
 * the datatype/op pair is one sharm reduces (always 1 for data movement). */
static enum ex expect(const struct cx *c, long long bytes, int reducible)
{
    if (c->size < 2) return EX_NONE;
    if (bytes == 0) return EX_SERVE_OR_NONE;
    if (opt_mode == MODE_BUDGET1) return EX_FALLBACK;
    if (bytes < 0) return EX_SERVE;
    if (opt_mode == MODE_MAX1 && bytes > 1) return EX_FALLBACK;
    return reducible ? EX_SERVE : EX_FALLBACK;
}

static unsigned long long seq;

/* Describes the call about to be made (for every failure message). */
static void setctx(const struct cx *c, enum coll op, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void setctx(const struct cx *c, enum coll op, const char *fmt, ...)
{
    int n = snprintf(ctx, sizeof(ctx), "call #%llu %s on %s (size %d, my rank %d): ", ++seq,
                     mpi_name[op], c->name, c->size, c->rank);
    if (n < 0 || (size_t) n >= sizeof(ctx)) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(ctx + n, sizeof(ctx) - (size_t) n, fmt, ap);
    va_end(ap);
}

/* "[a,b,c]" of p ints (static buffers: up to four in one expression). */
static const char *ints(const int *v, int p)
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

/* ------------------------------------------------------------------------ */
/* Data-movement datatypes                                                   */

enum { M_CHAR, M_INT, M_DOUBLE, M_CONTIG4, M_VEC4, M_RLB, M_SHORTINT, M_SSI, M_SHIFT, M_GAPHEAD, M_EMPTY, NMT };

/* Data blocks of one element, in type-map order, as offsets from the
 * element's lower bound (element k's lower bound: buffer + lb + k*extent). */
struct mtype {
    const char *name;
    MPI_Datatype dt;
    MPI_Aint lb, extent;
    int nblk, off[4], len[4];
    int size;
};
static struct mtype mt[NMT] = {
    {"MPI_CHAR", 0, 0, 1, 1, {0}, {1}, 1},
    {"MPI_INT", 0, 0, 4, 1, {0}, {4}, 4},
    {"MPI_DOUBLE", 0, 0, 8, 1, {0}, {8}, 8},
    {"contiguous(4,MPI_INT)", 0, 0, 16, 1, {0}, {16}, 16},
    {"vector(4,1,2,MPI_INT)", 0, 0, 28, 4, {0, 8, 16, 24}, {4, 4, 4, 4}, 16},
    {"resized(vector(2,1,2,MPI_INT),lb=-4,extent=16)", 0, -4, 16, 2, {4, 12}, {4, 4}, 8},
    {"MPI_SHORT_INT", 0, 0, 8, 2, {0, 4}, {2, 4}, 6},
    {"resized(struct{short@0,int@6},lb=-2,extent=12)", 0, -2, 12, 2, {2, 8}, {2, 4}, 6},
    {"hindexed(1,{1},{4},contiguous(4,MPI_INT)) (contiguous, lb=4)", 0, 4, 16, 1, {0}, {16}, 16},
    {"resized(hindexed(1,{4},{8},MPI_INT),lb=0,extent=24)", 0, 0, 24, 1, {8}, {16}, 16},
    {"contiguous(0,MPI_INT) (size 0)", 0, 0, 0, 0, {0}, {0}, 0},
};

/* Sender and receiver datatypes of one type signature: one unit is `smul`
 * elements of st and `rmul` elements of rt. */
struct pair {
    int st, smul, rt, rmul, primary;
};
static const struct pair pairs[] = {
    {M_INT, 1, M_INT, 1, 1},           {M_CHAR, 1, M_CHAR, 1, 1},
    {M_DOUBLE, 1, M_DOUBLE, 1, 0},     {M_INT, 4, M_CONTIG4, 1, 0},
    {M_CONTIG4, 1, M_VEC4, 1, 0},      {M_VEC4, 1, M_RLB, 2, 0},
    {M_RLB, 2, M_INT, 4, 0},           {M_SHORTINT, 1, M_SSI, 1, 0},
    {M_SSI, 1, M_SHORTINT, 1, 0},
    {M_SHIFT, 1, M_GAPHEAD, 1, 0},
    {M_GAPHEAD, 1, M_INT, 4, 0},
    {M_EMPTY, 1, M_EMPTY, 1, 0},
};
#define NPAIRS ((int) (sizeof(pairs) / sizeof(pairs[0])))
#define P_INT 0
#define P_VEC_RLB 5

static size_t unit_bytes(const struct pair *pr) { return (size_t) pr->smul * (size_t) mt[pr->st].size; }

static void mtypes_init(void)
{
    mt[M_CHAR].dt = MPI_CHAR;
    mt[M_INT].dt = MPI_INT;
    mt[M_DOUBLE].dt = MPI_DOUBLE;
    mt[M_SHORTINT].dt = MPI_SHORT_INT;
    MPI_CHECK(MPI_Type_contiguous(4, MPI_INT, &mt[M_CONTIG4].dt));
    MPI_CHECK(MPI_Type_vector(4, 1, 2, MPI_INT, &mt[M_VEC4].dt));
    MPI_Datatype v2, st;
    MPI_CHECK(MPI_Type_vector(2, 1, 2, MPI_INT, &v2));
    MPI_CHECK(MPI_Type_create_resized(v2, -4, 16, &mt[M_RLB].dt));
    MPI_CHECK(MPI_Type_free(&v2));
    int bl[2] = {1, 1};
    MPI_Aint disp[2] = {0, 6};
    MPI_Datatype tt[2] = {MPI_SHORT, MPI_INT};
    MPI_CHECK(MPI_Type_create_struct(2, bl, disp, tt, &st));
    MPI_CHECK(MPI_Type_create_resized(st, -2, 12, &mt[M_SSI].dt));
    MPI_CHECK(MPI_Type_free(&st));
    int one = 1, four = 4;
    MPI_Aint at4 = 4, at8 = 8;
    MPI_CHECK(MPI_Type_create_hindexed(1, &one, &at4, mt[M_CONTIG4].dt, &mt[M_SHIFT].dt));
    MPI_CHECK(MPI_Type_create_hindexed(1, &four, &at8, MPI_INT, &st));
    MPI_CHECK(MPI_Type_create_resized(st, 0, 24, &mt[M_GAPHEAD].dt));
    MPI_CHECK(MPI_Type_free(&st));
    MPI_CHECK(MPI_Type_contiguous(0, MPI_INT, &mt[M_EMPTY].dt));
    for (int t = 0; t < NMT; ++t) {
        if (t >= M_CONTIG4 && t != M_SHORTINT) MPI_CHECK(MPI_Type_commit(&mt[t].dt));
        MPI_Aint lb, ext;
        int size;
        MPI_CHECK(MPI_Type_get_extent(mt[t].dt, &lb, &ext));
        MPI_CHECK(MPI_Type_size(mt[t].dt, &size));
        if (lb != mt[t].lb || ext != mt[t].extent || size != mt[t].size) {
            die("datatype %s: MPI says lb %ld extent %ld size %d; the test assumes %ld/%ld/%d", mt[t].name,
                (long) lb, (long) ext, size, (long) mt[t].lb, (long) mt[t].extent, mt[t].size);
        }
    }
    for (int i = 0; i < NPAIRS; ++i) {
        if (unit_bytes(&pairs[i]) != (size_t) pairs[i].rmul * (size_t) mt[pairs[i].rt].size) {
            die("datatype pair %d has different signatures", i);
        }
    }
}

/* Byte b of the data stream identified by h; never SENT, so that a data byte
 * nobody wrote is always seen. */
static inline unsigned char bv(uint32_t h, size_t b)
{
    uint32_t x = (uint32_t) b * 0x9E3779B1u + h;
    x ^= x >> 16;
    x *= 0x7FEB352Du;
    x ^= x >> 15;
    unsigned char v = (unsigned char) x;
    return v == SENT ? 0x5A : v;
}

/* The stream process src sends to dst in call `seed`. */
static uint32_t stream(uint64_t seed, int src, int dst)
{
    return (uint32_t) mix64(seed ^ ((uint64_t) (src + 1) << 24) ^ ((uint64_t) (dst + 2) << 44));
}

/* A user buffer of `nelem` elements of a datatype (starting at its lower
 * bound) with GUARD bytes after it, and the image of what it must hold. */
struct blk {
    size_t e0, n;
    int src;
};
struct buf {
    const struct mtype *t;
    size_t nelem, bytes;
    unsigned char *reg, *img;
    struct blk *blk;
    int nblk, cap;
    const char *what;
};

/* bg: the bytes outside the data (SEND_BG in send buffers, else SENT). */
static void buf_init(struct buf *b, const struct mtype *t, size_t nelem, int bg, const char *what)
{
    b->t = t;
    b->nelem = nelem;
    b->bytes = nelem * (size_t) t->extent;
    b->reg = xmalloc(b->bytes + GUARD);
    b->img = xmalloc(b->bytes + GUARD);
    memset(b->reg, bg, b->bytes + GUARD);
    memset(b->img, bg, b->bytes + GUARD);
    b->blk = NULL;
    b->nblk = b->cap = 0;
    b->what = what;
}

static void buf_free(struct buf *b)
{
    free(b->reg);
    free(b->img);
    free(b->blk);
}

/* The address to give MPI. */
static void *buf_mpi(const struct buf *b) { return b->reg - b->t->lb; }

enum { TO_IMG = 1, TO_REG = 2, TO_BOTH = 3 };

/* Writes stream h (from rank src) into elements [e0, e0 + n): into the
 * image (what must be there after the call), the buffer, or both. */
static void buf_put(struct buf *b, size_t e0, size_t n, uint32_t h, int src, int where)
{
    if (e0 + n > b->nelem) die("test bug: block [%zu, %zu) outside %s of %zu elements", e0, e0 + n, b->what, b->nelem);
    if (where & TO_IMG) {
        if (b->nblk == b->cap) {
            b->cap = b->cap ? 2 * b->cap : 8;
            b->blk = realloc(b->blk, sizeof(struct blk) * (size_t) b->cap);
            if (!b->blk) die("out of memory");
        }
        b->blk[b->nblk++] = (struct blk){e0, n, src};
    }
    const struct mtype *t = b->t;
    size_t pos = 0;
    for (size_t e = e0; e < e0 + n; ++e) {
        size_t base = e * (size_t) t->extent;
        for (int k = 0; k < t->nblk; ++k) {
            for (int j = 0; j < t->len[k]; ++j) {
                unsigned char v = bv(h, pos++);
                if (where & TO_IMG) b->img[base + (size_t) t->off[k] + (size_t) j] = v;
                if (where & TO_REG) b->reg[base + (size_t) t->off[k] + (size_t) j] = v;
            }
        }
    }
}

/* The buffer must equal its image, gaps and guard included. */
static void buf_check(const struct buf *b)
{
    size_t total = b->bytes + GUARD;
    if (memcmp(b->reg, b->img, total) == 0) return;
    size_t o = 0, ndiff = 0;
    while (b->reg[o] == b->img[o]) ++o;
    for (size_t k = o; k < total; ++k) ndiff += b->reg[k] != b->img[k];
    if (o >= b->bytes) {
        die("%s of %zu elements: overrun: guard byte %zu after it: expected 0x%02x, got 0x%02x "
            "(%zu bytes differ)", b->what, b->nelem, o - b->bytes, b->img[o], b->reg[o], ndiff);
    }
    const struct mtype *t = b->t;
    size_t e = o / (size_t) t->extent, in = o % (size_t) t->extent;
    int data = 0;
    for (int k = 0; k < t->nblk; ++k) {
        if (in >= (size_t) t->off[k] && in < (size_t) (t->off[k] + t->len[k])) data = 1;
    }
    char where[128] = "outside every block: a gap";
    for (int k = 0; k < b->nblk; ++k) {
        if (e >= b->blk[k].e0 && e < b->blk[k].e0 + b->blk[k].n) {
            snprintf(where, sizeof(where), "element %zu of the block from rank %d", e - b->blk[k].e0,
                     b->blk[k].src);
        }
    }
    die("%s: index %zu (%s; %s byte %zu of the element): expected 0x%02x, got 0x%02x (%zu bytes "
        "differ)", b->what, e, where, data ? "data" : "gap", in, b->img[o], b->reg[o], ndiff);
}

/* Irregular block sizes: zeros, ones, base, a little more or less. */
static int vcount(uint64_t key, size_t base)
{
    if (base == 0) return 0;
    uint64_t r = mix64(key);
    switch (r % 6) {
    case 0: return 0;
    case 1: return 1;
    case 2: return (int) base;
    case 3: return (int) (base + 1 + (r >> 8) % 7);
    case 4: return (int) (base / 2 + 1);
    default: return (int) (base > 1 ? base - 1 : 2);
    }
}

/* Places p blocks of cnt[j] elements in reversed or shuffled order, each
 * after a gap of 1-3 elements; returns the elements spanned (+1 gap). */
static size_t vlayout(uint64_t key, int p, const int *cnt, int *dis)
{
    int *ord = xmalloc(sizeof(int) * (size_t) p);
    for (int j = 0; j < p; ++j) ord[j] = p - 1 - j;
    if (key & 1) {
        for (int j = p - 1; j > 0; --j) {
            int k = (int) (mix64(key + (uint64_t) j) % (uint64_t) (j + 1)), x = ord[j];
            ord[j] = ord[k];
            ord[k] = x;
        }
    }
    size_t pos = 0;
    for (int k = 0; k < p; ++k) {
        pos += 1 + mix64(key ^ (uint64_t) (k * 77 + 5)) % 3;
        dis[ord[k]] = (int) pos;
        pos += (size_t) cnt[ord[k]];
    }
    free(ord);
    return pos + 1;
}

static const char *ip_str(int in_place) { return in_place ? " MPI_IN_PLACE" : ""; }

/* ------------------------------------------------------------------------ */
/* Data-movement operations                                                  */

static void t_gather(const struct cx *c, const struct pair *pr, size_t units, int root, int in_place,
                     uint64_t seed)
{
    const struct mtype *st = &mt[pr->st], *rt = &mt[pr->rt];
    const int me = c->rank, p = c->size, isroot = me == root, ip = in_place && isroot;
    const size_t sn = units * (size_t) pr->smul, rn = units * (size_t) pr->rmul;
    setctx(c, C_GATHER, "sendtype=%s sendcount=%zu recvtype=%s recvcount=%zu root=%d%s", st->name, sn,
           rt->name, rn, root, ip_str(in_place));
    struct buf sb, rb;
    buf_init(&sb, st, ip ? 0 : sn, SEND_BG, "send buffer (must stay unchanged)");
    if (!ip) buf_put(&sb, 0, sn, stream(seed, me, root), me, TO_BOTH);
    buf_init(&rb, rt, rn * (size_t) p, SENT, isroot ? "receive buffer" : "non-root receive buffer (must stay untouched)");
    for (int j = 0; isroot && j < p; ++j) {
        buf_put(&rb, (size_t) j * rn, rn, stream(seed, j, root), j, ip && j == me ? TO_BOTH : TO_IMG);
    }
    enum ex e = expect(c, (long long) (units * unit_bytes(pr) * (size_t) p), 1);
    struct snap s = pv_snap(C_GATHER);
    MPI_CHECK(MPI_Gather(ip ? MPI_IN_PLACE : buf_mpi(&sb), (int) sn, st->dt, buf_mpi(&rb), (int) rn, rt->dt,
                         root, c->comm));
    pv_check(C_GATHER, s, e);
    buf_check(&sb);
    buf_check(&rb);
    buf_free(&sb);
    buf_free(&rb);
}

static void t_gatherv(const struct cx *c, const struct pair *pr, size_t units, int root, int in_place,
                      uint64_t seed)
{
    const struct mtype *st = &mt[pr->st], *rt = &mt[pr->rt];
    const int me = c->rank, p = c->size, isroot = me == root, ip = in_place && isroot;
    int *rc = xmalloc(sizeof(int) * (size_t) p), *dis = xmalloc(sizeof(int) * (size_t) p);
    for (int j = 0; j < p; ++j) rc[j] = vcount(seed * 31 + (uint64_t) j, units) * pr->rmul;
    size_t total = vlayout(seed, p, rc, dis);
    const size_t sn = (size_t) (rc[me] / pr->rmul) * (size_t) pr->smul;
    setctx(c, C_GATHERV, "sendtype=%s sendcount=%zu recvtype=%s recvcounts=%s displs=%s root=%d%s", st->name,
           sn, rt->name, ints(rc, p), ints(dis, p), root, ip_str(in_place));
    struct buf sb, rb;
    buf_init(&sb, st, ip ? 0 : sn, SEND_BG, "send buffer (must stay unchanged)");
    if (!ip) buf_put(&sb, 0, sn, stream(seed, me, root), me, TO_BOTH);
    buf_init(&rb, rt, isroot ? total : 4, SENT, isroot ? "receive buffer" : "non-root receive buffer (must stay untouched)");
    for (int j = 0; isroot && j < p; ++j) {
        buf_put(&rb, (size_t) dis[j], (size_t) rc[j], stream(seed, j, root), j, ip && j == me ? TO_BOTH : TO_IMG);
    }
    enum ex e = expect(c, -1, 1);
    struct snap s = pv_snap(C_GATHERV);
    MPI_CHECK(MPI_Gatherv(ip ? MPI_IN_PLACE : buf_mpi(&sb), (int) sn, st->dt, buf_mpi(&rb), rc, dis, rt->dt,
                          root, c->comm));
    pv_check(C_GATHERV, s, e);
    buf_check(&sb);
    buf_check(&rb);
    buf_free(&sb);
    buf_free(&rb);
    free(rc);
    free(dis);
}

static void t_scatter(const struct cx *c, const struct pair *pr, size_t units, int root, int in_place,
                      uint64_t seed)
{
    const struct mtype *st = &mt[pr->st], *rt = &mt[pr->rt];
    const int me = c->rank, p = c->size, isroot = me == root, ip = in_place && isroot;
    const size_t sn = units * (size_t) pr->smul, rn = units * (size_t) pr->rmul;
    setctx(c, C_SCATTER, "sendtype=%s sendcount=%zu recvtype=%s recvcount=%zu root=%d%s", st->name, sn,
           rt->name, rn, root, ip_str(in_place));
    struct buf sb, rb;
    buf_init(&sb, st, sn * (size_t) p, SEND_BG, isroot ? "send buffer (must stay unchanged)"
                                              : "non-root send buffer (must stay untouched)");
    for (int j = 0; isroot && j < p; ++j) buf_put(&sb, (size_t) j * sn, sn, stream(seed, root, j), root, TO_BOTH);
    buf_init(&rb, rt, ip ? 0 : rn, SENT, "receive buffer");
    if (!ip) buf_put(&rb, 0, rn, stream(seed, root, me), root, TO_IMG);
    enum ex e = expect(c, (long long) (units * unit_bytes(pr) * (size_t) p), 1);
    struct snap s = pv_snap(C_SCATTER);
    MPI_CHECK(MPI_Scatter(buf_mpi(&sb), (int) sn, st->dt, ip ? MPI_IN_PLACE : buf_mpi(&rb), (int) rn, rt->dt,
                          root, c->comm));
    pv_check(C_SCATTER, s, e);
    buf_check(&sb);
    buf_check(&rb);
    buf_free(&sb);
    buf_free(&rb);
}

static void t_scatterv(const struct cx *c, const struct pair *pr, size_t units, int root, int in_place,
                       uint64_t seed)
{
    const struct mtype *st = &mt[pr->st], *rt = &mt[pr->rt];
    const int me = c->rank, p = c->size, isroot = me == root, ip = in_place && isroot;
    int *sc = xmalloc(sizeof(int) * (size_t) p), *dis = xmalloc(sizeof(int) * (size_t) p);
    for (int j = 0; j < p; ++j) sc[j] = vcount(seed * 31 + (uint64_t) j, units) * pr->smul;
    size_t total = vlayout(seed, p, sc, dis);
    const size_t rn = (size_t) (sc[me] / pr->smul) * (size_t) pr->rmul;
    setctx(c, C_SCATTERV, "sendtype=%s sendcounts=%s displs=%s recvtype=%s recvcount=%zu root=%d%s", st->name,
           ints(sc, p), ints(dis, p), rt->name, rn, root, ip_str(in_place));
    struct buf sb, rb;
    buf_init(&sb, st, isroot ? total : 4, SEND_BG, isroot ? "send buffer (must stay unchanged)"
                                                 : "non-root send buffer (must stay untouched)");
    for (int j = 0; isroot && j < p; ++j) buf_put(&sb, (size_t) dis[j], (size_t) sc[j], stream(seed, root, j), root, TO_BOTH);
    buf_init(&rb, rt, ip ? 0 : rn, SENT, "receive buffer");
    if (!ip) buf_put(&rb, 0, rn, stream(seed, root, me), root, TO_IMG);
    enum ex e = expect(c, -1, 1);
    struct snap s = pv_snap(C_SCATTERV);
    MPI_CHECK(MPI_Scatterv(buf_mpi(&sb), sc, dis, st->dt, ip ? MPI_IN_PLACE : buf_mpi(&rb), (int) rn, rt->dt,
                           root, c->comm));
    pv_check(C_SCATTERV, s, e);
    buf_check(&sb);
    buf_check(&rb);
    buf_free(&sb);
    buf_free(&rb);
    free(sc);
    free(dis);
}

static void t_allgather(const struct cx *c, const struct pair *pr, size_t units, int ip, uint64_t seed)
{
    const struct mtype *st = &mt[pr->st], *rt = &mt[pr->rt];
    const int me = c->rank, p = c->size;
    const size_t sn = units * (size_t) pr->smul, rn = units * (size_t) pr->rmul;
    setctx(c, C_ALLGATHER, "sendtype=%s sendcount=%zu recvtype=%s recvcount=%zu root=-%s", st->name, sn,
           rt->name, rn, ip_str(ip));
    struct buf sb, rb;
    buf_init(&sb, st, ip ? 0 : sn, SEND_BG, "send buffer (must stay unchanged)");
    if (!ip) buf_put(&sb, 0, sn, stream(seed, me, -1), me, TO_BOTH);
    buf_init(&rb, rt, rn * (size_t) p, SENT, "receive buffer");
    for (int j = 0; j < p; ++j) buf_put(&rb, (size_t) j * rn, rn, stream(seed, j, -1), j, ip && j == me ? TO_BOTH : TO_IMG);
    enum ex e = expect(c, (long long) (units * unit_bytes(pr) * (size_t) p), 1);
    struct snap s = pv_snap(C_ALLGATHER);
    MPI_CHECK(MPI_Allgather(ip ? MPI_IN_PLACE : buf_mpi(&sb), (int) sn, st->dt, buf_mpi(&rb), (int) rn, rt->dt,
                            c->comm));
    pv_check(C_ALLGATHER, s, e);
    buf_check(&sb);
    buf_check(&rb);
    buf_free(&sb);
    buf_free(&rb);
}

static void t_allgatherv(const struct cx *c, const struct pair *pr, size_t units, int ip, uint64_t seed)
{
    const struct mtype *st = &mt[pr->st], *rt = &mt[pr->rt];
    const int me = c->rank, p = c->size;
    int *rc = xmalloc(sizeof(int) * (size_t) p), *dis = xmalloc(sizeof(int) * (size_t) p);
    long long sum = 0;
    for (int j = 0; j < p; ++j) {
        rc[j] = vcount(seed * 31 + (uint64_t) j, units) * pr->rmul;
        sum += rc[j] / pr->rmul;
    }
    size_t total = vlayout(seed, p, rc, dis);
    const size_t sn = (size_t) (rc[me] / pr->rmul) * (size_t) pr->smul;
    setctx(c, C_ALLGATHERV, "sendtype=%s sendcount=%zu recvtype=%s recvcounts=%s displs=%s root=-%s", st->name,
           sn, rt->name, ints(rc, p), ints(dis, p), ip_str(ip));
    struct buf sb, rb;
    buf_init(&sb, st, ip ? 0 : sn, SEND_BG, "send buffer (must stay unchanged)");
    if (!ip) buf_put(&sb, 0, sn, stream(seed, me, -1), me, TO_BOTH);
    buf_init(&rb, rt, total, SENT, "receive buffer");
    for (int j = 0; j < p; ++j) {
        buf_put(&rb, (size_t) dis[j], (size_t) rc[j], stream(seed, j, -1), j, ip && j == me ? TO_BOTH : TO_IMG);
    }
    enum ex e = expect(c, sum * (long long) unit_bytes(pr), 1);
    struct snap s = pv_snap(C_ALLGATHERV);
    MPI_CHECK(MPI_Allgatherv(ip ? MPI_IN_PLACE : buf_mpi(&sb), (int) sn, st->dt, buf_mpi(&rb), rc, dis, rt->dt,
                             c->comm));
    pv_check(C_ALLGATHERV, s, e);
    buf_check(&sb);
    buf_check(&rb);
    buf_free(&sb);
    buf_free(&rb);
    free(rc);
    free(dis);
}

static void t_alltoall(const struct cx *c, const struct pair *pr, size_t units, int ip, uint64_t seed)
{
    const struct mtype *st = &mt[pr->st], *rt = &mt[pr->rt];
    const int me = c->rank, p = c->size;
    const size_t sn = units * (size_t) pr->smul, rn = units * (size_t) pr->rmul;
    setctx(c, C_ALLTOALL, "sendtype=%s sendcount=%zu recvtype=%s recvcount=%zu root=-%s", st->name, sn,
           rt->name, rn, ip_str(ip));
    struct buf sb, rb;
    buf_init(&sb, st, ip ? 0 : sn * (size_t) p, SEND_BG, "send buffer (must stay unchanged)");
    for (int d = 0; !ip && d < p; ++d) buf_put(&sb, (size_t) d * sn, sn, stream(seed, me, d), me, TO_BOTH);
    buf_init(&rb, rt, rn * (size_t) p, SENT, "receive buffer");
    for (int j = 0; j < p; ++j) {
        buf_put(&rb, (size_t) j * rn, rn, stream(seed, j, me), j, TO_IMG);
        if (ip) buf_put(&rb, (size_t) j * rn, rn, stream(seed, me, j), me, TO_REG); /* what I send to j */
    }
    enum ex e = expect(c, (long long) (units * unit_bytes(pr) * (size_t) p), 1);
    struct snap s = pv_snap(C_ALLTOALL);
    MPI_CHECK(MPI_Alltoall(ip ? MPI_IN_PLACE : buf_mpi(&sb), (int) sn, st->dt, buf_mpi(&rb), (int) rn, rt->dt,
                           c->comm));
    pv_check(C_ALLTOALL, s, e);
    buf_check(&sb);
    buf_check(&rb);
    buf_free(&sb);
    buf_free(&rb);
}

/* Units process a sends to process b (symmetric in place: MPI requires it). */
static int a2a_count(uint64_t seed, int a, int b, size_t units, int symmetric)
{
    if (symmetric && a > b) {
        int x = a;
        a = b;
        b = x;
    }
    return vcount(seed * 131 + (uint64_t) (a * 64 + b), units);
}

static void t_alltoallv(const struct cx *c, const struct pair *pr, size_t units, int ip, uint64_t seed)
{
    const struct mtype *st = &mt[pr->st], *rt = &mt[pr->rt];
    const int me = c->rank, p = c->size;
    int *sc = xmalloc(sizeof(int) * (size_t) p), *sd = xmalloc(sizeof(int) * (size_t) p);
    int *rc = xmalloc(sizeof(int) * (size_t) p), *rd = xmalloc(sizeof(int) * (size_t) p);
    for (int j = 0; j < p; ++j) {
        sc[j] = a2a_count(seed, me, j, units, ip) * pr->smul;
        rc[j] = a2a_count(seed, j, me, units, ip) * pr->rmul;
    }
    size_t stotal = vlayout(seed ^ (0x1000u + (uint64_t) me), p, sc, sd);
    size_t rtotal = vlayout(seed ^ (0x2001u + (uint64_t) me * 2), p, rc, rd);
    setctx(c, C_ALLTOALLV, "sendtype=%s sendcounts=%s sdispls=%s recvtype=%s recvcounts=%s rdispls=%s root=-%s",
           st->name, ints(sc, p), ints(sd, p), rt->name, ints(rc, p), ints(rd, p), ip_str(ip));
    struct buf sb, rb;
    buf_init(&sb, st, ip ? 0 : stotal, SEND_BG, "send buffer (must stay unchanged)");
    for (int d = 0; !ip && d < p; ++d) buf_put(&sb, (size_t) sd[d], (size_t) sc[d], stream(seed, me, d), me, TO_BOTH);
    buf_init(&rb, rt, rtotal, SENT, "receive buffer");
    for (int j = 0; j < p; ++j) {
        buf_put(&rb, (size_t) rd[j], (size_t) rc[j], stream(seed, j, me), j, TO_IMG);
        if (ip) buf_put(&rb, (size_t) rd[j], (size_t) rc[j], stream(seed, me, j), me, TO_REG);
    }
    enum ex e = expect(c, -1, 1);
    struct snap s = pv_snap(C_ALLTOALLV);
    MPI_CHECK(MPI_Alltoallv(ip ? MPI_IN_PLACE : buf_mpi(&sb), sc, sd, st->dt, buf_mpi(&rb), rc, rd, rt->dt,
                            c->comm));
    pv_check(C_ALLTOALLV, s, e);
    buf_check(&sb);
    buf_check(&rb);
    buf_free(&sb);
    buf_free(&rb);
    free(sc);
    free(sd);
    free(rc);
    free(rd);
}

/* ------------------------------------------------------------------------ */
/* Reduction types, operations and their reference fold                       */

enum { R_I32, R_U8, R_I64, R_FLT, R_DBL, R_2INT, R_FLTINT, R_DBLINT, R_LONGINT, R_SHORTINT, R_MAT, NRT };
enum { O_SUM, O_PROD, O_MIN, O_MAX, O_LAND, O_LOR, O_LXOR, O_BAND, O_BOR, O_BXOR, O_MINLOC, O_MAXLOC, O_MAT, NOP };

struct p2i { int v, i; };
struct pfi { float v; int i; };
struct pdi { double v; int i; };
struct pli { long v; int i; };
struct psi { short v; int i; };
struct mat { uint32_t m[4]; };

struct rtype {
    const char *name;
    MPI_Datatype dt;
    size_t ext;
    int nf;
    size_t off[2], len[2];
};
#define ONE(T) sizeof(T), 1, {0}, {sizeof(T)}
#define PAIR(P) sizeof(P), 2, {offsetof(P, v), offsetof(P, i)}, {sizeof(((P *) 0)->v), sizeof(int)}
static struct rtype rty[NRT] = {
    {"MPI_INT32_T", 0, ONE(int32_t)},
    {"MPI_UINT8_T", 0, ONE(uint8_t)},
    {"MPI_INT64_T", 0, ONE(int64_t)},
    {"MPI_FLOAT", 0, ONE(float)},
    {"MPI_DOUBLE", 0, ONE(double)},
    {"MPI_2INT", 0, PAIR(struct p2i)},
    {"MPI_FLOAT_INT", 0, PAIR(struct pfi)},
    {"MPI_DOUBLE_INT", 0, PAIR(struct pdi)},
    {"MPI_LONG_INT", 0, PAIR(struct pli)},
    {"MPI_SHORT_INT", 0, PAIR(struct psi)},
    {"2x2 uint32 matrix (contiguous(4,MPI_UINT32_T))", 0, ONE(struct mat)},
};
static const char *const op_name[NOP] = {
    "MPI_SUM", "MPI_PROD", "MPI_MIN", "MPI_MAX", "MPI_LAND", "MPI_LOR", "MPI_LXOR", "MPI_BAND",
    "MPI_BOR", "MPI_BXOR", "MPI_MINLOC", "MPI_MAXLOC", "user non-commutative 2x2 matrix product"};
static MPI_Op ops[NOP];

/* Data bytes of one element (sum of the field lengths). */
static size_t rsize(int t) { return rty[t].len[0] + (rty[t].nf > 1 ? rty[t].len[1] : 0); }

/* inout = in x inout: `in` is the left operand (the lower ranks). */
static void matmul_fn(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    (void) dt;
    const struct mat *a = in;
    struct mat *b = inout;
    for (int e = 0; e < *len; ++e) {
        const uint32_t *x = a[e].m;
        uint32_t *y = b[e].m;
        uint32_t r0 = x[0] * y[0] + x[1] * y[2], r1 = x[0] * y[1] + x[1] * y[3];
        uint32_t r2 = x[2] * y[0] + x[3] * y[2], r3 = x[2] * y[1] + x[3] * y[3];
        y[0] = r0, y[1] = r1, y[2] = r2, y[3] = r3;
    }
}

static void rtypes_init(void)
{
    MPI_Datatype pre[NRT] = {MPI_INT32_T, MPI_UINT8_T, MPI_INT64_T, MPI_FLOAT, MPI_DOUBLE, MPI_2INT,
                             MPI_FLOAT_INT, MPI_DOUBLE_INT, MPI_LONG_INT, MPI_SHORT_INT, MPI_DATATYPE_NULL};
    for (int t = 0; t < R_MAT; ++t) rty[t].dt = pre[t];
    MPI_CHECK(MPI_Type_contiguous(4, MPI_UINT32_T, &rty[R_MAT].dt));
    MPI_CHECK(MPI_Type_commit(&rty[R_MAT].dt));
    MPI_Op p[] = {MPI_SUM, MPI_PROD, MPI_MIN, MPI_MAX, MPI_LAND, MPI_LOR, MPI_LXOR,
                  MPI_BAND, MPI_BOR, MPI_BXOR, MPI_MINLOC, MPI_MAXLOC};
    for (int o = 0; o < O_MAT; ++o) ops[o] = p[o];
    MPI_CHECK(MPI_Op_create(matmul_fn, 0, &ops[O_MAT]));
    for (int t = 0; t < NRT; ++t) {
        MPI_Aint lb, ext;
        int size;
        MPI_CHECK(MPI_Type_get_extent(rty[t].dt, &lb, &ext));
        MPI_CHECK(MPI_Type_size(rty[t].dt, &size));
        if (lb != 0 || (size_t) ext != rty[t].ext || (size_t) size != rsize(t)) {
            die("datatype %s: MPI says lb %ld extent %ld size %d; the test assumes 0/%zu/%zu", rty[t].name,
                (long) lb, (long) ext, size, rty[t].ext, rsize(t));
        }
    }
}

/* Writes the data fields of elements [i0, i0 + n) of rank `who`'s input
 * (element i0 at buf); padding bytes are left alone. */
static void rgen(int t, int o, unsigned char *buf, size_t i0, size_t n, uint64_t seed, int who)
{
    static const double dprod[6] = {0.5, -1, 2, -2, 1, 0.25};
    for (size_t k = 0; k < n; ++k) {
        uint64_t r = mix64(seed ^ ((uint64_t) (who + 1) << 50) ^ ((i0 + k) * 0x9E3779B97F4A7C15ULL));
        int64_t iv;
        switch (o) {
        case O_PROD: iv = (int64_t) (r % 7) - 3; iv = iv ? iv : 1; break;
        case O_LAND: iv = r % 6 == 0 ? 0 : (int64_t) (r >> 40) | 1; break;
        case O_LOR: iv = r % 6 == 0 ? (int64_t) (r >> 40) | 2 : 0; break;
        case O_LXOR: iv = r & 256 ? (int64_t) (r >> 48) | 4 : 0; break;
        default: iv = (int64_t) r; break;
        }
        unsigned char *e = buf + k * rty[t].ext;
        int pv = (int) (r % 5) - 2;         /* pair values: many ties */
        int pi = (int) (mix64(r) % 1000); /* pair indices */
        switch (t) {
        case R_I32: { int32_t x = (int32_t) iv; memcpy(e, &x, sizeof x); break; }
        case R_U8: { uint8_t x = (uint8_t) iv; memcpy(e, &x, sizeof x); break; }
        case R_I64: { int64_t x = iv; memcpy(e, &x, sizeof x); break; }
        case R_FLT: { float x = (float) ((int) (r % 1025) - 512); memcpy(e, &x, sizeof x); break; }
        case R_DBL: {
            double x = o == O_PROD ? dprod[r % 6] : (double) ((int64_t) (r % 200001) - 100000) / 8.0;
            memcpy(e, &x, sizeof x);
            break;
        }
        case R_2INT: { struct p2i *x = (void *) e; x->v = pv; x->i = pi; break; }
        case R_FLTINT: { struct pfi *x = (void *) e; x->v = (float) pv + 0.5f; x->i = pi; break; }
        case R_DBLINT: { struct pdi *x = (void *) e; x->v = (double) pv - 0.25; x->i = pi; break; }
        case R_LONGINT: { struct pli *x = (void *) e; x->v = (long) pv * 4000000007L; x->i = pi; break; }
        case R_SHORTINT: { struct psi *x = (void *) e; x->v = (short) pv; x->i = pi; break; }
        case R_MAT: {
            struct mat *x = (void *) e;
            for (int j = 0; j < 4; ++j) x->m[j] = (uint32_t) mix64(r + (uint64_t) j);
            break;
        }
        default: die("test bug: rgen type %d", t);
        }
    }
}

#define FOLD_INT(T, UT)                                                                 \
    do {                                                                                \
        T a, b;                                                                         \
        memcpy(&a, pa, sizeof a);                                                       \
        memcpy(&b, pb, sizeof b);                                                       \
        switch (o) {                                                                    \
        case O_SUM: a = (T) (UT) ((UT) a + (UT) b); break;                              \
        case O_PROD: a = (T) (UT) ((UT) a * (UT) b); break;                             \
        case O_MIN: a = b < a ? b : a; break;                                           \
        case O_MAX: a = b > a ? b : a; break;                                           \
        case O_LAND: a = (T) (a && b); break;                                           \
        case O_LOR: a = (T) (a || b); break;                                            \
        case O_LXOR: a = (T) (!a != !b); break;                                         \
        case O_BAND: a = (T) (a & b); break;                                            \
        case O_BOR: a = (T) (a | b); break;                                             \
        case O_BXOR: a = (T) (a ^ b); break;                                            \
        default: die("test bug: %s on %s", op_name[o], rty[t].name);                    \
        }                                                                               \
        memcpy(pa, &a, sizeof a);                                                       \
    } while (0)
#define FOLD_FLT(T)                                                                     \
    do {                                                                                \
        T a, b;                                                                         \
        memcpy(&a, pa, sizeof a);                                                       \
        memcpy(&b, pb, sizeof b);                                                       \
        switch (o) {                                                                    \
        case O_SUM: a = a + b; break;                                                   \
        case O_PROD: a = a * b; break;                                                  \
        case O_MIN: a = b < a ? b : a; break;                                           \
        case O_MAX: a = b > a ? b : a; break;                                           \
        default: die("test bug: %s on %s", op_name[o], rty[t].name);                    \
        }                                                                               \
        memcpy(pa, &a, sizeof a);                                                       \
    } while (0)
/* MPI's MINLOC/MAXLOC: the better value wins; on a tie, the smaller index. */
#define FOLD_PAIR(P)                                                                    \
    do {                                                                                \
        P *a = (void *) pa;                                                             \
        const P *b = (const void *) pb;                                                 \
        int better = o == O_MINLOC ? b->v < a->v : b->v > a->v;                         \
        if (o != O_MINLOC && o != O_MAXLOC) die("test bug: %s on %s", op_name[o], rty[t].name); \
        if (better) {                                                                   \
            a->v = b->v;                                                                \
            a->i = b->i;                                                                \
        } else if (b->v == a->v && b->i < a->i) {                                       \
            a->i = b->i;                                                                \
        }                                                                               \
    } while (0)

/* acc[k] = acc[k] op x[k] (acc: the lower ranks' result). */
static void rfold(int t, int o, unsigned char *acc, const unsigned char *x, size_t n)
{
    for (size_t k = 0; k < n; ++k) {
        unsigned char *pa = acc + k * rty[t].ext;
        const unsigned char *pb = x + k * rty[t].ext;
        switch (t) {
        case R_I32: FOLD_INT(int32_t, uint32_t); break;
        case R_U8: FOLD_INT(uint8_t, uint8_t); break;
        case R_I64: FOLD_INT(int64_t, uint64_t); break;
        case R_FLT: FOLD_FLT(float); break;
        case R_DBL: FOLD_FLT(double); break;
        case R_2INT: FOLD_PAIR(struct p2i); break;
        case R_FLTINT: FOLD_PAIR(struct pfi); break;
        case R_DBLINT: FOLD_PAIR(struct pdi); break;
        case R_LONGINT: FOLD_PAIR(struct pli); break;
        case R_SHORTINT: FOLD_PAIR(struct psi); break;
        case R_MAT: {
            struct mat a, b;
            memcpy(&a, pa, sizeof a);
            memcpy(&b, pb, sizeof b);
            if (o != O_MAT) die("test bug: %s on %s", op_name[o], rty[t].name);
            matmul_fn(&a, &b, &(int){1}, NULL); /* b = a x b */
            memcpy(pa, &b, sizeof b);
            break;
        }
        default: die("test bug: rfold type %d", t);
        }
    }
}

static void relem_fmt(int t, const unsigned char *p, char *out, size_t len)
{
    switch (t) {
    case R_I32: { int32_t x; memcpy(&x, p, 4); snprintf(out, len, "%" PRId32, x); break; }
    case R_U8: snprintf(out, len, "%u", p[0]); break;
    case R_I64: { int64_t x; memcpy(&x, p, 8); snprintf(out, len, "%" PRId64, x); break; }
    case R_FLT: { float x; memcpy(&x, p, 4); snprintf(out, len, "%.9g", x); break; }
    case R_DBL: { double x; memcpy(&x, p, 8); snprintf(out, len, "%.17g", x); break; }
    case R_2INT: { const struct p2i *x = (const void *) p; snprintf(out, len, "(%d, %d)", x->v, x->i); break; }
    case R_FLTINT: { const struct pfi *x = (const void *) p; snprintf(out, len, "(%.9g, %d)", x->v, x->i); break; }
    case R_DBLINT: { const struct pdi *x = (const void *) p; snprintf(out, len, "(%.17g, %d)", x->v, x->i); break; }
    case R_LONGINT: { const struct pli *x = (const void *) p; snprintf(out, len, "(%ld, %d)", x->v, x->i); break; }
    case R_SHORTINT: { const struct psi *x = (const void *) p; snprintf(out, len, "(%d, %d)", x->v, x->i); break; }
    case R_MAT: {
        struct mat x;
        memcpy(&x, p, sizeof x);
        snprintf(out, len, "[%" PRIu32 " %" PRIu32 "; %" PRIu32 " %" PRIu32 "]", x.m[0], x.m[1], x.m[2], x.m[3]);
        break;
    }
    default: snprintf(out, len, "?");
    }
}

/* Type/op combinations; `served`: sharm reduces it (MPI_SHORT_INT has a hole
 * inside the element: handed over); `primary`: run at every count. */
struct combo {
    int t, o, served, primary;
};
static const struct combo combos[] = {
    {R_I32, O_SUM, 1, 1},      {R_MAT, O_MAT, 1, 1},       {R_DBLINT, O_MINLOC, 1, 1},
    {R_I32, O_PROD, 1, 0},     {R_I32, O_MAX, 1, 0},       {R_I32, O_BXOR, 1, 0},
    {R_I32, O_LAND, 1, 0},     {R_U8, O_SUM, 1, 0},        {R_U8, O_BOR, 1, 0},
    {R_U8, O_LOR, 1, 0},       {R_I64, O_MIN, 1, 0},       {R_I64, O_BAND, 1, 0},
    {R_I64, O_LXOR, 1, 0},     {R_FLT, O_SUM, 1, 0},       {R_DBL, O_MAX, 1, 0},
    {R_DBL, O_PROD, 1, 0},     {R_2INT, O_MAXLOC, 1, 0},   {R_FLTINT, O_MINLOC, 1, 0},
    {R_DBLINT, O_MAXLOC, 1, 0}, {R_LONGINT, O_MINLOC, 1, 0}, {R_SHORTINT, O_MINLOC, 0, 0},
};
#define NCOMBOS ((int) (sizeof(combos) / sizeof(combos[0])))
#define CB_I32_SUM 0
#define CB_MAT 1
#define CB_DBLINT_MINLOC 2

/* Expected fold over ranks [0, upto) of elements [i0, i0 + n), into acc. */
static void rexpect(const struct combo *cb, unsigned char *acc, size_t i0, size_t n, uint64_t seed, int upto)
{
    size_t bytes = n * rty[cb->t].ext;
    unsigned char *tmp = xmalloc(bytes);
    memset(acc, SENT, bytes);
    rgen(cb->t, cb->o, acc, i0, n, seed, 0);
    for (int r = 1; r < upto; ++r) {
        memset(tmp, SENT, bytes);
        rgen(cb->t, cb->o, tmp, i0, n, seed, r);
        rfold(cb->t, cb->o, acc, tmp, n);
    }
    free(tmp);
}

/* got[k] must equal exp[k] (data fields) for k < n (result element k is
 * global element i0 + k); padding must be untouched when sharm served it. */
static void rcheck(const struct combo *cb, const unsigned char *got, const unsigned char *exp, size_t n,
                   size_t i0, const char *what, int check_padding)
{
    const struct rtype *rt = &rty[cb->t];
    for (size_t k = 0; k < n; ++k) {
        const unsigned char *g = got + k * rt->ext, *x = exp + k * rt->ext;
        for (int f = 0; f < rt->nf; ++f) {
            if (memcmp(g + rt->off[f], x + rt->off[f], rt->len[f]) != 0) {
                char es[128], gs[128];
                relem_fmt(cb->t, x, es, sizeof es);
                relem_fmt(cb->t, g, gs, sizeof gs);
                die("%s: index %zu (element %zu of the whole input): expected %s, got %s", what, k, i0 + k, es, gs);
            }
        }
        if (!check_padding) continue;
        for (size_t b = 0; b < rt->ext; ++b) {
            int data = 0;
            for (int f = 0; f < rt->nf; ++f) data |= b >= rt->off[f] && b < rt->off[f] + rt->len[f];
            if (!data && g[b] != SENT) {
                die("%s: index %zu: padding byte %zu was written: expected 0x%02x, got 0x%02x", what, k, b, SENT, g[b]);
            }
        }
    }
}

static void check_same(const unsigned char *got, const unsigned char *was, size_t bytes, size_t ext, const char *what)
{
    if (memcmp(got, was, bytes) == 0) return;
    size_t o = 0;
    while (got[o] == was[o]) ++o;
    die("%s: index %zu (byte %zu): expected 0x%02x (unchanged), got 0x%02x", what, o / ext, o, was[o], got[o]);
}

static unsigned char *rbuf_new(size_t bytes, int bg)
{
    unsigned char *b = xmalloc(bytes + GUARD);
    memset(b, bg, bytes + GUARD);
    return b;
}

static unsigned char *dup_bytes(const unsigned char *src, size_t bytes)
{
    unsigned char *b = xmalloc(bytes);
    memcpy(b, src, bytes);
    return b;
}

/* Reduce_scatter_block (counts == NULL: n per process) or Reduce_scatter. */
static void t_reduce_scatter(const struct cx *c, const struct combo *cb, size_t n, int block, int ip, uint64_t seed)
{
    const int me = c->rank, p = c->size;
    const size_t ext = rty[cb->t].ext;
    int *rc = xmalloc(sizeof(int) * (size_t) p);
    size_t total = 0, first = 0;
    for (int j = 0; j < p; ++j) {
        rc[j] = block ? (int) n : vcount(seed * 17 + (uint64_t) j, n);
        if (j < me) first += (size_t) rc[j];
        total += (size_t) rc[j];
    }
    const size_t mine = (size_t) rc[me];
    enum coll op = block ? C_RSB : C_RS;
    if (block) {
        setctx(c, op, "datatype=%s op=%s recvcount=%zu root=-%s", rty[cb->t].name, op_name[cb->o], n, ip_str(ip));
    } else {
        setctx(c, op, "datatype=%s op=%s recvcounts=%s root=-%s", rty[cb->t].name, op_name[cb->o], ints(rc, p),
               ip_str(ip));
    }
    unsigned char *sb = rbuf_new(total * ext, SEND_BG), *rb = rbuf_new((ip ? total : mine) * ext, SENT);
    rgen(cb->t, cb->o, ip ? rb : sb, 0, total, seed, me);
    unsigned char *sb0 = dup_bytes(sb, total * ext + GUARD);
    enum ex e = expect(c, (long long) (total * rsize(cb->t)), cb->served);
    struct snap s = pv_snap(op);
    if (block) {
        MPI_CHECK(MPI_Reduce_scatter_block(ip ? MPI_IN_PLACE : sb, rb, (int) n, rty[cb->t].dt, ops[cb->o], c->comm));
    } else {
        MPI_CHECK(MPI_Reduce_scatter(ip ? MPI_IN_PLACE : sb, rb, rc, rty[cb->t].dt, ops[cb->o], c->comm));
    }
    pv_check(op, s, e);
    check_same(sb, sb0, total * ext + GUARD, ext, "send buffer (must stay unchanged)");
    unsigned char *exp = xmalloc(mine * ext + 1);
    rexpect(cb, exp, first, mine, seed, p);
    rcheck(cb, rb, exp, mine, first, "receive buffer", e == EX_SERVE);
    size_t end = (ip ? total : mine) * ext;
    for (size_t g = 0; g < GUARD; ++g) {
        if (rb[end + g] != SENT) die("receive buffer: overrun: guard byte %zu after it: expected 0x%02x, got 0x%02x", g, SENT, rb[end + g]);
    }
    free(exp);
    free(sb);
    free(sb0);
    free(rb);
    free(rc);
}

/* Scan (inclusive), Exscan or Allreduce (kind = C_SCAN, C_EXSCAN, C_ALLREDUCE). */
static void t_prefix(const struct cx *c, const struct combo *cb, enum coll kind, size_t n, int ip, uint64_t seed)
{
    const int me = c->rank, p = c->size;
    const size_t ext = rty[cb->t].ext, bytes = n * ext;
    setctx(c, kind, "datatype=%s op=%s count=%zu root=-%s", rty[cb->t].name, op_name[cb->o], n, ip_str(ip));
    unsigned char *sb = rbuf_new(bytes, SEND_BG), *rb = rbuf_new(bytes, SENT);
    rgen(cb->t, cb->o, ip ? rb : sb, 0, n, seed, me);
    unsigned char *sb0 = dup_bytes(sb, bytes + GUARD), *rb0 = dup_bytes(rb, bytes + GUARD);
    enum ex e = expect(c, (long long) (n * rsize(cb->t)), cb->served);
    struct snap s = pv_snap(kind);
    const void *sarg = ip ? MPI_IN_PLACE : sb;
    if (kind == C_SCAN) {
        MPI_CHECK(MPI_Scan(sarg, rb, (int) n, rty[cb->t].dt, ops[cb->o], c->comm));
    } else if (kind == C_EXSCAN) {
        MPI_CHECK(MPI_Exscan(sarg, rb, (int) n, rty[cb->t].dt, ops[cb->o], c->comm));
    } else {
        MPI_CHECK(MPI_Allreduce(sarg, rb, (int) n, rty[cb->t].dt, ops[cb->o], c->comm));
    }
    pv_check(kind, s, e);
    check_same(sb, sb0, bytes + GUARD, ext, "send buffer (must stay unchanged)");
    if (kind == C_EXSCAN && me == 0) {
        check_same(rb, rb0, bytes + GUARD, ext, "rank 0's receive buffer (must stay untouched)");
    } else {
        int upto = kind == C_SCAN ? me + 1 : kind == C_EXSCAN ? me : p;
        unsigned char *exp = xmalloc(bytes + 1);
        rexpect(cb, exp, 0, n, seed, upto);
        rcheck(cb, rb, exp, n, 0, "receive buffer", e == EX_SERVE);
        free(exp);
        for (size_t g = 0; g < GUARD; ++g) {
            if (rb[bytes + g] != SENT) die("receive buffer: overrun: guard byte %zu after it: expected 0x%02x, got 0x%02x", g, SENT, rb[bytes + g]);
        }
    }
    free(sb);
    free(sb0);
    free(rb);
    free(rb0);
}

/* ------------------------------------------------------------------------ */
/* Scenarios                                                                 */

static uint64_t seed_ctr = 1;
static uint64_t next_seed(void) { return mix64(++seed_ctr * 0x51ed2701ULL); }

/* Units per block: 0, 1, around one fragment, several times s*f. */
static int mv_counts(const struct pair *pr, size_t *out)
{
    size_t ub = unit_bytes(pr), u = opt_f / (ub ? ub : 1);
    size_t v[] = {0, 1, u - 1, u, u + 1, 3 * opt_s * opt_f / (ub ? ub : 1) + 5};
    memcpy(out, v, sizeof v);
    return 6;
}

typedef void (*rooted_fn)(const struct cx *, const struct pair *, size_t, int, int, uint64_t);
typedef void (*flat_fn)(const struct cx *, const struct pair *, size_t, int, uint64_t);

/* Every pair and count; primary pairs at every root with and without
 * MPI_IN_PLACE, the others at two roots (one of them in place). */
static void run_rooted(const struct cx *c, rooted_fn fn)
{
    for (int pi = 0; pi < NPAIRS; ++pi) {
        size_t counts[8];
        int nc = mv_counts(&pairs[pi], counts);
        for (int ci = 0; ci < nc; ++ci) {
            if (pairs[pi].primary) {
                for (int root = 0; root < c->size; ++root) {
                    fn(c, &pairs[pi], counts[ci], root, 0, next_seed());
                    fn(c, &pairs[pi], counts[ci], root, 1, next_seed());
                }
            } else {
                int r = (ci + pi) % c->size;
                fn(c, &pairs[pi], counts[ci], r, ci & 1, next_seed());
                fn(c, &pairs[pi], counts[ci], (r + 1) % c->size, !(ci & 1), next_seed());
            }
        }
    }
}

static void run_flat(const struct cx *c, flat_fn fn)
{
    for (int pi = 0; pi < NPAIRS; ++pi) {
        size_t counts[8];
        int nc = mv_counts(&pairs[pi], counts);
        for (int ci = 0; ci < nc; ++ci) {
            fn(c, &pairs[pi], counts[ci], 0, next_seed());
            fn(c, &pairs[pi], counts[ci], 1, next_seed());
        }
    }
}

/* Reduction counts: 0, 1, around a fragment (in data bytes and, for padded
 * types, in whole elements), several times s*f; Allreduce adds counts
 * around multiples of p. */
static int red_counts(const struct combo *cb, int p, int allreduce, size_t *out)
{
    size_t sz = rsize(cb->t), ext = rty[cb->t].ext, u = opt_f / sz, pf = (opt_f - sz) / ext + 1;
    int n = 0;
    out[n++] = 0;
    out[n++] = 1;
    if (cb->primary) {
        out[n++] = u - 1;
        out[n++] = u;
    }
    out[n++] = u + 1;
    if (cb->primary && ext != sz) out[n++] = pf + 1;
    out[n++] = 3 * opt_s * opt_f / ext + 7;
    if (allreduce) {
        out[n++] = (size_t) p + 1;
        if (cb->primary) {
            if (p > 2) out[n++] = (size_t) p - 1;
            out[n++] = 5 * (size_t) p + 3;
            out[n++] = (u / (size_t) p + 1) * (size_t) p + 1;
        }
    }
    return n;
}

/* kind: C_RSB, C_RS, C_SCAN, C_EXSCAN or C_ALLREDUCE. */
static void run_reductions(const struct cx *c, enum coll kind)
{
    for (int k = 0; k < NCOMBOS; ++k) {
        const struct combo *cb = &combos[k];
        size_t counts[16];
        int nc = red_counts(cb, c->size, kind == C_ALLREDUCE, counts);
        for (int ci = 0; ci < nc; ++ci) {
            for (int ip = 0; ip < 2; ++ip) {
                if (!cb->primary && ip != ((ci + k) & 1)) continue;
                if (kind == C_RSB || kind == C_RS) {
                    t_reduce_scatter(c, cb, counts[ci], kind == C_RSB, ip, next_seed());
                } else {
                    t_prefix(c, cb, kind, counts[ci], ip, next_seed());
                }
            }
        }
    }
}

static void sc_big(const struct cx *c)
{
    const int p = c->size;
    const struct pair *pi = &pairs[P_INT], *pv = &pairs[P_VEC_RLB];
    size_t u = opt_big / ((size_t) p * unit_bytes(pi)), uv = opt_big / ((size_t) p * unit_bytes(pv));
    t_gather(c, pi, u, 0, 0, next_seed());
    t_gather(c, pv, uv, p - 1, 1, next_seed());
    t_gatherv(c, pi, u, p / 2, 1, next_seed());
    t_scatter(c, pi, u, p - 1, 0, next_seed());
    t_scatter(c, pv, uv, 0, 1, next_seed());
    t_scatterv(c, pi, u, p / 2, 0, next_seed());
    t_allgather(c, pi, u, 0, next_seed());
    t_allgather(c, pv, uv, 1, next_seed());
    t_allgatherv(c, pi, u, 1, next_seed());
    t_alltoall(c, pi, u, 0, next_seed());
    t_alltoall(c, pv, uv, 1, next_seed());
    t_alltoallv(c, pi, u, 0, next_seed());
    t_alltoallv(c, pv, uv, 1, next_seed());
    const struct combo *sum = &combos[CB_I32_SUM], *mat = &combos[CB_MAT], *dbl = &combos[CB_DBLINT_MINLOC];
    size_t n = opt_big / 4;
    t_reduce_scatter(c, sum, n / (size_t) p, 1, 0, next_seed());
    t_reduce_scatter(c, mat, opt_big / 16 / (size_t) p, 1, 1, next_seed());
    t_reduce_scatter(c, sum, n / (size_t) p, 0, 1, next_seed());
    t_prefix(c, sum, C_SCAN, n, 0, next_seed());
    t_prefix(c, mat, C_SCAN, opt_big / 16, 1, next_seed());
    t_prefix(c, sum, C_EXSCAN, n, 1, next_seed());
    t_prefix(c, dbl, C_EXSCAN, opt_big / 16, 0, next_seed());
    t_prefix(c, sum, C_ALLREDUCE, n + 1, 0, next_seed());
    t_prefix(c, sum, C_ALLREDUCE, n - 1, 1, next_seed());
    t_prefix(c, mat, C_ALLREDUCE, opt_big / 16 + 3, 0, next_seed());
    t_prefix(c, dbl, C_ALLREDUCE, opt_big / 16 + 1, 1, next_seed());
}

static void t_barrier_calls(const struct cx *c)
{
    setctx(c, C_BARRIER, "datatype=- count=- root=-");
    enum ex e = expect(c, -1, 1);
    struct snap s = pv_snap(C_BARRIER);
    MPI_CHECK(MPI_Barrier(c->comm));
    pv_check(C_BARRIER, s, e);
}

/* One call of operation `which` (0..13): `units` units of datatype pair pr
 * (data movement) or elements of combination cb (reductions). */
static void one_call(const struct cx *c, int which, const struct pair *pr, const struct combo *cb, size_t units,
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
    default: t_barrier_calls(c); break;
    }
}

/* A call of operation `which` with the INT or the vector/resized pair and
 * one of the primary reduction combinations, chosen by the seed. */
static void mixed_call(const struct cx *c, int which, size_t units, int root, uint64_t seed)
{
    const struct pair *pr = &pairs[(seed >> 8) & 1 ? P_INT : P_VEC_RLB];
    const struct combo *cb = &combos[(seed >> 9) % 3];
    one_call(c, which, pr, cb, units, root, (int) (seed >> 10) & 1, seed);
}

/* --calls random calls back to back on MPI_COMM_WORLD and a dup of it: any
 * operation, datatype pair or combination, root, MPI_IN_PLACE or not; mostly
 * small messages, some around a fragment, a few of several s*f. */
static void sc_mixed(void)
{
    MPI_Comm dup;
    MPI_CHECK(MPI_Comm_dup(MPI_COMM_WORLD, &dup));
    struct cx cs[2] = {cx_of(MPI_COMM_WORLD, "MPI_COMM_WORLD"), cx_of(dup, "dup-of-world")};
    for (long i = 0; i < opt_calls; ++i) {
        uint64_t r = mix64(0x5eed0000ULL + (uint64_t) i), r2 = mix64(r);
        const struct cx *c = &cs[r >> 63];
        int which = (int) (r % 14);
        const struct pair *pr = &pairs[(r >> 8) % NPAIRS];
        const struct combo *cb = &combos[(r >> 16) % NCOMBOS];
        size_t ub = which < 8 ? unit_bytes(pr) : rty[cb->t].ext, bytes;
        switch ((r >> 24) % 8) {
        case 0: bytes = 0; break;
        case 1: case 2: case 3: case 4: bytes = r2 % 256; break;
        case 5: case 6: bytes = r2 % (2 * opt_f + 64); break;
        default: bytes = r2 % (2 * opt_s * opt_f); break;
        }
        one_call(c, which, pr, cb, bytes / (ub ? ub : 8) + ((r >> 40) & 1), (int) ((r >> 44) % (uint64_t) c->size),
                 (int) (r >> 52) & 1, next_seed());
    }
    MPI_CHECK(MPI_Comm_free(&dup));
}

static void sc_comms(void)
{
    MPI_Comm parity, shuffled, dup, dup_parity;
    MPI_CHECK(MPI_Comm_split(MPI_COMM_WORLD, w_rank % 2, w_rank, &parity));
    MPI_CHECK(MPI_Comm_split(MPI_COMM_WORLD, 0, (int) (mix64((uint64_t) w_rank + 99) % 1000), &shuffled));
    MPI_CHECK(MPI_Comm_dup(MPI_COMM_WORLD, &dup));
    MPI_CHECK(MPI_Comm_dup(parity, &dup_parity));
    struct cx cs[5] = {cx_of(parity, "split-by-parity"), cx_of(shuffled, "split-shuffled-keys"),
                       cx_of(dup, "dup-of-world"), cx_of(MPI_COMM_WORLD, "MPI_COMM_WORLD"),
                       cx_of(dup_parity, "dup-of-parity-split")};
    size_t units[3] = {1, opt_f / 4 + 1, 2 * opt_s * opt_f / 4 + 3};
    for (int i = 0; i < 5 * 14 * 2; ++i) {
        const struct cx *c = &cs[i % 5];
        int which = (i / 5 + i / 70) % 14; /* every op on every communicator */
        mixed_call(c, which, units[i % 3], i % c->size, next_seed());
    }
    MPI_CHECK(MPI_Comm_free(&parity));
    MPI_CHECK(MPI_Comm_free(&shuffled));
    MPI_CHECK(MPI_Comm_free(&dup));
    MPI_CHECK(MPI_Comm_free(&dup_parity));
    /* Communicators created and freed again and again (segments set up and released). */
    for (int rep = 0; rep < 8; ++rep) {
        MPI_Comm d;
        MPI_CHECK(MPI_Comm_dup(MPI_COMM_WORLD, &d));
        struct cx c = cx_of(d, "dup-then-freed");
        mixed_call(&c, 7, 100 + (size_t) rep * 300, 0, next_seed());
        mixed_call(&c, 11, 100 + (size_t) rep * 300, 0, next_seed());
        MPI_CHECK(MPI_Comm_free(&d));
    }
}

/* Rank r sets its flag in a shared window, the barrier, then every flag must
 * be set: a barrier that releases anyone early is caught. */
static void barrier_window(const struct cx *c, long iters)
{
    MPI_Win win;
    char *base;
    const int p = c->size, me = c->rank;
    MPI_CHECK(MPI_Win_allocate_shared(me == 0 ? 64 * (MPI_Aint) p : 0, 1, MPI_INFO_NULL, c->comm, &base, &win));
    MPI_Aint wsize;
    int disp;
    MPI_CHECK(MPI_Win_shared_query(win, 0, &wsize, &disp, &base));
    MPI_CHECK(MPI_Win_lock_all(MPI_MODE_NOCHECK, win));
    if (me == 0) memset(base, 0, 64 * (size_t) p);
    MPI_CHECK(MPI_Win_sync(win));
    MPI_CHECK(MPI_Barrier(c->comm));
    MPI_CHECK(MPI_Win_sync(win));
    for (long it = 0; it < iters; ++it) {
        uint64_t r = mix64((uint64_t) it * 7 + 3);
        if (it % 32 == 0) {
            usleep(1000 * (useconds_t) me); /* rank r arrives r ms late */
        } else if ((int) (r % (uint64_t) p) == me && it % 4 == 1) {
            usleep((useconds_t) ((r >> 32) % 400)); /* a random late comer */
        }
        int *mine = (int *) (base + 64 * me);
        __atomic_store_n(mine, (int) it + 1, __ATOMIC_RELEASE);
        MPI_CHECK(MPI_Win_sync(win));
        setctx(c, C_BARRIER, "datatype=- count=- root=- (iteration %ld of %ld)", it, iters);
        enum ex e = expect(c, -1, 1);
        struct snap s = pv_snap(C_BARRIER);
        MPI_CHECK(MPI_Barrier(c->comm));
        pv_check(C_BARRIER, s, e);
        MPI_CHECK(MPI_Win_sync(win));
        for (int j = 0; j < p; ++j) {
            int v = __atomic_load_n((int *) (base + 64 * j), __ATOMIC_ACQUIRE);
            if (v != it + 1 && v != it + 2) {
                die("index %d (flag of rank %d after the barrier): expected %ld (or %ld), got %d", j, j, it + 1,
                    it + 2, v);
            }
        }
    }
    MPI_CHECK(MPI_Win_unlock_all(win));
    MPI_CHECK(MPI_Win_free(&win));
}

static void sc_barrier(void)
{
    MPI_Comm parity, shuffled;
    MPI_CHECK(MPI_Comm_split(MPI_COMM_WORLD, w_rank % 2, w_rank, &parity));
    MPI_CHECK(MPI_Comm_split(MPI_COMM_WORLD, 0, (int) (mix64((uint64_t) w_rank + 5) % 1000), &shuffled));
    struct cx w = cx_of(MPI_COMM_WORLD, "MPI_COMM_WORLD"), pc = cx_of(parity, "split-by-parity"),
              sc = cx_of(shuffled, "split-shuffled-keys");
    barrier_window(&w, opt_iters);
    barrier_window(&pc, opt_iters / 2);
    barrier_window(&sc, opt_iters / 2);
    MPI_CHECK(MPI_Comm_free(&parity));
    MPI_CHECK(MPI_Comm_free(&shuffled));
}

/* ------------------------------------------------------------------------ */

static size_t parse_num(const char *opt, const char *s)
{
    char *end;
    long long v = strtoll(s ? s : "", &end, 10);
    if (!s || !*s || *end != '\0' || v < 0) {
        fprintf(stderr, "collectives_check: bad value for %s: %s\n", opt, s ? s : "(missing)");
        exit(2);
    }
    return (size_t) v;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s SCENARIO[,SCENARIO...] [--f N] [--s N] [--expect serve|max1|budget1] "
                        "[--big BYTES] [--iters N] [--calls N] [--alarm SECONDS]\n", argv[0]);
        return 2;
    }
    for (int a = 2; a < argc; a += 2) {
        const char *o = argv[a], *v = a + 1 < argc ? argv[a + 1] : NULL;
        if (!strcmp(o, "--f")) opt_f = parse_num(o, v);
        else if (!strcmp(o, "--s")) opt_s = parse_num(o, v);
        else if (!strcmp(o, "--big")) opt_big = parse_num(o, v);
        else if (!strcmp(o, "--iters")) opt_iters = (long) parse_num(o, v);
        else if (!strcmp(o, "--calls")) opt_calls = (long) parse_num(o, v);
        else if (!strcmp(o, "--alarm")) opt_alarm = (long) parse_num(o, v);
        else if (!strcmp(o, "--expect") && v && !strcmp(v, "serve")) opt_mode = MODE_SERVE;
        else if (!strcmp(o, "--expect") && v && !strcmp(v, "max1")) opt_mode = MODE_MAX1;
        else if (!strcmp(o, "--expect") && v && !strcmp(v, "budget1")) opt_mode = MODE_BUDGET1;
        else {
            fprintf(stderr, "collectives_check: bad option %s %s\n", o, v ? v : "");
            return 2;
        }
    }
    if (opt_f < 64 || opt_s < 2 || opt_big < 1024) {
        fprintf(stderr, "collectives_check: need --f >= 64, --s >= 2, --big >= 1024\n");
        return 2;
    }
    signal(SIGALRM, on_alarm);
    alarm((unsigned) opt_alarm);
    MPI_Init(&argc, &argv);
    pv_init(); /* after MPI_Init, and before any collective we count */
    MPI_Comm_rank(MPI_COMM_WORLD, &w_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &w_size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    mtypes_init();
    rtypes_init();

    /* The job's pids, for the harness's /dev/shm check (point-to-point only). */
    long long pid = (long long) getpid();
    if (w_rank == 0) {
        printf("collectives_check: start np=%d pids=%lld", w_size, pid);
        for (int r = 1; r < w_size; ++r) {
            long long o;
            MPI_CHECK(MPI_Recv(&o, 1, MPI_LONG_LONG, r, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
            printf(",%lld", o);
        }
        printf("\n");
        fflush(stdout);
    } else {
        MPI_CHECK(MPI_Send(&pid, 1, MPI_LONG_LONG, 0, 1, MPI_COMM_WORLD));
    }

    struct cx world = cx_of(MPI_COMM_WORLD, "MPI_COMM_WORLD");
    char list[512];
    snprintf(list, sizeof(list), "%s", argv[1]);
    double t0 = MPI_Wtime();
    for (char *save = NULL, *s = strtok_r(list, ",", &save); s; s = strtok_r(NULL, ",", &save)) {
        scen = s;
        double ts = MPI_Wtime();
        unsigned long long calls0 = n_checked;
        if (!strcmp(s, "gather")) {
            run_rooted(&world, t_gather);
            run_rooted(&world, t_gatherv);
        } else if (!strcmp(s, "scatter")) {
            run_rooted(&world, t_scatter);
            run_rooted(&world, t_scatterv);
        } else if (!strcmp(s, "allgather")) {
            run_flat(&world, t_allgather);
            run_flat(&world, t_allgatherv);
        } else if (!strcmp(s, "alltoall")) {
            run_flat(&world, t_alltoall);
            run_flat(&world, t_alltoallv);
        } else if (!strcmp(s, "redscat")) {
            run_reductions(&world, C_RSB);
            run_reductions(&world, C_RS);
        } else if (!strcmp(s, "scan")) {
            run_reductions(&world, C_SCAN);
            run_reductions(&world, C_EXSCAN);
        } else if (!strcmp(s, "allreduce")) {
            run_reductions(&world, C_ALLREDUCE);
        } else if (!strcmp(s, "big")) {
            sc_big(&world);
        } else if (!strcmp(s, "comms")) {
            sc_comms();
        } else if (!strcmp(s, "barrier")) {
            sc_barrier();
        } else if (!strcmp(s, "mixed")) {
            sc_mixed();
        } else {
            die("unknown scenario '%s'", s);
        }
        snprintf(ctx, sizeof(ctx), "end of scenario");
        MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
        if (w_rank == 0) {
            printf("collectives_check: scenario %s: %llu calls on rank 0 in %.2f s\n", s, n_checked - calls0,
                   MPI_Wtime() - ts);
            fflush(stdout);
        }
    }
    scen = "summary";
    snprintf(ctx, sizeof(ctx), "summary");

    /* Totals over all processes (point-to-point: not through sharm). */
    unsigned long long mine[3] = {n_checked, n_served, n_fallbacks}, tot[3] = {0, 0, 0};
    if (w_rank == 0) {
        for (int k = 0; k < 3; ++k) tot[k] = mine[k];
        for (int r = 1; r < w_size; ++r) {
            unsigned long long o[3];
            MPI_CHECK(MPI_Recv(o, 3, MPI_UNSIGNED_LONG_LONG, r, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
            for (int k = 0; k < 3; ++k) tot[k] += o[k];
        }
    } else {
        MPI_CHECK(MPI_Send(mine, 3, MPI_UNSIGNED_LONG_LONG, 0, 2, MPI_COMM_WORLD));
    }
    double elapsed = MPI_Wtime() - t0;
    MPI_CHECK(MPI_T_pvar_session_free(&pv_session));
    MPI_CHECK(MPI_T_finalize()); /* before MPI_Finalize (the other order crashes Open MPI 4.1.4) */
    for (int t = M_CONTIG4; t < NMT; ++t) {
        if (t != M_SHORTINT) MPI_Type_free(&mt[t].dt);
    }
    MPI_Type_free(&rty[R_MAT].dt);
    MPI_Op_free(&ops[O_MAT]);
    MPI_Finalize();
    if (w_rank == 0) {
        printf("collectives_check: OK np=%d scenarios=%s calls=%llu served=%llu fallbacks=%llu time=%.2fs\n",
               w_size, argv[1], tot[0], tot[1], tot[2], elapsed);
        fflush(stdout);
    }
    return 0;
}
