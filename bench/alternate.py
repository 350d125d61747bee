#!/usr/bin/env python3
"""Alternated launches of several configurations, each launch labelled by
the placement of the cores it ran on.

    python3 bench/alternate.py --run DIR [--np N] ROUNDS CONFIG... -- BENCH_ARGS...

DIR is a run directory of `ci/bench.sh` (its `bin/sharm_bench.openmpi` and
`bin/machine_state` are used; `ci/bench.sh --np 2 --sizes 8 --configs sharm
--out DIR` builds them).  Each CONFIG is `LABEL:KIND[:MCA ARGS]`:

    old:sharm=/path/to/plugin/dir            sharm from that directory
    min64k:sharm=DIR:--mca coll_sharm_nontemporal_min_size 65536
    sm:sm   tuned:tuned                      Open MPI's own components
    mpich:mpich   impi:impi                  MPICH and Intel MPI (their own
                                             sharm_bench builds in DIR/bin;
                                             Intel MPI from IMPI_ROOT, default
                                             /var/cache/sharm/impi as
                                             ci/bench.sh installs it)

Every round runs each configuration once, in the order given, with
`sharm_bench BENCH_ARGS` (e.g. `--ops bcast,reduce --sizes 4K,8K
--budget-ms 100`).  Before and after each launch `machine_state local
--quick` measures the cross-core line round trip: a launch is "near" when
both are under 230 ns, "far" when both are over, "mixed" otherwise (the
host moved the cores during it).  The output gives, per state, the median
over that state's launches of each (operation, size)'s median time in µs,
one column per configuration, how many launches each had, and the quartiles
of the probes' round trips (two "near" runs can sit in different states).

Why: on the development VM the same build's times move by up to 2x with the
placement of its two vCPUs, which changes every few seconds.  Launches of
the compared builds taken in turns, and compared only within one placement,
are what the journal's A/Bs rest on (`bench/paired_ab.c` compares inside one
launch instead, when a scratch build can serve the two communicators
differently).  Timings, not tests: never run while a test suite runs.
"""

import argparse
import os
import re
import statistics
import subprocess
import sys

NEAR_BELOW_NS = 230.0
OMPI_COMPONENTS = "/usr/lib/x86_64-linux-gnu/openmpi/lib/openmpi3"


def line_rtt(machine_state):
    out = subprocess.run(
        [machine_state, "local", "--quick"], capture_output=True, text=True
    ).stdout
    m = re.search(r"LINE_RTT ns=([\d.]+)", out)
    return float(m[1]) if m else float("nan")


def launch(run, np, kind, extra):
    """The command line (the benchmark binary last) and extra environment of
    one launch of `kind`, placed as `ci/bench.sh` places it: bound to cores,
    or unbound when oversubscribed."""
    bind = np <= os.cpu_count()
    binary = lambda lib: os.path.join(run, "bin", f"sharm_bench.{lib}")
    if kind == "mpich":
        args = ["mpiexec.mpich", "-n", str(np)] + (["-bind-to", "core"] if bind else [])
        return args + extra.split() + [binary("mpich")], {}
    if kind == "impi":
        root = os.environ.get("IMPI_ROOT", "/var/cache/sharm/impi")
        fi_path = os.path.join(root, "lib", "libfabric")
        if not os.path.isdir(fi_path):
            fi_path = os.path.join(root, "lib")
        env = {
            "PATH": os.path.join(root, "bin") + ":" + os.environ.get("PATH", ""),
            "LD_LIBRARY_PATH": ":".join(
                filter(None, [os.path.join(root, "lib"), os.environ.get("LD_LIBRARY_PATH")])
            ),
            "FI_PROVIDER_PATH": fi_path,
            "I_MPI_FABRICS": "shm",
            "I_MPI_PIN": "1" if bind else "0",
        }
        if bind:
            env["I_MPI_PIN_PROCESSOR_LIST"] = ",".join(str(i) for i in range(np))
        args = [os.path.join(root, "bin", "mpiexec"), "-n", str(np)]
        return args + extra.split() + [binary("impi")], env
    args = ["mpirun.openmpi", "--allow-run-as-root", "-np", str(np)]
    args += ["--bind-to", "core"] if bind else ["--oversubscribe", "--bind-to", "none"]
    if kind.startswith("sharm="):
        args += ["--mca", "coll_sharm_priority", "100"]
        args += ["--mca", "mca_base_component_path", OMPI_COMPONENTS + ":" + kind[len("sharm="):]]
    elif kind in ("sm", "tuned", "adapt"):
        args += ["--mca", "coll", "^sharm", "--mca", f"coll_{kind}_priority", "100"]
    else:
        sys.exit(f"alternate.py: unknown configuration kind '{kind}'")
    return args + extra.split() + [binary("openmpi")], {}


