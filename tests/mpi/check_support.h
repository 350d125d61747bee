/*
 * check_support.h: what every part of the MPI checker `sharm_check` shares
 * (tests/mpi/check_*.c, one program; check_main.c lists the scenarios).
 *
 *   failure reporting   die(), MPI_CHECK, the --alarm watchdog, the call in
 *                       progress (ctx) named in every message
 *   options             --f --s --expect --big --calls --iters --alarm
 *                       --hierarchy --vnode
 *   sharm's counters    the MPI_T counters coll_sharm_<op>_served, _fallbacks
 *                       and _hierarchical read around every call, and what
 *                       they must show (expect_*, hier_for, pv_check*)
 *   communicators       struct cinfo: a communicator under test
 *   values              reduction types and operations with their reference
 *                       folds (check_values.c)
 *   data movement       datatype pairs of one signature and buffer images
 *                       (check_movement.c)
 *
 * Every scenario checks each result against values computed here,
 * independently of MPI, and the counters around each call; the first wrong
 * value aborts the job with a line naming rank, scenario, call, index,
 * expected and actual value.
 */
#ifndef CHECK_SUPPORT_H
#define CHECK_SUPPORT_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <mpi.h>

#include <inttypes.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The prefix of every line the checker prints (the harness parses them). */
#define CHECK_NAME "sharm_check"

#define SENTINEL 0xA5 /* every receive-buffer byte nobody should write */
#define SEND_BG 0x3C  /* gaps and padding of send buffers: copying them is seen */
#define GUARD 64      /* sentinel bytes after every buffer */

/* ------------------------------------------------------------------------ */
/* Failure reporting (check_support.c)                                       */

extern int w_rank, w_size;          /* in MPI_COMM_WORLD */
extern const char *cur_scenario;    /* for messages */
extern char ctx[1536];              /* the call in progress, for messages */
extern unsigned long long call_seq; /* numbers the calls in messages */

void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

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

void *xmalloc(size_t n);
uint64_t mix64(uint64_t z);
uint64_t next_seed(void);

/* Index of the first byte in [p, p+n) that is not SENTINEL, or -1. */
long first_dirty(const unsigned char *p, size_t n);

/* "[a,b,c]" of p ints (static buffers: up to four in one expression). */
const char *ints(const int *v, int p);
const char *ip_str(int in_place);

/* ------------------------------------------------------------------------ */
/* Options                                                                   */

enum expect_mode { MODE_SERVE, MODE_MAX1, MODE_BUDGET1 };
enum hier_mode { HIER_MODE_AUTO, HIER_MODE_OFF, HIER_MODE_ON };

extern long opt_f, opt_s;       /* sharm's fragment size and queue slots */
extern enum expect_mode opt_mode;
extern long opt_iters;          /* barrier iterations per communicator */
extern long opt_alarm;
extern enum hier_mode opt_hierarchy; /* the run's coll_sharm_hierarchy */
extern long opt_vnode;          /* the run's coll_sharm_virtual_node_size */

/* --big and --calls, or the scenario's own default when not given. */
long opt_big_or(long dflt);
long opt_calls_or(long dflt);

/* Start-up and end (check_main.c's order): options, MPI_Init with the
 * counters and the "start ... pids=" line, the scenarios, the summary. */
void parse_options(int argc, char **argv);
void start(int *argc, char ***argv);
void summary(const char *scenarios, double elapsed);
void pv_finish(void);
extern unsigned long long n_calls; /* counter checks so far, this process */

/* ------------------------------------------------------------------------ */
/* Communicators                                                             */

struct cinfo {
    MPI_Comm comm;
    int rank, size;
    int *world; /* world rank of every rank of comm */
    char name[MPI_MAX_OBJECT_NAME];
    int sharm;      /* sharm has a module on it (2+ processes, reachable) */
    int multi_node; /* its processes are on several (real) nodes */
    int hier;       /* sharm serves its Bcast/Reduce/Allreduce through the hierarchy */
};

/* Collective over comm (it asks which processes share a node). */
struct cinfo cinfo_of(MPI_Comm comm);
/* The same after naming comm `name`. */
struct cinfo cinfo_named(MPI_Comm comm, const char *name);
void cinfo_free(struct cinfo *c);

/* ------------------------------------------------------------------------ */
/* sharm's MPI_T counters                                                    */

