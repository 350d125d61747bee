/*
 * sharm_check: MPI correctness checks for the sharm coll component.
 *
 *   sharm_check SCENARIO[,SCENARIO...] [options]
 *
 * Scenarios:
 *   ops        every predefined op over every type it applies to, plus MINLOC/
 *              MAXLOC on the pair types and a non-commutative user op (2x2
 *              matrix product); Reduce at every root (with and without
 *              MPI_IN_PLACE) and Allreduce (with and without MPI_IN_PLACE);
 *              counts 0, 1 and around the fragment size; Bcast of several types.
 *   big        counts of several times s*f and messages up to --big bytes.
 *   dtypes     Bcast of non-contiguous, resized (non-zero lower bound) and
 *              mismatched-but-equal-signature datatypes (gap bytes checked);
 *              a datatype of size 0 with count > 0 for Bcast/Reduce/Allreduce.
 *   comms      split (by parity, with shuffled keys, by type shared) and dup
 *              communicators used in alternation with MPI_COMM_WORLD and
 *              MPI_COMM_SELF; repeated
 *              dup/free; an intercommunicator Bcast.
 *   stress     --calls back-to-back mixed Bcast/Reduce/Allreduce calls.
 *   unservable Reduce/Allreduce with a user op on a non-contiguous vector type
 *              (sharm must hand it to the next component).
 *   packed     Bcast of datatypes with a gap inside each element (MPI_SHORT_INT,
 *              struct {int8; int32}): packed elements straddle fragments.
 *   crash      the last rank aborts while the others wait in a Bcast (the job
 *              must fail, end, and leave no shared-memory files).
 *
 * Options:
 *   --f BYTES        sharm's fragment size (coll_sharm_fragment_size) [8192]
 *   --s SLOTS        sharm's queue slots (coll_sharm_queue_slots)      [8]
 *   --expect MODE    serve:   sharm serves every call it can (default)
 *                    max1:    run with coll_sharm_max_message_size=1
 *                    budget1: run with coll_sharm_shared_memory_budget=1
 *   --big BYTES      largest message of the "big" scenario [16777216]
 *   --calls N        calls of the "stress" scenario [10000]
 *   --alarm SECONDS  abort with a description of the pending call after this
 *                    long [240]
 *
 * Every result is checked against values computed here, independently of
 * MPI (C wrap-around arithmetic, folds in rank order).  Around every call the
 * MPI_T performance variables coll_sharm_<op>_served / _fallbacks are read and
 * compared with what sharm must have done.  The first wrong value aborts the
 * job with a message naming rank, call, op, type, count, root, index,
 * expected and actual value.  Rank 0 ends with one summary line:
 *   sharm_check: OK np=... scenarios=... calls=... served=... fallbacks=... time=...
 * (after a first line "sharm_check: start np=... pids=..." naming the job's
 * processes).  "calls" counts the counter checks over all processes.
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

/* ------------------------------------------------------------------------ */
/* Failure reporting                                                         */

static int w_rank = 0, w_size = 1;
static char ctx[640] = "start-up"; /* the call in progress, for messages */
static const char *scenario = "-";

static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void die(const char *fmt, ...)
{
    char msg[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    fprintf(stderr, "sharm_check: FAIL rank %d scenario %s: %s: %s\n", w_rank, scenario, ctx, msg);
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
    char msg[1024];
    int n = snprintf(msg, sizeof(msg),
                     "sharm_check: FAIL rank %d scenario %s: timed out (--alarm) during: %s\n",
                     w_rank, scenario, ctx);
    if (n > 0) {
        ssize_t ignored = write(2, msg, (size_t) n < sizeof(msg) ? (size_t) n : sizeof(msg) - 1);
        (void) ignored;
    }
    _exit(3);
}

static void *xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p) {
        die("out of memory (%zu bytes)", n);
    }
    return p;
}

/* ------------------------------------------------------------------------ */
/* Options                                                                   */

enum expect_mode { MODE_SERVE, MODE_MAX1, MODE_BUDGET1 };
static long opt_f = 8192, opt_s = 8;
static enum expect_mode opt_mode = MODE_SERVE;
static long opt_big = 16L << 20;
static long opt_calls = 10000;
static long opt_alarm = 240;

/* ------------------------------------------------------------------------ */
/* sharm's performance variables                                              */

enum coll { C_BARRIER = 0, C_BCAST, C_REDUCE, C_ALLREDUCE, NCOLL = 16 };
static const char *const coll_pv_names[NCOLL] = {
    "barrier", "bcast", "reduce", "allreduce", "gather", "gatherv", "scatter", "scatterv",
    "allgather", "allgatherv", "alltoall", "alltoallv", "reduce_scatter_block",
    "reduce_scatter", "scan", "exscan",
};
static MPI_T_pvar_session pv_session;
static MPI_T_pvar_handle pv_handle[NCOLL][2]; /* [coll][0 = served, 1 = fallbacks] */

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

static void pv_init(void)
{
    int provided, idx, count;
    MPI_CHECK(MPI_T_init_thread(MPI_THREAD_SINGLE, &provided));
    MPI_CHECK(MPI_T_pvar_session_create(&pv_session));
    for (int c = 0; c < NCOLL; ++c) {
        for (int k = 0; k < 2; ++k) {
            char name[96];
            snprintf(name, sizeof(name), "coll_sharm_%s_%s", coll_pv_names[c],
                     k == 0 ? "served" : "fallbacks");
            int rc = find_pvar(name, &idx);
            if (rc != MPI_SUCCESS) {
                die("performance variable %s not found (rc %d): is the sharm component "
                    "loaded (mca_base_component_path)?", name, rc);
            }
            MPI_CHECK(MPI_T_pvar_handle_alloc(pv_session, idx, NULL, &pv_handle[c][k], &count));
            if (count != 1) {
                die("performance variable %s has count %d, expected 1", name, count);
            }
        }
    }
}

struct snap {
    unsigned long long served, fallbacks;
};

static struct snap pv_snap(enum coll c)
{
    struct snap s;
    MPI_CHECK(MPI_T_pvar_read(pv_session, pv_handle[c][0], &s.served));
    MPI_CHECK(MPI_T_pvar_read(pv_session, pv_handle[c][1], &s.fallbacks));
    return s;
}

/* What sharm must do with one call. */
enum expect {
    EX_SERVE,    /* served +1, fallbacks +0 */
    EX_FALLBACK, /* served +0, fallbacks +1 */
    EX_EITHER,   /* exactly one of them +1: sharm's policy may go either way */
    EX_NONE      /* neither: the communicator is not sharm's */
};
static const char *const expect_names[] = {"served", "handed over", "served or handed over",
                                           "not seen by sharm"};

static unsigned long long n_calls, n_served, n_fallbacks;

/* Checks the counters of c against `ex`; with `or_none`, no movement at all
 * is accepted too. */
static void pv_check_opt(enum coll c, struct snap before, enum expect ex, int or_none)
{
    struct snap after = pv_snap(c);
    unsigned long long ds = after.served - before.served;
    unsigned long long df = after.fallbacks - before.fallbacks;
    int ok;
    switch (ex) {
    case EX_SERVE: ok = ds == 1 && df == 0; break;
    case EX_FALLBACK: ok = ds == 0 && df == 1; break;
    case EX_EITHER: ok = ds + df == 1; break;
    default: ok = ds == 0 && df == 0; break;
    }
    if (or_none && ds == 0 && df == 0) ok = 1;
    if (!ok) {
        die("pvars coll_sharm_%s_served/_fallbacks moved by +%llu/+%llu; the call should have "
            "been %s%s", coll_pv_names[c], ds, df, expect_names[ex], or_none ? " (or not seen)" : "");
    }
    n_calls++;
    n_served += ds;
    n_fallbacks += df;
}

static void pv_check(enum coll c, struct snap before, enum expect ex)
{
    pv_check_opt(c, before, ex, 0);
}

/* The expectation for a call of `count` elements moving `bytes` bytes on
 * `comm`.  `reducible` classifies the datatype/op pair for reductions
 * (EX_SERVE for Bcast). */
static enum expect expect_for(MPI_Comm comm, long count, unsigned long long bytes,
                              enum expect reducible)
{
    int inter, size;
    MPI_CHECK(MPI_Comm_test_inter(comm, &inter));
    MPI_CHECK(MPI_Comm_size(comm, &size));
    if (inter || size < 2) {
        return EX_NONE;
    }
    if (count == 0) {
        /* Open MPI 4.1's MPI_Bcast/MPI_Reduce/MPI_Allreduce return before
         * calling any component when count is 0. */
        return EX_NONE;
    }
    if (bytes == 0) {
        return EX_SERVE; /* nothing to move (a datatype of size 0): counted as served */
    }
    if (opt_mode == MODE_BUDGET1) {
        return EX_FALLBACK;
    }
    if (opt_mode == MODE_MAX1 && bytes > 1) {
        return EX_FALLBACK;
    }
    return reducible;
}

/* ------------------------------------------------------------------------ */
/* Types and values                                                          */

enum tid {
    T_INT8, T_UINT8, T_INT16, T_UINT16, T_INT32, T_UINT32, T_INT64, T_UINT64,
    T_FLOAT, T_DOUBLE,
    T_2INT, T_FLOAT_INT, T_DOUBLE_INT, T_LONG_INT, T_SHORT_INT,
    T_MAT, /* 2x2 int32 matrix (MPI_Type_contiguous(4, MPI_INT)), user op */
    T_AFF, /* affine map {double m; double c; int32 t} + 4 padding bytes, user op */
    NTYPES
};
#define N_BASIC (T_DOUBLE + 1)

struct p_2int { int v; int i; };
struct p_float { float v; int i; };
struct p_double { double v; int i; };
struct p_long { long v; int i; };
struct p_short { short v; int i; };
struct mat { int32_t m[4]; };
struct aff { double m; double c; int32_t t; }; /* 20 data bytes, extent 24 */

