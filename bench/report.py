#!/usr/bin/env python3
"""Turns the raw output of ci/bench.sh into tables, a CSV file and plots.

usage: report.py OUT_DIR [--metric median|span|osu]
       report.py --state STATE_FILE [--sizes LIST]

--metric picks the figure used in tables, ratios and plots: "median"
(default: median over iterations of the slowest rank's call duration),
"span" (median over iterations of last exit - first entry across ranks)
or "osu" (OSU's figure: mean over ranks of each rank's mean duration).

--state prints the one-line summary of a machine-state file and the
single-copy limit for each size of LIST (ci/bench.sh calls it when it has
measured the state).

Reads (all written by ci/bench.sh):
  OUT/results.txt   "config=<c> launch=<id> RESULT|WRONG|INFO ..." lines
  OUT/launches.txt  one "LAUNCH ..." line per MPI launch
  OUT/configs.txt   one "CONFIG name=... status=... reason=..." per config
  OUT/state-start.txt, OUT/state-end.txt
                    bench/machine_state output (MEMCPY, LINE_RTT, XCOPY,
                    P2P mech=cma|none lines) before and after the run
  OUT/meta.txt      machine / sweep description
  OUT/probes.txt    PROBE launch= when=before|after line_rtt_ns=
                    xcopy_1m_gbps=: the quick state probe around every launch
  OUT/sim-configs.txt  (ci/bench.sh --sim-nodes) each configuration's layout
                    and what sharm's counters must show (hier, flat, none);
                    results.txt then also has COUNTERS, REMAP and TREE lines
Writes:
  OUT/results.csv   op,np,bytes,config,median_us,min_us,mean_us,max_us,
                    span_us,osu_avg_us,iters,status,runs,method,limit_us,
                    pct_of_limit, then the machine state at the start
                    (state_* columns, the same on every row, so rows of
                    runs in different states can be merged and told apart),
                    and launch_line_rtt_ns: the line round trip probed
                    before and after each launch behind the row
                    ("102-98/398-402/110-101")
                    near_us, near_iters, far_us, far_iters: the same
                    median over only the iterations that began with the
                    cores near or far (sharm_bench's per-iteration probe;
                    empty for OSU's loop and crowded or multi-node runs)
  OUT/results-fast.csv, OUT/results-slow.csv  when launches ran in two
                    states: the rows again from each state's launches alone
                    (status OK, WRONG, FAILED or TIMEOUT)
  OUT/plots/*.png   latency vs size per (op, np), plus barrier vs np
  OUT/sim-counters.csv  (--sim-nodes) sharm's counters per config, op, size

In a simulated-nodes run the report prints its own section instead of the
single-node tables, and exits 1 when a sharm configuration has no counters.

Exit status 1 if any configuration produced a WRONG result, else 0.
"""

import csv
import math
import os
import re
import shutil
import subprocess
import sys
from collections import defaultdict

OPS = ["bcast", "reduce", "allreduce", "allgather", "gather", "scatter",
       "alltoall", "reduce_scatter_block", "scan", "exscan", "allgatherv",
       "gatherv", "scatterv", "alltoallv", "reduce_scatter", "barrier"]
# Column order; unknown configs go last.
CONFIG_ORDER = [
    "sharm", "sharm-hier", "sharm-ompi-kernels",
    "sharm-bcast-linear", "sharm-bcast-knomial",
    "sharm-reduce-linear", "sharm-reduce-knomial",
    "sharm-allreduce-linear", "sharm-allreduce-knomial",
    "tuned", "sm", "han", "adapt", "mpich", "impi",
]
# Fields of one aggregated result; the CSV adds the derived and state
# columns after them.
RESULT_FIELDS = ["op", "np", "bytes", "config", "median_us", "min_us",
                 "mean_us", "max_us", "span_us", "osu_avg_us", "iters",
                 "status", "runs", "near_us", "near_iters", "far_us",
                 "far_iters"]
# Placements of the two processes' cores that sharm_bench's per-iteration
# probe tells apart (its file comment): the RESULT fields <p>_us and
# <p>_iters.  A launch's figure for a placement counts towards a row only
# when at least PLACED_MIN_ITERS of its iterations began there.
PLACEMENTS = ("near", "far")
PLACED_MIN_ITERS = 5
# Machine state in the CSV: (column, kind, key) read from state-start.txt.
STATE_COLUMNS = [
    ("state_memcpy_64k_gbps", "memcpy", 64 << 10),
    ("state_memcpy_4m_gbps", "memcpy", 4 << 20),
    ("state_memcpy_64m_gbps", "memcpy", 64 << 20),
    ("state_line_rtt_ns", "rtt", None),
    ("state_xcopy_1m_gbps", "xcopy", 1 << 20),
    ("state_xcopy_4m_gbps", "xcopy", 4 << 20),
    ("state_xcopy_16m_gbps", "xcopy", 16 << 20),
    ("state_p2p_2copy_1m_gbps", "p2p", ("none", 1 << 20)),
    ("state_p2p_2copy_4m_gbps", "p2p", ("none", 4 << 20)),
    ("state_p2p_cma_1m_gbps", "p2p", ("cma", 1 << 20)),
    ("state_p2p_cma_4m_gbps", "p2p", ("cma", 4 << 20)),
]
CSV_FIELDS = (RESULT_FIELDS + ["method", "limit_us", "pct_of_limit"]
              + [c for c, _, _ in STATE_COLUMNS] + ["launch_line_rtt_ns"])
# Line round trips of the probes around the launches that differ by this
# ratio across the widest gap between them belong to two states of the
# machine (see slow_threshold).
PROBE_RTT_SPREAD = 1.5
# Worst status wins when a row aggregates several launches.
STATUS_RANK = {"OK": 0, "FAILED": 1, "TIMEOUT": 2, "WRONG": 3}

KV = re.compile(r'(\w+)=("[^"]*"|\S+)')


def parse_kv(line):
    """key=value tokens of a line; quoted values lose their quotes."""
    return {k: v.strip('"') for k, v in KV.findall(line)}


def read_lines(path):
    if not os.path.exists(path):
        return []
    with open(path, encoding="utf-8", errors="replace") as f:
        return [l.rstrip("\n") for l in f]


