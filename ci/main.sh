#!/usr/bin/env bash
# The main job (the README's first command): build and install the plugin,
# show Open MPI loading it and sharm serving collectives, then run the
# benchmark against Open MPI's own components and MPICH (short sweep; pass
# --full or any other ci/bench.sh option through).
set -euo pipefail
cd "$(dirname "$0")/.."
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

ci/deps.sh
echo "== build"
cargo build --release
echo "== install"
# Open MPI 4.1 searches ~/.openmpi/components before its own directory and
# only loads files named mca_<framework>_<component>.so.
dest="$HOME/.openmpi/components"
mkdir -p "$dest"
install -m 0755 target/release/libmca_coll_sharm.so "$dest/mca_coll_sharm.so"
echo "installed $dest/mca_coll_sharm.so"
ompi_info | grep "MCA coll: sharm"
echo "== sharm at work (installed copy, default settings)"
mkdir -p target/demo
mpicc.openmpi -O2 -o target/demo/demo ci/demo.c
mpirun.openmpi -np 2 target/demo/demo
echo "== benchmark"
exec ci/bench.sh "$@"