struct tdesc {
    const char *name;
    size_t extent;                     /* C sizeof of one element */
    size_t field_off[4], field_len[4]; /* data bytes of one element */
    int nfields;
    MPI_Datatype dt;
};
#define F1(T) {0}, {sizeof(T)}, 1
#define PAIR(P) {offsetof(P, v), offsetof(P, i)}, {sizeof(((P *) 0)->v), sizeof(int)}, 2
static struct tdesc types[NTYPES] = {
    {"MPI_INT8_T", 1, F1(int8_t), 0},       {"MPI_UINT8_T", 1, F1(uint8_t), 0},
    {"MPI_INT16_T", 2, F1(int16_t), 0},     {"MPI_UINT16_T", 2, F1(uint16_t), 0},
    {"MPI_INT32_T", 4, F1(int32_t), 0},     {"MPI_UINT32_T", 4, F1(uint32_t), 0},
    {"MPI_INT64_T", 8, F1(int64_t), 0},     {"MPI_UINT64_T", 8, F1(uint64_t), 0},
    {"MPI_FLOAT", 4, F1(float), 0},         {"MPI_DOUBLE", 8, F1(double), 0},
    {"MPI_2INT", sizeof(struct p_2int), PAIR(struct p_2int), 0},
    {"MPI_FLOAT_INT", sizeof(struct p_float), PAIR(struct p_float), 0},
    {"MPI_DOUBLE_INT", sizeof(struct p_double), PAIR(struct p_double), 0},
    {"MPI_LONG_INT", sizeof(struct p_long), PAIR(struct p_long), 0},
    {"MPI_SHORT_INT", sizeof(struct p_short), PAIR(struct p_short), 0},
    {"2x2 matrix (contiguous 4 x MPI_INT)", sizeof(struct mat), F1(struct mat), 0},
    {"affine map (struct {double; double; int}, extent 24)", sizeof(struct aff),
     {0}, {offsetof(struct aff, t) + sizeof(int32_t)}, 1, 0},
};

enum opk {
    O_SUM, O_PROD, O_MIN, O_MAX, O_LAND, O_LOR, O_LXOR, O_BAND, O_BOR, O_BXOR,
    O_MINLOC, O_MAXLOC, O_MATMUL, O_AFFINE, O_NONE, NOPS
};
static const char *const op_names[NOPS] = {
    "MPI_SUM", "MPI_PROD", "MPI_MIN", "MPI_MAX", "MPI_LAND", "MPI_LOR", "MPI_LXOR",
    "MPI_BAND", "MPI_BOR", "MPI_BXOR", "MPI_MINLOC", "MPI_MAXLOC",
    "user non-commutative matrix product", "user non-commutative affine composition", "-",
};
static MPI_Op ops[NOPS];

static int is_int(enum tid t) { return t <= T_UINT64; }
static int is_pair(enum tid t) { return t >= T_2INT && t <= T_SHORT_INT; }

static void matmul_fn(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    (void) dt;
    const struct mat *a = in;
    struct mat *b = inout;
    for (int e = 0; e < *len; ++e) {
        const uint32_t *x = (const uint32_t *) a[e].m;
        uint32_t *y = (uint32_t *) b[e].m;
        uint32_t r0 = x[0] * y[0] + x[1] * y[2], r1 = x[0] * y[1] + x[1] * y[3];
        uint32_t r2 = x[2] * y[0] + x[3] * y[2], r3 = x[2] * y[1] + x[3] * y[3];
        y[0] = r0; y[1] = r1; y[2] = r2; y[3] = r3;
    }
}

/* (m1, c1, t1) o (m2, c2, t2) = (m1 m2, m1 c2 + c1, t1 ^ t2): composition
 * x -> m1 (m2 x + c2) + c1 of affine maps; exact for the values used. */
static void affine_fn(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    (void) dt;
    const struct aff *a = in;
    struct aff *b = inout;
    for (int e = 0; e < *len; ++e) {
        b[e].c = a[e].m * b[e].c + a[e].c;
        b[e].m = a[e].m * b[e].m;
        b[e].t = a[e].t ^ b[e].t;
    }
}

static void types_init(void)
{
    MPI_Datatype basic[NTYPES] = {MPI_INT8_T, MPI_UINT8_T, MPI_INT16_T, MPI_UINT16_T,
                                  MPI_INT32_T, MPI_UINT32_T, MPI_INT64_T, MPI_UINT64_T,
                                  MPI_FLOAT, MPI_DOUBLE, MPI_2INT, MPI_FLOAT_INT,
                                  MPI_DOUBLE_INT, MPI_LONG_INT, MPI_SHORT_INT, MPI_DATATYPE_NULL,
                                  MPI_DATATYPE_NULL};
    for (int t = 0; t < T_MAT; ++t) {
        types[t].dt = basic[t];
    }
    MPI_CHECK(MPI_Type_contiguous(4, MPI_INT, &types[T_MAT].dt));
    MPI_CHECK(MPI_Type_commit(&types[T_MAT].dt));
    {
        int bl[3] = {1, 1, 1};
        MPI_Aint disp[3] = {offsetof(struct aff, m), offsetof(struct aff, c), offsetof(struct aff, t)};
        MPI_Datatype tt[3] = {MPI_DOUBLE, MPI_DOUBLE, MPI_INT32_T}, st;
        MPI_CHECK(MPI_Type_create_struct(3, bl, disp, tt, &st));
        MPI_CHECK(MPI_Type_create_resized(st, 0, sizeof(struct aff), &types[T_AFF].dt));
        MPI_CHECK(MPI_Type_commit(&types[T_AFF].dt));
        MPI_CHECK(MPI_Type_free(&st));
    }
    MPI_Op pre[] = {MPI_SUM, MPI_PROD, MPI_MIN, MPI_MAX, MPI_LAND, MPI_LOR,
                    MPI_LXOR, MPI_BAND, MPI_BOR, MPI_BXOR, MPI_MINLOC, MPI_MAXLOC};
    for (int o = 0; o < O_MATMUL; ++o) { /* the predefined ones */
        ops[o] = pre[o];
    }
    MPI_CHECK(MPI_Op_create(matmul_fn, 0, &ops[O_MATMUL]));
    MPI_CHECK(MPI_Op_create(affine_fn, 0, &ops[O_AFFINE]));
    /* Check the C layouts against MPI's view of the types. */
    for (int t = 0; t < NTYPES; ++t) {
        MPI_Aint lb, ext;
        MPI_CHECK(MPI_Type_get_extent(types[t].dt, &lb, &ext));
        if (lb != 0 || (size_t) ext != types[t].extent) {
            die("type %s: MPI lb/extent %ld/%ld, C layout expects 0/%zu", types[t].name,
                (long) lb, (long) ext, types[t].extent);
        }
    }
}

