#!/bin/bash
# The landing trials (a7aa81f: path and landing tried together) against the
# build before them (a04476b),
# beside coll/tuned and Intel MPI: the machine's state, then ROUNDS
# alternated rounds at np=2 of the five operations whose landing is tried
# and Reduce (not tried: a control), 2-16 MiB, every launch with 20
# unmeasured calls (a class takes 17 to decide), then the state again.
#
#   docs/benchmark/2026-11-30-c-landing-trials/run.sh RUN OLD NEW ROUNDS
set -euo pipefail
RUN=$1 OLD=$2 NEW=$3 ROUNDS=$4
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../../.." && pwd)
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
state() {
    "$RUN/bin/machine_state" local
    for m in cma none; do
        mpirun -np 2 --bind-to core --mca coll ^sharm --mca btl_vader_single_copy_mechanism $m \
            "$RUN/bin/machine_state" p2p --sizes 1M,4M
    done
}
state > "$here/state-start.txt" 2>&1
python3 "$repo/bench/alternate.py" --run "$RUN" "$ROUNDS" \
    old:sharm="$OLD" new:sharm="$NEW" old2:sharm="$OLD" tuned:tuned impi:impi -- \
    --ops bcast,gather,scatter,allgather,alltoall,reduce \
    --sizes 2M,4M,8M,16M --budget-ms 100 --min-warmup 16 > "$here/alternated.txt" 2>&1
state > "$here/state-end.txt" 2>&1
