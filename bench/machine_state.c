/*
 * machine_state.c - measures the state of the machine a benchmark runs in.
 *
 * This VM moves between states whose memory and cross-core bandwidths
 * differ by 2x or more, and every collective figure moves with them.  A
 * benchmark run therefore records the state it ran in, so two runs can be
 * compared and README figures can name their state.
 *
 *   machine_state local [--quick] [--cpus A,B]
 *       no MPI; prints (--quick: LINE_RTT and XCOPY of 1 MiB only, in
 *       about 0.1 s, for a look before and after every benchmark launch)
 *       MEMCPY bytes=<n> gbps=<x>    single-core memcpy, core A
 *       LINE_RTT ns=<x>              one cache line ping-ponged between
 *                                    threads pinned to cores A and B
 *                                    (one round trip = two transfers)
 *       XCOPY bytes=<n> gbps=<x>     core A copies a buffer just written by
 *                                    core B into its own buffer: the
 *                                    receiver's copy of a single-copy
 *                                    transfer, i.e. what bounds any
 *                                    shared-memory collective from below
 *                                    (the faster of memcpy and a vector
 *                                    copy like sharm's)
 *       XCOPY_MEMCPY bytes=<n> gbps=<x>  the same with memcpy alone
 *   mpirun -np 2 machine_state p2p [--sizes 1M,4M]
 *       prints P2P bytes=<n> gbps=<x>: osu_bw's method (rank 0 posts a
 *       window of nonblocking sends of one buffer, rank 1 the matching
 *       receives into one buffer, then a zero-byte acknowledgement), so the
 *       figure lines up with osu_bw; the caller chooses the transport
 *       (e.g. Open MPI vader with or without CMA).
 *
 * Every figure is the median of several samples, so a single
 * descheduling (the machine is shared) does not decide it.
 */
#define _GNU_SOURCE

#include <mpi.h>

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return (n % 2) ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* Parses "8", "64K", "4M" (binary multiples).  Returns 0 on error. */
static size_t parse_size(const char *s)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || end == s)
        return 0;
    if (*end == 'K' || *end == 'k') { v <<= 10; end++; }
    else if (*end == 'M' || *end == 'm') { v <<= 20; end++; }
    return *end ? 0 : (size_t)v;
}

static int pin_to(int cpu)
{
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    return pthread_setaffinity_np(pthread_self(), sizeof set, &set);
}

static void *xalloc(size_t n)
{
    void *p = aligned_alloc(4096, (n + 4095) / 4096 * 4096);
    if (!p) {
        fprintf(stderr, "machine_state: out of memory (%zu bytes)\n", n);
        exit(1);
    }
    memset(p, 0, n); /* first touch now, so page faults are never timed */
    return p;
}

/* ------------------------------------------------------------------ */
/* single-core memcpy                                                  */
/* ------------------------------------------------------------------ */

static volatile unsigned char sink;

/* Median bandwidth (bytes/s) of memcpy of `n` bytes on the calling core.
 * Each sample copies at least 16 MiB so timer resolution is irrelevant;
 * samples are taken for ~0.3 s. */
static double memcpy_bandwidth(size_t n)
{
    enum { MAX_SAMPLES = 256 };
    unsigned char *src = xalloc(n), *dst = xalloc(n);
    double bw[MAX_SAMPLES];
    int ns = 0;
    size_t batch = (16u << 20) / n;
    if (batch < 1)
        batch = 1;
    memset(src, 0x5a, n);
    memcpy(dst, src, n); /* warm-up */
    double start = now_s();
    while (ns < MAX_SAMPLES && (ns < 5 || now_s() - start < 0.3)) {
        src[(size_t)ns % n] ^= 1; /* change the source between samples */
        double t0 = now_s();
        for (size_t b = 0; b < batch; b++)
            memcpy(dst, src, n);
        double t1 = now_s();
        sink ^= dst[(size_t)ns % n];
        bw[ns++] = (double)(n * batch) / (t1 - t0);
    }
    free(src);
    free(dst);
    return median(bw, ns);
}

/* ------------------------------------------------------------------ */
/* two pinned threads: line round trip and cross-core copy             */
/* ------------------------------------------------------------------ */

/* The ping-pong line sits alone in a 128-byte block, so the adjacent-line
 * prefetcher cannot drag a neighbour's traffic into the measurement. */
