#!/usr/bin/env python3
"""sharm auto-tuner (ci/tune.sh): measures every algorithm of every served
operation over a grid of process counts and sizes with bench/sharm_bench.c,
picks the fastest per cell with smoothing, and writes the
`coll_sharm_<op>_rules` lines for `mpirun --tune FILE`; `--check FILE`
re-measures a sample of cells and says whether FILE still fits.

Method (why):
 * Every algorithm is forced through `coll_sharm_<op>_algorithm` (and
   `coll_sharm_knomial_radix`); sharm_bench checks every result.  Launch k
   forces the k-th candidate of every operation at once (one launch measures
   all operations), launch 0 is the built-in `auto`: the baseline the gains
   are measured against, in the same run.
 * Launches are interleaved (auto, cand 1, cand 2, ... per repeat, the order
   rotated each repeat), so a change of machine state during the run hits
   all configurations alike; comparisons are paired per repeat.
 * Smoothing: a challenger replaces `auto` in a cell only when its median
   ratio to auto over the repeats is below 1 - margin and it beat auto by the
   margin in most repeats; between challengers, the choice of the previous
   (smaller) size is kept unless the new one is faster by the margin.
   Adjacent cells with the same choice merge into one size range (limits at
   the geometric middle between measured sizes, rounded to a power of two),
   and process counts with identical rules merge into one np range.
"""

import argparse
import datetime
import json
import math
import os
import re
import shutil
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
OMPI_COMPDIR = "/usr/lib/x86_64-linux-gnu/openmpi/lib/openmpi3"

# rules op -> (sharm_bench op, candidates as (label, algorithm, radix)).
# Candidate k of every operation runs in the same launch, so radix variants
# sit in the same slot everywhere (coll_sharm_knomial_radix is global).
OPS = {
    "barrier": ("barrier", [("linear", "linear", None), ("knomial", "knomial", None),
                            ("knomial radix=4", "knomial", 4)]),
    "bcast": ("bcast", [("linear", "linear", None), ("knomial", "knomial", None),
                        ("knomial radix=4", "knomial", 4)]),
    "reduce": ("reduce", [("linear", "linear", None), ("knomial", "knomial", None),
                          ("knomial radix=4", "knomial", 4)]),
    "allreduce": ("allreduce", [("linear", "linear", None), ("knomial", "knomial", None),
                                ("allgather", "allgather", None),
                                ("reduce_scatter_allgather", "reduce_scatter_allgather", None)]),
    "alltoall": ("alltoall", [("linear", "linear", None), ("pairwise", "pairwise", None)]),
    "allgather": ("allgather", [("linear", "linear", None),
                                ("gather_bcast", "gather_bcast", None)]),
    "reduce_scatter": ("reduce_scatter_block", [("linear", "linear", None),
                                                ("reduce_then_scatter", "reduce_then_scatter",
                                                 None)]),
    "scan": ("scan", [("linear", "linear", None), ("chain", "chain", None)]),
}
BENCH_TO_RULES = {bench: op for op, (bench, _) in OPS.items()}

QUICK = dict(sizes="8,512,8K,64K,1M", np="2,4", repeat=3, budget=30)
FULL = dict(sizes="4,16,64,256,1K,4K,16K,64K,256K,1M,4M", np="2,3,4,8", repeat=5, budget=60)


def check_slots():
    """Candidates of one slot must agree on the global radix."""
    slots = max(len(c) for _, c in OPS.values())
    for k in range(slots):
        radixes = {c[k][2] for _, c in OPS.values() if len(c) > k and c[k][2]}
        assert len(radixes) <= 1, f"slot {k + 1} mixes radixes {radixes}"
    return slots


def size_value(s):
    s = s.strip()
    scale = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(s[-1:].upper(), 1)
    return int(s[:-1] if scale > 1 else s) * scale


def size_name(b):
    for unit, scale in (("G", 1 << 30), ("M", 1 << 20), ("K", 1 << 10)):
        if b >= scale and b % scale == 0:
            return f"{b // scale}{unit}"
    return str(b)


def fmt_time(sec):
    sec = int(sec)
    return f"{sec // 60}m{sec % 60:02d}s"


def log(msg):
    print(msg, file=sys.stderr, flush=True)


# ------------------------------------------------------------ running

