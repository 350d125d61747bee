/* Two processes, np=2 Allgather of N bytes with fresh data, interleaving
 * variants per iteration so the VM's drift hits all alike.
 *  ring-vec : each call fills the next N bytes of a 4 MiB ring (AVX2), reads the peer's
 *  ring-rep : same, fills by rep movsb
 *  cell-vec : fixed N-byte region reused every call (AVX2 fills)
 *  cell-rep : fixed region, rep movsb fills
 *  cellp-rep: fixed region in 64 KiB cells, each published by its own flag; reads pipelined
 *  swap-vec : two regions taken in turns: each process fills the region it read in its
 *             previous swap call (as Intel MPI's cells, and sharm's pair buffer), AVX2 fills
 *  swap-rep : the same, rep movsb fills
 * (cellprobe.c of 2026-11-30-g-fills with the two swap variants added.)
 * Own copy by rep movsb first (as Intel MPI), then fill, publish, read peer.
 * gcc -O2 -mavx2 -o swapprobe swapprobe.c */
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

#define RING (4u << 20)
#define CELL (64u << 10)
#define NV 7
#define ITERS 3000

struct shared {
    _Alignas(64) atomic_ulong bar[2][8];
    _Alignas(64) atomic_ulong pub[2][64][8]; /* per rank, per cell: seq */
    _Alignas(64) atomic_ulong done[2][8];
};

static inline double now_ns(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec * 1e9 + t.tv_nsec; }
static inline void rep_movsb(void *d, const void *s, size_t n) { __asm__ volatile("rep movsb" : "+D"(d), "+S"(s), "+c"(n) : : "memory"); }
static void avx_copy(void *d, const void *s, size_t n) {
    char *dd = d; const char *ss = s;
    for (size_t i = 0; i < n; i += 256) {
        __m256i a = _mm256_loadu_si256((const __m256i *)(ss + i)), b = _mm256_loadu_si256((const __m256i *)(ss + i + 32)),
                c = _mm256_loadu_si256((const __m256i *)(ss + i + 64)), e = _mm256_loadu_si256((const __m256i *)(ss + i + 96)),
                f = _mm256_loadu_si256((const __m256i *)(ss + i + 128)), g = _mm256_loadu_si256((const __m256i *)(ss + i + 160)),
                h = _mm256_loadu_si256((const __m256i *)(ss + i + 192)), k = _mm256_loadu_si256((const __m256i *)(ss + i + 224));
        _mm256_storeu_si256((__m256i *)(dd + i), a); _mm256_storeu_si256((__m256i *)(dd + i + 32), b);
        _mm256_storeu_si256((__m256i *)(dd + i + 64), c); _mm256_storeu_si256((__m256i *)(dd + i + 96), e);
        _mm256_storeu_si256((__m256i *)(dd + i + 128), f); _mm256_storeu_si256((__m256i *)(dd + i + 160), g);
        _mm256_storeu_si256((__m256i *)(dd + i + 192), h); _mm256_storeu_si256((__m256i *)(dd + i + 224), k);
    }
}
static void barrier(struct shared *sh, int me, unsigned long seq) {
    atomic_store_explicit(&sh->bar[me][0], seq, memory_order_release);
    while (atomic_load_explicit(&sh->bar[1 - me][0], memory_order_acquire) < seq) _mm_pause();
}
static int cmpd(const void *a, const void *b) { double x = *(double *)a, y = *(double *)b; return x < y ? -1 : x > y; }