typedef struct {
    _Alignas(128) _Atomic uint64_t line;
    char pad[128 - sizeof(uint64_t)];
    _Alignas(128) _Atomic int phase;   /* cross-core copy hand-off */
    _Atomic int quit;
    int cpu_b;
    unsigned char *src;                /* written by B, copied by A */
    size_t n;
} shared_t;

enum { RTT_ROUNDS = 20000, RTT_SAMPLES = 15 };

static void *partner(void *arg)
{
    shared_t *s = arg;
    if (pin_to(s->cpu_b) != 0)
        fprintf(stderr, "machine_state: cannot pin to cpu %d\n", s->cpu_b);
    /* Part 1: answer every odd value with the next even one. */
    for (uint64_t want = 1; want < 2ull * RTT_ROUNDS * RTT_SAMPLES; want += 2) {
        while (atomic_load_explicit(&s->line, memory_order_acquire) != want)
            ;
        atomic_store_explicit(&s->line, want + 1, memory_order_release);
    }
    /* Part 2: on phase 1 write the source buffer (so its lines are
     * modified in this core's cache, as a sender's would be), then hand
     * over with phase 2. */
    for (;;) {
        int ph;
        while ((ph = atomic_load_explicit(&s->phase, memory_order_acquire)) != 1
               && !atomic_load_explicit(&s->quit, memory_order_relaxed))
            ;
        if (ph != 1)
            break;
        memset(s->src, (int)(s->n + (size_t)now_s()) & 0xff, s->n);
        atomic_store_explicit(&s->phase, 2, memory_order_release);
    }
    return NULL;
}

/* Median round-trip time (s) of one line between this core and B. */
static double line_rtt(shared_t *s)
{
    double rtt[RTT_SAMPLES];
    uint64_t v = 0;
    for (int k = 0; k < RTT_SAMPLES; k++) {
        double t0 = now_s();
        for (int i = 0; i < RTT_ROUNDS; i++) {
            atomic_store_explicit(&s->line, ++v, memory_order_release);
            ++v;
            while (atomic_load_explicit(&s->line, memory_order_acquire) != v)
                ;
        }
        rtt[k] = (now_s() - t0) / RTT_ROUNDS;
    }
    return median(rtt, RTT_SAMPLES);
}

/* A vector copy like sharm's own (kernels::copy): stores aligned to the
 * vector, four vectors per iteration.  glibc 2.36 copies from 2 KiB with
 * `rep movsb`, which on this VM's Zen 4 cores is the slower copy wherever
 * lines come from the other core; sharm no longer uses it, so a limit
 * measured with memcpy alone would flatter sharm's share of it. */
#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

/* One vector copy per instruction set: a head up to the first aligned
 * store, then four vectors of V bytes per step, then the tail. */
#define VECTOR_COPY(name, feature, type, V, load, store)                       \
    __attribute__((target(feature))) static void name(void *d, const void *s, \
                                                      size_t n)                \
    {                                                                          \
        unsigned char *dst = d;                                                \
        const unsigned char *src = s;                                          \
        size_t head = (V - (uintptr_t)dst % V) % V;                            \
        if (head > n)                                                          \
            head = n;                                                          \
        memcpy(dst, src, head);                                                \
        size_t at = head;                                                      \
        for (; at + 4 * V <= n; at += 4 * V) {                                 \
            type a = load((const void *)(src + at));                           \
            type b = load((const void *)(src + at + V));                       \
            type c = load((const void *)(src + at + 2 * V));                   \
            type e = load((const void *)(src + at + 3 * V));                   \
            store((void *)(dst + at), a);                                      \
            store((void *)(dst + at + V), b);                                  \
            store((void *)(dst + at + 2 * V), c);                              \
            store((void *)(dst + at + 3 * V), e);                              \
        }                                                                      \
        memcpy(dst + at, src + at, n - at);                                    \
    }

static inline __attribute__((target("avx2"))) __m256i load256(const void *p)
{
    return _mm256_loadu_si256((const __m256i *)p);
}
static inline __attribute__((target("avx2"))) void store256(void *p, __m256i v)
{
    _mm256_store_si256((__m256i *)p, v);
}

VECTOR_COPY(copy_avx512, "avx512f", __m512i, 64, _mm512_loadu_si512, _mm512_store_si512)
VECTOR_COPY(copy_avx2, "avx2", __m256i, 32, load256, store256)
#endif

static void copy_memcpy(void *d, const void *s, size_t n) { memcpy(d, s, n); }