static uint64_t mix64(uint64_t z)
{
    z += 0x9e3779b97f4a7c15ULL;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

/* The raw value of element i of process `who` (a world rank) for `seed`. */
static inline uint64_t raw(uint64_t seed, int who, size_t i)
{
    return mix64(seed ^ ((uint64_t) (who + 1) << 52) ^ (uint64_t) i * 0x2545f4914f6cdd1dULL);
}

static double fvalue(enum opk o, uint64_t r)
{
    static const double prod[8] = {-2, -1, -0.5, 0.5, 1, 2, 4, 0.25};
    switch (o) {
    case O_SUM: return (double) ((int64_t) (r % 1025) - 512);  /* sums exact in any order */
    case O_PROD: return prod[r % 8];                           /* products exact */
    default: return (double) ((int64_t) (r % 20001) - 10000) / 8.0;
    }
}

/* Integer value: full range, odd for PROD (keeps products non-zero), sparse
 * zeros for the logical ops. */
static uint64_t ivalue(enum opk o, uint64_t r)
{
    switch (o) {
    case O_PROD: return r | 1;
    case O_LAND: case O_LOR: case O_LXOR: return (r % 4 == 0) ? 0 : ((r >> 8) | 1);
    default: return r;
    }
}

/* Writes the data fields of elements [i0, i0 + n) of process `who` into buf
 * (element i0 at buf); padding bytes are left as they are. */
static void gen(enum tid t, enum opk o, void *buf, size_t i0, size_t n, uint64_t seed, int who)
{
    for (size_t k = 0; k < n; ++k) {
        uint64_t r = raw(seed, who, i0 + k);
        uint64_t iv = ivalue(o, r);
        switch (t) {
        case T_INT8: ((int8_t *) buf)[k] = (int8_t) iv; break;
        case T_UINT8: ((uint8_t *) buf)[k] = (uint8_t) iv; break;
        case T_INT16: ((int16_t *) buf)[k] = (int16_t) iv; break;
        case T_UINT16: ((uint16_t *) buf)[k] = (uint16_t) iv; break;
        case T_INT32: ((int32_t *) buf)[k] = (int32_t) iv; break;
        case T_UINT32: ((uint32_t *) buf)[k] = (uint32_t) iv; break;
        case T_INT64: ((int64_t *) buf)[k] = (int64_t) iv; break;
        case T_UINT64: ((uint64_t *) buf)[k] = iv; break;
        case T_FLOAT: ((float *) buf)[k] = (float) fvalue(o, r); break;
        case T_DOUBLE: ((double *) buf)[k] = fvalue(o, r); break;
        /* Pairs: few distinct values (many ties), random indices. */
        case T_2INT: ((struct p_2int *) buf)[k].v = (int) (r % 7) - 3;
                     ((struct p_2int *) buf)[k].i = (int) (mix64(r) % 1000); break;
        case T_FLOAT_INT: ((struct p_float *) buf)[k].v = (float) (r % 7) - 2.5f;
                          ((struct p_float *) buf)[k].i = (int) (mix64(r) % 1000); break;
        case T_DOUBLE_INT: ((struct p_double *) buf)[k].v = (double) (r % 7) - 2.5;
                           ((struct p_double *) buf)[k].i = (int) (mix64(r) % 1000); break;
        case T_LONG_INT: ((struct p_long *) buf)[k].v = (long) (r % 7) * 1000000007L - 3;
                         ((struct p_long *) buf)[k].i = (int) (mix64(r) % 1000); break;
        case T_SHORT_INT: ((struct p_short *) buf)[k].v = (short) ((int) (r % 7) - 3);
                          ((struct p_short *) buf)[k].i = (int) (mix64(r) % 1000); break;
        case T_AFF: {
            static const double ms[6] = {-2, -1, -0.5, 0.5, 1, 2};
            struct aff *x = &((struct aff *) buf)[k];
            x->m = ms[r % 6];
            x->c = (double) ((int) ((r >> 8) % 201) - 100);
            x->t = (int32_t) (uint32_t) (r >> 32);
            break;
        }
        case T_MAT:
            for (int j = 0; j < 4; ++j) {
                ((struct mat *) buf)[k].m[j] = (int32_t) (uint32_t) mix64(r + (uint64_t) j);
            }
            break;
        default: die("gen: bad type %d", (int) t);
        }
    }
}

/* acc[k] = acc[k] op x[k]: acc holds the lower ranks' result. */
#define FOLD_INT(T, UT)                                                                     \
    do {                                                                                    \
        T *a = acc;                                                                         \
        const T *b = x;                                                                     \
        for (size_t k = 0; k < n; ++k) {                                                    \
            switch (o) {                                                                    \
            case O_SUM: a[k] = (T) (UT) ((UT) a[k] + (UT) b[k]); break;                     \
            case O_PROD: a[k] = (T) (UT) ((UT) a[k] * (UT) b[k]); break;                    \
            case O_MIN: a[k] = b[k] < a[k] ? b[k] : a[k]; break;                            \
            case O_MAX: a[k] = b[k] > a[k] ? b[k] : a[k]; break;                            \
            case O_LAND: a[k] = (T) (a[k] && b[k]); break;                                  \
            case O_LOR: a[k] = (T) (a[k] || b[k]); break;                                   \
            case O_LXOR: a[k] = (T) ((a[k] != 0) != (b[k] != 0)); break;                    \
            case O_BAND: a[k] = (T) (a[k] & b[k]); break;                                   \
            case O_BOR: a[k] = (T) (a[k] | b[k]); break;                                    \
            case O_BXOR: a[k] = (T) (a[k] ^ b[k]); break;                                   \
            default: die("fold: op %s on %s", op_names[o], types[t].name);                  \
            }                                                                               \
        }                                                                                   \
    } while (0)
#define FOLD_FLT(T)                                                                         \
    do {                                                                                    \
        T *a = acc;                                                                         \
        const T *b = x;                                                                     \
        for (size_t k = 0; k < n; ++k) {                                                    \
            switch (o) {                                                                    \
            case O_SUM: a[k] = a[k] + b[k]; break;                                          \
            case O_PROD: a[k] = a[k] * b[k]; break;                                         \
            case O_MIN: a[k] = b[k] < a[k] ? b[k] : a[k]; break;                            \
            case O_MAX: a[k] = b[k] > a[k] ? b[k] : a[k]; break;                            \
            default: die("fold: op %s on %s", op_names[o], types[t].name);                  \
            }                                                                               \
        }                                                                                   \
    } while (0)
/* MPI's MINLOC/MAXLOC: the better value wins; on a tie the smaller index. */
#define FOLD_PAIR(P)                                                                        \
    do {                                                                                    \
        P *a = acc;                                                                         \
        const P *b = x;                                                                     \
        for (size_t k = 0; k < n; ++k) {                                                    \
            int better = o == O_MINLOC ? b[k].v < a[k].v : b[k].v > a[k].v;                 \
            if (o != O_MINLOC && o != O_MAXLOC) {                                           \
                die("fold: op %s on %s", op_names[o], types[t].name);                       \
            }                                                                               \
            if (better) {                                                                   \
                a[k].v = b[k].v;                                                            \
                a[k].i = b[k].i;                                                            \
            } else if (b[k].v == a[k].v && b[k].i < a[k].i) {                               \
                a[k].i = b[k].i;                                                            \
            }                                                                               \
        }                                                                                   \
    } while (0)

static void fold(enum tid t, enum opk o, void *acc, const void *x, size_t n)
{
    switch (t) {
    case T_INT8: FOLD_INT(int8_t, uint8_t); break;
    case T_UINT8: FOLD_INT(uint8_t, uint8_t); break;
    case T_INT16: FOLD_INT(int16_t, uint16_t); break;
    case T_UINT16: FOLD_INT(uint16_t, uint16_t); break;
    case T_INT32: FOLD_INT(int32_t, uint32_t); break;
    case T_UINT32: FOLD_INT(uint32_t, uint32_t); break;
    case T_INT64: FOLD_INT(int64_t, uint64_t); break;
    case T_UINT64: FOLD_INT(uint64_t, uint64_t); break;
    case T_FLOAT: FOLD_FLT(float); break;
    case T_DOUBLE: FOLD_FLT(double); break;
    case T_2INT: FOLD_PAIR(struct p_2int); break;
    case T_FLOAT_INT: FOLD_PAIR(struct p_float); break;
    case T_DOUBLE_INT: FOLD_PAIR(struct p_double); break;
    case T_LONG_INT: FOLD_PAIR(struct p_long); break;
    case T_SHORT_INT: FOLD_PAIR(struct p_short); break;
    case T_AFF: {
        /* acc = acc o x (composition, acc applied last) */
        struct aff *a = acc;
        const struct aff *b = x;
        if (o != O_AFFINE) {
            die("fold: op %s on %s", op_names[o], types[t].name);
        }
        for (size_t k = 0; k < n; ++k) {
            a[k].c = a[k].m * b[k].c + a[k].c;
            a[k].m = a[k].m * b[k].m;
            a[k].t = a[k].t ^ b[k].t;
        }
        break;
    }
    case T_MAT: {
        /* acc = acc x (matrix product, uint32 wrap-around) */
        struct mat *a = acc;
        const struct mat *b = x;
        if (o != O_MATMUL) {
            die("fold: op %s on %s", op_names[o], types[t].name);
        }
        for (size_t k = 0; k < n; ++k) {
            uint32_t *p = (uint32_t *) a[k].m;
            const uint32_t *q = (const uint32_t *) b[k].m;
            uint32_t r0 = p[0] * q[0] + p[1] * q[2], r1 = p[0] * q[1] + p[1] * q[3];
            uint32_t r2 = p[2] * q[0] + p[3] * q[2], r3 = p[2] * q[1] + p[3] * q[3];
            p[0] = r0; p[1] = r1; p[2] = r2; p[3] = r3;
        }
        break;
    }
    default: die("fold: bad type %d", (int) t);
    }
}

/* Whether the data fields of one element are equal. */
static int elem_equal(enum tid t, const void *a, const void *b)
{
    for (int f = 0; f < types[t].nfields; ++f) {
        if (memcmp((const char *) a + types[t].field_off[f], (const char *) b + types[t].field_off[f],
                   types[t].field_len[f]) != 0) {
            return 0;
        }
    }
    return 1;
}

static void elem_fmt(enum tid t, const void *p, char *out, size_t len)
{
    switch (t) {
    case T_INT8: snprintf(out, len, "%d", *(const int8_t *) p); break;
    case T_UINT8: snprintf(out, len, "%u", *(const uint8_t *) p); break;
    case T_INT16: snprintf(out, len, "%d", *(const int16_t *) p); break;
    case T_UINT16: snprintf(out, len, "%u", *(const uint16_t *) p); break;
    case T_INT32: snprintf(out, len, "%" PRId32, *(const int32_t *) p); break;
    case T_UINT32: snprintf(out, len, "%" PRIu32, *(const uint32_t *) p); break;
    case T_INT64: snprintf(out, len, "%" PRId64, *(const int64_t *) p); break;
    case T_UINT64: snprintf(out, len, "%" PRIu64, *(const uint64_t *) p); break;
    case T_FLOAT: snprintf(out, len, "%.9g", *(const float *) p); break;
    case T_DOUBLE: snprintf(out, len, "%.17g", *(const double *) p); break;
    case T_2INT: snprintf(out, len, "(%d, %d)", ((const struct p_2int *) p)->v, ((const struct p_2int *) p)->i); break;
    case T_FLOAT_INT: snprintf(out, len, "(%.9g, %d)", ((const struct p_float *) p)->v, ((const struct p_float *) p)->i); break;
    case T_DOUBLE_INT: snprintf(out, len, "(%.17g, %d)", ((const struct p_double *) p)->v, ((const struct p_double *) p)->i); break;
    case T_LONG_INT: snprintf(out, len, "(%ld, %d)", ((const struct p_long *) p)->v, ((const struct p_long *) p)->i); break;
    case T_SHORT_INT: snprintf(out, len, "(%d, %d)", ((const struct p_short *) p)->v, ((const struct p_short *) p)->i); break;
    case T_AFF: {
        const struct aff *a = p;
        snprintf(out, len, "(m %.17g, c %.17g, t %" PRId32 ")", a->m, a->c, a->t);
        break;
    }
    case T_MAT: {
        const int32_t *m = ((const struct mat *) p)->m;
        snprintf(out, len, "[%" PRId32 " %" PRId32 "; %" PRId32 " %" PRId32 "]", m[0], m[1], m[2], m[3]);
        break;
    }
    default: snprintf(out, len, "?");
    }
}

/* Whether op o applies to type t in these tests. */
static int op_applies(enum opk o, enum tid t)
{
    if (t == T_MAT) return o == O_MATMUL;
    if (t == T_AFF) return o == O_AFFINE;
    if (is_pair(t)) return o == O_MINLOC || o == O_MAXLOC;
    if (o == O_SUM || o == O_PROD || o == O_MIN || o == O_MAX) return 1;
    if (o >= O_LAND && o <= O_BXOR) return is_int(t);
    return 0;
}

#define SENTINEL 0xA5
#define GUARD 64 /* sentinel bytes after every receive buffer */

/* Index of the first byte in [p, p+n) that is not SENTINEL, or -1. */
static long first_dirty(const unsigned char *p, size_t n)
{
    for (size_t k = 0; k < n; ++k) {
        if (p[k] != SENTINEL) return (long) k;
    }
    return -1;
}

/* Checks that the padding bytes of `n` elements of t in buf are SENTINEL. */
static void check_padding(enum tid t, const unsigned char *buf, size_t n, const char *which)
{
    const struct tdesc *d = &types[t];
    size_t covered = 0;
    for (int f = 0; f < d->nfields; ++f) covered += d->field_len[f];
    if (covered == d->extent) return;
    for (size_t e = 0; e < n; ++e) {
        for (size_t b = 0; b < d->extent; ++b) {
            int data = 0;
            for (int f = 0; f < d->nfields; ++f) {
                if (b >= d->field_off[f] && b < d->field_off[f] + d->field_len[f]) data = 1;
            }
            if (!data && buf[e * d->extent + b] != SENTINEL) {
                die("%s: padding byte %zu of element %zu was overwritten: expected 0x%02x, got "
                    "0x%02x", which, b, e, SENTINEL, buf[e * d->extent + b]);
            }
        }
    }
}

/* ------------------------------------------------------------------------ */
/* Communicator helpers                                                      */

struct cinfo {
    MPI_Comm comm;
    int rank, size;
    int *world; /* world rank of every rank of comm */
    char name[MPI_MAX_OBJECT_NAME];
};

static struct cinfo cinfo_of(MPI_Comm comm)
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
    return c;
}