def parse_size(text):
    m = re.fullmatch(r"(\d+)([KkMmGg]?)[Bb]?", text)
    if not m:
        raise ValueError(f"bad size {text!r}")
    return int(m.group(1)) << {"": 0, "k": 10, "m": 20, "g": 30}[
        m.group(2).lower()]


def is_sharm(cfg):
    return cfg.startswith("sharm")


def config_key(cfg):
    return (CONFIG_ORDER.index(cfg) if cfg in CONFIG_ORDER
            else len(CONFIG_ORDER), cfg)


def fmt_size(n):
    for unit, shift in (("M", 20), ("K", 10)):
        if n >= 1 << shift and n % (1 << shift) == 0:
            return f"{n >> shift}{unit}"
    return str(n)


def fmt_us(v):
    if v is None:
        return "-"
    if v < 10:
        return f"{v:.2f}"
    if v < 1000:
        return f"{v:.1f}"
    return f"{v:.0f}"


# ------------------------------------------------------------------ input

def median(values):
    """The median of a non-empty iterable of numbers (the mean of the
    middle two for an even count)."""
    v = sorted(values)
    k = len(v)
    return v[k // 2] if k % 2 else 0.5 * (v[k // 2 - 1] + v[k // 2])


def aggregate(runs):
    """One row from the per-launch rows of the same (op, np, bytes, config):
    median of the launches' medians, min of mins, iteration-weighted mean,
    max of maxes.  Any non-OK launch makes the whole row non-OK (a config
    that fails or is wrong only sometimes must not look healthy)."""
    first = runs[0]
    row = {f: "" for f in RESULT_FIELDS}
    row.update(op=first["op"], np=first["np"], bytes=first["bytes"],
               config=first["config"], runs=len(runs))
    row["status"] = max((r["status"] for r in runs),
                        key=lambda st: STATUS_RANK.get(st, 1))
    if row["status"] != "OK":
        return row
    def med_of(field):
        return median(float(r[field]) for r in runs)

    med = med_of("median_us")
    span = med_of("span_us") if all(r["span_us"] for r in runs) else None
    osu = med_of("osu_avg_us") if all(r["osu_avg_us"] for r in runs) else None
    iters = [int(r["iters"]) for r in runs]
    mean = (sum(float(r["mean_us"]) * i for r, i in zip(runs, iters))
            / sum(iters))
    row.update(median_us=f"{med:.3f}",
               min_us=f"{min(float(r['min_us']) for r in runs):.3f}",
               mean_us=f"{mean:.3f}",
               max_us=f"{max(float(r['max_us']) for r in runs):.3f}",
               span_us="" if span is None else f"{span:.3f}",
               osu_avg_us="" if osu is None else f"{osu:.3f}",
               iters=sum(iters))
    for place in PLACEMENTS:
        counted = [r for r in runs if r.get(f"{place}_us")
                   and int(r.get(f"{place}_iters") or 0) >= PLACED_MIN_ITERS]
        if counted:
            m = median(float(r[f"{place}_us"]) for r in counted)
            row[f"{place}_us"] = f"{m:.3f}"
            row[f"{place}_iters"] = sum(int(r[f"{place}_iters"]) for r in counted)
    return row


def load(out):
    """Returns (rows, wrongs, launches, configs, infos)."""
    per_launch = {}    # (op, np, bytes, config, launch) -> row dict
    wrongs = []        # WRONG detail lines (dicts)
    infos = {}         # config -> library string
    for line in read_lines(os.path.join(out, "results.txt")):
        kv = parse_kv(line)
        if " RESULT " in line:
            key = (kv["op"], int(kv["np"]), int(kv["bytes"]), kv["config"])
            row = {f: kv.get(f, "") for f in RESULT_FIELDS}
            row.update(op=key[0], np=key[1], bytes=key[2], config=key[3])
            per_launch[key + (kv["launch"],)] = row
        elif " WRONG " in line:
            wrongs.append(kv)
        elif " INFO " in line:
            infos[kv["config"]] = kv.get("library", "")

    launches = [parse_kv(l) for l in
                read_lines(os.path.join(out, "launches.txt"))]
    # Every (op, size) a launch was asked for and did not report is a
    # FAILED (or TIMEOUT) row, so a crash at one size is visible as such.
    for la in launches:
        np_ = int(la["np"])
        ops = la["ops"].split(",")
        sizes = [parse_size(s) for s in la["sizes"].split(",")]
        wanted = [(op, 0) if op == "barrier" else None for op in ops]
        wanted = [w for w in wanted if w] + [
            (op, b) for b in sizes for op in ops if op != "barrier"]
        status = "TIMEOUT" if la["status"] == "timeout" else "FAILED"
        for op, b in wanted:
            key = (op, np_, b, la["config"], la["launch"])
            if key not in per_launch:
                per_launch[key] = {f: "" for f in RESULT_FIELDS}
                per_launch[key].update(op=op, np=np_, bytes=b,
                                       config=la["config"], status=status)

    rows = aggregate_launches(per_launch)
    configs = [parse_kv(l) for l in
               read_lines(os.path.join(out, "configs.txt"))]
    return rows, wrongs, launches, configs, infos, per_launch


def launch_round(launch):
    """(size group, round) of a launch id ("np2-g3-r1-sharm"), or None."""
    m = re.match(r"np\d+-g(\d+)-r(\d+)-", launch)
    return (int(m.group(1)), int(m.group(2))) if m else None


def aggregate_launches(per_launch, keep=None):
    """Rows from per-launch rows ((op, np, bytes, config, launch) -> row),
    only the launches `keep(launch)` accepts when given.  Each row
    remembers its launches, to name the state each ran in (probes.txt)."""
    grouped = defaultdict(list)
    launch_ids = defaultdict(list)
    for key, row in per_launch.items():
        if keep is None or keep(key[4]):
            grouped[key[:4]].append(row)
            launch_ids[key[:4]].append(key[4])
    rows = {key: aggregate(runs) for key, runs in grouped.items()}
    for key, ids in launch_ids.items():
        rows[key]["launches"] = sorted(ids, key=lambda i: launch_round(i) or (0, 0))
    return rows


METRIC = "median_us"   # or "span_us" / "osu_avg_us" (--metric)
METRIC_NAMES = {"median": "median_us", "span": "span_us", "osu": "osu_avg_us"}


def value_of(row, field):
    if row is None or row.get("status") != "OK":
        return None
    try:
        v = float(row[field])
    except (KeyError, ValueError):
        return None
    return v if v > 0 else None


def median_of(row):
    """The figure tables, ratios and plots use (see --metric)."""
    return value_of(row, METRIC)


def skew_flattered(row):
    """True when the span is much longer than the per-rank figure: every
    rank found its data ready because ranks left the barrier far apart, so
    the per-rank figure flatters the implementation."""
    med, span = value_of(row, "median_us"), value_of(row, "span_us")
    return (METRIC == "median_us" and med is not None and span is not None
            and span > 2 * med + 1.0)


# ----------------------------------------------------- machine state, limit

def read_state(path):
    """Parses a bench/machine_state file (see ci/bench.sh measure_state):
    {"memcpy": {bytes: GB/s}, "xcopy": {bytes: GB/s}, "rtt": ns,
     "p2p": {(mech, bytes): GB/s}, "failed": [part, ...], "date": str}.
    None when the file does not exist."""
    if not os.path.exists(path):
        return None
    st = {"memcpy": {}, "xcopy": {}, "rtt": None, "p2p": {}, "failed": [],
          "date": ""}
    for line in read_lines(path):
        kv = parse_kv(line)
        try:
            if line.startswith("MEMCPY "):
                st["memcpy"][int(kv["bytes"])] = float(kv["gbps"])
            elif line.startswith("XCOPY "):
                st["xcopy"][int(kv["bytes"])] = float(kv["gbps"])
            elif line.startswith("LINE_RTT "):
                st["rtt"] = float(kv["ns"])
            elif line.startswith("P2P "):
                st["p2p"][(kv["mech"], int(kv["bytes"]))] = float(kv["gbps"])
            elif line.startswith("FAILED "):
                st["failed"].append(kv.get("part", "?"))
            elif line.startswith("PHASE "):
                st["date"] = kv.get("date", "")
        except (KeyError, ValueError):
            st["failed"].append(f"unreadable line {line!r}")
    return st


def state_value(st, kind, key):
    if st is None:
        return None
    if kind == "rtt":
        return st["rtt"]
    return st[kind].get(key)


def fmt_gbps(v):
    return "?" if v is None else (f"{v:.1f}" if v < 100 else f"{v:.0f}")


def state_summary(st):
    """The one-line summary README figures can name."""
    def series(kind, sizes, mech=None):
        keys = [(mech, b) if mech else b for b in sizes]
        return ("/".join(fmt_size(b) for b in sizes) + " "
                + "/".join(fmt_gbps(st[kind].get(k)) for k in keys) + " GB/s")
    rtt = "?" if st["rtt"] is None else f"{st['rtt']:.0f}"
    line = ("state: memcpy " + series("memcpy", [64 << 10, 4 << 20, 64 << 20])
            + f", line RTT {rtt} ns"
            + ", cross-core copy " + series("xcopy", [1 << 20, 4 << 20, 16 << 20])
            + ", p2p 2-copy " + series("p2p", [1 << 20, 4 << 20], "none")
            + ", CMA " + series("p2p", [1 << 20, 4 << 20], "cma"))
    if st["failed"]:
        line += " (FAILED: " + ", ".join(st["failed"]) + ")"
    return line


def vblock(n, r):
    """Rank r's block in Allgatherv/Gatherv/Scatterv, and the block between
    s and d in Alltoallv as vblock(n, s + d) (as in sharm_bench.c)."""
    return (n * (1 + r % 3) + 1) // 2


def reader_bytes(op, n, np_):
    """Bytes the busiest receiving rank must at least receive."""
    if op in ("gather", "allgather", "alltoall", "reduce_scatter_block"):
        return (np_ - 1) * n
    if op in ("allgatherv", "gatherv"):
        blocks = [vblock(n, r) for r in range(np_)]
        # gatherv: the root (rank 0) gets all other blocks; allgatherv: the
        # rank with the smallest own block gets the most
        own = blocks[0] if op == "gatherv" else min(blocks)
        return sum(blocks) - own
    if op == "scatterv":
        # the root is rank 0; the largest other block
        return max((vblock(n, r) for r in range(1, np_)), default=0)
    if op == "alltoallv":
        return max(sum(vblock(n, s + d) for s in range(np_) if s != d)
                   for d in range(np_))
    if op == "reduce_scatter":
        # rank r gets p-1 contributions of its own float_count block
        return max((np_ - 1) * 4 * max(1, vblock(n, r) // 4)
                   for r in range(np_))
    if op == "barrier":
        return 0
    return n   # bcast, scatter, reduce, allreduce, scan, exscan


def single_copy_us(nbytes, xcopy):
    """The single-copy limit: time for the receiver to copy nbytes written
    by another core, at the cross-core copy bandwidth measured at the size
    nearest (in log scale)."""
    if not xcopy or nbytes <= 0:
        return None
    ref = min(xcopy, key=lambda s: abs(math.log(s) - math.log(nbytes)))
    return nbytes / (xcopy[ref] * 1e9) * 1e6


def limit_us(op, n, np_, xcopy):
    """Single-copy limit of one (op, size, np): the busiest reader's bytes
    copied once at the cross-core bandwidth."""
    return single_copy_us(reader_bytes(op, n, np_), xcopy)


def drift(start, end):
    """Figures that changed by more than 25% between the two state
    measurements: [(name, before, after)]."""
    out = []
    if start is None or end is None:
        return out
    for col, kind, key in STATE_COLUMNS:
        a, b = state_value(start, kind, key), state_value(end, kind, key)
        if a and b and not 0.8 <= b / a <= 1.25:
            out.append((col[len("state_"):], a, b))
    return out


def state_main(path, sizes):
    st = read_state(path)
    if st is None:
        print(f"report: no state file {path}")
        return 1
    print("bench: " + state_summary(st))
    if sizes:
        lim = [(n, single_copy_us(n, st["xcopy"])) for n in sizes
               if n >= 64 << 10]
        lim = [(n, v) for n, v in lim if v is not None]
        if lim:
            print("bench: single-copy limit (receiver copies n bytes at the "
                  "cross-core copy bandwidth): " + ", ".join(
                      f"{fmt_size(n)} {fmt_us(v)} us" for n, v in lim))
    return 1 if st["failed"] else 0


# ----------------------------------------------------------------- tables

def cell(row):
    if row is None:
        return "."
    st = row["status"]
    if st == "OK":
        return fmt_us(median_of(row)) + ("*" if skew_flattered(row) else "")
    return {"WRONG": "WRONG", "TIMEOUT": "T/O"}.get(st, "FAIL")


def ratio(a, b):
    if a is None or b is None or b <= 0:
        return "-"
    return f"{a / b:.2f}"


def print_table(op, np_, rows, xcopy):
    sel = {k: r for k, r in rows.items() if k[0] == op and k[1] == np_}
    if not sel:
        return
    configs = sorted({k[3] for k in sel}, key=config_key)
    sizes = sorted({k[2] for k in sel})
    others = [c for c in configs if not is_sharm(c)]
    show_copy = op != "barrier" and any(s >= 1 << 20 for s in sizes)

    show_copy = show_copy and bool(xcopy)
    # 1copy-lim (and sharm's % of it) go right next to sharm's figure (or
    # first, without sharm)
    copy_after = "sharm" if "sharm" in configs else None
    head = ["size"]
    if show_copy and copy_after is None:
        head.append("1copy-lim")
    for c in configs:
        # the table is per op: "sharm-bcast-linear" -> "sharm-linear"
        head.append(c.replace(f"sharm-{op}-", "sharm-"))
        if c == copy_after and show_copy:
            head += ["1copy-lim", "%lim"]
    # sharm's reduction kernels on/off (issue 12)
    kernels_off = "sharm" in configs and "sharm-ompi-kernels" in configs
    if kernels_off:
        head.append("sharm/ompi-kernels")
    if "sharm" in configs and "tuned" in configs:
        head.append("sharm/tuned")
    if "sharm" in configs and others:
        head.append("sharm/best-other")
    lines = []
    for b in sizes:
        line = ["-" if op == "barrier" else fmt_size(b)]
        lim = limit_us(op, b, np_, xcopy) if b >= 1 << 20 else None
        s = median_of(sel.get((op, np_, b, "sharm")))
        if show_copy and copy_after is None:
            line.append(fmt_us(lim) if lim else "")
        for c in configs:
            line.append(cell(sel.get((op, np_, b, c))))
            if c == copy_after and show_copy:
                line.append(fmt_us(lim) if lim else "")
                line.append(f"{100 * lim / s:.0f}%" if lim and s else "")
        if kernels_off:
            line.append(ratio(s, median_of(
                sel.get((op, np_, b, "sharm-ompi-kernels")))))
        if "sharm" in configs and "tuned" in configs:
            line.append(ratio(s, median_of(sel.get((op, np_, b, "tuned")))))
        if "sharm" in configs and others:
            best = [(median_of(sel.get((op, np_, b, c))), c) for c in others]
            best = [x for x in best if x[0] is not None]
            if best and s is not None:
                v, name = min(best)
                line.append(f"{s / v:.2f} ({name})")
            else:
                line.append("-")
        lines.append(line)

    widths = [max(len(r[i]) for r in [head] + lines)
              for i in range(len(head))]
    what = {"median_us": "median", "span_us": "span",
            "osu_avg_us": "OSU-style rank-average"}[METRIC]
    print(f"\n== {op}  np={np_}  ({what} latency, us; lower is better)")
    if op in ("allgatherv", "gatherv", "scatterv", "reduce_scatter"):
        print("  size = nominal block n; rank r's block holds "
              "n*(1 + r mod 3)/2 bytes")
    elif op == "alltoallv":
        print("  size = nominal block n; the block from s to d holds "
              "n*(1 + (s+d) mod 3)/2 bytes")
    elif op == "reduce_scatter_block":
        print("  size = each rank's result block")
    for r in [head] + lines:
        print("  ".join(v.rjust(w) for v, w in zip(r, widths)).rstrip())
    if show_copy:
        print("  1copy-lim = single-copy limit (busiest reader's bytes at the "
              "cross-core copy bandwidth)"
              + ("; %lim = 1copy-lim / sharm" if copy_after else ""))
    if any(skew_flattered(r) for r in sel.values()):
        print("  * span (first entry -> last exit) > 2x this figure: ranks "
              "left the barrier far apart and found data ready; compare "
              "span_us in the CSV or use --metric span")


# ------------------------------------------------------------------ plots

def gnuplot_terminal():
    for term in ("pngcairo size 900,600 font ',10'", "png size 900,600"):
        probe = subprocess.run(["gnuplot", "-e", f"set terminal {term}"],
                               capture_output=True, text=True)
        if probe.returncode == 0 and not probe.stderr.strip():
            return term
    return None


def write_plots(out, rows):
    """One PNG per (op, np) of latency vs size, plus barrier vs np.
    Returns the list of PNG paths written."""
    if not shutil.which("gnuplot"):
        print("\nreport: gnuplot not found, no plots")
        return []
    term = gnuplot_terminal()
    if term is None:
        print("\nreport: gnuplot has no png terminal, no plots")
        return []
    pdir = os.path.join(out, "plots")
    ddir = os.path.join(pdir, "data")
    os.makedirs(ddir, exist_ok=True)

    series = defaultdict(list)   # (op, np, config) -> [(bytes, us)]
    for (op, np_, b, c), r in rows.items():
        v = median_of(r)
        if v is not None:
            series[(op, np_, c)].append((b, v))

    script = [f"set terminal {term}", "set logscale y", "set grid",
              "set key outside right", f"set ylabel '{METRIC[:-3]} latency (us)'"]
    pngs = []
    for op, np_ in sorted({(k[0], k[1]) for k in series if k[0] != "barrier"},
                          key=lambda x: (OPS.index(x[0]) if x[0] in OPS
                                         else 99, x[1])):
        cfgs = sorted({k[2] for k in series if k[:2] == (op, np_)},
                      key=config_key)
        plots = []
        for c in cfgs:
            dat = os.path.join(ddir, f"{op}_np{np_}_{c}.dat")
            with open(dat, "w") as f:
                for b, v in sorted(series[(op, np_, c)]):
                    f.write(f"{b} {v}\n")
            width = 3 if c == "sharm" else 1.5
            plots.append(f"'{dat}' using 1:2 with linespoints lw {width} "
                         f"title '{c}'")
        png = os.path.join(pdir, f"{op}_np{np_}.png")
        pngs.append(png)
        script += [f"set output '{png}'", "set logscale x 2",
                   "set format x '%.0b%B'", "set xlabel 'message size (bytes)'",
                   f"set title '{op}, np={np_} (lower is better)'",
                   "plot " + ", \\\n  ".join(plots)]

    bar = sorted({k[2] for k in series if k[0] == "barrier"}, key=config_key)
    if bar:
        plots = []
        for c in bar:
            dat = os.path.join(ddir, f"barrier_{c}.dat")
            with open(dat, "w") as f:
                for np_, v in sorted((k[1], series[k][0][1]) for k in series
                                     if k[0] == "barrier" and k[2] == c):
                    f.write(f"{np_} {v}\n")
            plots.append(f"'{dat}' using 1:2 with linespoints title '{c}'")
        png = os.path.join(pdir, "barrier.png")
        pngs.append(png)
        script += [f"set output '{png}'", "set logscale x 2",
                   "set format x '%g'", "set xlabel 'processes'",
                   "set title 'barrier (lower is better)'",
                   "plot " + ", \\\n  ".join(plots)]
    if not pngs:
        return []
    gp = os.path.join(pdir, "plots.gp")
    with open(gp, "w") as f:
        f.write("\n".join(script) + "\n")
    res = subprocess.run(["gnuplot", gp], capture_output=True, text=True)
    if res.returncode != 0:
        print(f"\nreport: gnuplot failed: {res.stderr.strip()[:500]}")
        return []
    return [p for p in pngs if os.path.exists(p)]



# ---------------------------------------------------------- simulated nodes

SIM_CAVEAT = ("loopback TCP on 2 cores is not a network: the timings across "
              "simulated nodes show that the transport mix works and what it "
              "costs here, not what a real network would give; what transfers "
              "to a real cluster are the message and byte counts per level "
              "(and the inter-node bytes of the Allgather variants)")
COUNTER_KEYS = ["served", "fallbacks", "hierarchical", "pml_messages",
                "pml_bytes", "internode_messages", "internode_bytes",
                "shm_messages", "shm_bytes"]
AG_ALGS = {"rd": "RecursiveDoubling", "bruck": "Bruck"}


def load_sim(out):
    """COUNTERS (summed over a config's launches), REMAP and TREE lines, and
    the configurations' expectations (sim-configs.txt)."""
    counters = {}   # (config, op, bytes) -> {"calls", "np", keys..., "absent"}
    remaps = {}     # config -> (plain_blocks, remapped_blocks, variant)
    trees = defaultdict(list)
    for line in read_lines(os.path.join(out, "results.txt")):
        kv = parse_kv(line)
        if " COUNTERS " in line:
            key = (kv["config"], kv["op"], int(kv["bytes"]))
            c = counters.setdefault(key, {"calls": 0, "np": int(kv["np"]),
                                          "absent": False,
                                          **{k: 0 for k in COUNTER_KEYS}})
            c["calls"] += int(kv["calls"])
            if kv.get("status") != "OK":
                c["absent"] = True
                continue
            for k in COUNTER_KEYS:
                c[k] += int(kv[k])
        elif " REMAP " in line:
            remaps[kv["config"]] = (int(kv["plain_blocks"]),
                                    int(kv["remapped_blocks"]), kv["variant"])
        elif " TREE " in line:
            if kv["line"] not in trees[kv["config"]]:
                trees[kv["config"]].append(kv["line"])
    expect = {kv["name"]: kv for kv in
              (parse_kv(l) for l in
               read_lines(os.path.join(out, "sim-configs.txt")))}
    return counters, remaps, trees, expect


def served_as_configured(c, how):
    """None when the counters show every call served as the configuration
    says (hier: all through the hierarchy; flat: all flat), else why not."""
    if c is None or c["absent"]:
        return "no counters (sharm not loaded?)"
    want = c["calls"] * c["np"]
    if c["served"] != want:
        return f"served {c['served']} of {want} calls"
    if how == "hier" and c["hierarchical"] != want:
        return f"hierarchy served {c['hierarchical']} of {want} calls"
    if how == "flat" and c["hierarchical"] != 0:
        return f"{c['hierarchical']} calls went through the hierarchy"
    return None


def per_call(c, key):
    """A counter per call of the collective, summed over ranks."""
    return c[key] / c["calls"] if c and c["calls"] else None


def fmt_count(v):
    if v is None:
        return "-"
    if v == int(v):
        return f"{int(v)}"
    return f"{v:.1f}"


def fmt_bytes(v):
    if v is None:
        return "-"
    for unit, shift in (("MiB", 20), ("KiB", 10)):
        if v >= 1 << shift:
            return f"{v / (1 << shift):.2f} {unit}"
    return f"{v:.0f} B"


def print_rows(head, lines):
    widths = [max(len(r[i]) for r in [head] + lines) for i in range(len(head))]
    for r in [head] + lines:
        print("  " + "  ".join(v.rjust(w) for v, w in zip(r, widths)).rstrip())


def sim_report(out, rows):
    """The simulated-nodes section.  Returns the problems that make the run
    fail: sharm configurations without counters."""
    counters, remaps, trees, expect = load_sim(out)
    problems, not_served = [], []
    sharm_cfgs = [n for n, e in expect.items() if e.get("expect") != "none"]
    for name in sharm_cfgs:
        e = expect[name]
        for key in [k for k in rows if k[3] == name]:
            c = counters.get((name, key[0], key[2]))
            if c is None or c["absent"]:
                problems.append(f"{name} {key[0]} {fmt_size(key[2])}: no "
                                "counters (sharm's MPI_T variables missing)")
                continue
            why = served_as_configured(c, e["expect"])
            if why:
                not_served.append((name, key[0], key[2], why))
    bad = {(n, op, b) for n, op, b, _ in not_served}

    def timed(name, op, np_, b):
        """The cell of a configuration, never a time for sharm calls that
        did not go the way the configuration says."""
        if (name, op, b) in bad:
            return "NOTSERVED"
        if name in sharm_cfgs and (name, op, b) not in counters:
            return "NOCOUNT"
        return cell(rows.get((op, np_, b, name)))

    print("\n#### Across simulated nodes (ci/bench.sh --sim-nodes)")
    print("  CAVEAT: " + SIM_CAVEAT)
    layouts = sorted({e.get("layout") for e in expect.values()})
    print("  layouts: " + ", ".join(layouts))
    for name in sorted(trees):
        if name in ("sharm-hier", "node-group"):
            print(f"  group tree of {name} (rank 0, verbose 10):")
            for t in trees[name]:
                print("    " + t)

    main = [c for c in ("sharm-hier", "tuned", "han")
            if any(k[3] == c for k in rows)]
    ops = [op for op in OPS if any(k[0] == op and k[3] in main for k in rows)]
    for op in ops:
        keys = sorted({(k[1], k[2]) for k in rows if k[0] == op and k[3] in main})
        print(f"\n== {op} across nodes (median latency, us; loopback TCP on 2 "
              "cores is not a network)")
        head = ["np", "size"] + main
        if "sharm-hier" in main:
            head += [f"sharm/{o}" for o in main if o != "sharm-hier"]
        lines = []
        for np_, b in keys:
            line = [str(np_), "-" if op == "barrier" else fmt_size(b)]
            line += [timed(c, op, np_, b) for c in main]
            if "sharm-hier" in main:
                s_ = (None if ("sharm-hier", op, b) in bad
                      else median_of(rows.get((op, np_, b, "sharm-hier"))))
                line += [ratio(s_, median_of(rows.get((op, np_, b, o))))
                         for o in main if o != "sharm-hier"]
            lines.append(line)
        print_rows(head, lines)

    # messages and bytes per level, per call (sums over all ranks)
    cnt = sorted(((n, op, b) for (n, op, b) in counters if n in sharm_cfgs),
                 key=lambda k: (config_key(k[0]), OPS.index(k[1])
                                if k[1] in OPS else 99, k[2]))
    if cnt:
        print("\n== sharm's MPI_T counters per call (sum over ranks; PML = "
              "network levels, shm = groups within a node)")
        head = ["config", "op", "size", "calls", "hier%", "PML msgs",
                "PML bytes", "inter-node msgs", "inter-node bytes",
                "shm msgs", "shm bytes"]
        lines = []
        for n, op, b in cnt:
            c = counters[(n, op, b)]
            want = c["calls"] * c["np"]
            hier = f"{100 * c['hierarchical'] / want:.0f}%" if want else "-"
            lines.append([n, op, "-" if op == "barrier" else fmt_size(b),
                          str(c["calls"]), hier,
                          fmt_count(per_call(c, "pml_messages")),
                          fmt_bytes(per_call(c, "pml_bytes")),
                          fmt_count(per_call(c, "internode_messages")),
                          fmt_bytes(per_call(c, "internode_bytes")),
                          fmt_count(per_call(c, "shm_messages")),
                          fmt_bytes(per_call(c, "shm_bytes"))])
        print_rows(head, lines)

    ag = sorted((n for n in expect if n.startswith("sharm-ag-")),
                key=lambda n: (n.split("-")[2], ["none", "exch", "reorder"]
                               .index(n.split("-")[3])))
    ag_keys = sorted({(k[1], k[2]) for k in rows if k[0] == "allgather"
                      and k[3] in ag + main})
    if ag and ag_keys:
        print("\n== allgather variants (paper 003) across nodes: median us "
              "(loopback TCP on 2 cores is not a network) and inter-node "
              "bytes per call, the figure that transfers to a real cluster")
        print("  measured = coll_sharm_internode_bytes per call, all ranks; "
              "rank 0's plan = inter-node blocks x block size without -> with "
              "remapping (verbose 10; printed for exch/reorder only)")
        head = ["np", "size", "config", "median_us", "measured inter-node",
                "plan without remap", "plan with remap", "PML msgs"]
        lines = []
        for np_, b in ag_keys:
            for n in [c for c in main if c != "han"] + ag:
                r = rows.get(("allgather", np_, b, n))
                if r is None:
                    continue
                c = counters.get((n, "allgather", b))
                plan = remaps.get(n)
                lines.append([str(np_), fmt_size(b), n, timed(n, "allgather", np_, b),
                              fmt_bytes(per_call(c, "internode_bytes")) if c else "-",
                              fmt_bytes(plan[0] * b) if plan else "-",
                              fmt_bytes(plan[1] * b) if plan else "-",
                              fmt_count(per_call(c, "pml_messages")) if c else "-"])
        print_rows(head, lines)

    node = [c for c in ("node-flat", "node-group") if any(k[3] == c for k in rows)]
    if len(node) == 2:
        print("\n== one simulated node: sharm flat vs the node group path "
              "(hierarchy on: the group's own segment and sharm's queue "
              "collectives), median us")
        head = ["op", "np", "size", "node-flat", "node-group", "group/flat"]
        lines = []
        for op, np_, b in sorted({(k[0], k[1], k[2]) for k in rows
                                  if k[3] in node},
                                 key=lambda k: (OPS.index(k[0]), k[1], k[2])):
            f = (None if ("node-flat", op, b) in bad
                 else median_of(rows.get((op, np_, b, "node-flat"))))
            g = (None if ("node-group", op, b) in bad
                 else median_of(rows.get((op, np_, b, "node-group"))))
            lines.append([op, str(np_), fmt_size(b),
                          timed("node-flat", op, np_, b),
                          timed("node-group", op, np_, b), ratio(g, f)])
        print_rows(head, lines)

    if cnt:
        path = os.path.join(out, "sim-counters.csv")
        with open(path, "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(["config", "op", "bytes", "np", "calls"] + COUNTER_KEYS)
            for n, op, b in cnt:
                c = counters[(n, op, b)]
                w.writerow([n, op, b, c["np"], c["calls"]]
                           + [c[k] for k in COUNTER_KEYS])
        print(f"\ncounters (sums over ranks and launches): {path}")
    if not_served:
        print("\nsharm calls NOT served as configured (not timed as sharm):")
        for n, op, b, why in not_served:
            print(f"  {n} {op} {fmt_size(b)}: {why}")
    for p_ in problems:
        print(f"  ERROR: {p_}")
    if not any(k[3] in sharm_cfgs for k in rows) and sharm_cfgs:
        problems.append("no results of any sharm configuration")
    return problems


# ------------------------------------------------------------------- main

def read_probes(out):
    """The quick state probes around every launch (ci/bench.sh):
    {launch: [(line_rtt_ns, xcopy_1m_gbps), ...]} (before, after)."""
    probes = defaultdict(list)
    for line in read_lines(os.path.join(out, "probes.txt")):
        kv = parse_kv(line)
        try:
            probes[kv["launch"]].append(
                (float(kv["line_rtt_ns"]), float(kv["xcopy_1m_gbps"])))
        except (KeyError, ValueError):
            continue
    return dict(probes)


def slow_threshold(probes):
    """The line round trip (ns) that separates the machine's states in
    this run, or None when the probes show one state.  The VM moves between
    clusters of round trips (e.g. 75-100, 110-160 and 400-450 ns), so the
    split is at the widest gap between consecutive sorted probes, when that
    gap is at least PROBE_RTT_SPREAD (a ratio): the geometric middle of it."""
    rtts = sorted(v[0] for vs in probes.values() for v in vs)
    if len(rtts) < 2:
        return None
    ratio, i = max((b / a, i) for i, (a, b) in enumerate(zip(rtts, rtts[1:]))
                   if a > 0)
    if ratio < PROBE_RTT_SPREAD:
        return None
    return (rtts[i] * rtts[i + 1]) ** 0.5


def launch_states(probes, cut):
    """{launch: "fast" | "slow" | "mixed"}: slow when all of a launch's
    probes saw a line round trip above `cut` (`slow_threshold`), fast when
    none did, mixed when the state changed around the launch."""
    states = {}
    for launch, vs in probes.items():
        n = 0 if cut is None else sum(v[0] > cut for v in vs)
        states[launch] = "slow" if n == len(vs) else "fast" if n == 0 else "mixed"
    return states


def probes_report(probes):
    """Prints the range of the probes, and warns when launches ran in
    different states: a row's median over launches then mixes states (the
    CSV's launch_line_rtt_ns says which state each launch of a row saw)."""
    if not probes:
        print("  per-launch state probes: none (probes.txt missing)")
        return
    every = [v for vs in probes.values() for v in vs]
    print(f"  per-launch state probes ({len(every)} around {len(probes)} "
          f"launches): line RTT {min(v[0] for v in every):.0f}-"
          f"{max(v[0] for v in every):.0f} ns, cross-core copy 1 MiB "
          f"{min(v[1] for v in every):.1f}-{max(v[1] for v in every):.1f} GB/s")
    cut = slow_threshold(probes)
    states = launch_states(probes, cut)
    slow = sum(1 for v in states.values() if v == "slow")
    mixed = sum(1 for v in states.values() if v == "mixed")
    if slow or mixed:
        print(f"  WARNING: the probes show two states (line RTT below and "
              f"above {cut:.0f} ns): {slow} of "
              f"{len(states)} launches ran in the slower one and {mixed} saw "
              f"the state change; medians over launches mix states (CSV "
              f"column launch_line_rtt_ns; per-state comparison below)")


def state_split(out, per_launch, state, method, probes):
    """When launches ran in two states, the rows again from each state's
    launches alone (results-fast.csv, results-slow.csv; launches that saw
    the state change are left out), and per state and process count how
    many of sharm's cells are at or below the best other library and tuned:
    a run that crossed states then yields two comparisons, each within one
    state, all libraries interleaved."""
    states = launch_states(probes, slow_threshold(probes))
    if not {"fast", "slow"} <= set(states.values()):
        return
    print("\n== per state of the machine (each launch labelled by the probes "
          "before and after it; a cell needs a launch of both sides in that "
          "state)")
    for name in ("fast", "slow"):
        ks = [k for k, v in states.items() if v == name]
        rtts = [v[0] for k in ks for v in probes[k]]
        xcs = [v[1] for k in ks for v in probes[k]]
        rows = aggregate_launches(
            per_launch,
            lambda launch, name=name: states.get(launch) == name)
        path = write_csv(out, rows, state, method, probes,
                         name=f"results-{name}.csv")
        print(f"  {name}: {len(ks)} launches, line RTT {min(rtts):.0f}-"
              f"{max(rtts):.0f} ns, cross-core copy 1 MiB {min(xcs):.1f}-"
              f"{max(xcs):.1f} GB/s -> {path}")
        print_counts(rows, median_of)


def print_counts(rows, value):
    """Per process count, how many of sharm's cells are at or below the
    best other library and at or below tuned, by `value(row)` (None: no
    figure); at np <= 2 also the cells above the best, with their ratio."""
    for np_ in sorted({k[1] for k in rows}):
        won = total = won_t = total_t = 0
        lost = []
        for (op, n, b, c), r in sorted(rows.items()):
            if n != np_ or c != "sharm":
                continue
            v = value(r)
            peers = [(value(rows.get((op, n, b, o))), o)
                     for o in ("tuned", "sm", "adapt", "mpich", "impi")]
            peers = [x for x in peers if x[0] is not None]
            if v is None or not peers:
                continue
            best, who = min(peers)
            total += 1
            won += v <= best
            if v > best:
                lost.append(f"{op} {fmt_size(b) if op != 'barrier' else '-'}"
                            f" {v / best:.2f}x {who}")
            t = value(rows.get((op, n, b, "tuned")))
            if t is not None:
                total_t += 1
                won_t += v <= t
        if total:
            print(f"    np={np_}: sharm <= best other in {won}/{total} "
                  f"cells, <= tuned in {won_t}/{total_t}"
                  + (f"; above the best: {', '.join(lost)}" if lost
                     and np_ <= 2 else ""))


def placement_split(rows):
    """The comparison again per placement of the cores, from the
    iterations sharm_bench's probe labelled (PLACEMENTS): unlike
    state_split's launch labels, a launch whose placement changed midway
    counts in both, each iteration where it ran."""
    if not any(r.get(f"{p}_us") for r in rows.values() for p in PLACEMENTS):
        return
    print("\n== per placement of the cores (each iteration labelled by a "
          "line round trip timed right before it; columns near_us, far_us)")
    for place in PLACEMENTS:
        iters = sum(int(r.get(f"{place}_iters") or 0) for r in rows.values())
        print(f"  {place}: {iters} iterations")
        print_counts(rows, lambda r, f=f"{place}_us": value_of(r, f))


def write_csv(out, rows, state, method, probes, name="results.csv"):
    """One row per (op, np, bytes, config) with its single-copy limit, the
    metric's % of it, the loop method, the machine state at the start and
    the probes around the row's launches (`read_probes`)."""
    path = os.path.join(out, name)
    xcopy = state["xcopy"] if state else {}
    fixed = {"method": method}
    for col, kind, key in STATE_COLUMNS:
        v = state_value(state, kind, key)
        fixed[col] = "" if v is None else f"{v:.3f}" if kind != "rtt" else f"{v:.1f}"
    ordered = sorted(rows.values(), key=lambda r: (
        OPS.index(r["op"]) if r["op"] in OPS else 99, r["np"], r["bytes"],
        config_key(r["config"])))
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=CSV_FIELDS)
        w.writeheader()
        for r in ordered:
            row = {k: r.get(k, "") for k in RESULT_FIELDS}
            row.update(fixed)
            seen = [probes.get(launch) for launch in r.get("launches", [])]
            if seen and all(seen):
                row["launch_line_rtt_ns"] = "/".join(
                    "-".join(f"{v[0]:.0f}" for v in vs) for vs in seen)
            # below 64 KiB latency, not bandwidth, bounds a collective
            lim = (limit_us(r["op"], int(r["bytes"]), int(r["np"]), xcopy)
                   if int(r["bytes"]) >= 64 << 10 else None)
            v = median_of(r)
            if lim:
                row["limit_us"] = f"{lim:.3f}"
                if v:
                    row["pct_of_limit"] = f"{100 * lim / v:.1f}"
            w.writerow(row)
    return path


def main():
    global METRIC
    args = sys.argv[1:]
    if args[:1] == ["--state"] and len(args) in (2, 4):
        sizes = []
        if len(args) == 4 and args[2] == "--sizes":
            sizes = [parse_size(x) for x in args[3].split(",") if x]
        elif len(args) == 4:
            print(__doc__)
            return 2
        return state_main(args[1], sizes)
    if len(args) == 3 and args[1] == "--metric" and args[2] in METRIC_NAMES:
        METRIC = METRIC_NAMES[args[2]]
        args = args[:1]
    if len(args) != 1:
        print(__doc__)
        return 2
    out = args[0]
    rows, wrongs, launches, configs, infos, per_launch = load(out)
    state = read_state(os.path.join(out, "state-start.txt"))
    state_end = read_state(os.path.join(out, "state-end.txt"))
    xcopy = state["xcopy"] if state else {}

    meta = read_lines(os.path.join(out, "meta.txt"))
    print("\n#### sharm collective benchmark")
    for line in meta:
        print("  " + line)
    for c in sorted(infos, key=config_key):
        if c in ("sharm", "tuned", "mpich", "impi"):
            print(f"  {c}: {infos[c]}")
    method = "ours"
    for line in meta:
        m = re.search(r"\bmethod=(\w+)", line)
        if m:
            method = m.group(1)
    if state:
        print("  at start: " + state_summary(state))
    else:
        print("  machine state: not measured (no state-start.txt)")
    if state_end:
        print("  at end:   " + state_summary(state_end))
    changed = drift(state, state_end)
    if changed:
        print("  WARNING: the machine's state changed during the run: "
              + ", ".join(f"{n} {a:.1f} -> {b:.1f}" for n, a, b in changed))
    probes = read_probes(out)
    probes_report(probes)

    sim = any(re.search(r"\bmode=sim-nodes\b", line) for line in meta)
    sim_problems = []
    if sim:
        sim_problems = sim_report(out, rows)
    else:
        for op in OPS:
            for np_ in sorted({k[1] for k in rows if k[0] == op}):
                print_table(op, np_, rows, xcopy)

    csv_path = write_csv(out, rows, state, method, probes)
    if not sim:
        state_split(out, per_launch, state, method, probes)
        placement_split(rows)
    print(f"\nCSV: {csv_path}")
    pngs = write_plots(out, rows)
    if pngs:
        print("plots:")
        for p in pngs:
            print(f"  {p}")

    skipped = [c for c in configs if c.get("status") != "ok"]
    failed = [la for la in launches if la["status"] in ("failed", "timeout")]
    if skipped:
        print("\nconfigurations not run:")
        for c in skipped:
            print(f"  {c['name']}: {c['status']}: {c.get('reason', '')}")
    if failed:
        print("\nlaunches that failed (missing results shown as FAIL / T/O):")
        for la in failed:
            print(f"  {la['config']} np={la['np']} sizes={la['sizes']}: "
                  f"{la['status']} (exit {la['rc']}), see "
                  f"{os.path.join(out, 'raw', la['launch'] + '.err')}")
    wrong_rows = sorted({(r["config"], r["op"], r["np"], r["bytes"])
                         for r in rows.values() if r["status"] == "WRONG"})
    if wrong_rows:
        print("\nWRONG results (benchmark fails):")
        for c, op, np_, b in wrong_rows:
            print(f"  {c}: {op} np={np_} bytes={b}")
        for w in wrongs:
            print(f"    {w.get('config')} {w.get('op')} np={w.get('np')} "
                  f"bytes={w.get('bytes')} rank {w.get('rank')}: "
                  f"{w.get('detail')}")
        return 1
    if sim_problems:
        print("\nsimulated-nodes report incomplete (benchmark fails):")
        for p_ in sim_problems:
            print(f"  {p_}")
        return 1
    n_ok = sum(1 for r in rows.values() if r["status"] == "OK")
    n_bad = len(rows) - n_ok
    print(f"\nno WRONG results: {n_ok} rows checked correct"
          + (f", {n_bad} rows FAILED or timed out" if n_bad else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
