/* line_probe.h - the cache line ping between ranks 0 and 1 that tells
 * whether this VM's host has placed their cores near or far (see
 * sharm_bench.c's file comment, "Placement"), shared by sharm_bench.c
 * (before every iteration) and paired_ab.c (before every block). */
#ifndef SHARM_BENCH_LINE_PROBE_H
#define SHARM_BENCH_LINE_PROBE_H

#include <stdatomic.h>
#include <time.h>

/* The cut between near and far round trips: the VM's near placements
 * measure 40-160 ns, its far ones 400-550 (Zen 3 and Zen 4 hosts alike);
 * bench/paired_split.py splits at the same place. */
#define PROBE_NEAR_NS 250.0

/* `rounds` round trips of one line: rank 0 (`me`) writes line[0] and waits
 * for rank 1's answer in line[8] (a cache line further on), rank 1 answers,
 * other ranks must not call.  `line` points into a window both share,
 * `*seq` counts the rounds (the same on both ranks, starting from the
 * words' common value).  Returns the least round trip in ns at rank 0 (a
 * descheduled moment only ever adds time), 0 at rank 1.  Sequentially
 * consistent atomics: each store must be seen before its answer can come,
 * which is all the probe times. */
static inline double line_round_trip_ns(_Atomic long *line, int me, long *seq,
                                        int rounds)
{
    double best = 1e12;
    for (int k = 0; k < rounds; k++) {
        long v = ++*seq;
        if (me == 0) {
            struct timespec a, b;
            clock_gettime(CLOCK_MONOTONIC, &a);
            atomic_store(&line[0], v);
            while (atomic_load(&line[8]) != v)
                ;
            clock_gettime(CLOCK_MONOTONIC, &b);
            double d = (b.tv_sec - a.tv_sec) * 1e9 + (b.tv_nsec - a.tv_nsec);
            if (d < best)
                best = d;
        } else {
            while (atomic_load(&line[0]) != v)
                ;
            atomic_store(&line[8], v);
        }
    }
    return me == 0 ? best : 0.0;
}

#endif