static void cinfo_free(struct cinfo *c)
{
    free(c->world);
    c->world = NULL;
}

/* ------------------------------------------------------------------------ */
/* Checked reductions                                                        */

/* Classification of a reduction datatype/op pair by sharm's documented policy:
 * it reduces elements whose data bytes form one gap-free range starting at the
 * element's address (trailing padding allowed, e.g. MPI_DOUBLE_INT), with
 * predefined ops on predefined types or user ops, if an element fits into a
 * fragment.  Other cases may be served or handed over as the plugin likes. */
static enum expect reducible(enum tid t)
{
    size_t covered = types[t].field_len[types[t].nfields - 1] + types[t].field_off[types[t].nfields - 1];
    size_t sum = 0;
    for (int f = 0; f < types[t].nfields; ++f) sum += types[t].field_len[f];
    if (covered != sum) return EX_EITHER; /* a gap inside an element (MPI_SHORT_INT) */
    if (types[t].extent > (size_t) opt_f) return EX_EITHER;
    return EX_SERVE;
}

static unsigned long long call_seq;

/* Fills and runs one Reduce (root >= 0) or Allreduce (root < 0) on c and checks
 * the result, the untouched send buffer and the padding/guard bytes. */
static void reduction(struct cinfo *c, enum tid t, enum opk o, size_t count, int root,
                      int in_place, uint64_t seed)
{
    const size_t E = types[t].extent, bytes = count * E;
    const int is_root = root < 0 || c->rank == root;
    const int allred = root < 0;
    enum coll coll = allred ? C_ALLREDUCE : C_REDUCE;
    unsigned char *sbuf = xmalloc(bytes + GUARD), *rbuf = xmalloc(bytes + GUARD);
    unsigned char *scopy = NULL;
    memset(sbuf, SENTINEL, bytes + GUARD);
    memset(rbuf, SENTINEL, bytes + GUARD);
    const int use_in_place = in_place && is_root;
    /* Non-roots of Reduce sometimes pass NULL as receive buffer (allowed). */
    const int null_rbuf = !allred && !is_root && (seed & 1);
    gen(t, o, use_in_place ? rbuf : sbuf, 0, count, seed, c->world[c->rank]);
    if (!use_in_place) {
        scopy = xmalloc(bytes + GUARD);
        memcpy(scopy, sbuf, bytes + GUARD);
    }
    snprintf(ctx, sizeof(ctx), "call #%llu: %s%s op=%s type=%s count=%zu root=%d comm=%s(size %d, my rank %d)",
             ++call_seq, allred ? "MPI_Allreduce" : "MPI_Reduce", in_place ? " (MPI_IN_PLACE at root)" : "",
             op_names[o], types[t].name, count, root, c->name, c->size, c->rank);
    enum expect ex = expect_for(c->comm, (long) count, (unsigned long long) bytes, reducible(t));
    struct snap before = pv_snap(coll);
    const void *sarg = use_in_place ? MPI_IN_PLACE : sbuf;
    void *rarg = null_rbuf ? NULL : rbuf;
    if (allred) {
        MPI_CHECK(MPI_Allreduce(sarg, rarg, (int) count, types[t].dt, ops[o], c->comm));
    } else {
        MPI_CHECK(MPI_Reduce(sarg, rarg, (int) count, types[t].dt, ops[o], root, c->comm));
    }
    pv_check(coll, before, ex);

    if (scopy && memcmp(scopy, sbuf, bytes + GUARD) != 0) {
        size_t k = 0;
        while (scopy[k] == sbuf[k]) ++k;
        die("the send buffer was modified at byte %zu (element %zu)", k, k / E);
    }
    long g = first_dirty(rbuf + bytes, GUARD);
    if (g >= 0) die("receive buffer overrun: guard byte %ld after the buffer was written", g);
    if (!is_root) {
        long d = first_dirty(rbuf, bytes);
        if (d >= 0) die("non-root receive buffer was written at byte %ld", d);
    } else {
        /* Expected: x_0 op x_1 op ... op x_{p-1} in rank order, chunk by chunk. */
        const size_t chunk = 16384;
        unsigned char *acc = xmalloc(chunk * E), *tmp = xmalloc(chunk * E);
        for (size_t i0 = 0; i0 < count; i0 += chunk) {
            size_t n = count - i0 < chunk ? count - i0 : chunk;
            memset(acc, SENTINEL, n * E);
            gen(t, o, acc, i0, n, seed, c->world[0]);
            for (int r = 1; r < c->size; ++r) {
                memset(tmp, SENTINEL, n * E);
                gen(t, o, tmp, i0, n, seed, c->world[r]);
                fold(t, o, acc, tmp, n);
            }
            for (size_t k = 0; k < n; ++k) {
                if (!elem_equal(t, acc + k * E, rbuf + (i0 + k) * E)) {
                    char es[128], gs[128];
                    elem_fmt(t, acc + k * E, es, sizeof(es));
                    elem_fmt(t, rbuf + (i0 + k) * E, gs, sizeof(gs));
                    die("index %zu: expected %s, got %s", i0 + k, es, gs);
                }
            }
        }
        free(acc);
        free(tmp);
        check_padding(t, rbuf, count, "receive buffer");
    }
    free(sbuf);
    free(rbuf);
    free(scopy);
}

/* A checked Bcast of `count` elements of type t (contiguous or padded). */
static void bcast_typed(struct cinfo *c, enum tid t, size_t count, int root, uint64_t seed)
{
    const size_t E = types[t].extent, bytes = count * E;
    unsigned char *buf = xmalloc(bytes + GUARD);
    memset(buf, SENTINEL, bytes + GUARD);
    if (c->rank == root) gen(t, O_NONE, buf, 0, count, seed, c->world[root]);
    unsigned char *copy = NULL;
    if (c->rank == root) {
        copy = xmalloc(bytes + GUARD);
        memcpy(copy, buf, bytes + GUARD);
    }
    snprintf(ctx, sizeof(ctx), "call #%llu: MPI_Bcast type=%s count=%zu root=%d comm=%s(size %d, my rank %d)",
             ++call_seq, types[t].name, count, root, c->name, c->size, c->rank);
    int size;
    MPI_CHECK(MPI_Type_size(types[t].dt, &size));
    enum expect ex = expect_for(c->comm, (long) count, (unsigned long long) count * (unsigned) size, EX_SERVE);
    struct snap before = pv_snap(C_BCAST);
    MPI_CHECK(MPI_Bcast(buf, (int) count, types[t].dt, root, c->comm));
    pv_check(C_BCAST, before, ex);
    if (copy) {
        if (memcmp(copy, buf, bytes + GUARD) != 0) die("the root's buffer was modified");
        free(copy);
    } else {
        unsigned char *exp = xmalloc(E * 1024);
        for (size_t i0 = 0; i0 < count; i0 += 1024) {
            size_t n = count - i0 < 1024 ? count - i0 : 1024;
            gen(t, O_NONE, exp, i0, n, seed, c->world[root]);
            for (size_t k = 0; k < n; ++k) {
                if (!elem_equal(t, exp + k * E, buf + (i0 + k) * E)) {
                    char es[128], gs[128];
                    elem_fmt(t, exp + k * E, es, sizeof(es));
                    elem_fmt(t, buf + (i0 + k) * E, gs, sizeof(gs));
                    die("index %zu: expected %s, got %s", i0 + k, es, gs);
                }
            }
        }
        free(exp);
        check_padding(t, buf, count, "receive buffer");
        long g = first_dirty(buf + bytes, GUARD);
        if (g >= 0) die("receive buffer overrun: guard byte %ld after the buffer was written", g);
    }
    free(buf);
}

/* ------------------------------------------------------------------------ */
/* Scenarios                                                                 */

static size_t per_frag(enum tid t) { return (size_t) opt_f / types[t].extent; }

