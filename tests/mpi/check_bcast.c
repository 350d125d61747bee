/*
 * check_bcast.c: Bcast of contiguous and padded types at every root around
 * the fragment size (with the "ops" scenario), of non-contiguous, resized
 * (non-zero lower bound) and mismatched-but-equal-signature datatypes with
 * their gap bytes checked ("dtypes", which also passes a datatype of size 0
 * to Bcast/Reduce/Allreduce), and of datatypes whose packed elements
 * straddle fragments ("packed").
 */
#include "check_support.h"

/* A checked Bcast of `count` elements of type t (contiguous or padded). */
void bcast_typed(struct cinfo *c, enum tid t, size_t count, int root, uint64_t seed)
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
    unsigned long long moved = (unsigned long long) count * (unsigned) size;
    enum expect ex = expect_bcast_reduce(c, (long) count, moved, EX_SERVE, 1);
    enum hier h = hier_for(c, moved, 1);
    struct snap before = pv_snap(C_BCAST);
    MPI_CHECK(MPI_Bcast(buf, (int) count, types[t].dt, root, c->comm));
    pv_check_full(C_BCAST, before, ex, 0, h);
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

/* Bcast of contiguous and padded types, every root, around the fragment size
 * (MPI_SHORT_INT, whose packed elements straddle fragments, is in "packed");
 * the "ops" scenario, with reduce_ops. */
void bcast_ops(void)
{
    struct cinfo w = cinfo_of(MPI_COMM_WORLD);
    uint64_t seed = 1500000;
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

/* ------------------------------------------------------------------------ */
/* Derived datatypes                                                         */

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
    unsigned long long moved = (unsigned long long) count * (unsigned) tsize;
    enum expect ex = expect_bcast_reduce(c, count, moved, EX_SERVE, 1);
    enum hier h = hier_for(c, moved, 1);
    struct snap before = pv_snap(C_BCAST);
    MPI_CHECK(MPI_Bcast(buf, (int) count, d->dt, root, c->comm));
    pv_check_full(C_BCAST, before, ex, 0, h);
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

void scenario_dtypes(void)
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
            enum expect ex = expect_bcast_reduce(&w, is_root ? n : cnt, (unsigned long long) n * 4, EX_SERVE, 1);
            enum hier hh = hier_for(&w, (unsigned long long) n * 4, 1);
            struct snap before = pv_snap(C_BCAST);
            if (is_root) {
                MPI_CHECK(MPI_Bcast(stream, (int) n, MPI_INT, root, w.comm));
            } else {
                MPI_CHECK(MPI_Bcast(buf, (int) cnt, h->dt, root, w.comm));
            }
            pv_check_full(C_BCAST, before, ex, 0, hh);
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
                enum expect ex = expect_bcast_reduce(&w, 5, 0, EX_SERVE, 1);
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

/* Bcast of datatypes with gaps inside an element, so that the packed stream
 * has elements (ints) that straddle fragment boundaries. */
struct ci {
    int8_t c;
    int32_t i;
};

void scenario_packed(void)
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
            enum expect ex = expect_bcast_reduce(&w, (long) n, 5ULL * n, EX_SERVE, 1);
            enum hier h = hier_for(&w, 5ULL * n, 1);
            struct snap before = pv_snap(C_BCAST);
            MPI_CHECK(MPI_Bcast(b, (int) n, st, root, w.comm));
            pv_check_full(C_BCAST, before, ex, 0, h);
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

