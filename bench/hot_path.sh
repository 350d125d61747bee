#!/usr/bin/env bash
# Instructions per call inside sharm (mca_coll_sharm.so) on each of 2
# processes, counted by callgrind: deterministic for a given build, where
# timings of a sub-microsecond call move by 2x with this VM's state
# (bench/README.md, "Instructions per call").  Waits are not counted
# (bench/hot_path.py leaves out Waiter::until_slow and the conditions it
# polls, whose number depends on timing); setting up the communicator is,
# divided over the calls, so compare builds at the same number of calls.
#
#   bench/hot_path.sh [--plugin DIR] [--calls N] [OP:BYTES ...]
#
# DIR holds mca_coll_sharm.so (default: a copy of target/release's).
# Default operations: bcast, reduce, allreduce, allgather, gather, scatter,
# alltoall at 8 bytes and barrier.  Output: one line per operation,
# "OP BYTES rank0 rank1".
set -euo pipefail
REPO=$(cd "$(dirname "$0")/.." && pwd)
CALLS=20000
PLUGIN=""
OPS=()
while [ $# -gt 0 ]; do
    case "$1" in
        --plugin) PLUGIN=$2; shift ;;
        --calls) CALLS=$2; shift ;;
        -h|--help) sed -n '2,18p' "$0"; exit 0 ;;
        *) OPS+=("$1") ;;
    esac
    shift
done
[ ${#OPS[@]} -gt 0 ] || OPS=(bcast:8 reduce:8 allreduce:8 allgather:8 gather:8 scatter:8 alltoall:8 barrier:0)
command -v valgrind >/dev/null || { echo "hot_path.sh: valgrind is required" >&2; exit 2; }
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
if [ -z "$PLUGIN" ]; then
    PLUGIN=$WORK/plugin
    mkdir -p "$PLUGIN"
    cp "$REPO/target/release/libmca_coll_sharm.so" "$PLUGIN/mca_coll_sharm.so"
fi
# Open MPI's own wrappers: with MPICH installed too (ci/bench.sh does),
# plain mpicc and mpirun may be MPICH's.
mpicc.openmpi -O2 -o "$WORK/hot_path" "$REPO/bench/hot_path.c"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# Open MPI's component directory stays in the search path (as ci/bench.sh).
compdir=$("$REPO/ci/ompi-component-dir")
for spec in "${OPS[@]}"; do
    op=${spec%%:*}
    bytes=${spec#*:}
    rm -f "$WORK"/cg.*
    # Two processes on two cores under valgrind: oversubscribed as far as
    # Open MPI can tell, so its waits yield.  No calibration: it would time
    # copies under valgrind, and its choice does not touch 8-byte calls.
    timeout 600 mpirun.openmpi --allow-run-as-root -np 2 --oversubscribe --bind-to none \
        --mca mca_base_component_path "$compdir:$PLUGIN" \
        --mca coll_sharm_priority 100 --mca coll_sharm_calibrate 0 \
        valgrind --tool=callgrind \
        --callgrind-out-file="$WORK/cg.%q{OMPI_COMM_WORLD_RANK}" \
        "$WORK/hot_path" "$op" "$bytes" "$CALLS" >"$WORK/log" 2>&1 ||
        { echo "hot_path.sh: $op failed:" >&2; tail -5 "$WORK/log" >&2; exit 1; }
    echo "$op $bytes $(python3 "$REPO/bench/hot_path.py" "$WORK/cg.0" mca_coll_sharm.so "$CALLS") $(python3 "$REPO/bench/hot_path.py" "$WORK/cg.1" mca_coll_sharm.so "$CALLS")"
done
