#!/usr/bin/env python3
"""Markdown table of one benchmark run for the README's "Latest run".

usage: python3 bench/readme_table.py OUT_DIR/results.csv [--np 2]
                                     [--column median_us|near_us|far_us]

Reads the results.csv that bench/report.py writes (ci/bench.sh) and prints
one row per operation and size at the given process count (default 2):

  * the median µs (column median_us) of sharm, tuned, sm, MPICH (config
    "mpich") and Intel MPI (config "impi");
  * "sharm / best other": sharm's time over the fastest of tuned, sm, MPICH
    and Intel MPI (issue 11's comparison; adapt is not in it), with that
    library named; bold when the printed ratio is above 1.00;
  * "% of limit": sharm's pct_of_limit column (its share of the single-copy
    limit measured in the same run), for sizes of 1 MiB and more.

results.csv already holds one row per (op, np, bytes, config): report.py
takes the median of the launches' medians (bench/report.py, aggregate()).
If a file holds several rows for one cell (CSVs appended together), they
are combined by the same rule: the median of their median_us.

--column near_us (far_us) takes instead the median over the iterations
that began with the cores near (far), as sharm_bench's per-iteration
probe labelled them (bench/report.py, placement_split); the "% of limit"
column then stays empty, as the limit was measured in one placement.

After the table it prints how many cells are at or below the best other
library and at or below tuned.  Only the standard library is used.
"""

import argparse
import csv
import statistics
import sys
from collections import defaultdict

# Times print as bench/report.py prints them (about 3 figures).
from report import fmt_us

OPS = ["bcast", "reduce", "allreduce", "allgather", "gather", "scatter",
       "alltoall", "reduce_scatter_block", "scan", "exscan", "allgatherv",
       "gatherv", "scatterv", "alltoallv", "reduce_scatter", "barrier"]
NAMES = {"reduce_scatter_block": "Reduce_scatter_block",
         "reduce_scatter": "Reduce_scatter"}
OTHERS = [("tuned", "tuned"), ("sm", "sm"), ("mpich", "MPICH"),
          ("impi", "Intel MPI")]


def op_name(op):
    return NAMES.get(op, op.capitalize())


def size_label(op, n):
    if op == "barrier":
        return "–"
    for unit, shift in (("MiB", 20), ("KiB", 10)):
        if n >= 1 << shift and n % (1 << shift) == 0:
            return f"{n >> shift} {unit}"
    return f"{n} B"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("csv", help="results.csv of a run (docs/benchmark/<dir>/)")
    ap.add_argument("--np", default="2", help="process count (default 2)")
    ap.add_argument("--column", default="median_us",
                    choices=("median_us", "near_us", "far_us"),
                    help="the figure compared (default median_us)")
    args = ap.parse_args()

    times = defaultdict(list)   # (op, bytes, config) -> [median_us, ...]
    pct = defaultdict(list)     # (op, bytes) -> [sharm pct_of_limit, ...]
    with open(args.csv, newline="") as f:
        for r in csv.DictReader(f):
            if (r["np"] != args.np or r["status"] != "OK"
                    or not r.get(args.column)):
                continue
            key = (r["op"], int(r["bytes"]))
            times[key + (r["config"],)].append(float(r[args.column]))
            if (r["config"] == "sharm" and r.get("pct_of_limit")
                    and args.column == "median_us"):
                pct[key].append(float(r["pct_of_limit"]))

    def med(key):
        v = times.get(key)
        return statistics.median(v) if v else None

    cells = sorted({(op, b) for op, b, c in times if c == "sharm"},
                   key=lambda k: (OPS.index(k[0]) if k[0] in OPS else 99,
                                  k[1]))
    if not cells:
        sys.exit(f"no sharm rows at np={args.np} in {args.csv}")

    print("| op | size | sharm | " + " | ".join(n for _, n in OTHERS)
          + " | sharm / best other | % of limit |")
    print("|---|---|" + "---:|" * (len(OTHERS) + 3))
    won = won_t = total = total_t = 0
    for op, b in cells:
        s = med((op, b, "sharm"))
        others = [(med((op, b, c)), n) for c, n in OTHERS]
        present = [x for x in others if x[0] is not None]
        ratio = "–"
        if present:
            best, who = min(present)
            q = f"{s / best:.2f}"
            ratio = (f"**{q}** ({who})" if float(q) > 1.0 else f"{q} ({who})")
            total += 1
            won += s <= best
        t = med((op, b, "tuned"))
        if t is not None:
            total_t += 1
            won_t += s <= t
        p = (f"{statistics.median(pct[(op, b)]):.0f} %"
             if b >= 1 << 20 and pct.get((op, b)) else "")
        print(f"| {op_name(op)} | {size_label(op, b)} | {fmt_us(s)} | "
              + " | ".join(fmt_us(v) for v, _ in others)
              + f" | {ratio} | {p} |")
    print(f"\nnp={args.np} ({args.column}): sharm at or below the best of "
          f"{', '.join(n for _, n in OTHERS)} in {won} of {total} cells, "
          f"at or below tuned in {won_t} of {total_t}.")


if __name__ == "__main__":
    main()