static void scenario_ops(void)
{
    struct cinfo w = cinfo_of(MPI_COMM_WORLD);
    uint64_t seed = 1000;
    for (int t = 0; t < NTYPES; ++t) {
        size_t cf = per_frag((enum tid) t);
        /* 32 bytes: the largest payload sharm carries inside a slot header. */
        size_t c32 = 32 / types[t].extent;
        size_t counts[] = {0, 1, c32, c32 + 1, cf - 1, cf, cf + 1};
        for (int o = 0; o < O_NONE; ++o) {
            if (!op_applies((enum opk) o, (enum tid) t)) continue;
            for (size_t ci = 0; ci < sizeof(counts) / sizeof(counts[0]); ++ci) {
                for (int root = 0; root < w.size; ++root) {
                    reduction(&w, (enum tid) t, (enum opk) o, counts[ci], root, 0, ++seed);
                    reduction(&w, (enum tid) t, (enum opk) o, counts[ci], root, 1, ++seed);
                }
                reduction(&w, (enum tid) t, (enum opk) o, counts[ci], -1, 0, ++seed);
                reduction(&w, (enum tid) t, (enum opk) o, counts[ci], -1, 1, ++seed);
            }
            /* Allreduce around 2 KiB and 64 KiB (where sharm's automatic
             * choice of algorithm changes at the time of writing). */
            size_t E = types[t].extent;
            size_t around[] = {2048 / E, 2048 / E + 1, 65536 / E - 1, 65536 / E};
            for (size_t ai = 0; ai < 4; ++ai) {
                reduction(&w, (enum tid) t, (enum opk) o, around[ai], -1, (int) ai & 1, ++seed);
            }
            /* Several times s*f: the queues wrap around. */
            size_t many = 2 * (size_t) opt_s * cf + 3;
            reduction(&w, (enum tid) t, (enum opk) o, many, (t + o) % w.size, t & 1, ++seed);
            reduction(&w, (enum tid) t, (enum opk) o, many, -1, o & 1, ++seed);
        }
    }
    /* Bcast of contiguous and padded types, every root, around the fragment size
     * (MPI_SHORT_INT, whose packed elements straddle fragments, is in "packed"). */
    enum tid bt[] = {T_UINT8, T_INT32, T_DOUBLE, T_FLOAT_INT, T_DOUBLE_INT, T_LONG_INT, T_MAT, T_AFF};
    for (size_t k = 0; k < sizeof(bt) / sizeof(bt[0]); ++k) {
        size_t cf = per_frag(bt[k]);
        size_t counts[] = {0, 1, cf - 1, cf, cf + 1, 3 * cf + 5};
        for (size_t ci = 0; ci < sizeof(counts) / sizeof(counts[0]); ++ci) {
            for (int root = 0; root < w.size; ++root) {
                bcast_typed(&w, bt[k], counts[ci], root, ++seed);
            }
        }
    }
    cinfo_free(&w);
}

static void scenario_big(void)
{
    struct cinfo w = cinfo_of(MPI_COMM_WORLD);
    uint64_t seed = 2000000;
    /* Several times s*f: every root, a few representative op/type pairs. */
    struct { enum tid t; enum opk o; } combos[] = {
        {T_INT32, O_SUM}, {T_DOUBLE, O_MAX}, {T_UINT8, O_BXOR}, {T_DOUBLE_INT, O_MINLOC},
        {T_MAT, O_MATMUL}, {T_INT64, O_PROD}, {T_AFF, O_AFFINE},
    };
    for (size_t k = 0; k < sizeof(combos) / sizeof(combos[0]); ++k) {
        size_t sf = (size_t) (opt_s * opt_f) / types[combos[k].t].extent;
        size_t counts[] = {2 * sf + 3, 3 * sf - 1};
        for (size_t ci = 0; ci < 2; ++ci) {
            for (int root = 0; root < w.size; ++root) {
                reduction(&w, combos[k].t, combos[k].o, counts[ci], root, root == w.size - 1, ++seed);
            }
            reduction(&w, combos[k].t, combos[k].o, counts[ci], -1, (int) ci, ++seed);
        }
    }
    /* Exactly s*f/2 and s*f bytes, and one element either side. */
    for (int k = 0; k < 4; ++k) {
        enum tid t = k % 2 == 0 ? T_INT32 : T_MAT;
        enum opk o = k % 2 == 0 ? O_SUM : O_MATMUL;
        size_t sf = (size_t) (opt_s * opt_f) / types[t].extent / (k < 2 ? 2 : 1);
        for (size_t cnt = sf - 1; cnt <= sf + 1; ++cnt) {
            reduction(&w, t, o, cnt, (int) (cnt % (size_t) w.size), 0, ++seed);
            reduction(&w, t, o, cnt, -1, (int) (cnt & 1), ++seed);
            bcast_typed(&w, t, cnt, (int) ((cnt + 1) % (size_t) w.size), ++seed);
        }
    }
    enum tid bt[] = {T_UINT8, T_DOUBLE_INT};
    for (size_t k = 0; k < 2; ++k) {
        size_t sf = (size_t) (opt_s * opt_f) / types[bt[k]].extent;
        for (int root = 0; root < w.size; ++root) {
            bcast_typed(&w, bt[k], 2 * sf + 1, root, ++seed);
            bcast_typed(&w, bt[k], 3 * sf - 7, root, ++seed);
        }
    }
    /* The largest messages: a few calls only. */
    size_t big = (size_t) opt_big;
    int last = w.size - 1;
    bcast_typed(&w, T_UINT8, big, last, ++seed);
    reduction(&w, T_INT32, O_SUM, big / 4, -1, 0, ++seed);
    reduction(&w, T_DOUBLE, O_MAX, big / 8, 0, 1, ++seed);
    reduction(&w, T_MAT, O_MATMUL, big / sizeof(struct mat), last, 0, ++seed);
    reduction(&w, T_UINT64, O_BXOR, big / 8, -1, 1, ++seed);
    cinfo_free(&w);
}

/* --- derived datatypes for Bcast --- */

/* A datatype whose data bytes are described by a byte map: map[b] = 1 for data
 * bytes of element 0 relative to the buffer address, over [lo, hi). */
struct dmap {
    const char *name;
    MPI_Datatype dt;
    long lo, hi;         /* the byte range of the element-0 map */
    unsigned char *map;  /* hi - lo bytes */
    long extent;
};

static struct dmap dmap_of(const char *name, MPI_Datatype dt)
{
    struct dmap d;
    MPI_Aint lb, ext, tlb, text;
    d.name = name;
    d.dt = dt;
    MPI_CHECK(MPI_Type_get_extent(dt, &lb, &ext));
    MPI_CHECK(MPI_Type_get_true_extent(dt, &tlb, &text));
    d.lo = (long) tlb;
    d.hi = (long) (tlb + text);
    d.extent = (long) ext;
    d.map = xmalloc((size_t) (d.hi - d.lo));
    memset(d.map, 0, (size_t) (d.hi - d.lo));
    return d;
}

/* Byte offsets (relative to the buffer) of the data bytes of `count`
 * elements, in type-map order (the order of the packed stream). */
static long *dmap_offsets(const struct dmap *d, long count, long *n_out)
{
    long per = 0;
    for (long b = 0; b < d->hi - d->lo; ++b) per += d->map[b];
    long *off = xmalloc(sizeof(long) * (size_t) (per * count));
    long n = 0;
    for (long e = 0; e < count; ++e) {
        for (long b = 0; b < d->hi - d->lo; ++b) {
            if (d->map[b]) off[n++] = e * d->extent + d->lo + b;
        }
    }
    *n_out = n;
    return off;
}

/* Bcast `count` elements of `rt` at the root and `count * ratio`... of `ot`
 * elsewhere (same type signature: a stream of ints), checking every data byte
 * and that no other byte of the receive buffers changed. */
static void bcast_dtypes3(struct cinfo *c, const struct dmap *rt, long rcount, const struct dmap *ot,
                          long ocount, const struct dmap *ot_odd, long ocount_odd, int root,
                          uint64_t seed);

static void bcast_dtypes(struct cinfo *c, const struct dmap *rt, long rcount, const struct dmap *ot,
                         long ocount, int root, uint64_t seed)
{
    bcast_dtypes3(c, rt, rcount, ot, ocount, ot, ocount, root, seed);
}

/* As bcast_dtypes, with receivers of odd rank using `ot_odd` x `ocount_odd`. */
static void bcast_dtypes3(struct cinfo *c, const struct dmap *rt, long rcount, const struct dmap *ot,
                          long ocount, const struct dmap *ot_odd, long ocount_odd, int root,
                          uint64_t seed)
{
    const int odd = c->rank % 2 == 1;
    const struct dmap *d = c->rank == root ? rt : odd ? ot_odd : ot;
    long count = c->rank == root ? rcount : odd ? ocount_odd : ocount;
    long n;
    long *off = dmap_offsets(d, count, &n);
    /* Buffer spans [min(0, lo), max(extent * count, hi + ...)) plus guards. */
    long lo = d->lo < 0 ? d->lo : 0;
    long hi = count > 0 ? (count - 1) * d->extent + d->hi : 0;
    if (hi < count * d->extent) hi = count * d->extent;
    size_t span = (size_t) (hi - lo) + 2 * GUARD;
    unsigned char *mem = xmalloc(span);
    memset(mem, SENTINEL, span);
    unsigned char *buf = mem + GUARD - lo; /* the address passed to MPI */
    /* The stream: byte j of the stream = low byte of raw(seed, root, j). */
    if (c->rank == root) {
        for (long j = 0; j < n; ++j) buf[off[j]] = (unsigned char) raw(seed, root, (size_t) j);
    }
    unsigned char *copy = xmalloc(span);
    memcpy(copy, mem, span);
    snprintf(ctx, sizeof(ctx), "call #%llu: MPI_Bcast root type=%s x %ld, even ranks' type=%s x %ld, odd ranks' type=%s x %ld, root=%d comm=%s(size %d, my rank %d)",
             ++call_seq, rt->name, rcount, ot->name, ocount, ot_odd->name, ocount_odd, root, c->name, c->size, c->rank);
    int tsize;
    MPI_CHECK(MPI_Type_size(d->dt, &tsize));
    enum expect ex = expect_for(c->comm, count, (unsigned long long) count * (unsigned) tsize, EX_SERVE);
    struct snap before = pv_snap(C_BCAST);
    MPI_CHECK(MPI_Bcast(buf, (int) count, d->dt, root, c->comm));
    pv_check(C_BCAST, before, ex);
    if (c->rank == root) {
        if (memcmp(copy, mem, span) != 0) die("the root's buffer was modified");
    } else {
        for (long j = 0; j < n; ++j) {
            unsigned char e = (unsigned char) raw(seed, root, (size_t) j);
            if (buf[off[j]] != e) {
                die("stream byte %ld (buffer offset %ld): expected 0x%02x, got 0x%02x", j, off[j], e, buf[off[j]]);
            }
            copy[GUARD - lo + off[j]] = e;
        }
        for (size_t b = 0; b < span; ++b) {
            if (mem[b] != copy[b]) {
                die("gap byte at buffer offset %ld was overwritten: expected 0x%02x, got 0x%02x",
                    (long) b - GUARD + lo, copy[b], mem[b]);
            }
        }
    }
    free(off);
    free(mem);
    free(copy);
}

