#!/bin/bash
# An A/B of two sharm builds beside the peers, as the docs/benchmark folders
# of 2026-11-30 ran it: the machine's state first (memcpy, the cores' line
# round trip, point to point by CMA and by two copies), then ROUNDS
# alternated rounds of OLD / NEW / OLD again (an A/A control) / coll/tuned /
# Intel MPI at np=2 over the seven operations sharm's trials learn, at
# SIZES (bench/alternate.py: medians per placement of the cores), then the
# state again.  Writes state-start.txt, alternated.txt and state-end.txt
# into OUT.
#
#   bench/ab_with_peers.sh RUN OLD NEW ROUNDS OUT SIZES
#
# RUN is a ci/bench.sh run folder with bin/ (ci/bench.sh --np 2 --sizes 8
# --configs sharm,mpich,impi --require-impi --out RUN); OLD and NEW are
# folders holding mca_coll_sharm.so.  Timings, not tests: nothing else may
# run meanwhile.
set -euo pipefail
RUN=$1 OLD=$2 NEW=$3 ROUNDS=$4 OUT=$5 SIZES=$6
repo=$(cd "$(dirname "$0")/.." && pwd)
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
"$RUN/bin/machine_state" local > "$OUT/state-start.txt" 2>&1
for m in cma none; do
    mpirun -np 2 --bind-to core --mca coll ^sharm --mca btl_vader_single_copy_mechanism $m \
        "$RUN/bin/machine_state" p2p --sizes 1M,4M >> "$OUT/state-start.txt" 2>&1
done
python3 "$repo/bench/alternate.py" --run "$RUN" "$ROUNDS" \
    old:sharm="$OLD" new:sharm="$NEW" old2:sharm="$OLD" tuned:tuned impi:impi -- \
    --ops bcast,reduce,allreduce,gather,scatter,allgather,alltoall \
    --sizes "$SIZES" --budget-ms 100 > "$OUT/alternated.txt" 2>&1
"$RUN/bin/machine_state" local > "$OUT/state-end.txt" 2>&1