class Runner:
    def __init__(self, args):
        self.args = args
        self.work = os.path.abspath(args.out)
        self.bin = os.path.join(self.work, "bin")
        self.comp = os.path.join(self.work, "components")
        self.raw = os.path.join(self.work, "raw")
        for d in (self.bin, self.comp, self.raw):
            os.makedirs(d, exist_ok=True)
        self.cores = os.cpu_count() or 1
        self.launches = 0

    def prepare(self):
        plugin = os.environ.get("SHARM_PLUGIN",
                                os.path.join(REPO, "target/release/libmca_coll_sharm.so"))
        if not os.path.exists(plugin):
            sys.exit(f"tune: no plugin at {plugin} (cargo build --release)")
        shutil.copy(plugin, os.path.join(self.comp, "mca_coll_sharm.so"))
        self.bench = os.path.join(self.bin, "sharm_bench")
        subprocess.run(["mpicc.openmpi", "-O2", "-o", self.bench,
                        os.path.join(HERE, "sharm_bench.c")], check=True)
        self.state_probe = os.path.join(self.bin, "machine_state")
        subprocess.run(["mpicc.openmpi", "-O2", "-pthread", "-o", self.state_probe,
                        os.path.join(HERE, "machine_state.c")], check=True)

    def mpirun(self, np_, mca, program):
        cmd = ["mpirun.openmpi", "--allow-run-as-root", "-np", str(np_)]
        if np_ > self.cores:
            cmd += ["--oversubscribe", "--bind-to", "none"]
        else:
            cmd += ["--bind-to", "core"]
        cmd += ["--mca", "mca_base_component_path", f"{self.comp}:{OMPI_COMPDIR}",
                "--mca", "coll_sharm_priority", "100"]
        for k, v in mca:
            # ("--tune", FILE): the parameter file itself, as a user runs it.
            cmd += [k, str(v)] if k.startswith("--") else ["--mca", k, str(v)]
        return cmd + program

    def run(self, np_, mca, ops, sizes, tag):
        """One launch; returns {(rules op, bytes): median_us}."""
        over = np_ > self.cores
        budget = self.args.budget_ms * 3 // 4 if over else self.args.budget_ms
        iters = ["--min-iters", "3", "--max-iters", "200", "--max-warmup", "5"] if over else \
            ["--min-iters", "5", "--max-iters", "1000", "--max-warmup", "20"]
        bench_ops = ",".join(OPS[o][0] for o in ops)
        cmd = self.mpirun(np_, mca, [self.bench, "--ops", bench_ops, "--sizes",
                                     ",".join(map(str, sizes)), "--budget-ms", str(budget)] + iters)
        self.launches += 1
        path = os.path.join(self.raw, f"{self.launches:04d}-{tag}.txt")
        try:
            res = subprocess.run(cmd, capture_output=True, text=True,
                                 timeout=self.args.timeout, env=ENV)
            out, rc = res.stdout + res.stderr, res.returncode
        except subprocess.TimeoutExpired as e:
            out, rc = (e.stdout or b"").decode(errors="replace") + "\nTIMEOUT", -1
        with open(path, "w") as f:
            f.write(" ".join(cmd) + "\n" + out)
        got = {}
        for line in out.splitlines():
            if not line.startswith("RESULT "):
                continue
            kv = dict(t.split("=", 1) for t in line.split()[1:] if "=" in t)
            if kv.get("status") == "WRONG":
                sys.exit(f"tune: WRONG result in {path}: {line}")
            if kv.get("status") != "OK" or kv.get("op") not in BENCH_TO_RULES:
                continue
            got[(BENCH_TO_RULES[kv["op"]], int(kv["bytes"]))] = float(kv["median_us"])
        if rc != 0:
            log(f"tune: launch failed (exit {rc}), see {path}")
        return got

    def machine_state(self):
        """Header lines: date, CPU, cores, NUMA nodes, memcpy and p2p now."""
        cpu = "unknown CPU"
        try:
            for line in open("/proc/cpuinfo"):
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
        except OSError:
            pass
        numa = len([d for d in os.listdir("/sys/devices/system/node")
                    if re.fullmatch(r"node\d+", d)]) if os.path.isdir(
            "/sys/devices/system/node") else 1
        return [
            f"date: {datetime.datetime.now().astimezone().isoformat(timespec='seconds')}",
            f"machine: {cpu}; {self.cores} cores online; {numa} NUMA node(s); "
            f"{os.uname().release}",
        ] + self.probe_state()

    def probe_state(self):
        """The state of this VM now, as the benchmark measures it
        (bench/machine_state.c, see bench/README.md): which copy path is
        fast changes between launches, and the rules with it."""
        local = subprocess.run([self.state_probe, "local"], capture_output=True, text=True,
                               timeout=120).stdout
        pick = {k: {} for k in ("MEMCPY", "XCOPY")}
        for m in re.finditer(r"^(MEMCPY|XCOPY) bytes=(\d+) gbps=([\d.]+)", local, re.M):
            pick[m.group(1)][int(m.group(2))] = float(m.group(3))
        rtt = re.search(r"^LINE_RTT ns=([\d.]+)", local, re.M)
        p2p = {}
        for mech in ("cma", "none"):
            res = subprocess.run(
                self.mpirun(2, [("coll", "^sharm"), ("btl_vader_single_copy_mechanism", mech)],
                            [self.state_probe, "p2p", "--sizes", "4M"]),
                capture_output=True, text=True, env=ENV, timeout=120)
            m = re.search(r"^P2P bytes=4194304 gbps=([\d.]+)", res.stdout, re.M)
            p2p[mech] = f"{float(m.group(1)):.1f}" if m else "not measured"

        def gbps(kind, b):
            g = pick[kind].get(b)
            return f"{g:.1f}" if g is not None else "not measured"
        return [
            f"state at start: memcpy 4 MiB {gbps('MEMCPY', 4 << 20)} GB/s; cross-core copy "
            f"4 MiB {gbps('XCOPY', 4 << 20)} GB/s; cache-line round trip "
            f"{rtt.group(1) + ' ns' if rtt else 'not measured'}",
            f"state at start: point to point 4 MiB (Open MPI vader, np=2): two copies "
            f"{p2p['none']} GB/s, CMA single copy {p2p['cma']} GB/s",
        ]


