/* One-way stream probe (np=2 Bcast through shared cells), fresh data.
 * bcprobe BYTES [ITERS]: variants taken in turns inside every iteration. */
#define _GNU_SOURCE
#include <immintrin.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define LINE 64
typedef struct {
    _Alignas(128) _Atomic uint64_t bar[2];
    _Alignas(128) _Atomic uint64_t pub; /* bytes published (running) */
    _Alignas(128) _Atomic uint64_t ack; /* bytes consumed (running) */
    _Alignas(128) _Atomic uint64_t cellseq[4096];
} ctl_t;

static ctl_t *ctl;
static char *ring;
static size_t RING;

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

static void pin(int c)
{
    cpu_set_t s;
    CPU_ZERO(&s);
    CPU_SET(c, &s);
    sched_setaffinity(0, sizeof s, &s);
}

static void copy512(char *d, const char *s, size_t n)
{
    size_t i = 0;
    for (; i + 256 <= n; i += 256) {
        __m512i a = _mm512_loadu_si512(s + i), b = _mm512_loadu_si512(s + i + 64),
                c = _mm512_loadu_si512(s + i + 128), e = _mm512_loadu_si512(s + i + 192);
        _mm512_storeu_si512(d + i, a);
        _mm512_storeu_si512(d + i + 64, b);
        _mm512_storeu_si512(d + i + 128, c);
        _mm512_storeu_si512(d + i + 192, e);
    }
    memcpy(d + i, s + i, n - i);
}
static void copy256(char *d, const char *s, size_t n)
{
    size_t i = 0;
    for (; i + 128 <= n; i += 128) {
        __m256i a = _mm256_loadu_si256((void *) (s + i)), b = _mm256_loadu_si256((void *) (s + i + 32)),
                c = _mm256_loadu_si256((void *) (s + i + 64)), e = _mm256_loadu_si256((void *) (s + i + 96));
        _mm256_storeu_si256((void *) (d + i), a);
        _mm256_storeu_si256((void *) (d + i + 32), b);
        _mm256_storeu_si256((void *) (d + i + 64), c);
        _mm256_storeu_si256((void *) (d + i + 96), e);
    }
    memcpy(d + i, s + i, n - i);
}
static void copynt(char *d, const char *s, size_t n)
{
    size_t i = 0;
    for (; i + 256 <= n; i += 256) {
        __m512i a = _mm512_loadu_si512(s + i), b = _mm512_loadu_si512(s + i + 64),
                c = _mm512_loadu_si512(s + i + 128), e = _mm512_loadu_si512(s + i + 192);
        _mm512_stream_si512((void *) (d + i), a);
        _mm512_stream_si512((void *) (d + i + 64), b);
        _mm512_stream_si512((void *) (d + i + 128), c);
        _mm512_stream_si512((void *) (d + i + 192), e);
    }
    _mm_sfence();
    memcpy(d + i, s + i, n - i);
}
static void repmovsb(char *d, const char *s, size_t n)
{
    __asm__ volatile("rep movsb" : "+D"(d), "+S"(s), "+c"(n) : : "memory");
}

static uint64_t barrier_gen;
static void barrier(int me)
{
    barrier_gen++;
    atomic_store_explicit(&ctl->bar[me], barrier_gen, memory_order_release);
    while (atomic_load_explicit(&ctl->bar[1 - me], memory_order_acquire) < barrier_gen)
        _mm_pause();
}

/* variant: cell bytes, ring bytes used, fill kind (0 avx512, 1 rep movsb, 2 avx2),
 * read kind (0 per cell avx512, 1 batch avx512, 2 per cell avx2, 3 batch rep movsb) */
typedef struct {
    const char *name;
    size_t cell, ring;
    int fill, read;
} variant;

static variant V[] = {
    {"c32K r4M fill512 read512/cell", 32768, 4 << 20, 0, 0},
    {"c32K r4M fillrep read512/cell", 32768, 4 << 20, 1, 0},
    {"c32K r4M fillNT read512/cell", 32768, 4 << 20, 3, 0},
    {"c32K r1M fillrep read512/cell", 32768, 1 << 20, 1, 0},
    {"c32K r1M fill512 read512/cell", 32768, 1 << 20, 0, 0},
    {"c32K r2M fill512 read512/cell", 32768, 2 << 20, 0, 0},
    {"c64K r4M fillrep read512/batch", 65536, 4 << 20, 1, 1},
};
#define NV (sizeof V / sizeof V[0])

