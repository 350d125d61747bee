#!/usr/bin/env python3
"""Pools the BLOCK lines of `RTT=1 paired_ab` runs (bench/paired_ab.c) over
launches: per (op, bytes) and placement, the number of blocks and the
median B/A with its quartiles.  A block is "near" when the line round trip
timed just before it was under 250 ns (as `paired_ab`'s SPLIT lines count),
"far" otherwise.  (`alternate.py` splits its probes at 230 ns; on this VM
the placements sit at 60-150 and 380 ns or more, so both split alike.)

    RTT=1 FRESH=1 mpirun -np 2 ... paired_ab bcast 4194304 12 4 >> runs.txt
    python3 bench/paired_split.py runs.txt [more.txt ...]
"""

import collections
import statistics
import sys

NEAR_BELOW_NS = 250.0


def main(paths):
    for path in paths:
        cells = collections.defaultdict(list)
        with open(path) as f:
            for line in f:
                x = line.split()
                # BLOCK op bytes rtt R A a B b B/A r
                if len(x) < 11 or x[0] != "BLOCK":
                    continue
                where = "near" if float(x[4]) < NEAR_BELOW_NS else "far"
                cells[(x[1], int(x[2]), where)].append(float(x[10]))
        print(path)
        for (op, size, where), ratios in sorted(cells.items()):
            r = sorted(ratios)
            print(
                f"  {op:<10} {size:>9} {where:<4} n={len(r):>3} "
                f"B/A med {statistics.median(r):.3f} "
                f"q1 {r[len(r) // 4]:.3f} q3 {r[3 * len(r) // 4]:.3f}"
            )


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    main(sys.argv[1:])