ENV = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")


def configs(np_, ops):
    """Launch configurations for np: [(name, mca, ops measured)]; 'auto' first."""
    out = [("auto", [], list(ops))]
    for k in range(check_slots()):
        mca, measured, radix = [], [], None
        for op in ops:
            cands = OPS[op][1]
            if k >= len(cands):
                continue
            _, alg, r = cands[k]
            # A k-nomial tree of radix >= np is the flat tree: nothing new.
            if alg == "knomial" and np_ <= (r or 2):
                continue
            mca.append((f"coll_sharm_{op}_algorithm", alg))
            measured.append(op)
            radix = r or radix
        if radix:
            mca.append(("coll_sharm_knomial_radix", radix))
        if measured:
            out.append((f"slot{k + 1}", mca, measured))
    return out


def label_of(op, cfg):
    return "auto" if cfg == "auto" else OPS[op][1][int(cfg[4:]) - 1][0]


def measure(runner, nps, ops, sizes, repeat, extra=None):
    """Interleaved launches; returns {(op, np, bytes): {label: [us per repeat]}}.
    `extra`: one more configuration (name, mca) measured for every op."""
    plan = []
    for np_ in nps:
        cfgs = configs(np_, ops)
        if extra:
            cfgs.append((extra[0], extra[1], list(ops)))
        for rep in range(repeat):
            rot = rep % len(cfgs)
            for cfg in cfgs[rot:] + cfgs[:rot]:
                plan.append((np_, rep, cfg))
    data = {}
    start = time.time()
    for i, (np_, rep, (name, mca, measured)) in enumerate(plan):
        done = time.time() - start
        left = f", ~{fmt_time(done / i * (len(plan) - i))} left" if i else ""
        what = ", ".join(f"{o} {label_of(o, name) if name.startswith('slot') or name == 'auto' else name}"
                         for o in measured)
        log(f"[{i + 1}/{len(plan)}] np={np_} repeat {rep + 1}/{repeat}: {what} "
            f"(elapsed {fmt_time(done)}{left})")
        got = runner.run(np_, mca, measured, sizes, f"np{np_}-r{rep + 1}-{name}")
        for (op, b), us in got.items():
            if op not in measured:
                continue
            lab = name if extra and name == extra[0] else label_of(op, name)
            data.setdefault((op, np_, b), {}).setdefault(lab, [None] * repeat)[rep] = us
    log(f"measured {len(plan)} launches in {fmt_time(time.time() - start)}")
    return data


# ------------------------------------------------------------ deciding

def paired_ratios(a, b):
    return [x / y for x, y in zip(a, b) if x is not None and y is not None and y > 0]


def better(cell, challenger, incumbent, margin):
    """Median paired ratio challenger/incumbent if the challenger is faster by
    `margin` in the median and in most repeats, else None."""
    r = paired_ratios(cell.get(challenger, []), cell.get(incumbent, []))
    if not r:
        return None
    med = statistics.median(r)
    wins = sum(1 for x in r if x < 1 - margin)
    return med if med < 1 - margin and wins * 3 >= 2 * len(r) else None


