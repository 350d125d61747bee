/*
 * check_values.c: the reduction types and operations of the checks, input
 * values, and the reference folds results are compared with (C arithmetic,
 * in rank order), independent of MPI.
 */
#include "check_support.h"

#define F1(T) {0}, {sizeof(T)}, 1
#define PAIR(P) {offsetof(P, v), offsetof(P, i)}, {sizeof(((P *) 0)->v), sizeof(int)}, 2
struct tdesc types[NTYPES] = {
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

const char *const op_names[NOPS] = {
    "MPI_SUM", "MPI_PROD", "MPI_MIN", "MPI_MAX", "MPI_LAND", "MPI_LOR", "MPI_LXOR",
    "MPI_BAND", "MPI_BOR", "MPI_BXOR", "MPI_MINLOC", "MPI_MAXLOC",
    "user non-commutative matrix product", "user non-commutative affine composition", "-",
};
MPI_Op ops[NOPS];

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

void types_init(void)
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
void gen(enum tid t, enum opk o, void *buf, size_t i0, size_t n, uint64_t seed, int who)
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

void fold(enum tid t, enum opk o, void *acc, const void *x, size_t n)
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
int elem_equal(enum tid t, const void *a, const void *b)
{
    for (int f = 0; f < types[t].nfields; ++f) {
        if (memcmp((const char *) a + types[t].field_off[f], (const char *) b + types[t].field_off[f],
                   types[t].field_len[f]) != 0) {
            return 0;
        }
    }
    return 1;
}

void elem_fmt(enum tid t, const void *p, char *out, size_t len)
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
int op_applies(enum opk o, enum tid t)
{
    if (t == T_MAT) return o == O_MATMUL;
    if (t == T_AFF) return o == O_AFFINE;
    if (is_pair(t)) return o == O_MINLOC || o == O_MAXLOC;
    if (o == O_SUM || o == O_PROD || o == O_MIN || o == O_MAX) return 1;
    if (o >= O_LAND && o <= O_BXOR) return is_int(t);
    return 0;
}

void check_padding(enum tid t, const unsigned char *buf, size_t n, const char *which)
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

void types_free(void)
{
    MPI_Type_free(&types[T_MAT].dt);
    MPI_Type_free(&types[T_AFF].dt);
    MPI_Op_free(&ops[O_MATMUL]);
    MPI_Op_free(&ops[O_AFFINE]);
}

int op_commutative(enum opk o) { return o != O_MATMUL && o != O_AFFINE; }

size_t data_size(enum tid t)
{
    size_t sum = 0;
    for (int f = 0; f < types[t].nfields; ++f) sum += types[t].field_len[f];
    return sum;
}

size_t per_frag(enum tid t) { return (size_t) opt_f / types[t].extent; }

/* ------------------------------------------------------------------------ */
/* Reduce_scatter, Scan/Exscan and Allreduce: combinations and references    */

const struct combo red_combos[] = {
    {T_INT32, O_SUM, 1, 1},      {T_MAT, O_MATMUL, 1, 1},      {T_DOUBLE_INT, O_MINLOC, 1, 1},
    {T_INT32, O_PROD, 1, 0},     {T_INT32, O_MAX, 1, 0},       {T_INT32, O_BXOR, 1, 0},
    {T_INT32, O_LAND, 1, 0},     {T_UINT8, O_SUM, 1, 0},       {T_UINT8, O_BOR, 1, 0},
    {T_UINT8, O_LOR, 1, 0},      {T_INT64, O_MIN, 1, 0},       {T_INT64, O_BAND, 1, 0},
    {T_INT64, O_LXOR, 1, 0},     {T_FLOAT, O_SUM, 1, 0},       {T_DOUBLE, O_MAX, 1, 0},
    {T_DOUBLE, O_PROD, 1, 0},    {T_2INT, O_MAXLOC, 1, 0},     {T_FLOAT_INT, O_MINLOC, 1, 0},
    {T_DOUBLE_INT, O_MAXLOC, 1, 0}, {T_LONG_INT, O_MINLOC, 1, 0}, {T_SHORT_INT, O_MINLOC, 0, 0},
};
const int n_red_combos = (int) (sizeof(red_combos) / sizeof(red_combos[0]));

void rexpect(const struct combo *cb, unsigned char *acc, size_t i0, size_t n, uint64_t seed, int upto)
{
    size_t bytes = n * types[cb->t].extent;
    unsigned char *tmp = xmalloc(bytes);
    memset(acc, SENTINEL, bytes);
    gen(cb->t, cb->o, acc, i0, n, seed, 0);
    for (int r = 1; r < upto; ++r) {
        memset(tmp, SENTINEL, bytes);
        gen(cb->t, cb->o, tmp, i0, n, seed, r);
        fold(cb->t, cb->o, acc, tmp, n);
    }
    free(tmp);
}

void rcheck(const struct combo *cb, const unsigned char *got, const unsigned char *exp, size_t n,
            size_t i0, const char *what, int check_pad)
{
    const struct tdesc *rt = &types[cb->t];
    for (size_t k = 0; k < n; ++k) {
        const unsigned char *g = got + k * rt->extent, *x = exp + k * rt->extent;
        for (int f = 0; f < rt->nfields; ++f) {
            if (memcmp(g + rt->field_off[f], x + rt->field_off[f], rt->field_len[f]) != 0) {
                char es[128], gs[128];
                elem_fmt(cb->t, x, es, sizeof es);
                elem_fmt(cb->t, g, gs, sizeof gs);
                die("%s: index %zu (element %zu of the whole input): expected %s, got %s", what, k, i0 + k, es, gs);
            }
        }
        if (!check_pad) continue;
        for (size_t b = 0; b < rt->extent; ++b) {
            int data = 0;
            for (int f = 0; f < rt->nfields; ++f) data |= b >= rt->field_off[f] && b < rt->field_off[f] + rt->field_len[f];
            if (!data && g[b] != SENTINEL) {
                die("%s: index %zu: padding byte %zu was written: expected 0x%02x, got 0x%02x", what, k, b, SENTINEL, g[b]);
            }
        }
    }
}

void check_same(const unsigned char *got, const unsigned char *was, size_t bytes, size_t ext, const char *what)
{
    if (memcmp(got, was, bytes) == 0) return;
    size_t o = 0;
    while (got[o] == was[o]) ++o;
    die("%s: index %zu (byte %zu): expected 0x%02x (unchanged), got 0x%02x", what, o / ext, o, was[o], got[o]);
}

unsigned char *rbuf_new(size_t bytes, int bg)
{
    unsigned char *b = xmalloc(bytes + GUARD);
    memset(b, bg, bytes + GUARD);
    return b;
}

unsigned char *dup_bytes(const unsigned char *src, size_t bytes)
{
    unsigned char *b = xmalloc(bytes);
    memcpy(b, src, bytes);
    return b;
}

static int red_counts(const struct combo *cb, int p, int allreduce, size_t *out)
{
    size_t sz = data_size(cb->t), ext = types[cb->t].extent, u = (size_t) opt_f / sz, pf = ((size_t) opt_f - sz) / ext + 1;
    int n = 0;
    out[n++] = 0;
    out[n++] = 1;
    if (cb->primary) {
        out[n++] = u - 1;
        out[n++] = u;
    }
    out[n++] = u + 1;
    if (cb->primary && ext != sz) out[n++] = pf + 1;
    out[n++] = 3 * (size_t) opt_s * (size_t) opt_f / ext + 7;
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

void run_reductions(const struct cinfo *c, red_fn fn, int allreduce_counts)
{
    for (int k = 0; k < n_red_combos; ++k) {
        const struct combo *cb = &red_combos[k];
        size_t counts[16];
        int nc = red_counts(cb, c->size, allreduce_counts, counts);
        for (int ci = 0; ci < nc; ++ci) {
            for (int ip = 0; ip < 2; ++ip) {
                if (!cb->primary && ip != ((ci + k) & 1)) continue;
                fn(c, cb, counts[ci], ip, next_seed());
            }
        }
    }
}

void check_guard(const unsigned char *end, const char *what)
{
    for (size_t g = 0; g < GUARD; ++g) {
        if (end[g] != SENTINEL) {
            die("%s: overrun: guard byte %zu after it: expected 0x%02x, got 0x%02x", what, g, SENTINEL, end[g]);
        }
    }
}