static void ufn_noop(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    (void) in; (void) inout; (void) len; (void) dt;
}

static void scenario_dtypes(void)
{
    struct cinfo w = cinfo_of(MPI_COMM_WORLD);
    uint64_t seed = 3000000;
    MPI_Datatype t;
    struct dmap d[8];
    int nd = 0;

    /* 0: MPI_INT (contiguous) */
    d[nd] = dmap_of("MPI_INT", MPI_INT);
    memset(d[nd].map, 1, 4);
    nd++;
    /* 1: contiguous(4, MPI_INT) */
    MPI_CHECK(MPI_Type_contiguous(4, MPI_INT, &t));
    MPI_CHECK(MPI_Type_commit(&t));
    d[nd] = dmap_of("contiguous(4,MPI_INT)", t);
    memset(d[nd].map, 1, 16);
    nd++;
    /* 2: vector(3 blocks, 2 ints, stride 5 ints): 24 data bytes, extent 48 */
    MPI_CHECK(MPI_Type_vector(3, 2, 5, MPI_INT, &t));
    MPI_CHECK(MPI_Type_commit(&t));
    d[nd] = dmap_of("vector(3,2,5,MPI_INT)", t);
    for (int b = 0; b < 3; ++b) memset(d[nd].map + b * 20, 1, 8);
    nd++;
    /* 3: struct {4 ints at byte 12} resized to lb 12, extent 16: contiguous
     *    memory for any count, starting 12 bytes after the buffer address */
    {
        MPI_Datatype s;
        int bl = 4;
        MPI_Aint disp = 12;
        MPI_Datatype it = MPI_INT;
        MPI_CHECK(MPI_Type_create_struct(1, &bl, &disp, &it, &s));
        MPI_CHECK(MPI_Type_create_resized(s, 12, 16, &t));
        MPI_CHECK(MPI_Type_commit(&t));
        MPI_CHECK(MPI_Type_free(&s));
        d[nd] = dmap_of("resized(struct{4 ints at 12},lb=12,extent=16)", t);
        memset(d[nd].map, 1, 16);
        nd++;
    }
    /* 4: contiguous(2, MPI_INT) resized to lb -8, extent 16: 8 data bytes,
     *    8-byte gaps, the lower bound before the data */
    {
        MPI_Datatype s;
        MPI_CHECK(MPI_Type_contiguous(2, MPI_INT, &s));
        MPI_CHECK(MPI_Type_create_resized(s, -8, 16, &t));
        MPI_CHECK(MPI_Type_commit(&t));
        MPI_CHECK(MPI_Type_free(&s));
        d[nd] = dmap_of("resized(contiguous(2,MPI_INT),lb=-8,extent=16)", t);
        memset(d[nd].map, 1, 8);
        nd++;
    }
    /* 5: hvector(3, 1 int, stride -12 bytes): data at 0, -12, -24; lb -24 */
    MPI_CHECK(MPI_Type_create_hvector(3, 1, -12, MPI_INT, &t));
    MPI_CHECK(MPI_Type_commit(&t));
    d[nd] = dmap_of("hvector(3,1,-12 bytes,MPI_INT)", t);
    /* true_lb = -24: map bytes relative to lo */
    memset(d[nd].map + 24, 1, 4);
    memset(d[nd].map + 12, 1, 4);
    memset(d[nd].map + 0, 1, 4);
    nd++;
    /* Sanity: the maps agree with MPI's sizes (the hvector's stream order is
     * 0, -12, -24 while dmap_offsets lists ascending addresses: handled below). */
    for (int k = 0; k < nd; ++k) {
        int size;
        long per = 0;
        MPI_CHECK(MPI_Type_size(d[k].dt, &size));
        for (long b = 0; b < d[k].hi - d[k].lo; ++b) per += d[k].map[b];
        if (per != size) die("test bug: map of %s has %ld bytes, MPI size %d", d[k].name, per, size);
    }

    const long f_ints = opt_f / 4;
    /* Counts in units of ints of the stream: small, around f, several f. */
    long streams[] = {4 * 6, 12 * (f_ints / 12) , 12 * (f_ints / 12 + 1), 12 * (3 * f_ints / 12 + 5)};
    /* (root type, other type) pairs with the same signature (n ints). */
    int pairs[][2] = {{2, 2}, {1, 0}, {0, 1}, {0, 2}, {2, 0}, {3, 3}, {3, 1}, {4, 4},
                      {4, 0}, {1, 4}, {2, 3}, {3, 2}};
    for (size_t pi = 0; pi < sizeof(pairs) / sizeof(pairs[0]); ++pi) {
        const struct dmap *rt = &d[pairs[pi][0]], *ot = &d[pairs[pi][1]];
        int rs, os;
        MPI_CHECK(MPI_Type_size(rt->dt, &rs));
        MPI_CHECK(MPI_Type_size(ot->dt, &os));
        for (size_t si = 0; si < sizeof(streams) / sizeof(streams[0]); ++si) {
            long ints = streams[si];
            for (int root = 0; root < w.size; ++root) {
                bcast_dtypes(&w, rt, ints * 4 / rs, ot, ints * 4 / os, root, ++seed);
            }
        }
    }
    /* Three different datatypes in one call: root, even and odd receivers. */
    int triples[][3] = {{0, 2, 4}, {2, 3, 1}, {4, 0, 2}, {3, 4, 0}};
    for (size_t ti = 0; ti < sizeof(triples) / sizeof(triples[0]); ++ti) {
        const struct dmap *x[3] = {&d[triples[ti][0]], &d[triples[ti][1]], &d[triples[ti][2]]};
        int sz[3];
        for (int k = 0; k < 3; ++k) MPI_CHECK(MPI_Type_size(x[k]->dt, &sz[k]));
        for (size_t si = 0; si < sizeof(streams) / sizeof(streams[0]); ++si) {
            long bytes = streams[si] * 4;
            for (int root = 0; root < w.size; ++root) {
                bcast_dtypes3(&w, x[0], bytes / sz[0], x[1], bytes / sz[1], x[2], bytes / sz[2],
                              root, ++seed);
            }
        }
    }
    /* The negative-stride hvector: stream order is 0, -12, -24 per element;
     * with a single element on both sides, compare against MPI_INT x 3 at the
     * root (addresses reversed). */
    for (int root = 0; root < w.size; ++root) {
        for (long cnt = 1; cnt <= 700; cnt += 699) {
            /* every element: ints at e*extent + {0,-12,-24} */
            const struct dmap *h = &d[5];
            long n = 3 * cnt;
            size_t span = (size_t) (cnt * h->extent) + 24 + 2 * GUARD;
            unsigned char *mem = xmalloc(span);
            memset(mem, SENTINEL, span);
            unsigned char *buf = mem + GUARD + 24;
            int *stream = xmalloc(sizeof(int) * (size_t) n);
            for (long j = 0; j < n; ++j) stream[j] = (int) raw(seed + 1, root, (size_t) j);
            snprintf(ctx, sizeof(ctx), "call #%llu: MPI_Bcast root type=MPI_INT x %ld, other type=%s x %ld, root=%d comm=%s",
                     ++call_seq, n, h->name, cnt, root, w.name);
            int is_root = w.rank == root;
            enum expect ex = expect_for(w.comm, is_root ? n : cnt, (unsigned long long) n * 4, EX_SERVE);
            struct snap before = pv_snap(C_BCAST);
            if (is_root) {
                MPI_CHECK(MPI_Bcast(stream, (int) n, MPI_INT, root, w.comm));
            } else {
                MPI_CHECK(MPI_Bcast(buf, (int) cnt, h->dt, root, w.comm));
            }
            pv_check(C_BCAST, before, ex);
            if (!is_root) {
                unsigned char *exp = xmalloc(span);
                memset(exp, SENTINEL, span);
                for (long e = 0; e < cnt; ++e) {
                    for (int j = 0; j < 3; ++j) {
                        long at = e * h->extent - 12 * j;
                        memcpy(exp + GUARD + 24 + at, &stream[e * 3 + j], 4);
                    }
                }
                for (size_t b = 0; b < span; ++b) {
                    if (mem[b] != exp[b]) {
                        die("buffer offset %ld: expected 0x%02x, got 0x%02x", (long) b - GUARD - 24, exp[b], mem[b]);
                    }
                }
                free(exp);
            }
            free(stream);
            free(mem);
            ++seed;
        }
    }

    /* A datatype of size 0 with count > 0: must return promptly and touch nothing. */
    MPI_Datatype z;
    MPI_Op noop;
    MPI_CHECK(MPI_Type_contiguous(0, MPI_INT, &z));
    MPI_CHECK(MPI_Type_commit(&z));
    MPI_CHECK(MPI_Op_create(ufn_noop, 1, &noop));
    unsigned char zb[64], zr[64];
    for (int rep = 0; rep < 3; ++rep) {
        for (int root = 0; root < w.size; ++root) {
            for (int k = 0; k < 3; ++k) {
                memset(zb, SENTINEL, sizeof(zb));
                memset(zr, SENTINEL, sizeof(zr));
                const char *what = k == 0 ? "MPI_Bcast" : k == 1 ? "MPI_Reduce" : "MPI_Allreduce";
                snprintf(ctx, sizeof(ctx), "call #%llu: %s type=contiguous(0,MPI_INT) count=5 root=%d comm=%s",
                         ++call_seq, what, root, w.name);
                enum coll coll = k == 0 ? C_BCAST : k == 1 ? C_REDUCE : C_ALLREDUCE;
                enum expect ex = expect_for(w.comm, 5, 0, EX_SERVE);
                struct snap before = pv_snap(coll);
                double t0 = MPI_Wtime();
                if (k == 0) MPI_CHECK(MPI_Bcast(zb, 5, z, root, w.comm));
                if (k == 1) MPI_CHECK(MPI_Reduce(zb, zr, 5, z, noop, root, w.comm));
                if (k == 2) MPI_CHECK(MPI_Allreduce(zb, zr, 5, z, noop, w.comm));
                double dt = MPI_Wtime() - t0;
                pv_check(coll, before, ex);
                if (dt > 5.0) die("took %.1f s", dt);
                if (first_dirty(zb, sizeof(zb)) >= 0 || first_dirty(zr, sizeof(zr)) >= 0) {
                    die("a buffer was written");
                }
            }
        }
    }
    MPI_CHECK(MPI_Op_free(&noop));
    MPI_CHECK(MPI_Type_free(&z));
    for (int k = 1; k < nd; ++k) {
        MPI_CHECK(MPI_Type_free(&d[k].dt));
    }
    for (int k = 0; k < nd; ++k) free(d[k].map);
    cinfo_free(&w);
}

