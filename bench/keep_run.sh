#!/bin/bash
# Keeps a ci/bench.sh run in the repository:
#
#     bench/keep_run.sh OUT NAME [LOG]
#
# OUT is the run's --out folder, NAME the folder to make under
# docs/benchmark/ (<date>-<letter>[-what], e.g. 2026-11-29-a or
# 2026-11-29-b-os), LOG the run's console output (kept as run.log; by
# default OUT/run.log, which ci/bench.sh writes).  It copies what the
# README and the journal cite: the machine's state at start and end, the
# per-launch probes, the launches, the configurations, the CSVs (all
# iterations, split by state, and the per placement columns), the plots
# and the raw RESULT lines (gzipped), and it writes the tables:
#   tables.txt                  report.py's per-operation tables
#   readme-table-<column>.md    np=2: the README's table from the near_us,
#                               far_us and median_us columns (one that has
#                               no figure, e.g. no launch with the cores
#                               far, is left out with a note)
#   readme-table-np<N>.md       every other np: from median_us (crowded
#                               runs: no placement split there)
# Then write the folder's README.md by hand: the command, the commit, the
# state, the counts and what they mean.  KEEP_RUN_ROOT puts the folder
# under another directory than docs/benchmark/ (ci/bench-selftest.sh).
#
# Why a script: the runs in docs/benchmark/ are what every claim in the
# README rests on, and a folder assembled by hand missed a file now and
# then (tables.txt, a state file).
set -euo pipefail

if [ $# -lt 2 ] || [ $# -gt 3 ]; then
    sed -n '2,4p' "$0" | sed 's/^# \{0,4\}//' >&2
    exit 2
fi
OUT=$1 NAME=$2 LOG=${3:-}
# ci/bench.sh keeps its console output as run.log since 2026-11-29.
[ -z "$LOG" ] && [ -f "$OUT/run.log" ] && LOG=$OUT/run.log
REPO=$(cd "$(dirname "$0")/.." && pwd)
DEST=${KEEP_RUN_ROOT:-$REPO/docs/benchmark}/$NAME

[ -f "$OUT/results.csv" ] || { echo "keep_run: $OUT/results.csv is missing (not a finished ci/bench.sh run)" >&2; exit 1; }
[ -e "$DEST" ] && { echo "keep_run: $DEST exists; pick another name" >&2; exit 1; }
mkdir -p "$DEST"

for f in configs.txt launches.txt meta.txt probes.txt results.csv results-fast.csv \
         results-slow.csv state-start.txt state-end.txt; do
    if [ -f "$OUT/$f" ]; then
        cp "$OUT/$f" "$DEST/"
    else
        echo "keep_run: note: $OUT/$f is missing" >&2
    fi
done
[ -d "$OUT/plots" ] && cp -r "$OUT/plots" "$DEST/"
gzip -c "$OUT/results.txt" >"$DEST/results.txt.gz"
if [ -n "$LOG" ]; then
    cp "$LOG" "$DEST/run.log"
fi

# The run's own tables are at the end of its log: report.py's output with
# the run's --metric, then the plots' paths, which name the run's folder,
# not the kept one (dropped).  Without a log they are made again, with the
# metric the run's --method implies (meta.txt does not record an explicit
# --metric); report.py then also rewrites $OUT's CSV and plots alike.
tables() { awk '/^== /{p=1} p' | grep -v '^  /.*/plots/.*\.png$'; }
if [ -n "$LOG" ]; then
    tables <"$LOG" >"$DEST/tables.txt"
else
    metric=median
    grep -q 'method=osu' "$OUT/meta.txt" 2>/dev/null && metric=osu
    echo "keep_run: no log; tables.txt made again by report.py --metric $metric" >&2
    python3 "$REPO/bench/report.py" "$OUT" --metric "$metric" | tables >"$DEST/tables.txt"
fi

# The process counts, and at np=2 which placement columns have sharm
# figures: a run may have had no launch with the cores far (or near), and
# that column's table is then left out, with a note.
nps=$(python3 -c '
import csv, sys
print(" ".join(sorted({r["np"] for r in csv.DictReader(open(sys.argv[1]))}, key=int)))
' "$OUT/results.csv")
placed=$(python3 -c '
import csv, sys
rows = [r for r in csv.DictReader(open(sys.argv[1])) if r["np"] == "2" and r["config"] == "sharm"]
print(" ".join(c for c in ("near_us", "far_us", "median_us") if any(r[c] for r in rows)))
' "$OUT/results.csv")
for np in $nps; do
    if [ "$np" = 2 ]; then
        for column in near_us far_us median_us; do
            if [[ " $placed " != *" $column "* ]]; then
                echo "keep_run: note: no $column table: no sharm figure in that column at np=2" >&2
                continue
            fi
            python3 "$REPO/bench/readme_table.py" "$OUT/results.csv" --column "$column" --np 2 \
                >"$DEST/readme-table-$column.md"
        done
    else
        python3 "$REPO/bench/readme_table.py" "$OUT/results.csv" --column median_us --np "$np" \
            >"$DEST/readme-table-np$np.md"
    fi
done
echo "keep_run: kept $OUT in $DEST ($(du -sh "$DEST" | cut -f1)); now write $DEST/README.md"
