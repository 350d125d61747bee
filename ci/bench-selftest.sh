#!/usr/bin/env bash
# ci/bench-selftest.sh - quick self-test of the benchmark tooling.
#
#  1. csv:    a 2-size sweep of every op at np=2 with tuned (+ sharm when
#             the plugin exists) must succeed and produce a well-formed
#             CSV: the right header, one row per (op, size, config),
#             status OK and positive numeric latencies.
#  2. wrong:  with a result deliberately corrupted by the benchmark's
#             --inject-wrong hook, the driver must exit 1, mark the rows
#             WRONG and print no latency for them.
#  3. np3:    the newer ops (irregular v-counts, prefixes, slices) at np=3
#             with an odd size: all rows OK.
#  4. inject: every sized op corrupted at np=3: every row WRONG (each op's
#             own check catches it).
#  5. hier:   sharm-hier (plugin only) runs at np=4 and is skipped at np=2.
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

# check_csv CSV EXPECTED_CONFIGS(comma list) EXPECTED_ROWS_PER_CONFIG
# Prints problems; exit status 0 when the CSV is as expected.
check_csv() {
    python3 - "$@" <<'EOF'
import csv, sys
path, configs, per_config = sys.argv[1], sys.argv[2].split(","), int(sys.argv[3])
header = ["op", "np", "bytes", "config", "median_us", "min_us", "mean_us",
          "max_us", "span_us", "iters", "status", "runs"]
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
                                       "span_us")]
        iters = int(r["iters"])
    except ValueError:
        problems.append(f"non-numeric: {raw}")
        continue
    if min(vals) <= 0 or iters <= 0 or not vals[1] <= vals[0] <= vals[3]:
        problems.append(f"implausible numbers: {raw}")
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

SIZED_OPS="bcast,reduce,allreduce,allgather,gather,scatter,alltoall,reduce_scatter_block,scan,exscan,allgatherv,gatherv"
NEW_OPS="alltoall,reduce_scatter_block,scan,exscan,allgatherv,gatherv"
PLUGIN="$REPO/target/release/libmca_coll_sharm.so"

# ---- 1. csv
out="$WORK/csv"
configs="tuned"
if "$REPO/ci/bench.sh" --np 2 --sizes 8,64K --configs tuned,sharm \
        --ops "$SIZED_OPS,barrier" --budget-ms 30 --out "$out" \
        >"$WORK/csv.log" 2>&1; then
    # Decide afterwards whether sharm must be present: the driver builds
    # the plugin when it can, and a plugin that exists must also have run.
    [ -f "$PLUGIN" ] && configs="tuned,sharm"
    # 12 sized ops x 2 sizes + barrier
    if problems=$(check_csv "$out/results.csv" "$configs" 25); then
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
    if problems=$(check_csv "$out/results.csv" "$configs" 12); then
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
        if problems=$(check_csv "$out/results.csv" sharm-hier 3); then
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

echo "bench-selftest: $PASSED passed, $FAILED failed"
[ "$FAILED" = 0 ]
