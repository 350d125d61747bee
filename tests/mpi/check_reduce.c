/*
 * check_reduce.c: Reduce and Allreduce over every type/op pair (predefined
 * ops on predefined types, MINLOC/MAXLOC on the pair types, non-commutative
 * user ops on a matrix and a padded struct), every root, with and without
 * MPI_IN_PLACE; the result against the reference fold in rank order, send
 * buffers unchanged, padding and guard bytes untouched.  Also the calls
 * sharm must hand over (a user op on a vector type) and Allreduce under the
 * red_combos of the other reduction families.
 */
#include "check_support.h"

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

/* Fills and runs one Reduce (root >= 0) or Allreduce (root < 0) on c and checks
 * the result, the untouched send buffer and the padding/guard bytes. */
void reduction(struct cinfo *c, enum tid t, enum opk o, size_t count, int root, int in_place,
               uint64_t seed)
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
    enum expect ex = expect_bcast_reduce(c, (long) count, bytes, reducible(t), op_commutative(o));
    enum hier h = hier_for(c, bytes, op_commutative(o));
    struct snap before = pv_snap(coll);
    const void *sarg = use_in_place ? MPI_IN_PLACE : sbuf;
    void *rarg = null_rbuf ? NULL : rbuf;
    if (allred) {
        MPI_CHECK(MPI_Allreduce(sarg, rarg, (int) count, types[t].dt, ops[o], c->comm));
    } else {
        MPI_CHECK(MPI_Reduce(sarg, rarg, (int) count, types[t].dt, ops[o], root, c->comm));
    }
    pv_check_full(coll, before, ex, 0, h);

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

/* Every predefined op over every type it applies to, MINLOC/MAXLOC on the
 * pair types and the non-commutative user ops; Reduce at every root, with
 * and without MPI_IN_PLACE, and Allreduce; counts 0, 1, 32 bytes and
 * around the fragment size (the "ops" scenario, with bcast_ops). */
void reduce_ops(void)
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

void scenario_unservable(void)
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
            enum expect ex = expect_bcast_reduce(&w, (long) count, 8ULL * count, EX_FALLBACK, 1);
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

static void allreduce(const struct cinfo *c, const struct combo *cb, size_t n, int ip, uint64_t seed)
{
    t_prefix(c, cb, C_ALLREDUCE, n, ip, seed);
}

/* Allreduce over every red_combos combination at counts around multiples
 * of p (run under each allreduce algorithm). */
void scenario_allreduce(void)
{
    struct cinfo w = cinfo_of(MPI_COMM_WORLD);
    run_reductions(&w, allreduce, 1);
    cinfo_free(&w);
}