def decide(data, nps, ops, sizes, margin):
    """{(op, np): [choice label per size]} with smoothing."""
    choice = {}
    for op in ops:
        for np_ in nps:
            row, prev = [], "auto"
            for b in sizes:
                cell = data.get((op, np_, b), {})
                wins = {lab: m for lab in cell if lab != "auto"
                        for m in [better(cell, lab, "auto", margin)] if m is not None}
                pick = min(wins, key=wins.get) if wins else "auto"
                # Keep the previous size's challenger unless beaten by the margin.
                if pick != prev and prev in wins and better(cell, pick, prev, margin) is None:
                    pick = prev
                row.append(pick)
                prev = pick
            choice[(op, np_)] = row
    return choice


def boundary(a, b):
    """Power of two nearest the geometric middle of a < b, in (a, b]."""
    mid = 2 ** round(math.log2(math.sqrt(max(a, 1) * b)))
    return min(max(mid, a + 1), b)


def entries(op, row, sizes):
    """Rule entries of one np for one op: merged ranges of non-auto choices."""
    if op == "barrier":
        return [f"0- {row[0]}"] if row and row[0] != "auto" else []
    out, i = [], 0
    while i < len(row):
        j = i
        while j + 1 < len(row) and row[j + 1] == row[i]:
            j += 1
        if row[i] != "auto":
            lo = 0 if i == 0 else boundary(sizes[i - 1], sizes[i])
            hi = "" if j == len(row) - 1 else str(boundary(sizes[j], sizes[j + 1]) - 1)
            out.append(f"{size_name(lo) if lo else 0}-{hi} {row[i]}")
        i = j + 1
    return out


def rules_text(op, choice, nps, sizes, open_end=True):
    """`open_end`: the last measured np covers all larger counts (np>=);
    else it stops there."""
    blocks = []  # [(np lo, np hi or None, entries)]
    for i, np_ in enumerate(nps):
        lo = 2 if i == 0 else np_
        hi = nps[i + 1] - 1 if i + 1 < len(nps) else (None if open_end else np_)
        ent = entries(op, choice[(op, np_)], sizes)
        if blocks and blocks[-1][2] == ent:
            blocks[-1] = (blocks[-1][0], hi, ent)
        else:
            blocks.append((lo, hi, ent))
    parts = []
    for lo, hi, ent in blocks:
        if not ent:
            continue
        np_s = f"np>={lo}" if hi is None else (f"np={lo}" if lo == hi else f"np={lo}-{hi}")
        parts.append(f"{np_s}: " + ", ".join(ent))
    return "; ".join(parts)


# ------------------------------------------------------------ the file's rules

def lookup(text, np_, b):
    """The label a rules text gives (np, bytes) (mirror of src/ompi/rules.rs
    for the files this tool writes); None: the built-in rules."""
    for block in reversed([x for x in text.split(";") if x.strip()]):
        lo, hi = 1, math.inf
        if ":" in block:
            cond, block = block.split(":", 1)
            cond = cond.strip()
            m = re.fullmatch(r"np(>=|<=|=)(\d+)(-(\d*))?", cond)
            if not m:
                return None
            n = int(m.group(2))
            if m.group(1) == ">=":
                lo = n
            elif m.group(1) == "<=":
                hi = n
            else:
                lo = n
                hi = n if m.group(3) is None else (int(m.group(4)) if m.group(4) else math.inf)
        if not lo <= np_ <= hi:
            continue
        for ent in block.split(","):
            words = ent.split()
            if len(words) < 2:
                continue
            r = words[0]
            a, _, c = r.partition("-")
            s_lo = size_value(a)
            s_hi = s_lo if "-" not in r else (size_value(c) if c else math.inf)
            if s_lo <= b <= s_hi:
                return " ".join(words[1:])
    return None


def read_rules(path):
    rules, header = {}, {}
    for line in open(path):
        line = line.strip()
        m = re.match(r"#\s*grid:\s*np ([^;\s]+); sizes ([^;\s]+)", line)
        if m:
            header["np"], header["sizes"] = m.group(1), m.group(2)
        m = re.match(r"coll_sharm_(\w+)_rules\s*=\s*(.*)", line)
        if m and m.group(1) in OPS:
            rules[m.group(1)] = m.group(2)
    return rules, header


# ------------------------------------------------------------ output

