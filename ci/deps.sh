#!/usr/bin/env bash
# Installs what building and testing sharm needs, when it is missing:
# Open MPI 4.1 (runtime + development headers) from Debian, METIS (libmetis-dev)
# and a C compiler.
# Benchmark-only packages (MPICH, gnuplot) are installed by ci/bench.sh.
set -euo pipefail

need=()
command -v mpicc.openmpi >/dev/null 2>&1 || need+=(openmpi-bin libopenmpi-dev)
command -v mpirun.openmpi >/dev/null 2>&1 || need+=(openmpi-bin)
command -v gcc >/dev/null 2>&1 || need+=(gcc)
[ -e /usr/lib/x86_64-linux-gnu/openmpi/include/openmpi/ompi/mca/coll/coll.h ] || need+=(libopenmpi-dev)
# METIS partitions the exchange graphs of the remapped Allgather (src/remap/).
[ -e /usr/include/metis.h ] || need+=(libmetis-dev)

if [ ${#need[@]} -gt 0 ]; then
    echo "ci/deps.sh: installing ${need[*]}"
    export DEBIAN_FRONTEND=noninteractive
    sudo_cmd=""
    [ "$(id -u)" -eq 0 ] || sudo_cmd="sudo"
    $sudo_cmd apt-get update -qq
    $sudo_cmd apt-get install -y -qq "${need[@]}" >/dev/null
fi
command -v cargo >/dev/null 2>&1 || { echo "ci/deps.sh: cargo (Rust toolchain) is required" >&2; exit 1; }
