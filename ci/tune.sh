#!/usr/bin/env bash
# ci/tune.sh — sharm's auto-tuner (issue 16).
#
#   ci/tune.sh [--quick] [--output FILE] [--np LIST] [--ops LIST] [--sizes LIST]
#              [--repeat N] [--margin PCT] [--budget-ms MS] [--out DIR]
#   ci/tune.sh --check FILE [--np LIST] [--ops LIST] [--sizes LIST] [--margin PCT]
#
# Measures every algorithm of every operation that has a choice (Barrier,
# Bcast, Reduce, Allreduce, Alltoall, Allgather, Reduce_scatter, Scan) with
# bench/sharm_bench.c over a grid of process counts and sizes, in interleaved
# repeated launches, and writes FILE (default tune-results/sharm-tuned.conf)
# with the coll_sharm_<op>_rules lines for `mpirun --tune FILE`, a header
# recording the machine and its state, and the gain over the built-in auto;
# plots of the choices go to DIR/plots (default tune-results/).  --quick
# (np 2,4; 5 sizes; 3 repeats) takes a few minutes on a quiet 2-core machine,
# the full grid (np 2,3,4,8; 4 B-4 MiB; 5 repeats) well under 30.  --check
# re-measures a sample of FILE's cells and exits 1 when the file's choice is
# more than the margin slower than the measured best somewhere.
# Method and options: bench/tune.py (--help).  Timings on a busy machine are
# noise: tune on a quiet one.
set -euo pipefail
REPO=$(cd "$(dirname "$0")/.." && pwd)
cd "$REPO"

pkgs=()
command -v mpicc.openmpi >/dev/null || pkgs+=(libopenmpi-dev)
command -v mpirun.openmpi >/dev/null || pkgs+=(openmpi-bin)
command -v python3 >/dev/null || pkgs+=(python3)
command -v gnuplot >/dev/null || pkgs+=(gnuplot-nox)
if [ ${#pkgs[@]} -gt 0 ]; then
    echo "tune: installing ${pkgs[*]}"
    [ "$(id -u)" = 0 ] || { echo "tune: missing tools and not root: install ${pkgs[*]}" >&2; exit 1; }
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq >/dev/null
    apt-get install -y -qq "${pkgs[@]}" >/dev/null
fi
# The baseline must be the built-in auto: no inherited sharm settings.
for v in $(compgen -e | grep '^OMPI_MCA_coll' || true); do unset "$v"; done
if [ -z "${SHARM_PLUGIN:-}" ] && [ ! -f target/release/libmca_coll_sharm.so ]; then
    echo "tune: building the plugin (cargo build --release)"
    nice -n 10 cargo build --release
fi
exec python3 "$REPO/bench/tune.py" "$@"
