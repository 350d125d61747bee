/* hyb.c - does a Gather at np=2 gain from the sender pushing the tail of its
 * block by CMA while the ring is full?  Parent = root (own copy + drain),
 * child = sender.  Variants: q (ring only), h (ring + CMA push from the
 * back while the ring is full), c (CMA push of everything).
 *   hyb VARIANT BYTES ITERS  */
#define _GNU_SOURCE
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define SLOTS 256
#define FRAG 8192
#define CHUNK 65536

struct ctl {
    _Alignas(64) atomic_long start;   /* iteration the root released */
    _Alignas(64) atomic_long ready;   /* iteration the sender is ready for */
    _Alignas(64) atomic_long published; /* fragments published (front) */
    _Alignas(64) atomic_long consumed;  /* fragments consumed by the root */
    _Alignas(64) atomic_long split;     /* -1 until the sender is done; then the front count */
    _Alignas(64) atomic_long done;      /* iteration the sender finished */
};

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

static void pin(int cpu)
{
    cpu_set_t s;
    CPU_ZERO(&s);
    CPU_SET(cpu, &s);
    sched_setaffinity(0, sizeof s, &s);
}

int main(int argc, char **argv)
{
    char v = argv[1][0];
    size_t bytes = strtoul(argv[2], 0, 0);
    int iters = atoi(argv[3]);
    long nfrag = (long) (bytes / FRAG);
    struct ctl *c = mmap(0, sizeof *c, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    char *ring = mmap(0, (size_t) SLOTS * FRAG, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    memset(ring, 0, (size_t) SLOTS * FRAG);
    char *dst = aligned_alloc(4096, 2 * bytes), *own = aligned_alloc(4096, bytes);
    memset(dst, 0, 2 * bytes);
    atomic_store(&c->start, -1);
    atomic_store(&c->ready, -1);
    pid_t parent = getpid();
    pid_t kid = fork();
    if (kid == 0) {
        pin(1);
        char *src = aligned_alloc(4096, bytes);
        for (long it = 0; it < iters; it++) {
            memset(src, (int) (it + 1), bytes);
            atomic_store(&c->ready, it);
            while (atomic_load(&c->start) < it) ;
            long front = 0, back = nfrag;
            if (v == 'c') back = 0;
            while (front < back) {
                long free_slots = SLOTS - (front - atomic_load_explicit(&c->consumed, memory_order_acquire));
                if (free_slots > 0) {
                    memcpy(ring + (front % SLOTS) * FRAG, src + front * FRAG, FRAG);
                    front++;
                    atomic_store_explicit(&c->published, front, memory_order_release);
                } else if (v == 'h' && back - front > CHUNK / FRAG) {
                    back -= CHUNK / FRAG;
                    struct iovec l = {src + back * FRAG, CHUNK}, r = {dst + bytes + back * FRAG, CHUNK};
                    process_vm_writev(parent, &l, 1, &r, 1, 0);
                }
            }
            if (v == 'c') {
                for (size_t at = 0; at < bytes; at += CHUNK) {
                    struct iovec l = {src + at, CHUNK}, r = {dst + bytes + at, CHUNK};
                    process_vm_writev(parent, &l, 1, &r, 1, 0);
                }
            }
            atomic_store(&c->split, front);
            atomic_store(&c->done, it);
        }
        exit(0);
    }
    pin(0);
    double *t = malloc(sizeof(double) * iters);
    for (long it = 0; it < iters; it++) {
        memset(own, (int) (it + 7), bytes);
        atomic_store(&c->published, 0);
        atomic_store(&c->consumed, 0);
        atomic_store(&c->split, -1);
        while (atomic_load(&c->ready) < it) ;
        double t0 = now();
        atomic_store(&c->start, it);
        memcpy(dst, own, bytes);
        long i = 0;
        for (;;) {
            long pub = atomic_load_explicit(&c->published, memory_order_acquire);
            if (i < pub) {
                memcpy(dst + bytes + i * FRAG, ring + (i % SLOTS) * FRAG, FRAG);
                i++;
                atomic_store_explicit(&c->consumed, i, memory_order_release);
                continue;
            }
            long s = atomic_load_explicit(&c->split, memory_order_acquire);
            if (s >= 0 && i >= s && atomic_load(&c->done) == it) break;
        }
        t[it] = now() - t0;
        if (dst[bytes] != (char) (it + 1) || dst[2 * bytes - 1] != (char) (it + 1) || dst[0] != (char) (it + 7)) {
            fprintf(stderr, "wrong at %ld\n", it);
            return 1;
        }
    }
    waitpid(kid, 0, 0);
    /* median */
    for (int a = 0; a < iters; a++)
        for (int b = a + 1; b < iters; b++)
            if (t[b] < t[a]) { double x = t[a]; t[a] = t[b]; t[b] = x; }
    printf("%c bytes=%zu median_us=%.1f min_us=%.1f\n", v, bytes, t[iters / 2] * 1e6, t[0] * 1e6);
    return 0;
}