int main(int argc, char **argv) {
    size_t n = argc > 1 ? strtoul(argv[1], 0, 0) : 256 << 10;
    struct shared *sh = mmap(0, sizeof *sh, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    char *ring = mmap(0, 2 * RING, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
    char *swap = mmap(0, 2 * n, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
    unsigned long swapcalls = 0;
    char *cells = mmap(0, 2 * n, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
    memset(sh, 0, sizeof *sh);
    int me = fork() == 0 ? 1 : 0;
    cpu_set_t set; CPU_ZERO(&set); CPU_SET(me, &set); sched_setaffinity(0, sizeof set, &set);
    char *sbuf = aligned_alloc(4096, n), *rbuf = aligned_alloc(4096, 2 * n);
    memset(sbuf, 1, n); memset(rbuf, 2, 2 * n);
    static double t[NV][ITERS];
    const char *names[NV] = {"ring-vec", "ring-rep", "cell-vec", "cell-rep", "cellp-rep", "swap-vec", "swap-rep"};
    unsigned long seq = 0, pubseq = 0;
    size_t roff = 0;
    for (int it = 0; it < ITERS + 200; it++) {
        for (int v = 0; v < NV; v++) {
            memset(sbuf, (it * 7 + v) & 0xff, n); /* fresh data */
            barrier(sh, me, ++seq);
            double t0 = now_ns();
            rep_movsb(rbuf + me * n, sbuf, n); /* own copy */
            pubseq++;
            char *mine, *theirs;
            if (v < 2) { mine = ring + me * RING + roff; theirs = ring + (1 - me) * RING + roff; }
            else if (v < 5) { mine = cells + me * n; theirs = cells + (1 - me) * n; }
            else { /* each process writes the region it read in its last swap call */
                mine = swap + ((me + swapcalls) % 2) * n; theirs = swap + ((1 - me + swapcalls) % 2) * n;
                swapcalls++;
            }
            if (v == 4) {
                size_t nc = (n + CELL - 1) / CELL, got = 0;
                for (size_t c = 0; c < nc; c++) {
                    size_t len = (c + 1) * CELL > n ? n - c * CELL : CELL;
                    rep_movsb(mine + c * CELL, sbuf + c * CELL, len);
                    atomic_store_explicit(&sh->pub[me][c][0], pubseq, memory_order_release);
                    /* read whatever of the peer's has come */
                    while (got < nc && atomic_load_explicit(&sh->pub[1 - me][got][0], memory_order_acquire) >= pubseq) {
                        size_t l2 = (got + 1) * CELL > n ? n - got * CELL : CELL;
                        avx_copy(rbuf + (1 - me) * n + got * CELL, theirs + got * CELL, l2);
                        got++;
                    }
                }
                while (got < nc) {
                    while (atomic_load_explicit(&sh->pub[1 - me][got][0], memory_order_acquire) < pubseq) _mm_pause();
                    size_t l2 = (got + 1) * CELL > n ? n - got * CELL : CELL;
                    avx_copy(rbuf + (1 - me) * n + got * CELL, theirs + got * CELL, l2);
                    got++;
                }
            } else {
                if (v == 0 || v == 2 || v == 5) avx_copy(mine, sbuf, n); else rep_movsb(mine, sbuf, n);
                atomic_store_explicit(&sh->pub[me][0][0], pubseq, memory_order_release);
                while (atomic_load_explicit(&sh->pub[1 - me][0][0], memory_order_acquire) < pubseq) _mm_pause();
                avx_copy(rbuf + (1 - me) * n, theirs, n);
            }
            double t1 = now_ns();
            if (v < 2) roff = (roff + n) % RING; /* each ring call takes the next n bytes */
            if (it >= 200) t[v][it - 200] = (t1 - t0) / 1000.0;
            if (rbuf[(1 - me) * n + n - 1] != (char)((it * 7 + v) & 0xff)) { fprintf(stderr, "wrong\n"); return 1; }
        }
    }
    barrier(sh, me, ++seq);
    for (int v = 0; v < NV; v++) {
        qsort(t[v], ITERS, sizeof(double), cmpd);
        printf("rank %d %-9s n=%zu median %.1f us q1 %.1f q3 %.1f\n", me, names[v], n, t[v][ITERS / 2], t[v][ITERS / 4], t[v][3 * ITERS / 4]);
    }
    if (me == 0) wait(0);
    return 0;
}
