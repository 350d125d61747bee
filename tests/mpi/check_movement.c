/*
 * check_movement.c: the data-movement side of the checks (Gather(v),
 * Scatter(v), Allgather(v), Alltoall(v)): pairs of datatypes of one type
 * signature (contiguous, vector, resized with a non-zero lower bound,
 * MPI_SHORT_INT, a struct with holes, ...), the byte streams processes send
 * each other (a hash of seed, source, destination and byte index), and user
 * buffers kept next to an image of what they must hold afterwards, gaps
 * and 64 guard bytes included.
 */
#include "check_support.h"

struct mtype mt[NMT] = {
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

const struct pair pairs[] = {
    {M_INT, 1, M_INT, 1, 1},           {M_CHAR, 1, M_CHAR, 1, 1},
    {M_DOUBLE, 1, M_DOUBLE, 1, 0},     {M_INT, 4, M_CONTIG4, 1, 0},
    {M_CONTIG4, 1, M_VEC4, 1, 0},      {M_VEC4, 1, M_RLB, 2, 0},
    {M_RLB, 2, M_INT, 4, 0},           {M_SHORTINT, 1, M_SSI, 1, 0},
    {M_SSI, 1, M_SHORTINT, 1, 0},
    {M_SHIFT, 1, M_GAPHEAD, 1, 0},
    {M_GAPHEAD, 1, M_INT, 4, 0},
    {M_EMPTY, 1, M_EMPTY, 1, 0},
};
const int n_pairs = (int) (sizeof(pairs) / sizeof(pairs[0]));

size_t unit_bytes(const struct pair *pr) { return (size_t) pr->smul * (size_t) mt[pr->st].size; }

void mtypes_init(void)
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
    for (int i = 0; i < n_pairs; ++i) {
        if (unit_bytes(&pairs[i]) != (size_t) pairs[i].rmul * (size_t) mt[pairs[i].rt].size) {
            die("datatype pair %d has different signatures", i);
        }
    }
}

/* Byte b of the data stream identified by h; never SENTINEL, so that a data byte
 * nobody wrote is always seen. */
static inline unsigned char bv(uint32_t h, size_t b)
{
    uint32_t x = (uint32_t) b * 0x9E3779B1u + h;
    x ^= x >> 16;
    x *= 0x7FEB352Du;
    x ^= x >> 15;
    unsigned char v = (unsigned char) x;
    return v == SENTINEL ? 0x5A : v;
}

/* The stream process src sends to dst in call `seed`. */
uint32_t stream(uint64_t seed, int src, int dst)
{
    return (uint32_t) mix64(seed ^ ((uint64_t) (src + 1) << 24) ^ ((uint64_t) (dst + 2) << 44));
}

/* bg: the bytes outside the data (SEND_BG in send buffers, else SENTINEL). */
void buf_init(struct buf *b, const struct mtype *t, size_t nelem, int bg, const char *what)
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

void buf_free(struct buf *b)
{
    free(b->reg);
    free(b->img);
    free(b->blk);
}

/* The address to give MPI. */
void *buf_mpi(const struct buf *b) { return b->reg - b->t->lb; }

/* Writes stream h (from rank src) into elements [e0, e0 + n): into the
 * image (what must be there after the call), the buffer, or both. */
void buf_put(struct buf *b, size_t e0, size_t n, uint32_t h, int src, int where)
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
void buf_check(const struct buf *b)
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
int vcount(uint64_t key, size_t base)
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
size_t vlayout(uint64_t key, int p, const int *cnt, int *dis)
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

/* Units per block: 0, 1, around one fragment, several times s*f. */
static int mv_counts(const struct pair *pr, size_t *out)
{
    size_t ub = unit_bytes(pr), u = (size_t) opt_f / (ub ? ub : 1);
    size_t v[] = {0, 1, u - 1, u, u + 1, 3 * (size_t) opt_s * (size_t) opt_f / (ub ? ub : 1) + 5};
    memcpy(out, v, sizeof v);
    return 6;
}

/* Every pair and count; primary pairs at every root with and without
 * MPI_IN_PLACE, the others at two roots (one of them in place). */
void run_rooted(const struct cinfo *c, rooted_fn fn)
{
    for (int pi = 0; pi < n_pairs; ++pi) {
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

void run_flat(const struct cinfo *c, flat_fn fn)
{
    for (int pi = 0; pi < n_pairs; ++pi) {
        size_t counts[8];
        int nc = mv_counts(&pairs[pi], counts);
        for (int ci = 0; ci < nc; ++ci) {
            fn(c, &pairs[pi], counts[ci], 0, next_seed());
            fn(c, &pairs[pi], counts[ci], 1, next_seed());
        }
    }
}

void mtypes_free(void)
{
    for (int t = M_CONTIG4; t < NMT; ++t) {
        if (t != M_SHORTINT) MPI_Type_free(&mt[t].dt);
    }
}