/* The vector copy this CPU has (memcpy where it has none). */
static void (*vector_copy(void))(void *, const void *, size_t)
{
#if defined(__x86_64__) && defined(__GNUC__)
    if (__builtin_cpu_supports("avx512f"))
        return copy_avx512;
    if (__builtin_cpu_supports("avx2"))
        return copy_avx2;
#endif
    return copy_memcpy;
}

/* Bytes per second of core A's copy of an n-byte buffer just written by
 * core B, into A's own buffer: the median of samples that alternate
 * between memcpy and the vector copy, the faster of the two (stored in
 * *with_memcpy: memcpy's alone). */
static double cross_copy(shared_t *s, size_t n, double *with_memcpy)
{
    enum { MAX_SAMPLES = 200 };
    double bw[2][MAX_SAMPLES];
    int ns[2] = { 0, 0 };
    void (*copies[2])(void *, const void *, size_t) = { copy_memcpy, vector_copy() };
    unsigned char *dst = xalloc(n);
    s->src = xalloc(n);
    s->n = n;
    double start = now_s();
    /* one unmeasured round per copy: first use of the buffers on both cores */
    for (int k = -2; k < MAX_SAMPLES && (k < 10 || now_s() - start < 0.3); k++) {
        int which = (k + 2) % 2;
        atomic_store_explicit(&s->phase, 1, memory_order_release);
        while (atomic_load_explicit(&s->phase, memory_order_acquire) != 2)
            ;
        double t0 = now_s();
        copies[which](dst, s->src, n);
        double t1 = now_s();
        sink ^= dst[n / 2];
        if (k >= 0)
            bw[which][ns[which]++] = (double)n / (t1 - t0);
    }
    atomic_store_explicit(&s->phase, 0, memory_order_relaxed);
    free(s->src);
    free(dst);
    double by_memcpy = median(bw[0], ns[0]), by_vector = median(bw[1], ns[1]);
    *with_memcpy = by_memcpy;
    return by_vector > by_memcpy ? by_vector : by_memcpy;
}

/* The first two CPUs this process may run on (the cores ranks 0 and 1
 * are bound to under --bind-to core). */
static int default_cpus(int *a, int *b)
{
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) != 0)
        return -1;
    int found = 0;
    for (int c = 0; c < CPU_SETSIZE && found < 2; c++)
        if (CPU_ISSET(c, &set))
            *(found++ ? b : a) = c;
    return found == 2 ? 0 : -1;
}

static int run_local(int argc, char **argv)
{
    int cpu_a, cpu_b, quick = 0;
    if (argc >= 1 && strcmp(argv[0], "--quick") == 0) {
        quick = 1;
        argc--;
        argv++;
    }
    if (argc >= 2 && strcmp(argv[0], "--cpus") == 0) {
        if (sscanf(argv[1], "%d,%d", &cpu_a, &cpu_b) != 2) {
            fprintf(stderr, "machine_state: --cpus wants A,B\n");
            return 2;
        }
    } else if (default_cpus(&cpu_a, &cpu_b) != 0) {
        fprintf(stderr, "machine_state: needs two usable cpus\n");
        return 1;
    }
    if (pin_to(cpu_a) != 0) {
        fprintf(stderr, "machine_state: cannot pin to cpu %d\n", cpu_a);
        return 1;
    }
    printf("CPUS a=%d b=%d\n", cpu_a, cpu_b);

    static const size_t msizes[] = { 64u << 10, 4u << 20, 64u << 20 };
    for (size_t i = 0; !quick && i < sizeof msizes / sizeof msizes[0]; i++)
        printf("MEMCPY bytes=%zu gbps=%.3f\n", msizes[i],
               memcpy_bandwidth(msizes[i]) / 1e9);
    fflush(stdout);

    static shared_t s;
    s.cpu_b = cpu_b;
    pthread_t th;
    if (pthread_create(&th, NULL, partner, &s) != 0) {
        fprintf(stderr, "machine_state: pthread_create failed\n");
        return 1;
    }
    printf("LINE_RTT ns=%.1f\n", line_rtt(&s) * 1e9);
    static const size_t xsizes[] = { 64u << 10, 1u << 20, 4u << 20,
                                     16u << 20, 64u << 20 };
    for (size_t i = 0; i < sizeof xsizes / sizeof xsizes[0]; i++) {
        if (quick && xsizes[i] != (1u << 20))
            continue;
        double with_memcpy;
        double best = cross_copy(&s, xsizes[i], &with_memcpy);
        printf("XCOPY bytes=%zu gbps=%.3f\n", xsizes[i], best / 1e9);
        printf("XCOPY_MEMCPY bytes=%zu gbps=%.3f\n", xsizes[i], with_memcpy / 1e9);
    }
    atomic_store(&s.quit, 1);
    pthread_join(th, NULL);
    return 0;
}

