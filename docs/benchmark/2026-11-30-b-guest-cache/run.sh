#!/bin/bash
# The A/B of docs/benchmark/2026-11-30-b-guest-cache: sharm before the guest
# cache cap (OLD, twice: an A/A control) and with it (NEW), beside
# coll/tuned and Intel MPI, np=2, alternated launches labelled by the
# cores' placement (bench/alternate.py).  RUN is a ci/bench.sh run folder
# with bin/ (ci/bench.sh --np 2 --sizes 8 --configs sharm,mpich,impi
# --require-impi --out RUN); OLD and NEW are folders holding
# mca_coll_sharm.so.  Timings, not tests: nothing else may run meanwhile.
set -euo pipefail
RUN=$1 OLD=$2 NEW=$3 ROUNDS=${4:-12}
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../../.." && pwd)
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
"$RUN/bin/machine_state" local > "$here/state-start.txt" 2>&1
for m in cma none; do
    mpirun -np 2 --bind-to core --mca coll ^sharm --mca btl_vader_single_copy_mechanism $m \
        "$RUN/bin/machine_state" p2p --sizes 1M,4M >> "$here/state-start.txt" 2>&1
done
python3 "$repo/bench/alternate.py" --run "$RUN" "$ROUNDS" \
    old:sharm="$OLD" new:sharm="$NEW" old2:sharm="$OLD" tuned:tuned impi:impi -- \
    --ops bcast,reduce,allreduce,gather,scatter,allgather,alltoall \
    --sizes 2M,4M,8M,16M --budget-ms 100 > "$here/alternated.txt" 2>&1
"$RUN/bin/machine_state" local > "$here/state-end.txt" 2>&1