enum coll {
    C_BARRIER, C_BCAST, C_REDUCE, C_ALLREDUCE, C_GATHER, C_GATHERV, C_SCATTER, C_SCATTERV,
    C_ALLGATHER, C_ALLGATHERV, C_ALLTOALL, C_ALLTOALLV, C_RSB, C_RS, C_SCAN, C_EXSCAN, NCOLL
};
extern const char *const coll_pv_names[NCOLL];  /* "bcast": coll_sharm_bcast_served */
extern const char *const coll_mpi_names[NCOLL]; /* "MPI_Bcast" */

struct snap {
    unsigned long long served, fallbacks, hierarchical;
};

/* What sharm must do with one call. */
enum expect {
    EX_SERVE,        /* served +1, fallbacks +0 */
    EX_FALLBACK,     /* served +0, fallbacks +1 */
    EX_EITHER,       /* exactly one of them +1: sharm's policy may go either way */
    EX_NONE,         /* neither: the communicator is not sharm's */
    EX_SERVE_OR_NONE /* nothing to move: Open MPI may return before any component */
};

/* Whether a call sharm served must also count as hierarchical. */
enum hier {
    HIER_NO,        /* _hierarchical +0 */
    HIER_IF_SERVED, /* _hierarchical moves exactly as _served */
    HIER_ANY        /* not known here (the local side of an intercommunicator) */
};

void pv_init(void);
struct snap pv_snap(enum coll c);

/* Checks the counters of c since `before`; with `or_none`, no movement at
 * all is accepted too. */
void pv_check_full(enum coll c, struct snap before, enum expect ex, int or_none, enum hier h);
/* A call that must not go through the hierarchy. */
void pv_check(enum coll c, struct snap before, enum expect ex);

/* Bcast, Reduce and Allreduce (Open MPI 4.1 returns before any component
 * when count is 0; a datatype of size 0 counts as served): the expectation
 * for `count` elements of `bytes` bytes in all on comm. */
enum expect expect_bcast_reduce(const struct cinfo *c, long count, unsigned long long bytes,
                                enum expect policy, int commutative);
/* The other collectives: a call moving `bytes` bytes in all (< 0: no size
 * every process knows: Gatherv, Scatterv, Alltoallv, Barrier). */
enum expect expect_call(const struct cinfo *c, long long bytes, enum expect policy);
/* Whether a Bcast/Reduce/Allreduce of `bytes` bytes on c goes through the
 * hierarchy when served: only commutative operations do (a Bcast is). */
enum hier hier_for(const struct cinfo *c, unsigned long long bytes, int commutative);
/* For Barrier and Allgather: hierarchical only across real nodes. */
enum hier hier_spanning(const struct cinfo *c, unsigned long long bytes);
/* expect_call for the calls the hierarchy also serves across nodes (Barrier,
 * Allgather). */
enum expect expect_hier_call(const struct cinfo *c, long long bytes, enum expect policy);