def gnuplot_terminal():
    for term in ("pngcairo size 900,500 font ',10'", "png size 900,500"):
        probe = subprocess.run(["gnuplot", "-e", f"set terminal {term}"],
                               capture_output=True, text=True)
        if probe.returncode == 0 and not probe.stderr.strip():
            return term
    return None


def plot(work, choice, ops, nps, sz):
    """One PNG per op: the chosen algorithm over (size, np)."""
    if not shutil.which("gnuplot"):
        log("tune: gnuplot not found, no plots")
        return []
    term = gnuplot_terminal()
    if term is None:
        log("tune: gnuplot has no png terminal, no plots")
        return []
    pdir = os.path.join(work, "plots")
    os.makedirs(pdir, exist_ok=True)
    script, pngs = [f"set terminal {term}", "set logscale x 2", "set grid",
                    "set key outside right", "set xlabel 'bytes per process'",
                    "set ylabel 'processes'", "set format x '%.0b%BB'", "set ytics 1",
                    "set termoption noenhanced", "set offsets graph 0.05, graph 0.05, 0, 0"], []
    for op in ops:
        labels = ["auto"] + [c[0] for c in OPS[op][1]]
        dat = os.path.join(pdir, f"{op}.dat")
        with open(dat, "w") as f:
            for np_ in nps:
                for b, lab in zip(sz[op], choice[(op, np_)]):
                    f.write(f"{max(b, 1)} {np_} {labels.index(lab)}\n")
        png = os.path.join(pdir, f"{op}.png")
        pngs.append(png)
        script += [f"set output '{png}'",
                   f"set title 'sharm {op}: chosen algorithm (auto = built-in rules kept)'",
                   f"set yrange [{min(nps) - 0.5}:{max(nps) + 0.5}]",
                   "plot " + ", ".join(
                       f"'{dat}' using ($3=={i} ? $1 : 1/0):2 with points pt 5 ps 3 "
                       f"lc {i + 1} title '{lab}'" for i, lab in enumerate(labels))]
    gp = os.path.join(pdir, "choices.gp")
    with open(gp, "w") as f:
        f.write("\n".join(script) + "\n")
    res = subprocess.run(["gnuplot", gp], capture_output=True, text=True)
    if res.returncode != 0:
        log(f"tune: gnuplot failed: {res.stderr.strip()[:300]}")
        return []
    return [p for p in pngs if os.path.exists(p)]


