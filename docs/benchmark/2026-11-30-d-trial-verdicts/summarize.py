#!/usr/bin/env python3
"""Summarises sharm_bench launches at coll_sharm_verbose 100: per launch,
each size class's trial calls in order (Q/S: the queues / single copy;
c/n: landing cached / non-temporal; times in us, per process), the
verdict, and the benchmark's median afterwards.

    python3 summarize.py trace1.txt trace2.txt ...
"""
import collections
import re
import sys

SHORT = [("the queues", "Q"), ("single copy", "S"), (" landing cached", "c"),
         (" landing non-temporal", "n"), ("landing cached", "c"), ("landing non-temporal", "n")]


def short(route):
    for a, b in SHORT:
        route = route.replace(a, b)
    return route


for path in sys.argv[1:]:
    print(f"== {path}")
    seq = collections.defaultdict(list)
    verdicts, results = [], []
    for line in open(path):
        m = re.search(r"\[vm:(\d+)\].*?(MPI_\w+) of (\d+) bytes in all: trial on (.*) took ([\d.]+) us", line)
        if m:
            seq[(m[2], int(m[3]), m[1])].append(f"{short(m[4])}:{float(m[5]):.0f}")
            continue
        m = re.search(r"sharm: (MPI_\w+ of \S+ bytes in all: .*?) \(the slowest.*?\): (.*?) from now on", line)
        if m and (m[1], m[2]) not in verdicts:
            verdicts.append((m[1], m[2]))
            continue
        m = re.search(r"RESULT op=(\w+) bytes=(\d+) .*?median_us=([\d.]+).*?rtt_ns=(\S+)", line)
        if m:
            results.append(f"{m[1]} {m[2]} B a block: median {m[3]} us (rtt {m[4]} ns)")
    for (op, nbytes, pid), calls in sorted(seq.items()):
        print(f"{op} {nbytes} process {pid}: {' '.join(calls)}")
    for times, route in verdicts:
        print(f"verdict: {short(times)} -> {short(route)}")
    for r in results:
        print(r)
    print()