/* Every (type, op) pair of the tests. */
static struct {
    enum tid t;
    enum opk o;
} combos[NTYPES * NOPS];
static int n_combos;

static void combos_init(void)
{
    for (int t = 0; t < NTYPES; ++t) {
        for (int o = 0; o < O_NONE; ++o) {
            if (op_applies((enum opk) o, (enum tid) t)) {
                combos[n_combos].t = (enum tid) t;
                combos[n_combos].o = (enum opk) o;
                n_combos++;
            }
        }
    }
}

/* One checked call on c chosen by `sel`, moving about `bytes` bytes: a Bcast
 * of any type but MPI_SHORT_INT (see "packed"), or a Reduce at any root or an
 * Allreduce of any (type, op) pair, in place or not. */
static void mixed_call(struct cinfo *c, uint64_t sel, size_t bytes, uint64_t seed)
{
    int root = (int) ((sel >> 8) % (uint64_t) c->size);
    int in_place = (int) ((sel >> 20) & 1);
    if (sel % 4 == 0) {
        enum tid t = (enum tid) ((sel >> 24) % NTYPES);
        if (t == T_SHORT_INT) t = T_INT16;
        bcast_typed(c, t, bytes / types[t].extent, root, seed);
    } else {
        int k = (int) ((sel >> 24) % (uint64_t) n_combos);
        size_t count = bytes / types[combos[k].t].extent;
        reduction(c, combos[k].t, combos[k].o, count, sel % 4 == 1 ? -1 : root, in_place, seed);
    }
}

static void scenario_comms(void)
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
        mixed_call(c, mix64(i), counts[(i / 3) % 5], ++seed);
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
        mixed_call(&c, mix64((uint64_t) rep + 1000), 4000 + (size_t) rep * 388, ++seed);
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
        enum expect ex = color == 1 ? expect_for(local, n, (unsigned long long) n * 4, EX_SERVE) : EX_NONE;
        struct snap before = pv_snap(C_BCAST);
        MPI_CHECK(MPI_Bcast(buf, n, MPI_INT, root, inter));
        pv_check_opt(C_BCAST, before, ex, 1);
        for (int j = 0; j < n; ++j) {
            int e = color == 1 || lrank == 0 ? (int) raw(seed, 0, (size_t) j) : -1;
            if (buf[j] != e) die("index %d: expected %d, got %d", j, e, buf[j]);
        }
        free(buf);
        MPI_CHECK(MPI_Comm_free(&inter));
        MPI_CHECK(MPI_Comm_free(&local));
    }
}

static void scenario_stress(void)
{
    MPI_Comm dup;
    MPI_CHECK(MPI_Comm_dup(MPI_COMM_WORLD, &dup));
    MPI_CHECK(MPI_Comm_set_name(dup, "dup-of-world"));
    struct cinfo cs[2] = {cinfo_of(MPI_COMM_WORLD), cinfo_of(dup)};
    uint64_t st = 0x5eed;
    for (long i = 0; i < opt_calls; ++i) {
        st = mix64(st);
        uint64_t r = mix64(st + 1);
        size_t bytes; /* mostly small, often around f, sometimes several s*f */
        switch (r % 10) {
        case 0: bytes = 0; break;
        case 1: case 2: case 3: case 4: bytes = 1 + (size_t) (r >> 8) % 256; break;
        case 5: case 6: case 7: case 8: bytes = (size_t) (r >> 8) % (size_t) (2 * opt_f + 32); break;
        default: bytes = (size_t) (r >> 8) % (size_t) (2 * opt_s * opt_f + 1); break;
        }
        mixed_call(&cs[(st >> 40) & 1], mix64(st + 2), bytes, st);
    }
    cinfo_free(&cs[0]);
    cinfo_free(&cs[1]);
    MPI_CHECK(MPI_Comm_free(&dup));
}

/* Bcast of datatypes with gaps inside an element, so that the packed stream
 * has elements (ints) that straddle fragment boundaries. */
struct ci {
    int8_t c;
    int32_t i;
};

static void scenario_packed(void)
{
    struct cinfo w = cinfo_of(MPI_COMM_WORLD);
    uint64_t seed = 6000000;
    /* MPI_SHORT_INT: 6 packed bytes, ints at stream offsets 6k+2. */
    size_t cf = (size_t) opt_f / 6;
    size_t counts[] = {1, cf, cf + 1, 2 * cf + 1, 3 * cf + 5, (size_t) (2 * opt_s * opt_f) / 6 + 7};
    for (size_t ci = 0; ci < sizeof(counts) / sizeof(counts[0]); ++ci) {
        for (int root = 0; root < w.size; ++root) {
            bcast_typed(&w, T_SHORT_INT, counts[ci], root, ++seed);
        }
    }
    /* struct {int8 at 0; int32 at 4}: 5 packed bytes, extent 8. */
    MPI_Datatype st;
    int bl[2] = {1, 1};
    MPI_Aint disp[2] = {offsetof(struct ci, c), offsetof(struct ci, i)};
    MPI_Datatype tt[2] = {MPI_INT8_T, MPI_INT32_T};
    MPI_CHECK(MPI_Type_create_struct(2, bl, disp, tt, &st));
    MPI_CHECK(MPI_Type_commit(&st));
    size_t cf5 = (size_t) opt_f / 5;
    size_t counts5[] = {1, cf5 - 1, cf5, cf5 + 1, 3 * cf5 + 2, (size_t) (2 * opt_s * opt_f) / 5 + 3};
    for (size_t ci = 0; ci < sizeof(counts5) / sizeof(counts5[0]); ++ci) {
        size_t n = counts5[ci];
        for (int root = 0; root < w.size; ++root) {
            ++seed;
            struct ci *b = xmalloc(sizeof(struct ci) * n + GUARD);
            memset(b, SENTINEL, sizeof(struct ci) * n + GUARD);
            if (w.rank == root) {
                for (size_t k = 0; k < n; ++k) {
                    b[k].c = (int8_t) raw(seed, root, 2 * k);
                    b[k].i = (int32_t) raw(seed, root, 2 * k + 1);
                }
            }
            snprintf(ctx, sizeof(ctx), "call #%llu: MPI_Bcast type=struct{int8;int32} count=%zu root=%d comm=%s(size %d, my rank %d)",
                     ++call_seq, n, root, w.name, w.size, w.rank);
            enum expect ex = expect_for(w.comm, (long) n, 5ULL * n, EX_SERVE);
            struct snap before = pv_snap(C_BCAST);
            MPI_CHECK(MPI_Bcast(b, (int) n, st, root, w.comm));
            pv_check(C_BCAST, before, ex);
            if (w.rank != root) {
                const unsigned char *bytes = (const unsigned char *) b;
                for (size_t k = 0; k < n; ++k) {
                    int8_t ec = (int8_t) raw(seed, root, 2 * k);
                    int32_t ei = (int32_t) raw(seed, root, 2 * k + 1);
                    if (b[k].c != ec || b[k].i != ei) {
                        die("index %zu: expected (%d, %" PRId32 "), got (%d, %" PRId32 ")", k, ec, ei, b[k].c, b[k].i);
                    }
                    for (size_t g = 1; g < 4; ++g) {
                        if (bytes[k * sizeof(struct ci) + g] != SENTINEL) {
                            die("gap byte %zu of element %zu was overwritten", g, k);
                        }
                    }
                }
                long g = first_dirty(bytes + sizeof(struct ci) * n, GUARD);
                if (g >= 0) die("receive buffer overrun: guard byte %ld after the buffer was written", g);
            }
            free(b);
        }
    }
    MPI_CHECK(MPI_Type_free(&st));

    /* Three layouts of the signature (int16, int32) per element, mixed between
     * the root and the others: straddling elements on one side only. */
    struct dmap d[3];
    {
        MPI_Datatype t, s2;
        int bl2[2] = {1, 1};
        MPI_Datatype t2[2] = {MPI_INT16_T, MPI_INT32_T};
        d[0] = dmap_of("MPI_SHORT_INT", MPI_SHORT_INT);
        memset(d[0].map + 0, 1, 2);
        memset(d[0].map + 4, 1, 4);
        MPI_Aint dsp1[2] = {0, 2}; /* unaligned int: 6 contiguous bytes */
        MPI_CHECK(MPI_Type_create_struct(2, bl2, dsp1, t2, &s2));
        MPI_CHECK(MPI_Type_create_resized(s2, 0, 6, &t));
        MPI_CHECK(MPI_Type_commit(&t));
        MPI_CHECK(MPI_Type_free(&s2));
        d[1] = dmap_of("struct{int16@0;int32@2},extent 6", t);
        memset(d[1].map, 1, 6);
        MPI_Aint dsp2[2] = {0, 8};
        MPI_CHECK(MPI_Type_create_struct(2, bl2, dsp2, t2, &s2));
        MPI_CHECK(MPI_Type_create_resized(s2, 0, 12, &t));
        MPI_CHECK(MPI_Type_commit(&t));
        MPI_CHECK(MPI_Type_free(&s2));
        d[2] = dmap_of("struct{int16@0;int32@8},extent 12", t);
        memset(d[2].map + 0, 1, 2);
        memset(d[2].map + 8, 1, 4);
    }
    int pairs[][2] = {{1, 0}, {0, 1}, {2, 1}, {1, 2}, {2, 0}, {0, 2}};
    size_t mcounts[] = {cf + 1, 2 * cf + 1, 3 * cf + 5, (size_t) (2 * opt_s * opt_f) / 6 + 7};
    for (size_t pi = 0; pi < sizeof(pairs) / sizeof(pairs[0]); ++pi) {
        for (size_t ci = 0; ci < sizeof(mcounts) / sizeof(mcounts[0]); ++ci) {
            for (int root = 0; root < w.size; ++root) {
                bcast_dtypes(&w, &d[pairs[pi][0]], (long) mcounts[ci], &d[pairs[pi][1]],
                             (long) mcounts[ci], root, ++seed);
            }
        }
    }
    for (int k = 0; k < 3; ++k) {
        if (k > 0) MPI_CHECK(MPI_Type_free(&d[k].dt));
        free(d[k].map);
    }
    cinfo_free(&w);
}