def med(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def gains(data, choice, ops, nps, sz):
    """Per op: (geometric mean of auto/chosen over cells, best cell, cells)."""
    out = {}
    for op in ops:
        ratios = []
        for np_ in nps:
            for b, lab in zip(sz[op], choice[(op, np_)]):
                cell = data.get((op, np_, b), {})
                r = paired_ratios(cell.get("auto", []), cell.get(lab, []))
                if r:
                    ratios.append((statistics.median(r), np_, b))
        if ratios:
            geo = math.exp(sum(math.log(r) for r, _, _ in ratios) / len(ratios))
            out[op] = (geo, max(ratios), len(ratios))
    return out


def tune(args, runner):
    nps = [int(x) for x in args.np.split(",")]
    sizes = sorted({size_value(x) for x in args.sizes.split(",")})
    ops = args.ops.split(",")
    barrier_only = [o for o in ops if o == "barrier"]
    state = runner.machine_state()
    for line in state:
        log(line)
    data = measure(runner, nps, ops, sizes, args.repeat)
    # Barrier has one cell per np (bytes 0).
    sz = {op: ([0] if op in barrier_only else sizes) for op in ops}
    choice = {}
    for op in ops:
        choice.update(decide(data, nps, [op], sz[op], args.margin / 100))
    g = gains(data, choice, ops, nps, sz)
    lines = [f"# sharm decision rules for `auto`, written by ci/tune.sh "
             f"({'quick' if args.quick else 'full'} grid)"]
    lines += [f"# {x}" for x in state]
    lines.append(f"# grid: np {','.join(map(str, nps))}; sizes "
                 f"{','.join(size_name(s) for s in sizes)}; {args.repeat} interleaved repeats; "
                 f"margin {args.margin}%")
    lines.append("# gain over the built-in auto on this grid, same run (auto time / chosen "
                 "time, geometric mean over cells; best cell):")
    for op in ops:
        if op in g:
            geo, (best, bnp, bb), n = g[op]
            lines.append(f"#   {op:15s} {geo:.2f}x over {n} cells; best {best:.2f}x at np={bnp} "
                         f"{size_name(bb)}")
    lines.append("# Check it later with: ci/tune.sh --check THIS_FILE")
    for op in ops:
        text = rules_text(op, choice, nps, sz[op])
        lines.append(f"coll_sharm_{op}_rules = {text}" if text
                     else f"# coll_sharm_{op}_rules: the built-in auto won everywhere")
    with open(args.output, "w") as f:
        f.write("\n".join(lines) + "\n")
    write_csv(runner.work, data)
    with open(os.path.join(runner.work, "run.json"), "w") as f:
        json.dump({"state": state, "cores": runner.cores, "np": nps, "sizes": sizes,
                   "ops": ops, "repeat": args.repeat, "margin": args.margin}, f, indent=1)
    pngs = plot(runner.work, choice, ops, nps, sz)
    print("\n".join(lines))
    print(f"\nwrote {args.output}; raw launches, results.csv and plots in {runner.work}")
    for p in pngs:
        print(f"  plot: {p}")


def write_csv(work, data):
    with open(os.path.join(work, "results.csv"), "w") as f:
        f.write("op,np,bytes,config,repeat,median_us\n")
        for (op, np_, b), cell in sorted(data.items()):
            for lab, xs in sorted(cell.items()):
                for rep, us in enumerate(xs):
                    if us is not None:
                        f.write(f"{op},{np_},{b},{lab},{rep + 1},{us}\n")


def check(args, runner):
    rules, header = read_rules(args.check)
    if not rules and "np" not in header:
        sys.exit(f"tune: {args.check} has neither coll_sharm_<op>_rules lines nor a tune grid")
    nps = [int(x) for x in (args.np_given or header.get("np") or args.np).split(",")]
    grid = sorted({size_value(x) for x in (header.get("sizes") or args.sizes).split(",")})
    # A sample: every other size of the file's grid (the ones between were
    # interpolated by the tuner anyway), but at most the requested sizes.
    sizes = grid[::2] if not args.sizes_given else sorted(
        {size_value(x) for x in args.sizes.split(",")})
    ops = [o for o in args.ops.split(",") if o in OPS]
    for line in runner.machine_state():
        log(line)
    # The file's configuration runs with `--tune FILE`, exactly as an
    # application would use it.
    mca = [("--tune", os.path.abspath(args.check))]
    data = measure(runner, nps, ops, sizes, args.repeat, extra=("file", mca))
    tol = args.margin / 100
    fits = total = 0
    print(f"{'op':15s} {'np':>3s} {'bytes':>6s}  {'file choice':28s} {'measured best':28s} margin")
    for op in ops:
        cells = [0] if op == "barrier" else sizes
        for np_ in nps:
            for b in cells:
                cell = data.get((op, np_, b), {})
                meds = {lab: med(xs) for lab, xs in cell.items() if med(xs) is not None}
                if "file" not in meds:
                    continue
                best = min((lab for lab in meds if lab != "file"), key=meds.get, default=None)
                if best is None:
                    continue
                r = paired_ratios(cell["file"], cell[best])
                margin = statistics.median(r) - 1 if r else math.nan
                total += 1
                # Worse only as the tuner would have decided: the best beats
                # the file by the margin in the median and in most repeats.
                ok = best == "auto" or better(cell, best, "file", tol) is None
                fits += ok
                chosen = lookup(rules.get(op, ""), np_, b) or "auto (built-in)"
                print(f"{op:15s} {np_:3d} {size_name(b):>6s}  {chosen:28s} {best:28s} "
                      f"{margin * 100:+.1f}% {'ok' if ok else 'WORSE'}")
    print(f"\n{fits} of {total} cells not beaten by {args.margin}% or more (median and most "
          f"repeats) by another algorithm: the file "
          f"{'still fits' if fits == total else 'no longer fits'} this machine in its current "
          f"state")
    return 0 if fits == total and total else 1


def read_run(work):
    """A finished tuning run's grid, state and timings (tune() wrote them)."""
    with open(os.path.join(work, "run.json")) as f:
        run = json.load(f)
    data = {}
    with open(os.path.join(work, "results.csv")) as f:
        next(f)
        for line in f:
            op, np_, b, lab, rep, us = line.strip().split(",")
            cell = data.setdefault((op, int(np_), int(b)), {})
            xs = cell.setdefault(lab, [None] * run["repeat"])
            xs[int(rep) - 1] = float(us)
    return run, data


def derive(dirs, margin, output):
    """Built-in rules from several tuning runs (ideally in different states
    of the machine): a cell leaves the built-in heuristics only when every
    run chose the same challenger, each by the margin.  Process counts above
    a run's core count are left out: oversubscribed timings describe this
    small VM, not a machine where every process has its core."""
    runs = [read_run(d) for d in dirs]
    if len(runs) < 2:
        log("tune: --derive with one run: nothing to cross-check (give two or more)")
    nps = sorted(set.intersection(*[{n for n in r["np"] if n <= r["cores"]} for r, _ in runs]))
    sizes = sorted(set.intersection(*[set(r["sizes"]) for r, _ in runs]))
    ops = [o for o in OPS if all(o in r["ops"] for r, _ in runs)]
    if not nps or not sizes:
        sys.exit("tune: --derive: the runs share no process count (with a core each) or size")
    lines = ["# sharm built-in rules derived by ci/tune.sh --derive from "
             f"{len(runs)} run(s); margin {margin}%; np {','.join(map(str, nps))}; "
             f"sizes {','.join(size_name(b) for b in sizes)}"]
    for d, (r, _) in zip(dirs, runs):
        lines.append(f"# run {os.path.basename(os.path.normpath(d))}:")
        lines += [f"#   {x}" for x in r["state"]]
    texts = {}
    for op in ops:
        sz = [0] if op == "barrier" else sizes
        per_run = [decide(data, nps, [op], sz, margin / 100) for _, data in runs]
        agreed = {}
        for np_ in nps:
            rows = [c[(op, np_)] for c in per_run]
            agreed[(op, np_)] = [row[0] if len(set(row)) == 1 else "auto"
                                 for row in zip(*rows)]
            for i, b in enumerate(sz):
                picks = [row[i] for row in rows]
                if len(set(picks)) > 1 or picks[0] != "auto":
                    gains_ = []
                    for pick, (_, data) in zip(picks, runs):
                        cell = data.get((op, np_, b), {})
                        r = paired_ratios(cell.get("auto", []), cell.get(pick, []))
                        gains_.append(f"{statistics.median(r):.2f}x" if r else "-")
                    verdict = "agreed" if agreed[(op, np_)][i] != "auto" else "disagree: auto kept"
                    lines.append(f"#   {op} np={np_} {size_name(b)}: "
                                 f"{' / '.join(picks)} ({verdict}; each run's gain of its pick over auto "
                                 f"{' / '.join(gains_)})")
        texts[op] = rules_text(op, agreed, nps, sz, open_end=False)
        lines.append(f"coll_sharm_{op}_rules = {texts[op]}" if texts[op]
                     else f"# coll_sharm_{op}_rules: the built-in heuristics kept everywhere")
    with open(output, "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))
    print(f"\nwrote {output}")
    return texts


def selftest():
    """Checks the decisions on synthetic timings and prints the rules texts
    and lookups (tests/rules.rs parses them with the Rust parser and compares
    its lookups with these)."""
    sizes, nps, reps = [8, 512, 8192, 65536, 1 << 20], [2, 4], 3
    jitter = [1.0, 1.01, 0.99]

    def cell(times):
        return {lab: [t * j for j in jitter] for lab, t in times.items()}
    data = {}
    for b in sizes:
        # np=2: knomial 2% faster everywhere (noise: no flip), allgather 20%
        # faster up to 512 B, reduce_scatter_allgather 30% faster at 1 MiB.
        t = {"auto": 1.0, "linear": 1.0, "knomial": 0.98, "allgather": 0.8 if b <= 512 else 1.2,
             "reduce_scatter_allgather": 0.7 if b == 1 << 20 else 1.1}
        data[("allreduce", 2, b)] = cell(t)
        # np=4: knomial 10% faster at 8K and 64K; linear 12% faster at 64K
        # only, which is within the margin of knomial: knomial is kept.
        t = {"auto": 1.0, "linear": 0.88 if b == 65536 else 1.0,
             "knomial": 0.9 if b in (8192, 65536) else 1.0, "allgather": 1.3,
             "reduce_scatter_allgather": 1.3}
        data[("allreduce", 4, b)] = cell(t)
    # A challenger that wins only in one repeat of three does not count.
    data[("allreduce", 4, 8)]["linear"] = [0.5, 1.0, 1.0]
    choice = decide(data, nps, ["allreduce"], sizes, 0.05)
    want = {2: ["allgather", "allgather", "auto", "auto", "reduce_scatter_allgather"],
            4: ["auto", "auto", "knomial", "knomial", "auto"]}
    for np_ in nps:
        assert choice[("allreduce", np_)] == want[np_], (np_, choice[("allreduce", np_)])
    text = rules_text("allreduce", choice, nps, sizes)
    assert text == ("np=2-3: 0-2047 allgather, 256K- reduce_scatter_allgather; "
                    "np>=4: 2K-262143 knomial"), text
    # Identical rules for consecutive process counts merge.
    same = {("bcast", 2): ["auto", "knomial"], ("bcast", 4): ["auto", "knomial"]}
    assert rules_text("bcast", same, [2, 4], [8, 64]) == "np>=2: 16- knomial"
    assert rules_text("barrier", {("barrier", 2): ["linear"], ("barrier", 8): ["knomial radix=4"]},
                      [2, 8], [0]) == "np=2-7: 0- linear; np>=8: 0- knomial radix=4"
    for op, t in (("allreduce", text), ("barrier", "np=2-7: 0- linear; np>=8: 0- knomial radix=4")):
        print(f"RULES {op} {t}")
        for np_ in (2, 3, 4, 9):
            for b in (0, 8, 2047, 2048, 100000, 262143, 262144, 1 << 30):
                print(f"LOOKUP {op} {np_} {b} {lookup(t, np_, b) or 'none'}")
    # --derive keeps a cell only where every run chose the same challenger,
    # and never derives process counts above the cores of a run.
    import tempfile
    with tempfile.TemporaryDirectory() as tmp:
        dirs = []
        for run, fast in (("a", {8: "allgather", 65536: "knomial"}),
                          ("b", {8: "allgather", 65536: "linear"})):
            d = os.path.join(tmp, run)
            os.makedirs(d)
            cell_data = {}
            for np_ in (2, 4):
                for b in (8, 65536):
                    t = {"auto": 1.0, "linear": 1.0, "knomial": 1.0, "allgather": 1.0,
                         "reduce_scatter_allgather": 1.0}
                    t[fast[b]] = 0.7
                    cell_data[("allreduce", np_, b)] = cell(t)
            write_csv(d, cell_data)
            with open(os.path.join(d, "run.json"), "w") as f:
                json.dump({"state": [f"state of run {run}"], "cores": 2, "np": [2, 4],
                           "sizes": [8, 65536], "ops": ["allreduce"], "repeat": reps,
                           "margin": 5.0}, f)
            dirs.append(d)
        texts = derive(dirs, 5.0, os.path.join(tmp, "built-in.conf"))
        assert texts == {"allreduce": "np=2: 0-1023 allgather"}, texts
    print("tune selftest: OK")


def main():
    if sys.argv[1:] == ["--selftest"]:
        return selftest()
    ap = argparse.ArgumentParser(prog="ci/tune.sh", description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="small grid (< 5 min on a quiet machine)")
    ap.add_argument("--output", default="tune-results/sharm-tuned.conf")
    ap.add_argument("--np", help="process counts, e.g. 2,4,8")
    ap.add_argument("--ops", default=",".join(OPS), help="operations (rules names)")
    ap.add_argument("--sizes", help="bytes per process, K/M suffixes")
    ap.add_argument("--repeat", type=int, help="interleaved launches per configuration")
    ap.add_argument("--budget-ms", type=int, help="wall time per (op, size) per launch")
    ap.add_argument("--margin", type=float, default=5.0,
                    help="percent a challenger must win by (and --check's tolerance; default 5)")
    ap.add_argument("--timeout", type=int, default=300, help="seconds per launch")
    ap.add_argument("--out", default="tune-results", help="work directory")
    ap.add_argument("--check", metavar="FILE", help="re-measure a sample of FILE's cells")
    ap.add_argument("--derive", metavar="DIR", nargs="+",
                    help="built-in rules from the work directories (--out) of finished runs: "
                         "cells where every run chose the same algorithm")
    args = ap.parse_args()
    grid = QUICK if args.quick else FULL
    args.np_given, args.sizes_given = args.np, args.sizes
    args.np = args.np or grid["np"]
    args.sizes = args.sizes or grid["sizes"]
    args.repeat = args.repeat or grid["repeat"]
    args.budget_ms = args.budget_ms or grid["budget"]
    unknown = [o for o in args.ops.split(",") if o not in OPS]
    if unknown:
        sys.exit(f"tune: unknown operation(s) {unknown}; known: {', '.join(OPS)}")
    if args.repeat < 1:
        sys.exit("tune: --repeat must be at least 1")
    os.makedirs(os.path.dirname(os.path.abspath(args.output)), exist_ok=True)
    if args.derive:
        derive(args.derive, args.margin, args.output)
        return
    runner = Runner(args)
    runner.prepare()
    if args.check:
        sys.exit(check(args, runner))
    tune(args, runner)


if __name__ == "__main__":
    main()