def main():
    argv = sys.argv[1:]
    if "--" not in argv:
        sys.exit(__doc__)
    cut = argv.index("--")
    parser = argparse.ArgumentParser(usage=__doc__)
    parser.add_argument("--run", required=True, help="a ci/bench.sh run directory")
    parser.add_argument("--np", type=int, default=2)
    parser.add_argument("rounds", type=int)
    parser.add_argument("configs", nargs="+")
    opts = parser.parse_args(argv[:cut])
    bench_args = argv[cut + 1 :]
    machine_state = os.path.join(opts.run, "bin", "machine_state")
    if not os.access(machine_state, os.X_OK):
        sys.exit(f"alternate.py: {machine_state} missing (build it with ci/bench.sh --out {opts.run})")
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    # (label, command, environment) of each configuration, made once.
    configs = []
    for c in opts.configs:
        parts = c.split(":", 2)
        if len(parts) < 2:
            sys.exit(f"alternate.py: configuration '{c}' is not LABEL:KIND[:MCA ARGS]")
        label, kind, extra = parts[0], parts[1], parts[2] if len(parts) > 2 else ""
        cmd, own_env = launch(opts.run, opts.np, kind, extra)
        if not os.access(cmd[-1], os.X_OK):
            sys.exit(
                f"alternate.py: {cmd[-1]} missing (build it with"
                f" ci/bench.sh --configs sharm,{kind.split('=')[0]} --out {opts.run})"
            )
        configs.append((label, cmd, dict(env, **own_env)))

    times = {}  # (state, op, bytes, label) -> [median per launch]
    launches = {}  # (state, label) -> count
    rtts = {}  # state -> the probes' line round trips (ns)
    for _ in range(opts.rounds):
        for label, cmd, cmd_env in configs:
            before = line_rtt(machine_state)
            out = subprocess.run(
                cmd + bench_args,
                env=cmd_env,
                capture_output=True,
                text=True,
                timeout=600,
            ).stdout
            after = line_rtt(machine_state)
            if before < NEAR_BELOW_NS and after < NEAR_BELOW_NS:
                state = "near"
            elif before >= NEAR_BELOW_NS and after >= NEAR_BELOW_NS:
                state = "far"
            else:
                state = "mixed"
            launches[(state, label)] = launches.get((state, label), 0) + 1
            rtts.setdefault(state, []).extend([before, after])
            for m in re.finditer(r"RESULT op=(\S+) bytes=(\d+) .*?median_us=([\d.]+)", out):
                times.setdefault((state, m[1], int(m[2]), label), []).append(float(m[3]))

    labels = [c[0] for c in configs]
    for state in ("near", "far", "mixed"):
        cells = sorted({(op, b) for s, op, b, _ in times if s == state})
        if not cells:
            continue
        counts = " ".join(str(launches.get((state, l), 0)) for l in labels)
        q = statistics.quantiles(rtts[state], n=4) if len(rtts[state]) > 1 else rtts[state] * 3
        print(
            f"== {state}: op bytes {' '.join(labels)} (launches per label: {counts};"
            f" line round trip q1/median/q3 {q[0]:.0f}/{q[1]:.0f}/{q[2]:.0f} ns)"
        )
        for op, b in cells:
            row = []
            for l in labels:
                v = times.get((state, op, b, l))
                row.append(f"{statistics.median(v):.3f}" if v else "nan")
            print(op, b, " ".join(row))


if __name__ == "__main__":
    main()