/* ------------------------------------------------------------------ */
/* point-to-point bandwidth (osu_bw's method)                          */
/* ------------------------------------------------------------------ */

enum { WINDOW = 64, TAG_DATA = 1, TAG_ACK = 2 };

/* One window: WINDOW messages of n bytes rank 0 -> 1, then an ack back. */
static void bw_window(int rank, unsigned char *buf, size_t n)
{
    MPI_Request req[WINDOW];
    for (int w = 0; w < WINDOW; w++) {
        if (rank == 0)
            MPI_Isend(buf, (int)n, MPI_BYTE, 1, TAG_DATA, MPI_COMM_WORLD,
                      &req[w]);
        else
            MPI_Irecv(buf, (int)n, MPI_BYTE, 0, TAG_DATA, MPI_COMM_WORLD,
                      &req[w]);
    }
    MPI_Waitall(WINDOW, req, MPI_STATUSES_IGNORE);
    if (rank == 0)
        MPI_Recv(NULL, 0, MPI_BYTE, 1, TAG_ACK, MPI_COMM_WORLD,
                 MPI_STATUS_IGNORE);
    else
        MPI_Send(NULL, 0, MPI_BYTE, 0, TAG_ACK, MPI_COMM_WORLD);
}

static int run_p2p(int argc, char **argv)
{
    size_t sizes[16];
    int nsizes = 0;
    const char *list = "1M,4M";
    if (argc >= 2 && strcmp(argv[0], "--sizes") == 0)
        list = argv[1];
    char buf[256];
    snprintf(buf, sizeof buf, "%s", list);
    for (char *t = strtok(buf, ","); t && nsizes < 16; t = strtok(NULL, ",")) {
        if (!(sizes[nsizes++] = parse_size(t)) || sizes[nsizes - 1] > (1u << 30)) {
            fprintf(stderr, "machine_state: bad size '%s'\n", t);
            return 2;
        }
    }

    MPI_Init(NULL, NULL);
    int rank, np;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    if (np != 2) {
        if (rank == 0)
            fprintf(stderr, "machine_state p2p: needs exactly 2 processes\n");
        MPI_Finalize();
        return 2;
    }
    for (int i = 0; i < nsizes; i++) {
        size_t n = sizes[i];
        unsigned char *b = xalloc(n);
        memset(b, rank + 1, n);
        /* warm-up windows (osu_bw skips some too): registration, first
         * touch of the transport's buffers */
        for (int k = 0; k < 2; k++)
            bw_window(rank, b, n);
        /* Samples of one window each for ~0.25 s; both ranks follow rank
         * 0's decision to go on, so they stay in step. */
        enum { MAX_SAMPLES = 64 };
        double bw[MAX_SAMPLES];
        int ns = 0, more = 1;
        double start = MPI_Wtime();
        while (more) {
            MPI_Barrier(MPI_COMM_WORLD);
            double t0 = MPI_Wtime();
            bw_window(rank, b, n);
            double t = MPI_Wtime() - t0;
            bw[ns++] = (double)n * WINDOW / t;
            more = ns < MAX_SAMPLES && (ns < 3 || MPI_Wtime() - start < 0.25);
            MPI_Bcast(&more, 1, MPI_INT, 0, MPI_COMM_WORLD);
        }
        if (rank == 0) {
            printf("P2P bytes=%zu gbps=%.3f samples=%d\n", n,
                   median(bw, ns) / 1e9, ns);
            fflush(stdout);
        }
        free(b);
    }
    MPI_Finalize();
    return 0;
}

int main(int argc, char **argv)
{
    if (argc >= 2 && strcmp(argv[1], "local") == 0)
        return run_local(argc - 2, argv + 2);
    if (argc >= 2 && strcmp(argv[1], "p2p") == 0)
        return run_p2p(argc - 2, argv + 2);
    fprintf(stderr, "usage: machine_state local [--quick] [--cpus A,B]\n"
                    "       mpirun -np 2 machine_state p2p [--sizes 1M,4M]\n");
    return 2;
}