static uint64_t offs[NV]; /* running byte offset per variant's ring region */

static void fillcopy(int kind, char *d, const char *s, size_t n)
{
    if (kind == 0)
        copy512(d, s, n);
    else if (kind == 1)
        repmovsb(d, s, n);
    else if (kind == 3)
        copynt(d, s, n);
    else
        copy256(d, s, n);
}

int main(int argc, char **argv)
{
    size_t n = strtoull(argv[1], 0, 0);
    int iters = argc > 2 ? atoi(argv[2]) : 2000;
    RING = 6 << 20;
    ctl = mmap(0, sizeof(ctl_t), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    ring = mmap(0, RING * NV, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    memset(ring, 0, RING * NV);
    int me = fork() == 0 ? 1 : 0;
    pin(me);
    char *buf = aligned_alloc(4096, n + 4096);
    memset(buf, 1, n);
    double *t = calloc((size_t) iters * NV, sizeof(double));
    uint64_t seq = 0; /* global cell sequence per variant, kept in cellseq by index */
    uint64_t cells_done[NV] = {0};
    for (int it = 0; it < iters; it++) {
        for (size_t v = 0; v < NV; v++) {
            variant *x = &V[v];
            char *r = ring + v * RING;
            size_t ncell = x->ring / x->cell;
            if (me == 0)
                memset(buf, (int) (it + v), n); /* fresh data */
            else
                for (size_t i = 0; i < n; i += LINE) /* validate-like touch */
                    ((volatile char *) buf)[i];
            barrier(me);
            double t0 = now();
            uint64_t base = seq; /* global cell count: pub/ack */
            uint64_t slot0 = cells_done[v]; /* this variant's ring position */
            size_t cells = (n + x->cell - 1) / x->cell;
            if (me == 0) {
                for (size_t c = 0; c < cells; c++) {
                    uint64_t g = base + c; /* global cell number */
                    /* within this call, wait until the reader has consumed cell c - ncell */
                    while (c >= ncell &&
                           atomic_load_explicit(&ctl->ack, memory_order_acquire) < g - ncell + 1)
                        _mm_pause();
                    size_t len = c + 1 < cells ? x->cell : n - c * x->cell;
                    fillcopy(x->fill, r + ((slot0 + c) % ncell) * x->cell, buf + c * x->cell, len);
                    atomic_store_explicit(&ctl->pub, g + 1, memory_order_release);
                }
            } else {
                size_t c = 0;
                while (c < cells) {
                    uint64_t g = base + c, avail;
                    while ((avail = atomic_load_explicit(&ctl->pub, memory_order_acquire)) <= g)
                        _mm_pause();
                    size_t k = 1;
                    if (x->read == 1 || x->read == 4) {
                        k = avail - g;
                        /* contiguous in the ring only up to its end */
                        size_t tail = ncell - (slot0 + c) % ncell;
                        if (k > tail)
                            k = tail;
                        if (k > cells - c)
                            k = cells - c;
                    }
                    size_t off = c * x->cell, len = (c + k < cells ? k * x->cell : n - off);
                    char *src = r + ((slot0 + c) % ncell) * x->cell;
                    if (x->read == 2 || x->read == 4)
                        copy256(buf + off, src, len);
                    else
                        copy512(buf + off, src, len);
                    c += k;
                    atomic_store_explicit(&ctl->ack, base + c, memory_order_release);
                }
            }
            double t1 = now();
            cells_done[v] += cells;
            seq += cells;
            t[(size_t) it * NV + v] = t1 - t0;
            barrier(me);
            /* reset per-variant counters so each variant has its own */
        }
    }
    (void) seq;
    if (me == 1) {
        for (size_t v = 0; v < NV; v++) {
            double *a = malloc(sizeof(double) * iters);
            for (int i = 0; i < iters; i++)
                a[i] = t[(size_t) i * NV + v];
            int cmp(const void *p, const void *q) { double d = *(double *) p - *(double *) q; return (d > 0) - (d < 0); }
            qsort(a, iters, sizeof(double), cmp);
            printf("%-34s n=%zu reader median %.2f us q1 %.2f q3 %.2f\n", V[v].name, n, a[iters / 2],
                   a[iters / 4], a[3 * iters / 4]);
        }
    }
    if (me == 0)
        wait(0);
    return 0;
}
