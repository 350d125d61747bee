#!/usr/bin/env bash
# ci/bench-selftest.sh - quick self-test of the benchmark tooling.
#
#  1. csv:    a 2-size sweep of every op at np=2 with tuned (+ sharm when
#             the plugin exists) must succeed and produce a well-formed
#             CSV: the right header, one row per (op, size, config),
#             status OK and positive numeric latencies, and the medians per
#             placement of the cores from sharm_bench's probe (none at np=3
#             and 4 on 2 cores, runs 3 and 5, where it does not probe).
#  2. wrong:  with a result deliberately corrupted by the benchmark's
#             --inject-wrong hook, the driver must exit 1, mark the rows
#             WRONG and print no latency for them.
#  3. np3:    the newer ops (irregular v-counts, prefixes, slices) at np=3
#             with an odd size: all rows OK.
#  4. inject: every sized op corrupted at np=3: every row WRONG (each op's
#             own check catches it).
#  5. hier:   sharm-hier (plugin only) runs at np=4 and is skipped at np=2.
#  6. state:  the machine state of run 1: the summary line was printed,
#             state-start.txt and state-end.txt hold every probe (memcpy,
#             line RTT, cross-core copy, p2p with CMA and with two copies)
#             with plausible values, and every CSV row carries the state
#             and, from 64 KiB, the single-copy limit.
#  7. impi:   Intel MPI (installed from PyPI unless cached) runs every op
#             OK, identifies itself and has its ranks pinned one per core.
#             SKIP, loudly, only when pip cannot install impi-rt; any
#             other failure is a FAIL.
#  8. osu:    --method osu: the launch runs OSU's loop (reused buffers,
#             MPI_Barrier after the call), rows carry osu_avg_us and
#             method=osu and no placement figures (no probe in that loop),
#             and an injected wrong result is still caught.
#  9. simreport: bench/report.py on a made-up simulated-nodes run: the
#             section with the loopback-TCP caveat, the counters per call
#             and the Allgather inter-node bytes are printed, a call the
#             hierarchy did not serve is marked NOTSERVED (not timed), and
#             with the COUNTERS lines removed the report fails (exit 1).
# 10. simnodes: ci/bench.sh --sim-nodes 2x2 (small: sharm-hier, one
#             Allgather variant, flat vs node group) runs, every sharm call
#             is served as configured, the counters show PML and shm
#             traffic, and no placement figure appears (4 processes on the
#             machine's 2 CPUs).  SKIP, loudly, where simulated nodes are unavailable
#             (not root, no unshare).
# 11. keep:   run 1's console output as ci/bench.sh kept it (OUT/run.log) has
#             every line its caller's file got, and bench/keep_run.sh keeps
#             that run (in the work folder, KEEP_RUN_ROOT): the state, CSVs
#             and RESULT lines, report.py's tables taken from the log (no
#             plot paths), the README tables at np=2 for the three columns
#             (near_us or far_us left out, with a note, when no launch ran
#             so placed);
#             it refuses a folder that exists, and without a log it makes
#             the tables again with report.py.
#
# Last line: "bench-selftest: N passed, M failed"; exit 1 if any failed.
set -u -o pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
WORK=$(mktemp -d /tmp/bench-selftest.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
PASSED=0
FAILED=0

pass() { echo "bench-selftest: PASS $1"; PASSED=$((PASSED + 1)); }
fail() { echo "bench-selftest: FAIL $1: $2"; FAILED=$((FAILED + 1)); }

# check_csv CSV EXPECTED_CONFIGS(comma list) EXPECTED_ROWS_PER_CONFIG PLACED
# PLACED 1: every row has figures per placement of the cores (np=2 on this
# 2-core machine); 0: none has (a crowded node, where sharm_bench does not
# probe).  Prints problems; exit status 0 when the CSV is as expected.
check_csv() {
    python3 - "$@" <<'EOF'
import csv, re, sys
path, configs, per_config = sys.argv[1], sys.argv[2].split(","), int(sys.argv[3])
placed_expected = sys.argv[4] == "1"
header = ["op", "np", "bytes", "config", "median_us", "min_us", "mean_us",
          "max_us", "span_us", "osu_avg_us", "iters", "status", "runs",
          "near_us", "near_iters", "far_us", "far_iters",
          "method", "limit_us", "pct_of_limit",
          "state_memcpy_64k_gbps", "state_memcpy_4m_gbps",
          "state_memcpy_64m_gbps", "state_line_rtt_ns", "state_xcopy_1m_gbps",
          "state_xcopy_4m_gbps", "state_xcopy_16m_gbps",
          "state_p2p_2copy_1m_gbps", "state_p2p_2copy_4m_gbps",
          "state_p2p_cma_1m_gbps", "state_p2p_cma_4m_gbps",
          "launch_line_rtt_ns"]
problems = []
with open(path, newline="") as f:
    rows = list(csv.reader(f))
if not rows or rows[0] != header:
    problems.append(f"bad header {rows[0] if rows else None}")
body = [dict(zip(header, r)) for r in rows[1:]]
for r, raw in zip(body, rows[1:]):
    if len(raw) != len(header):
        problems.append(f"row has {len(raw)} fields: {raw}")
        continue
    if r["status"] != "OK":
        problems.append(f"status {r['status']}: {raw}")
        continue
    try:
        vals = [float(r[k]) for k in ("median_us", "min_us", "mean_us", "max_us",
                                       "span_us", "osu_avg_us")]
        iters = int(r["iters"])
    except ValueError:
        problems.append(f"non-numeric: {raw}")
        continue
    if min(vals) <= 0 or iters <= 0 or not vals[1] <= vals[0] <= vals[3]:
        problems.append(f"implausible numbers: {raw}")
    # sharm_bench's per-iteration placement probe (np=2 on 2 cores, its
    # default loop): every iteration began near or far, and a row names the
    # placements its launches ran in, each with a plausible median
    placed = [(r[f"{p}_us"], r[f"{p}_iters"]) for p in ("near", "far")]
    if any(us for us, _ in placed) != placed_expected:
        problems.append(f"placement figures (near_us, far_us) expected: "
                        f"{placed_expected}: {raw}")
    for us, n in placed:
        if us and not (float(us) > 0 and int(n) >= 5
                       and vals[1] <= float(us) <= vals[3]):
            problems.append(f"implausible placement figure {us} ({n}): {raw}")
    # the state probes before and after each launch behind the row
    if not re.fullmatch(r"\d+-\d+(/\d+-\d+)*", r["launch_line_rtt_ns"]) or \
            r["launch_line_rtt_ns"].count("/") + 1 != int(r["runs"]):
        problems.append(f"launch_line_rtt_ns {r['launch_line_rtt_ns']!r} "
                        f"for {r['runs']} launches: {raw}")
for c in configs:
    n = sum(1 for r in body if r["config"] == c)
    if n != per_config:
        problems.append(f"config {c}: {n} rows, expected {per_config}")
extra = {r["config"] for r in body} - set(configs)
if extra:
    problems.append(f"unexpected configs {sorted(extra)}")
for p in problems[:10]:
    print("   ", p)
sys.exit(1 if problems else 0)
EOF
}

SIZED_OPS="bcast,reduce,allreduce,allgather,gather,scatter,alltoall,reduce_scatter_block,scan,exscan,allgatherv,gatherv,scatterv,alltoallv,reduce_scatter"
NEW_OPS="alltoall,reduce_scatter_block,scan,exscan,allgatherv,gatherv,scatterv,alltoallv,reduce_scatter"
PLUGIN="$REPO/target/release/libmca_coll_sharm.so"
SKIPPED=0
skip() { echo "bench-selftest: SKIP $1: $2"; SKIPPED=$((SKIPPED + 1)); }

# ---- 1. csv
out="$WORK/csv"
configs="tuned"
if "$REPO/ci/bench.sh" --np 2 --sizes 8,64K --configs tuned,sharm \
        --ops "$SIZED_OPS,barrier" --budget-ms 30 --out "$out" \
        >"$WORK/csv.log" 2>&1; then
    # Decide afterwards whether sharm must be present: the driver builds
    # the plugin when it can, and a plugin that exists must also have run.
    [ -f "$PLUGIN" ] && configs="tuned,sharm"
    # 15 sized ops x 2 sizes + barrier
    if problems=$(check_csv "$out/results.csv" "$configs" 31 1); then
        pass "csv ($configs)"
    else
        fail csv "$(printf '\n%s' "$problems")"
    fi
else
    fail csv "ci/bench.sh exited $? (log follows)"
    tail -30 "$WORK/csv.log" | sed 's/^/    /'
fi

# ---- 2. wrong
out="$WORK/wrong"
SHARM_BENCH_ARGS="--inject-wrong allreduce" "$REPO/ci/bench.sh" --np 2 \
    --sizes 8 --ops allreduce,bcast --configs tuned --budget-ms 20 \
    --out "$out" >"$WORK/wrong.log" 2>&1
rc=$?
verdict=$(python3 - "$out/results.csv" <<'EOF'
import csv, sys
rows = {r["op"]: r for r in csv.DictReader(open(sys.argv[1]))}
ar, bc = rows.get("allreduce"), rows.get("bcast")
if not ar or ar["status"] != "WRONG" or ar["median_us"]:
    print("allreduce row not WRONG or has a latency:", ar)
elif not bc or bc["status"] != "OK":
    print("bcast row should be OK:", bc)
EOF
)
if [ $rc != 1 ]; then
    fail wrong "driver exited $rc, expected 1"
elif [ -n "$verdict" ]; then
    fail wrong "$verdict"
elif ! grep -q "WRONG results" "$WORK/wrong.log"; then
    fail wrong "driver did not print the WRONG summary"
else
    pass wrong
fi

# ---- 3. np3
out="$WORK/np3"
configs="tuned"
[ -f "$PLUGIN" ] && configs="tuned,sharm"
if "$REPO/ci/bench.sh" --np 3 --sizes 13,8K --configs "$configs" \
        --ops "$NEW_OPS" --budget-ms 20 --out "$out" >"$WORK/np3.log" 2>&1; then
    # 9 ops x 2 sizes
    if problems=$(check_csv "$out/results.csv" "$configs" 18 0); then
        pass "np3 ($configs)"
    else
        fail np3 "$(printf '\n%s' "$problems")"
    fi
else
    fail np3 "ci/bench.sh exited $? (log follows)"
    tail -30 "$WORK/np3.log" | sed 's/^/    /'
fi

# ---- 4. inject
out="$WORK/inject"
SHARM_BENCH_ARGS="--inject-wrong $SIZED_OPS" "$REPO/ci/bench.sh" --np 3 \
    --sizes 13 --ops "$SIZED_OPS" --configs tuned --budget-ms 20 \
    --out "$out" >"$WORK/inject.log" 2>&1
rc=$?
verdict=$(python3 - "$out/results.csv" "$SIZED_OPS" <<'EOF'
import csv, sys
rows = {r["op"]: r for r in csv.DictReader(open(sys.argv[1]))}
for op in sys.argv[2].split(","):
    r = rows.get(op)
    if not r or r["status"] != "WRONG" or r["median_us"]:
        print(f"{op}: not WRONG or has a latency: {r}")
EOF
)
if [ $rc != 1 ]; then
    fail inject "driver exited $rc, expected 1"
elif [ -n "$verdict" ]; then
    fail inject "$(printf '\n    %s' "$verdict")"
else
    pass inject
fi

# ---- 5. hier
if [ -f "$PLUGIN" ]; then
    out="$WORK/hier"
    if "$REPO/ci/bench.sh" --np 2,4 --sizes 8 --configs sharm-hier \
            --ops bcast,reduce,allreduce --budget-ms 20 --out "$out" \
            >"$WORK/hier.log" 2>&1; then
        # 3 ops at np=4 only
        if problems=$(check_csv "$out/results.csv" sharm-hier 3 0); then
            pass hier
        else
            fail hier "$(printf '\n%s' "$problems")"
        fi
    else
        fail hier "ci/bench.sh exited $? (log follows)"
        tail -30 "$WORK/hier.log" | sed 's/^/    /'
    fi
else
    echo "bench-selftest: SKIP hier (no plugin built)"
fi

# ---- 6. state (of run 1)
out="$WORK/csv"
problems=$(python3 - "$out" <<'EOF'
import csv, os, re, sys
out = sys.argv[1]
problems = []
log = open(os.path.join(os.path.dirname(out), "csv.log")).read()
if not re.search(r"^bench: state: memcpy .* line RTT [0-9.]+ ns, .*CMA ", log, re.M):
    problems.append("no state summary line in the driver's output")
if "single-copy limit" not in log:
    problems.append("no single-copy limit line in the driver's output")
for phase in ("start", "end"):
    path = os.path.join(out, f"state-{phase}.txt")
    if not os.path.exists(path):
        problems.append(f"missing {path}")
        continue
    text = open(path).read()
    def vals(pattern):
        return [float(v) for v in re.findall(pattern, text, re.M)]
    checks = {
        "MEMCPY": (vals(r"^MEMCPY bytes=\d+ gbps=([0-9.]+)$"), 3, 0.1, 10000),
        "XCOPY": (vals(r"^XCOPY bytes=\d+ gbps=([0-9.]+)$"), 5, 0.1, 10000),
        "LINE_RTT": (vals(r"^LINE_RTT ns=([0-9.]+)$"), 1, 1, 100000),
        "P2P cma": (vals(r"^P2P mech=cma bytes=\d+ gbps=([0-9.]+)"), 2, 0.01, 10000),
        "P2P none": (vals(r"^P2P mech=none bytes=\d+ gbps=([0-9.]+)"), 2, 0.01, 10000),
    }
    for name, (v, n, lo, hi) in checks.items():
        if len(v) != n or not all(lo <= x <= hi for x in v):
            problems.append(f"{phase}: {name}: {v} (want {n} values in [{lo}, {hi}])")
    if "FAILED" in text:
        problems.append(f"{phase}: a probe failed: {text.strip()}")
rows = list(csv.DictReader(open(os.path.join(out, "results.csv"))))
for r in rows:
    state = [k for k in r if k.startswith("state_")]
    if len(state) != 11 or not all(r[k] and float(r[k]) > 0 for k in state):
        problems.append(f"state columns missing or empty: {r}")
        break
    big = int(r["bytes"]) >= 64 << 10
    if big != bool(r["limit_us"]) or (big and not float(r["pct_of_limit"]) > 0):
        problems.append(f"limit_us / pct_of_limit wrong: {r}")
        break
print("\n".join("    " + p for p in problems[:10]))
EOF
)
if [ ! -f "$out/results.csv" ]; then
    fail state "run 1 left no CSV"
elif [ -n "$problems" ]; then
    fail state "$(printf '\n%s' "$problems")"
else
    pass state
fi

# ---- 7. impi
out="$WORK/impi"
"$REPO/ci/bench.sh" --np 2 --sizes 8,64K --configs impi \
    --ops bcast,allreduce,allgather,barrier --budget-ms 20 --out "$out" \
    >"$WORK/impi.log" 2>&1
rc=$?
if grep -q '^CONFIG name=impi status=skipped reason="install failed' \
        "$out/configs.txt" 2>/dev/null; then
    skip impi "Intel MPI could not be installed: $(grep -o 'reason=.*' "$out/configs.txt")"
    echo "bench-selftest: *** the Intel MPI configuration was NOT tested ***"
elif [ $rc != 0 ]; then
    fail impi "ci/bench.sh exited $rc (log follows)"
    tail -30 "$WORK/impi.log" | sed 's/^/    /'
elif ! problems=$(check_csv "$out/results.csv" impi 7 1); then  # 3 ops x 2 sizes + barrier
    fail impi "$(printf '\n%s' "$problems")"
elif ! grep -q 'config=impi .*INFO .*library="Intel(R) MPI.*binding="0;1"' \
        "$out/results.txt"; then
    fail impi "no Intel MPI INFO line with ranks pinned to cores 0 and 1"
else
    pass impi
fi

# ---- 8. osu
out="$WORK/osu"
SHARM_BENCH_ARGS="--inject-wrong allreduce" "$REPO/ci/bench.sh" --np 2 \
    --sizes 8,64K --ops allreduce,bcast --configs tuned --budget-ms 20 \
    --method osu --out "$out" >"$WORK/osu.log" 2>&1
rc=$?
verdict=$(python3 - "$out/results.csv" <<'EOF'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
for r in rows:
    if r["method"] != "osu":
        print("method not osu:", r)
    elif r["op"] == "allreduce" and (r["status"] != "WRONG" or r["osu_avg_us"]):
        print("allreduce row not WRONG or has a latency:", r)
    elif r["op"] == "bcast" and (r["status"] != "OK" or not float(r["osu_avg_us"]) > 0):
        print("bcast row not OK with osu_avg_us:", r)
    elif r["near_us"] or r["far_us"]:
        print("OSU's loop has no barrier before the call, so no probe:", r)
if sorted(r["op"] for r in rows) != ["allreduce"] * 2 + ["bcast"] * 2:
    print("rows:", [(r["op"], r["bytes"]) for r in rows])
EOF
)
if [ $rc != 1 ]; then
    fail osu "driver exited $rc, expected 1 (log: tail follows)"
    tail -10 "$WORK/osu.log" | sed 's/^/    /'
elif [ -n "$verdict" ]; then
    fail osu "$verdict"
elif ! grep -q 'INFO .*data=reuse sync=osu' "$out/results.txt"; then
    fail osu "launch did not run OSU's loop (INFO data=reuse sync=osu)"
elif ! grep -q 'OSU-style rank-average' "$WORK/osu.log"; then
    fail osu "tables do not use the OSU figure"
else
    pass osu
fi

# ---- 9. simreport (no MPI: a made-up run of ci/bench.sh --sim-nodes)
out="$WORK/simreport"
mkdir -p "$out"
cat >"$out/meta.txt" <<'EOF'
date=2026-01-01T00:00:00+00:00 host=test cores=2
mode=sim-nodes layout=2:2,2 node_layout=1:2 sizes=8 budget_ms=20 repeat=1 method=ours
ops=allgather,bcast
EOF
cat >"$out/sim-configs.txt" <<'EOF'
SIMCONFIG name=sharm-hier layout=2:2,2 expect=hier ops=all
SIMCONFIG name=tuned layout=2:2,2 expect=none ops=all
SIMCONFIG name=sharm-ag-rd-exch layout=2:2,2 expect=hier ops=allgather
EOF
printf 'CONFIG name=%s status=ok reason=""\n' sharm-hier tuned sharm-ag-rd-exch >"$out/configs.txt"
sim_res() { # config op bytes median
    echo "config=$1 launch=l-$1 RESULT op=$2 bytes=$3 np=4 median_us=$4 min_us=$4 mean_us=$4 max_us=$4 span_us=$4 osu_avg_us=$4 iters=10 warmup=4 status=OK"
}
sim_cnt() { # config op bytes calls hierarchical internode_bytes
    echo "config=$1 launch=l-$1 COUNTERS op=$2 bytes=$3 np=4 calls=$4 served=$((4 * $4)) fallbacks=0 hierarchical=$5 pml_messages=$((2 * $4)) pml_bytes=$6 internode_messages=$((2 * $4)) internode_bytes=$6 shm_messages=$((4 * $4)) shm_bytes=$((8 * $4)) status=OK"
}
{
    sim_res sharm-hier allgather 8 75.5; sim_cnt sharm-hier allgather 8 100 400 4800
    sim_res sharm-hier bcast 8 50.0; sim_cnt sharm-hier bcast 8 100 396 800
    sim_res tuned allgather 8 48.6; sim_res tuned bcast 8 40.0
    sim_res sharm-ag-rd-exch allgather 8 70.0; sim_cnt sharm-ag-rd-exch allgather 8 100 400 4800
    echo "config=sharm-ag-rd-exch launch=l-sharm-ag-rd-exch REMAP variant=RdExch nodes=2 plain_blocks=8 remapped_blocks=6"
    echo 'config=sharm-hier launch=l-sharm-hier TREE line="top: [0 2] leader 0 pml"'
} >"$out/results.txt"
{
    for c in sharm-hier tuned; do
        echo "LAUNCH config=$c np=4 launch=l-$c sizes=8 ops=allgather,bcast rc=0 status=ok secs=1 layout=2:2,2"
    done
    echo "LAUNCH config=sharm-ag-rd-exch np=4 launch=l-sharm-ag-rd-exch sizes=8 ops=allgather rc=0 status=ok secs=1 layout=2:2,2"
} >"$out/launches.txt"
python3 "$REPO/bench/report.py" "$out" >"$WORK/simreport.log" 2>&1
rc=$?
why=""
[ $rc = 0 ] || why="report exited $rc"
for want in "loopback TCP on 2 cores is not a network" "top: \[0 2\] leader 0 pml" \
        "sharm-hier +allgather +8 +100 +100% +2 +48 B +2 +48 B" \
        "sharm-ag-rd-exch +70.0 +48 B +64 B +48 B" \
        "sharm-hier bcast 8: hierarchy served 396 of 400 calls" \
        "^ +4 +8 +NOTSERVED +40.0"; do
    grep -qE -- "$want" "$WORK/simreport.log" || why="$why; no line matching '$want'"
done
sed -i '/ COUNTERS /d' "$out/results.txt"
python3 "$REPO/bench/report.py" "$out" >"$WORK/simreport-nocnt.log" 2>&1
rc=$?
[ $rc = 1 ] || why="$why; without COUNTERS lines the report exited $rc, expected 1"
grep -q "no counters" "$WORK/simreport-nocnt.log" || why="$why; no 'no counters' complaint"
if [ -n "$why" ]; then
    fail simreport "${why#; } (log: tail follows)"
    tail -25 "$WORK/simreport.log" | sed 's/^/    /'
else
    pass simreport
fi

# ---- 10. simnodes (root and unshare; ci/sim-nodes.sh check)
if [ ! -f "$PLUGIN" ]; then
    skip simnodes "no plugin built"
elif ! why=$("$REPO/ci/sim-nodes.sh" check 2>&1); then
    skip simnodes "$why"
    echo "bench-selftest: *** the simulated-nodes benchmark was NOT tested ***"
else
    out="$WORK/simnodes"
    "$REPO/ci/bench.sh" --sim-nodes 2x2 --sizes 8 --ops bcast,allgather \
        --configs sharm-hier,sharm-ag-rd-exch,node --budget-ms 20 \
        --out "$out" >"$WORK/simnodes.log" 2>&1
    rc=$?
    why=""
    [ $rc = 0 ] || why="ci/bench.sh --sim-nodes exited $rc"
    grep -q "NOT served as configured" "$WORK/simnodes.log" && why="$why; calls not served as configured"
    for want in "loopback TCP on 2 cores is not a network" \
            "sharm-hier +bcast +8 +[0-9]+ +100% +1 +8 B +1 +8 B" \
            "node-group +bcast +8 +[0-9]+ +100% +0 +0 B" \
            "sharm-ag-rd-exch +[0-9.]+ +[0-9]+ B +[0-9]+ B +[0-9]+ B"; do
        grep -qE -- "$want" "$WORK/simnodes.log" || why="$why; no line matching '$want'"
    done
    # the 2x2 launches put 4 processes on this machine's 2 CPUs: no
    # placement probe there, though each simulated node holds only 2 (the
    # one-node np=2 launches probe)
    grep -qE " np=4 .*near_iters=" "$out/results.txt" 2>/dev/null &&
        why="$why; placement figures on a crowded machine"
    if [ -n "$why" ]; then
        fail simnodes "${why#; } (log: tail follows)"
        tail -30 "$WORK/simnodes.log" | sed 's/^/    /'
    else
        pass simnodes
    fi
fi

# ---- 11. keep (of run 1)
out="$WORK/csv"
kept="$WORK/kept"
why=""
if [ ! -f "$out/results.csv" ]; then
    why="run 1 left no results.csv"
elif ! diff -q <(sort "$out/run.log") <(sort "$WORK/csv.log") >/dev/null; then
    # The same lines; the two streams' lines may interleave differently.
    why="OUT/run.log does not hold the lines of the caller's copy of the console output"
elif ! KEEP_RUN_ROOT="$kept" "$REPO/bench/keep_run.sh" "$out" run >"$WORK/keep.log" 2>&1; then
    why="keep_run.sh failed: $(tail -3 "$WORK/keep.log")"
else
    d="$kept/run"
    for f in results.csv state-start.txt state-end.txt probes.txt launches.txt \
             results.txt.gz run.log tables.txt readme-table-median_us.md; do
        [ -s "$d/$f" ] || why="$why; $f missing or empty"
    done
    cmp -s "$d/run.log" "$out/run.log" || why="$why; run.log not copied whole"
    zcat "$d/results.txt.gz" 2>/dev/null | grep -q " RESULT op=" || why="$why; no RESULT line kept"
    head -1 "$d/tables.txt" | grep -q "^== " || why="$why; tables.txt does not start with a table"
    grep -q "/plots/.*\.png" "$d/tables.txt" && why="$why; tables.txt names the run's plots"
    # The placement tables: each made, or left out with a note when no
    # launch had the cores so placed (the run's CSV then has no figure).
    for c in near_us far_us median_us; do
        if [ -f "$d/readme-table-$c.md" ]; then
            head -1 "$d/readme-table-$c.md" | grep -q "^| op | size |" ||
                why="$why; readme-table-$c.md has no table header"
        elif ! grep -q "no $c table" "$WORK/keep.log"; then
            why="$why; readme-table-$c.md neither made nor noted"
        fi
    done
    # Which columns had figures: a table for each, and none for the others.
    for c in near_us far_us; do
        has=$(python3 -c 'import csv,sys; print(int(any(r[sys.argv[2]] for r in csv.DictReader(open(sys.argv[1])) if r["config"] == "sharm")))' "$out/results.csv" "$c")
        [ "$has" = 1 ] && [ ! -f "$d/readme-table-$c.md" ] && why="$why; no $c table though the run has $c figures"
    done
    KEEP_RUN_ROOT="$kept" "$REPO/bench/keep_run.sh" "$out" run >/dev/null 2>&1 &&
        why="$why; keeping into an existing folder succeeded"
    # Without a log: tables made again (a copy of the run, report.py
    # rewrites its plots).
    cp -r "$out" "$WORK/nolog" && rm -f "$WORK/nolog/run.log"
    if KEEP_RUN_ROOT="$kept" "$REPO/bench/keep_run.sh" "$WORK/nolog" nolog >"$WORK/keep2.log" 2>&1; then
        head -1 "$kept/nolog/tables.txt" | grep -q "^== " || why="$why; without a log, no tables"
        [ -e "$kept/nolog/run.log" ] && why="$why; without a log, a run.log appeared"
    else
        why="$why; keep_run.sh without a log failed: $(tail -3 "$WORK/keep2.log")"
    fi
fi
if [ -n "$why" ]; then
    fail keep "${why#; }"
else
    pass keep
fi

echo "bench-selftest: $PASSED passed, $FAILED failed, $SKIPPED skipped"
[ "$FAILED" = 0 ]