/* User op on a vector type: element = ints 0 and 2 of 3 (a gap in between). */
static void vsum_fn(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    (void) dt;
    const int *a = in;
    int *b = inout;
    for (int e = 0; e < *len; ++e) {
        b[3 * e] = (int) ((unsigned) a[3 * e] + (unsigned) b[3 * e]);
        b[3 * e + 2] = (int) ((unsigned) a[3 * e + 2] + (unsigned) b[3 * e + 2]);
    }
}

static void scenario_unservable(void)
{
    struct cinfo w = cinfo_of(MPI_COMM_WORLD);
    MPI_Datatype v, vr;
    MPI_Op vsum;
    MPI_CHECK(MPI_Type_vector(2, 1, 2, MPI_INT, &v));
    MPI_CHECK(MPI_Type_create_resized(v, 0, 12, &vr));
    MPI_CHECK(MPI_Type_commit(&vr));
    MPI_CHECK(MPI_Type_free(&v));
    MPI_CHECK(MPI_Op_create(vsum_fn, 1, &vsum));
    uint64_t seed = 5000000;
    size_t counts[] = {1, 1000};
    for (size_t ci = 0; ci < 2; ++ci) {
        size_t count = counts[ci];
        for (int root = -1; root < w.size; ++root) {
            ++seed;
            int *sb = xmalloc(12 * count), *rb = xmalloc(12 * count);
            memset(sb, SENTINEL, 12 * count);
            memset(rb, SENTINEL, 12 * count);
            for (size_t e = 0; e < count; ++e) {
                sb[3 * e] = (int) raw(seed, w_rank, 2 * e);
                sb[3 * e + 2] = (int) raw(seed, w_rank, 2 * e + 1);
            }
            snprintf(ctx, sizeof(ctx), "call #%llu: %s op=user sum type=vector(2,1,2,MPI_INT) resized to 12 count=%zu root=%d comm=%s",
                     ++call_seq, root < 0 ? "MPI_Allreduce" : "MPI_Reduce", count, root, w.name);
            enum coll coll = root < 0 ? C_ALLREDUCE : C_REDUCE;
            enum expect ex = expect_for(w.comm, (long) count, 8ULL * count, EX_FALLBACK);
            struct snap before = pv_snap(coll);
            if (root < 0) {
                MPI_CHECK(MPI_Allreduce(sb, rb, (int) count, vr, vsum, w.comm));
            } else {
                MPI_CHECK(MPI_Reduce(sb, rb, (int) count, vr, vsum, root, w.comm));
            }
            pv_check(coll, before, ex);
            if (root < 0 || root == w_rank) {
                for (size_t e = 0; e < count; ++e) {
                    for (int j = 0; j < 2; ++j) {
                        unsigned s = 0;
                        for (int r = 0; r < w.size; ++r) s += (unsigned) (int) raw(seed, r, 2 * e + (size_t) j);
                        if (rb[3 * e + 2 * (size_t) j] != (int) s) {
                            die("element %zu int %d: expected %d, got %d", e, 2 * j, (int) s, rb[3 * e + 2 * (size_t) j]);
                        }
                    }
                    unsigned g;
                    memcpy(&g, &rb[3 * e + 1], 4);
                    if (g != 0xA5A5A5A5u) die("gap int of element %zu overwritten: 0x%08x", e, g);
                }
            }
            free(sb);
            free(rb);
        }
    }
    MPI_CHECK(MPI_Op_free(&vsum));
    MPI_CHECK(MPI_Type_free(&vr));
    cinfo_free(&w);
}

/* Sets up segments on two communicators, then the last rank dies (SIGABRT)
 * while the others wait in a Bcast: the job must end (mpirun kills the
 * waiting processes) and leave nothing in /dev/shm.  Never returns. */
static void scenario_crash(void)
{
    MPI_Comm dup;
    MPI_CHECK(MPI_Comm_dup(MPI_COMM_WORLD, &dup));
    MPI_CHECK(MPI_Comm_set_name(dup, "dup-of-world"));
    struct cinfo cs[2] = {cinfo_of(MPI_COMM_WORLD), cinfo_of(dup)};
    for (int k = 0; k < 20; ++k) {
        mixed_call(&cs[k & 1], mix64((uint64_t) k + 7), 100000, (uint64_t) k + 8000000);
    }
    if (w_rank == 0) { /* before the barrier: printed before anybody dies */
        printf("sharm_check: crashing rank %d on purpose\n", w_size - 1);
        fflush(stdout);
    }
    MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
    if (w_rank == w_size - 1) {
        abort();
    }
    static char buf[1 << 20];
    snprintf(ctx, sizeof(ctx), "MPI_Bcast from the crashed rank");
    MPI_Bcast(buf, sizeof(buf), MPI_BYTE, w_size - 1, MPI_COMM_WORLD);
    die("the Bcast from a crashed rank returned");
}

/* ------------------------------------------------------------------------ */

static long parse_num(const char *opt, const char *s)
{
    char *end;
    long v = strtol(s ? s : "", &end, 10);
    if (!s || *end != '\0' || v < 0) {
        fprintf(stderr, "sharm_check: bad value for %s: %s\n", opt, s ? s : "(missing)");
        exit(2);
    }
    return v;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s SCENARIO[,SCENARIO...] [--f N] [--s N] [--expect serve|max1|budget1] "
                        "[--big BYTES] [--calls N] [--alarm SECONDS]\n", argv[0]);
        return 2;
    }
    for (int a = 2; a < argc; ++a) {
        const char *o = argv[a], *v = a + 1 < argc ? argv[a + 1] : NULL;
        if (!strcmp(o, "--f")) opt_f = parse_num(o, v);
        else if (!strcmp(o, "--s")) opt_s = parse_num(o, v);
        else if (!strcmp(o, "--big")) opt_big = parse_num(o, v);
        else if (!strcmp(o, "--calls")) opt_calls = parse_num(o, v);
        else if (!strcmp(o, "--alarm")) opt_alarm = parse_num(o, v);
        else if (!strcmp(o, "--expect")) {
            if (v && !strcmp(v, "serve")) opt_mode = MODE_SERVE;
            else if (v && !strcmp(v, "max1")) opt_mode = MODE_MAX1;
            else if (v && !strcmp(v, "budget1")) opt_mode = MODE_BUDGET1;
            else { fprintf(stderr, "sharm_check: bad --expect %s\n", v ? v : "(missing)"); return 2; }
        } else {
            fprintf(stderr, "sharm_check: unknown option %s\n", o);
            return 2;
        }
        ++a;
    }
    if (opt_f < 64) { fprintf(stderr, "sharm_check: --f must be >= 64\n"); return 2; }

    signal(SIGALRM, on_alarm);
    alarm((unsigned) opt_alarm);
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &w_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &w_size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
    pv_init();
    types_init();
    combos_init();

    /* The job's pids, for the harness's /dev/shm check (point-to-point only:
     * not through the component under test). */
    long long pid = (long long) getpid();
    if (w_rank == 0) {
        printf("sharm_check: start np=%d pids=%lld", w_size, pid);
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

    char list[256];
    snprintf(list, sizeof(list), "%s", argv[1]);
    double t0 = MPI_Wtime();
    for (char *save = NULL, *s = strtok_r(list, ",", &save); s; s = strtok_r(NULL, ",", &save)) {
        scenario = s;
        double ts = MPI_Wtime();
        if (!strcmp(s, "ops")) scenario_ops();
        else if (!strcmp(s, "big")) scenario_big();
        else if (!strcmp(s, "dtypes")) scenario_dtypes();
        else if (!strcmp(s, "comms")) scenario_comms();
        else if (!strcmp(s, "stress")) scenario_stress();
        else if (!strcmp(s, "unservable")) scenario_unservable();
        else if (!strcmp(s, "packed")) scenario_packed();
        else if (!strcmp(s, "crash")) scenario_crash();
        else die("unknown scenario '%s'", s);
        snprintf(ctx, sizeof(ctx), "end of scenario");
        MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
        if (w_rank == 0) {
            printf("sharm_check: scenario %s done in %.2f s\n", s, MPI_Wtime() - ts);
            fflush(stdout);
        }
    }
    scenario = "summary";

    /* Summary (gathered over point-to-point: not through the component under test). */
    long long mine[3] = {(long long) n_calls, (long long) n_served, (long long) n_fallbacks};
    if (w_rank == 0) {
        long long tot[3] = {mine[0], mine[1], mine[2]};
        for (int r = 1; r < w_size; ++r) {
            long long o[3];
            MPI_CHECK(MPI_Recv(o, 3, MPI_LONG_LONG, r, 99, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
            for (int k = 0; k < 3; ++k) tot[k] += o[k];
        }
        printf("sharm_check: OK np=%d scenarios=%s calls=%lld served=%lld fallbacks=%lld time=%.2fs\n",
               w_size, argv[1], tot[0], tot[1], tot[2], MPI_Wtime() - t0);
        fflush(stdout);
    } else {
        MPI_CHECK(MPI_Send(mine, 3, MPI_LONG_LONG, 0, 99, MPI_COMM_WORLD));
    }
    MPI_T_pvar_session_free(&pv_session);
    MPI_T_finalize();
    MPI_Type_free(&types[T_MAT].dt);
    MPI_Type_free(&types[T_AFF].dt);
    MPI_Op_free(&ops[O_MATMUL]);
    MPI_Op_free(&ops[O_AFFINE]);
    MPI_Finalize();
    return 0;
}
