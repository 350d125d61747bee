#!/usr/bin/env python3
"""Tables of alternated-launch runs (the ab/ scripts kept with the runs in
docs/benchmark/): per (op, np, bytes), the median over rounds of each
configuration's median_us, and its ratio to BASE's (default: tuned).

usage: ab_table.py FILE [BASE]

FILE holds one line per configuration, round and cell:
  <configuration> r=<round> op=<op> bytes=<n> np=<n> median_us=<t>
"""
import collections
import re
import statistics
import sys


def main():
    if len(sys.argv) not in (2, 3):
        sys.exit(__doc__)
    base_name = sys.argv[2] if len(sys.argv) == 3 else "tuned"
    runs = collections.defaultdict(list)
    configs = []
    for line in open(sys.argv[1]):
        fields = line.split()
        if not fields:
            continue
        kv = dict(re.findall(r"(\w+)=([\w.]+)", line))
        if "median_us" not in kv:
            continue
        config = fields[0]
        if config not in configs:
            configs.append(config)
        cell = (kv["op"], int(kv["np"]), int(kv["bytes"]))
        runs[cell + (config,)].append(float(kv["median_us"]))
    print("op np bytes " + " ".join(configs))
    for cell in sorted({key[:3] for key in runs}):
        med = {c: statistics.median(runs[cell + (c,)]) for c in configs if runs.get(cell + (c,))}
        base = med.get(base_name)
        shown = (f"{c}={t:.4g}" + (f"({t / base:.2f})" if base else "") for c, t in med.items())
        print(*cell, " ".join(shown))


if __name__ == "__main__":
    main()