/* Describes the call about to be made (for every failure message). */
void setctx(const struct cinfo *c, enum coll op, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* ------------------------------------------------------------------------ */
/* Reduction values (check_values.c)                                         */

enum tid {
    T_INT8, T_UINT8, T_INT16, T_UINT16, T_INT32, T_UINT32, T_INT64, T_UINT64,
    T_FLOAT, T_DOUBLE,
    T_2INT, T_FLOAT_INT, T_DOUBLE_INT, T_LONG_INT, T_SHORT_INT,
    T_MAT, /* 2x2 int32 matrix (MPI_Type_contiguous(4, MPI_INT)), user op */
    T_AFF, /* affine map {double m; double c; int32 t} + 4 padding bytes, user op */
    NTYPES
};

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
extern struct tdesc types[NTYPES];

enum opk {
    O_SUM, O_PROD, O_MIN, O_MAX, O_LAND, O_LOR, O_LXOR, O_BAND, O_BOR, O_BXOR,
    O_MINLOC, O_MAXLOC, O_MATMUL, O_AFFINE, O_NONE, NOPS
};
extern const char *const op_names[NOPS];
extern MPI_Op ops[NOPS];

void types_init(void);
void types_free(void);
int op_applies(enum opk o, enum tid t);
int op_commutative(enum opk o);
size_t data_size(enum tid t);              /* data bytes of one element */
size_t per_frag(enum tid t);               /* elements per fragment */

/* The raw value of element i of process `who` for `seed`. */
static inline uint64_t raw(uint64_t seed, int who, size_t i)
{
    return mix64(seed ^ ((uint64_t) (who + 1) << 52) ^ (uint64_t) i * 0x2545f4914f6cdd1dULL);
}

/* Writes the data fields of elements [i0, i0 + n) of process `who` into buf
 * (element i0 at buf); padding bytes are left as they are. */
void gen(enum tid t, enum opk o, void *buf, size_t i0, size_t n, uint64_t seed, int who);
/* acc[k] = acc[k] op x[k]: acc holds the lower ranks' result. */
void fold(enum tid t, enum opk o, void *acc, const void *x, size_t n);
int elem_equal(enum tid t, const void *a, const void *b);
void elem_fmt(enum tid t, const void *p, char *out, size_t len);
/* The padding bytes of `n` elements of t in buf must be SENTINEL. */
void check_padding(enum tid t, const unsigned char *buf, size_t n, const char *which);

/* Type/op combinations of the Reduce_scatter, Scan/Exscan and Allreduce
 * families; `served`: sharm reduces it (MPI_SHORT_INT has a hole inside the
 * element: handed over); `primary`: run at every count. */
struct combo {
    enum tid t;
    enum opk o;
    int served, primary;
};
extern const struct combo red_combos[];
extern const int n_red_combos;
#define CB_I32_SUM 0
#define CB_MAT 1
#define CB_DBLINT_MINLOC 2

/* Expected fold over ranks [0, upto) of elements [i0, i0 + n), into acc. */
void rexpect(const struct combo *cb, unsigned char *acc, size_t i0, size_t n, uint64_t seed, int upto);
/* got[k] must equal exp[k] (data fields) for k < n (global element i0 + k);
 * padding must be untouched when `check_pad`. */
void rcheck(const struct combo *cb, const unsigned char *got, const unsigned char *exp, size_t n,
            size_t i0, const char *what, int check_pad);
void check_same(const unsigned char *got, const unsigned char *was, size_t bytes, size_t ext,
                const char *what);
void check_guard(const unsigned char *end, const char *what);
unsigned char *rbuf_new(size_t bytes, int bg);
unsigned char *dup_bytes(const unsigned char *src, size_t bytes);

/* One reduction call of the combination cb on n elements. */
typedef void (*red_fn)(const struct cinfo *c, const struct combo *cb, size_t n, int ip, uint64_t seed);
/* Every combination at counts 0, 1, around a fragment, several times s*f
 * (Allreduce adds counts around multiples of p), in place or not. */
void run_reductions(const struct cinfo *c, red_fn fn, int allreduce_counts);

/* ------------------------------------------------------------------------ */
/* Data movement (check_movement.c)                                          */

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
extern struct mtype mt[NMT];

/* Sender and receiver datatypes of one type signature: one unit is `smul`
 * elements of st and `rmul` elements of rt. */
struct pair {
    int st, smul, rt, rmul, primary;
};
extern const struct pair pairs[];
extern const int n_pairs;
#define P_INT 0
#define P_VEC_RLB 5

void mtypes_init(void);
void mtypes_free(void);
size_t unit_bytes(const struct pair *pr);

/* The stream process src sends to dst in call `seed`. */
uint32_t stream(uint64_t seed, int src, int dst);

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
enum { TO_IMG = 1, TO_REG = 2, TO_BOTH = 3 };

/* bg: the bytes outside the data (SEND_BG in send buffers, else SENTINEL). */
void buf_init(struct buf *b, const struct mtype *t, size_t nelem, int bg, const char *what);
void buf_free(struct buf *b);
void *buf_mpi(const struct buf *b); /* the address to give MPI */
/* Writes stream h (from rank src) into elements [e0, e0 + n): into the
 * image (what must be there after the call), the buffer, or both. */
void buf_put(struct buf *b, size_t e0, size_t n, uint32_t h, int src, int where);
/* The send buffer of a call gathering blocks (Gather(v), Allgather(v)):
 * `sn` elements of stream(seed, me, dst), or none when in place. */
void gather_send_buf(struct buf *sb, const struct mtype *st, size_t sn, int ip, uint64_t seed, int me,
                     int dst);
/* The image of a gathering call's receive buffer: block j holds
 * stream(seed, j, dst) in cnt[j] elements at element dis[j] (cnt NULL: n
 * elements at j * n).  In place, the caller's own block is there before the
 * call too. */
void gather_recv_img(struct buf *rb, int p, const int *cnt, const int *dis, size_t n, int ip, uint64_t seed,
                     int me, int dst);
/* The buffer must equal its image, gaps and guard included. */
void buf_check(const struct buf *b);
/* Irregular block sizes: zeros, ones, base, a little more or less. */
int vcount(uint64_t key, size_t base);
/* Places p blocks of cnt[j] elements in reversed or shuffled order, each
 * after a gap of 1-3 elements; returns the elements spanned (+1 gap). */
size_t vlayout(uint64_t key, int p, const int *cnt, int *dis);

typedef void (*rooted_fn)(const struct cinfo *, const struct pair *, size_t, int, int, uint64_t);
typedef void (*flat_fn)(const struct cinfo *, const struct pair *, size_t, int, uint64_t);
/* Every pair and count; primary pairs at every root with and without
 * MPI_IN_PLACE, the others at two roots (one of them in place). */
void run_rooted(const struct cinfo *c, rooted_fn fn);
void run_flat(const struct cinfo *c, flat_fn fn);

/* ------------------------------------------------------------------------ */
/* The operation families (check_<family>.c)                                 */

/* check_bcast.c */
void bcast_typed(struct cinfo *c, enum tid t, size_t count, int root, uint64_t seed);
void bcast_ops(void);
void scenario_dtypes(void);
void scenario_bottom(void);
void scenario_packed(void);
/* check_reduce.c */
void reduction(struct cinfo *c, enum tid t, enum opk o, size_t count, int root, int in_place,
               uint64_t seed);
void reduce_ops(void);
void scenario_unservable(void);
void scenario_allreduce(void);
/* check_gather.c */
void t_gather(const struct cinfo *c, const struct pair *pr, size_t units, int root, int in_place, uint64_t seed);
void t_gatherv(const struct cinfo *c, const struct pair *pr, size_t units, int root, int in_place, uint64_t seed);
void t_scatter(const struct cinfo *c, const struct pair *pr, size_t units, int root, int in_place, uint64_t seed);
void t_scatterv(const struct cinfo *c, const struct pair *pr, size_t units, int root, int in_place, uint64_t seed);
void scenario_gather(void);
void scenario_scatter(void);
/* check_allgather.c */
void t_allgather(const struct cinfo *c, const struct pair *pr, size_t units, int ip, uint64_t seed);
void t_allgatherv(const struct cinfo *c, const struct pair *pr, size_t units, int ip, uint64_t seed);
void scenario_allgather(void);
/* check_alltoall.c */
void t_alltoall(const struct cinfo *c, const struct pair *pr, size_t units, int ip, uint64_t seed);
void t_alltoallv(const struct cinfo *c, const struct pair *pr, size_t units, int ip, uint64_t seed);
void scenario_alltoall(void);
void scenario_inplace_memory(void);
void scenario_inplace_memory_aside(void);
/* check_hier_memory.c */
void scenario_hier_memory(void);
/* check_reduce_scatter.c */
void t_reduce_scatter(const struct cinfo *c, const struct combo *cb, size_t n, int block, int ip, uint64_t seed);
void scenario_redscat(void);
/* check_scan.c: Scan, Exscan, and Allreduce checked the same way */
void t_prefix(const struct cinfo *c, const struct combo *cb, enum coll kind, size_t n, int ip, uint64_t seed);
void scenario_scan(void);
/* check_kernels.c: 8-bit integer sums wrap through every reduction */
void scenario_wrap8(void);
/* check_barrier.c */
void t_barrier_call(const struct cinfo *c);
void scenario_barrier(void);
/* check_big.c */
void scenario_big(void);
void scenario_big_others(void);
/* check_comms.c */
void scenario_comms(void);
void scenario_comms_others(void);
/* check_stress.c */
void bcast_reduce_call(struct cinfo *c, uint64_t sel, size_t bytes, uint64_t seed);
void any_call(const struct cinfo *c, int which, size_t units, int root, uint64_t seed);
void scenario_stress(void);
void scenario_mixed(void);
void scenario_crash(void);

/* ------------------------------------------------------------------------ */
/* Memory a call takes (check_support.c)                                     */

/* After a barrier on `comm`, the peak resident set starts again from the
 * current one, which is returned (KiB): the mark a call's growth is
 * measured from. */
long peak_mark(MPI_Comm comm);
/* KiB the peak resident set has grown since `mark`. */
long peak_growth(long mark);

#endif
