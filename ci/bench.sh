#!/usr/bin/env bash
# ci/bench.sh - intra-node collective latency comparison for sharm.
#
# Builds bench/sharm_bench.c against Open MPI, MPICH and Intel MPI, runs
# it for several configurations (sharm, its hierarchical and algorithm
# variants, Open MPI's tuned/sm/han/adapt, MPICH, Intel MPI) at several
# process counts, interleaving configurations size group by size group so
# machine drift hits all of them alike, and hands the raw output to
# bench/report.py for tables, CSV and plots.  Before and after the
# measurements bench/machine_state.c records the state of the machine
# (memcpy, cross-core copy, line latency, point-to-point bandwidth with and
# without single copy), because this VM's figures move with it.
#
#   ci/bench.sh                 short sweep (a few sizes, np=2,4,8)
#   ci/bench.sh --full          4 B .. 16 MiB, powers of two
#   ci/bench.sh --help          all options
#   ci/bench.sh --sim-nodes 2x2 across simulated nodes (ci/bench-sim.sh)
#
# Exit status: 0 ok; 1 some configuration produced a WRONG result;
# 2 usage or setup error.  A configuration that fails to run (crash,
# timeout, component not selectable) is reported and does not stop the
# sweep.
set -u -o pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
NCORES=$(nproc)

# ---------------------------------------------------------------- options
OUT="$REPO/bench-results"
FULL=0
SIZES=""
NPS="2,4,8"
# The short sweep measures SHORT_OPS; --full (or --ops) adds the rest.
SHORT_OPS="bcast,reduce,allreduce,allgather,gather,scatter,alltoall,reduce_scatter_block,scan,barrier"
ALL_OPS="$SHORT_OPS,exscan,allgatherv,gatherv,scatterv,alltoallv,reduce_scatter"
OPS=""
CONFIGS=""
WITH_IMPI=1
REQUIRE_IMPI=0
METHOD=ours
TIMEOUT=""
BUDGET_MS=""
FORCE_BUILD=0
REPEAT=1
METRIC=""
SIM_NODES=""
SIZES_GIVEN=""
OPS_GIVEN=""

usage() {
    cat <<EOF
usage: ci/bench.sh [options]
  --full            full sweep: 4 B .. 16 MiB (powers of two)
  --sizes LIST      comma list of byte sizes (K/M suffixes ok), overrides
                    the sweep's sizes (default short: 8,512,8K,64K,1M,4M)
  --np LIST         process counts (default 2,4,8)
  --ops LIST        subset of $ALL_OPS
                    (default short: all but exscan and the v-variants
                    allgatherv,gatherv,scatterv,alltoallv,reduce_scatter;
                    full: all)
  --configs LIST    subset of: sharm (alias sharm-flat), sharm-hier
                    (virtual nodes of 2, np >= 4 only), sharm-algos (all
                    six algorithm variants),
                    sharm-{bcast,reduce,allreduce}-{linear,knomial},
                    sharm-ompi-kernels (reductions with Open MPI's
                    ompi_op_reduce instead of sharm's kernels),
                    sharm:NAME=VALUE[:NAME=VALUE...] (sharm with
                    --mca coll_sharm_NAME VALUE, for an A/B of a setting
                    in one run, e.g. sharm:single_copy=cma; "~" stands
                    for a space: sharm:bcast_rules=0-~linear~frag=16K),
                    tuned, sm, han, adapt, mpich, impi
                    (default: all)
  --without-impi    leave Intel MPI out of the default configurations
                    (otherwise pip package impi-rt, ~320 MB, is installed
                    into \$SHARM_IMPI_CACHE, default /var/cache/sharm/impi,
                    or target/impi-venv when that is not writable)
  --with-impi       accepted for old command lines (impi is the default)
  --require-impi    stop (exit 2) instead of skipping when Intel MPI
                    cannot be installed or run (for published figures)
  --method M        ours (default): fresh data every iteration, barrier
                    before each call; osu: OSU's loop (buffers reused, no
                    barrier before and MPI_Barrier after each call) with
                    OSU's statistic (see bench/README.md)
  --out DIR         output directory (default bench-results/)
  --budget-ms MS    wall time per (op,size) per launch (default 80 short,
                    250 full; oversubscribed runs use 3/4 of it)
  --repeat N        run every (size group, config) N times, interleaved;
                    reported figure = median of the per-launch medians
                    (default 1; this VM's latency drifts by up to 2x
                    over seconds, so use 3+ for decisions)
  --metric M        figure for tables/plots: median (default with
                    --method ours; median over iterations of the slowest
                    rank's call), span (first rank's entry to last rank's
                    exit) or osu (default with --method osu; mean over
                    ranks of each rank's mean call time)
  --timeout S       per-launch timeout in seconds (default 120, full 300)
  --build           run 'cargo build --release' even if the plugin exists
  --sim-nodes L     across simulated nodes (ci/sim-nodes.sh; root): layout
                    L = NxK (e.g. 2x2) or as sim-nodes takes it (2:2,2);
                    configurations sharm-hier, tuned, han, sharm-ag (the
                    six Allgather variants of paper 003), node (flat vs
                    node group on one node); default sizes 8,64K,1M, ops
                    bcast,reduce,allreduce,allgather,barrier; sharm's
                    MPI_T counters are read and checked (see
                    docs/sim-nodes.md)
EOF
}

die() { echo "bench: $*" >&2; exit 2; }

while [ $# -gt 0 ]; do
    case "$1" in
        --full) FULL=1 ;;
        --sizes) SIZES=${2:?}; SIZES_GIVEN=1; shift ;;
        --np) NPS=${2:?}; shift ;;
        --ops) OPS=${2:?}; OPS_GIVEN=1; shift ;;
        --configs) CONFIGS=${2:?}; shift ;;
        --with-impi) WITH_IMPI=1 ;;
        --without-impi) WITH_IMPI=0 ;;
        --require-impi) WITH_IMPI=1; REQUIRE_IMPI=1 ;;
        --method) METHOD=${2:?}; shift ;;
        --out) OUT=${2:?}; shift ;;
        --budget-ms) BUDGET_MS=${2:?}; shift ;;
        --timeout) TIMEOUT=${2:?}; shift ;;
        --repeat) REPEAT=${2:?}; shift ;;
        --metric) METRIC=${2:?}; shift ;;
        --build) FORCE_BUILD=1 ;;
        --sim-nodes) SIM_NODES=${2:?}; shift ;;
        -h|--help) usage; exit 0 ;;
        *) usage >&2; die "unknown option $1" ;;
    esac
    shift
done

if [ -z "$SIZES" ]; then
    if [ "$FULL" = 1 ]; then
        SIZES=$(for ((b = 4; b <= 16777216; b *= 2)); do printf '%s,' $b; done)
        SIZES=${SIZES%,}
    else
        SIZES="8,512,8K,64K,1M,4M"
    fi
fi
if [ -z "$OPS" ]; then
    if [ "$FULL" = 1 ]; then OPS=$ALL_OPS; else OPS=$SHORT_OPS; fi
fi
if [ -z "$TIMEOUT" ]; then
    if [ "$FULL" = 1 ]; then TIMEOUT=300; else TIMEOUT=120; fi
fi
if [ -z "$BUDGET_MS" ]; then
    if [ "$FULL" = 1 ]; then BUDGET_MS=250; else BUDGET_MS=80; fi
fi
# Sizes per launch: small groups interleave configurations closely while
# keeping the number of MPI start-ups (~0.4 s each) bounded.
if [ "$FULL" = 1 ]; then GROUP=4; else GROUP=3; fi

# The simulated-nodes mode has configurations of its own (ci/bench-sim.sh).
if [ -z "$SIM_NODES" ]; then
if [ -z "$CONFIGS" ]; then
    CONFIGS="sharm,sharm-hier,sharm-ompi-kernels,sharm-algos,tuned,sm,han,adapt,mpich"
    [ "$WITH_IMPI" = 1 ] && CONFIGS="$CONFIGS,impi"
fi
[ "$REQUIRE_IMPI" = 1 ] && [[ ",$CONFIGS," != *",impi,"* ]] && CONFIGS="$CONFIGS,impi"
CONFIGS=${CONFIGS//sharm-algos/sharm-bcast-linear,sharm-bcast-knomial,sharm-reduce-linear,sharm-reduce-knomial,sharm-allreduce-linear,sharm-allreduce-knomial}
IFS=, read -r -a CONFIG_LIST <<<"$CONFIGS"
IFS=, read -r -a NP_LIST <<<"$NPS"
IFS=, read -r -a SIZE_LIST <<<"$SIZES"

# Validate, resolve the alias sharm-flat = sharm, drop duplicates.
list=()
for c in "${CONFIG_LIST[@]}"; do
    case "$c" in
        sharm-flat) c=sharm ;;
        sharm|sharm-hier|sharm-bcast-linear|sharm-bcast-knomial|sharm-reduce-linear|\
        sharm-reduce-knomial|sharm-allreduce-linear|sharm-allreduce-knomial|\
        sharm-ompi-kernels|\
        tuned|sm|han|adapt|mpich|impi) ;;
        sharm:*)
            [[ $c =~ ^sharm(:[a-z0-9_]+=[A-Za-z0-9_.~=-]+)+$ ]] ||
                die "configuration '$c': expected sharm:NAME=VALUE[:NAME=VALUE...]" ;;
        *) die "unknown configuration '$c'" ;;
    esac
    [[ " ${list[*]-} " == *" $c "* ]] || list+=("$c")
done
CONFIG_LIST=("${list[@]}")
IFS=, read -r -a list <<<"$OPS"
for op in "${list[@]}"; do
    [[ ",$ALL_OPS," == *",$op,"* ]] || die "unknown op '$op' (ops: $ALL_OPS)"
done
for np in "${NP_LIST[@]}"; do
    [[ $np =~ ^[1-9][0-9]*$ ]] || die "bad process count '$np'"
done
fi
# sharm-hier needs at least two virtual nodes of 2 processes.
HIER_MIN_NP=4

case "$METHOD" in
    ours) METHOD_ARGS=(); [ -n "$METRIC" ] || METRIC=median ;;
    osu) METHOD_ARGS=(--osu); [ -n "$METRIC" ] || METRIC=osu ;;
    *) die "--method must be ours or osu" ;;
esac
case "$METRIC" in median|span|osu) ;; *) die "--metric must be median, span or osu" ;; esac
mkdir -p "$OUT" || die "cannot create $OUT"
OUT=$(cd "$OUT" && pwd)
BIN="$OUT/bin"
RAW="$OUT/raw"
# Start from a clean slate of our own files only (never rm -rf "$OUT").
rm -rf "$RAW" "$OUT/plots" "$OUT/components"
rm -f "$OUT"/{results.txt,launches.txt,configs.txt,memcpy.txt,results.csv,meta.txt,probes.txt} \
    "$OUT"/{state-start.txt,state-end.txt,impi-setup.log,sim-configs.txt,run.log}
mkdir -p "$BIN" "$RAW"
# The console output, both streams, is also kept as run.log, so a run's
# log is with its results (bench/keep_run.sh keeps it in docs/benchmark/).
# Each stream still goes where it went (fds 3 and 4 hold the originals):
# callers that read one of them see what they saw before.  On exit the
# streams are handed back and the two copies waited for, so a caller that
# sent us to a file finds all of it there once we return.  Both copies
# append (the file was removed above): a copy that kept its own offset
# wrote over the other's lines.
exec 3>&1 4>&2
exec > >(tee -a "$OUT/run.log")
LOG_COPIES=$!
exec 2> >(tee -a "$OUT/run.log" >&4)
LOG_COPIES="$LOG_COPIES $!"
trap 'exec 1>&3 2>&4; wait $LOG_COPIES' EXIT

export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# Never let inherited coll MCA settings change what a config means.
for v in $(compgen -e | grep '^OMPI_MCA_coll'); do unset "$v"; done

log() { printf '%s\n' "$*"; }
has_config() {
    local c
    for c in "${CONFIG_LIST[@]}"; do [ "$c" = "$1" ] && return 0; done
    return 1
}

# ------------------------------------------------------------------ tools
# Installs Debian packages for whatever tool is missing; 'apt-get update'
# runs only when something has to be installed.
ensure_tools() {
    local pkgs=()
    command -v mpicc.openmpi >/dev/null || pkgs+=(libopenmpi-dev)
    command -v mpirun.openmpi >/dev/null || pkgs+=(openmpi-bin)
    command -v ompi_info >/dev/null || pkgs+=(openmpi-bin)
    if has_config mpich || has_config impi; then
        command -v mpicc.mpich >/dev/null || pkgs+=(mpich libmpich-dev)
        command -v mpiexec.mpich >/dev/null || pkgs+=(mpich)
    fi
    command -v gnuplot >/dev/null || pkgs+=(gnuplot-nox)
    command -v python3 >/dev/null || pkgs+=(python3)
    [ ${#pkgs[@]} -eq 0 ] && return 0
    log "bench: installing ${pkgs[*]}"
    [ "$(id -u)" = 0 ] || die "missing tools and not root: install ${pkgs[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq >/dev/null || die "apt-get update failed"
    apt-get install -y -qq "${pkgs[@]}" >/dev/null || die "apt-get install ${pkgs[*]} failed"
}

# --------------------------------------------------------------- building
CFLAGS=(-std=c11 -O2 -Wall -Wextra)
build_bench() {
    mpicc.openmpi "${CFLAGS[@]}" -o "$BIN/sharm_bench.openmpi" \
        "$REPO/bench/sharm_bench.c" || die "build with mpicc.openmpi failed"
    mpicc.openmpi "${CFLAGS[@]}" -pthread -o "$BIN/machine_state" \
        "$REPO/bench/machine_state.c" || die "build of machine_state failed"
    if has_config mpich; then
        mpicc.mpich "${CFLAGS[@]}" -o "$BIN/sharm_bench.mpich" \
            "$REPO/bench/sharm_bench.c" || die "build with mpicc.mpich failed"
    fi
}

# Intel MPI runtime from PyPI (impi-rt) in a virtual environment that is
# kept between runs (~320 MB; a fresh output directory or a fresh clone
# must not download it again).  Its libmpi.so.12 has MPICH's ABI, so the
# benchmark is compiled with MPICH's headers and linked against Intel's
# library.
#
# setup_impi sets IMPI_ROOT on success.  On failure it sets IMPI_STATUS:
# "skipped" when pip could not install the package (no registry, no
# space: nothing the benchmark can fix), "unavailable" when the package is
# there but the benchmark cannot be built or run with it (that is a bug
# here, and ci/bench-selftest.sh fails on it); IMPI_REASON says why.
IMPI_ROOT=""
IMPI_STATUS=""
IMPI_REASON=""
impi_venv() {
    local venv=${SHARM_IMPI_CACHE:-/var/cache/sharm/impi}
    if ! mkdir -p "$venv" 2>/dev/null || [ ! -w "$venv" ]; then
        venv="$REPO/target/impi-venv"
    fi
    echo "$venv"
}
setup_impi() {
    local venv
    venv=$(impi_venv)
    mkdir -p "$venv"
    if [ ! -x "$venv/bin/python" ]; then
        log "bench: creating virtual environment $venv"
        python3 -m venv "$venv" || {
            IMPI_STATUS=skipped; IMPI_REASON="install failed: python3 -m venv $venv"
            return 1; }
    fi
    if ! "$venv/bin/python" -m pip show impi-rt >/dev/null 2>&1; then
        log "bench: installing Intel MPI runtime (pip install impi-rt, ~320 MB) into $venv"
        "$venv/bin/python" -m pip install -q impi-rt || {
            IMPI_STATUS=skipped; IMPI_REASON="install failed: pip install impi-rt into $venv"
            return 1; }
    fi
    IMPI_STATUS=unavailable
    local lib
    lib=$(find "$venv" -name 'libmpi.so.12' -path '*/lib/*' | head -1)
    [ -n "$lib" ] || { IMPI_REASON="impi-rt in $venv has no libmpi.so.12"; return 1; }
    local root
    root=$(dirname "$(dirname "$lib")")
    [ -x "$root/bin/mpiexec" ] || { IMPI_REASON="no mpiexec in $root/bin"; return 1; }
    # MPICH's mpi.h (Debian libmpich-dev); mpicc.mpich -show names its dir
    local inc
    inc=$(mpicc.mpich -show 2>/dev/null | grep -oE -- '-I[^ ]+' | head -1)
    [ -n "$inc" ] || inc=-I/usr/include/x86_64-linux-gnu/mpich
    log "bench: building sharm_bench.impi: gcc $inc ... -l:libmpi.so.12 from $(dirname "$lib")"
    gcc "${CFLAGS[@]}" "$inc" -o "$BIN/sharm_bench.impi" \
        "$REPO/bench/sharm_bench.c" -L"$(dirname "$lib")" -l:libmpi.so.12 \
        -Wl,-rpath,"$(dirname "$lib")" || {
        IMPI_REASON="building sharm_bench against $lib failed (see $OUT/impi-setup.log)"
        return 1; }
    IMPI_ROOT=$root
    IMPI_STATUS=ok
}

# Prints a framed message on stdout and stderr: an Intel MPI column that
# is missing must not go unnoticed in a long log.
loud() {
    local line="bench: *** $* ***"
    printf '\n%s\n\n' "$line"
    printf '%s\n' "$line" >&2
}

# Makes $OUT/components/mca_coll_sharm.so from the repo's plugin build.
SHARM_OK=0
SHARM_REASON=""
OMPI_COMPDIR=/usr/lib/x86_64-linux-gnu/openmpi/lib/openmpi3
prepare_sharm() {
    # Open MPI's own component dir must stay in the search path.
    local d
    d=$("$REPO/ci/ompi-component-dir" 2>/dev/null) && OMPI_COMPDIR=$d
    local so="$REPO/target/release/libmca_coll_sharm.so" stale=""
    # A plugin older than its sources would be measured under the current
    # commit's name (it happened: a build with a debugging switch in it
    # ran a whole benchmark), so a stale one is rebuilt.
    if [ -f "$so" ] && [ -f "$REPO/Cargo.toml" ]; then
        stale=$(find "$REPO/src" "$REPO/ompi-glue" "$REPO/build.rs" "$REPO/Cargo.toml" \
            "$REPO/Cargo.lock" -newer "$so" -print -quit 2>/dev/null)
    fi
    if { [ ! -f "$so" ] || [ "$FORCE_BUILD" = 1 ] || [ -n "$stale" ]; } && [ -f "$REPO/Cargo.toml" ]; then
        [ -n "$stale" ] && log "bench: the plugin is older than $stale"
        log "bench: building the plugin (cargo build --release, log: $OUT/cargo-build.log)"
        if ! (cd "$REPO" && cargo build --release) >"$OUT/cargo-build.log" 2>&1; then
            log "bench: cargo build --release failed; last lines:"
            tail -5 "$OUT/cargo-build.log" | sed 's/^/    /'
        fi
    fi
    if [ ! -f "$so" ]; then
        SHARM_REASON="plugin not built (no target/release/libmca_coll_sharm.so)"
        log "bench: $SHARM_REASON: skipping sharm configurations"
        return
    fi
    mkdir -p "$OUT/components"
    cp "$so" "$OUT/components/mca_coll_sharm.so"
    SHARM_OK=1
}

# -------------------------------------------------------------- launching
# launch_cmd CONFIG NP: sets LAUNCH (command prefix) and CONF_OPS (op
# restriction, empty for all) for one configuration.
LAUNCH=()
CONF_OPS=""
launch_cmd() {
    local cfg=$1 np=$2 over=0
    (( np > NCORES )) && over=1
    CONF_OPS=""
    local ompi=(mpirun.openmpi --allow-run-as-root -np "$np")
    if [ $over = 1 ]; then
        ompi+=(--oversubscribe --bind-to none)
    else
        ompi+=(--bind-to core)
    fi
    local sharm_mca=(--mca mca_base_component_path
        "$OUT/components:$OMPI_COMPDIR:$HOME/.openmpi/components"
        --mca coll_sharm_priority 100)
    case "$cfg" in
        sharm)
            LAUNCH=("${ompi[@]}" "${sharm_mca[@]}" "$BIN/sharm_bench.openmpi") ;;
        sharm-hier)
            # every 2 consecutive ranks form a virtual node: Bcast, Reduce
            # and Allreduce go through the hierarchy (shared memory inside
            # a virtual node, Open MPI's PML between node leaders); all
            # other operations run as in plain sharm
            LAUNCH=("${ompi[@]}" "${sharm_mca[@]}"
                --mca coll_sharm_virtual_node_size 2
                "$BIN/sharm_bench.openmpi") ;;
        sharm-ompi-kernels)
            # the same plugin with every fold done by Open MPI's
            # ompi_op_reduce (op/avx): kernels on/off in one run, for the
            # operations that reduce
            CONF_OPS=reduce,allreduce,reduce_scatter_block,scan
            LAUNCH=("${ompi[@]}" "${sharm_mca[@]}"
                --mca coll_sharm_reduction_kernels ompi
                "$BIN/sharm_bench.openmpi") ;;
        sharm:*)
            # sharm with settings of its own: sharm:NAME=VALUE[:...] ->
            # --mca coll_sharm_NAME VALUE for each
            local extra=() settings kv
            IFS=: read -r -a settings <<<"${cfg#sharm:}"
            for kv in "${settings[@]}"; do
                # "~" stands for a space (a rule: bcast_rules=0-~linear~frag=16K)
                local value=${kv#*=}
                extra+=(--mca "coll_sharm_${kv%%=*}" "${value//\~/ }")
            done
            LAUNCH=("${ompi[@]}" "${sharm_mca[@]}" "${extra[@]}"
                "$BIN/sharm_bench.openmpi") ;;
        sharm-*-*)
            local rest=${cfg#sharm-}
            local op=${rest%-*} alg=${rest##*-}
            CONF_OPS=$op
            LAUNCH=("${ompi[@]}" "${sharm_mca[@]}"
                --mca "coll_sharm_${op}_algorithm" "$alg"
                "$BIN/sharm_bench.openmpi") ;;
        tuned)
            LAUNCH=("${ompi[@]}" --mca coll ^sharm "$BIN/sharm_bench.openmpi") ;;
        sm|han|adapt)
            LAUNCH=("${ompi[@]}" --mca coll ^sharm --mca "coll_${cfg}_priority" 100
                "$BIN/sharm_bench.openmpi") ;;
        mpich)
            if [ $over = 1 ]; then
                LAUNCH=(mpiexec.mpich -n "$np" "$BIN/sharm_bench.mpich")
            else
                LAUNCH=(mpiexec.mpich -n "$np" -bind-to core "$BIN/sharm_bench.mpich")
            fi ;;
        impi)
            # Pinning as Open MPI's --bind-to core (rank i on core i): an
            # explicit processor list, since Intel MPI's default domain
            # choice depends on what it detects.  Oversubscribed: no
            # pinning, as --bind-to none.
            local pin=(I_MPI_PIN=0)
            if [ $over = 0 ]; then
                pin=(I_MPI_PIN=1 "I_MPI_PIN_PROCESSOR_LIST=$(seq -s, 0 $((np - 1)))")
            fi
            # libfabric's providers: lib/libfabric in Intel's own layout,
            # lib/ itself in the PyPI wheel
            local fi_path=$IMPI_ROOT/lib/libfabric
            [ -d "$fi_path" ] || fi_path=$IMPI_ROOT/lib
            LAUNCH=(env "PATH=$IMPI_ROOT/bin:$PATH"
                "LD_LIBRARY_PATH=$IMPI_ROOT/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
                "FI_PROVIDER_PATH=$fi_path" I_MPI_FABRICS=shm "${pin[@]}"
                "$IMPI_ROOT/bin/mpiexec" -n "$np"
                "$BIN/sharm_bench.impi") ;;
    esac
}

# Kills benchmark processes left behind by a timed-out launch.  Only
# processes executing our own freshly built binaries are touched, by pid.
reap_strays() {
    local p exe
    for p in /proc/[0-9]*; do
        exe=$(readlink "$p/exe" 2>/dev/null) || continue
        case "$exe" in
            "$BIN"/sharm_bench.*) kill -9 "${p#/proc/}" 2>/dev/null ;;
        esac
    done
}

# Tests that the intended coll component is really selected for
# MPI_COMM_WORLD (a component that fails to load or disqualifies itself
# would otherwise silently be replaced by tuned under the wrong label).
# Prints the reason and returns 1 when it is not.
verify_selected() {
    local cfg=$1 want np=2 ops=(--ops barrier)
    case "$cfg" in
        sharm*) want=sharm ;;
        sm|han|adapt) want=$cfg ;;
        tuned) want=tuned ;;
        mpich|impi) verify_runs "$cfg"; return ;;
    esac
    # sharm-hier: a Bcast at np=4 must build the hierarchy (rank 0 prints
    # it at coll_sharm_verbose >= 1), or flat sharm would be measured
    # under the hierarchical name.
    [ "$cfg" = sharm-hier ] && { np=$HIER_MIN_NP; ops=(--ops bcast --sizes 8); }
    launch_cmd "$cfg" "$np"
    local log="$RAW/preflight-$cfg.log"
    local pre=("${LAUNCH[@]:0:${#LAUNCH[@]}-1}")
    timeout -k 5 60 "${pre[@]}" --mca coll_base_verbose 10 \
        --mca "coll_${want}_verbose" 30 "${LAUNCH[-1]}" "${ops[@]}" \
        --min-iters 1 --max-iters 1 --max-warmup 0 >"$log" 2>&1
    local rc=$?
    if [ $rc = 124 ] || [ $rc = 137 ]; then reap_strays; fi
    if grep -qE "selecting +$want, priority +[0-9]+, Enabled" "$log"; then
        if [ "$want" = tuned ] && grep -qE "selecting +sharm, priority +[0-9]+, Enabled" "$log"; then
            echo "sharm was selected although excluded"
            return 1
        fi
        if [ "$cfg" = sharm-hier ] &&
           ! grep -qE "hierarchy: $np processes, [1-9][0-9]* active level" "$log"; then
            echo "sharm selected but no hierarchy built at np=$np (see $log)"
            return 1
        fi
        check_binding "$log" "$np"
        return
    fi
    local why
    why=$(grep -m1 -E "coll:$want:comm_query.*disqualifying myself" "$log" |
          sed -E 's/.*\): //')
    [ -z "$why" ] && [ $rc != 0 ] && why="preflight run failed (exit $rc, see $log)"
    [ -z "$why" ] && why="component not selected (see $log)"
    echo "$why"
    return 1
}

# Checks the binding printed in INFO by a preflight log: at np <= cores
# every rank must be pinned to one CPU of its own, as --bind-to core does
# for Open MPI (a configuration left unpinned would be measured under
# different conditions from the others).
check_binding() {
    local log=$1 np=$2 b
    (( np > NCORES )) && return 0
    b=$(grep -m1 -oE 'binding="[^"]*"' "$log" | cut -d'"' -f2)
    python3 - "$b" "$np" <<'EOF'
import sys
ranks = sys.argv[1].split(";") if sys.argv[1] else []
cpus = [r for r in ranks if r.isdigit()]
if len(ranks) != int(sys.argv[2]) or len(cpus) != len(ranks) or len(set(cpus)) != len(cpus):
    print(f"ranks not pinned one per core (binding \"{sys.argv[1]}\")")
    sys.exit(1)
EOF
}

# Preflight for the non-Open MPI configurations: one short launch must
# run, identify the expected library and show the ranks pinned.
verify_runs() {
    local cfg=$1 np=2 lib
    case "$cfg" in mpich) lib="MPICH" ;; impi) lib="Intel\(R\) MPI" ;; esac
    launch_cmd "$cfg" "$np"
    local log="$RAW/preflight-$cfg.log"
    timeout -k 5 60 "${LAUNCH[@]}" --ops barrier --min-iters 1 --max-iters 1 \
        --max-warmup 0 >"$log" 2>&1
    local rc=$?
    if [ $rc = 124 ] || [ $rc = 137 ]; then reap_strays; fi
    if [ $rc != 0 ]; then
        echo "preflight run failed (exit $rc, see $log)"
        return 1
    fi
    if ! grep -qE "^INFO .*library=\"$lib" "$log"; then
        echo "preflight did not report the expected library (see $log)"
        return 1
    fi
    check_binding "$log" "$np"
}

# run_launch CONFIG NP LAUNCH_ID SIZES OPS BENCH_ARGS...
# A quick look at the state around every launch (line round trip and 1 MiB
# cross-core copy, bench/machine_state local --quick, ~0.1 s): this VM can
# change state within a run, even within a round of launches, and a median
# over launches made in two states hides it.  report.py labels each launch
# by its two probes, warns, and compares the libraries within each state.
probe_state() { # launch-id before|after
    local q
    q=$(timeout -k 5 30 "$BIN/machine_state" local --quick 2>/dev/null) || return 0
    echo "PROBE launch=$1 when=$2 $(
        sed -n 's/^LINE_RTT ns=/line_rtt_ns=/p; s/^XCOPY bytes=1048576 gbps=/xcopy_1m_gbps=/p' <<<"$q" |
            paste -sd' ')" >>"$OUT/probes.txt"
}

run_launch() {
    local cfg=$1 np=$2 id=$3 sizes=$4 ops=$5
    shift 5
    local out="$RAW/$id.out" err="$RAW/$id.err"
    local t0=$SECONDS
    probe_state "$id" before
    # SHARM_BENCH_ARGS: extra benchmark options (used by ci/bench-selftest.sh)
    # shellcheck disable=SC2086
    timeout -k 5 "$TIMEOUT" "${LAUNCH[@]}" --sizes "$sizes" --ops "$ops" "$@" \
        ${SHARM_BENCH_ARGS:-} \
        >"$out" 2>"$err" </dev/null
    local rc=$? status=ok
    probe_state "$id" after
    if [ $rc = 124 ] || [ $rc = 137 ]; then
        status=timeout
        reap_strays
    elif grep -q "status=WRONG" "$out"; then
        status=wrong
    elif [ $rc != 0 ]; then
        status=failed
    fi
    sed "s/^/config=$cfg launch=$id /" <(grep -E '^(RESULT|WRONG|INFO) ' "$out") \
        >>"$OUT/results.txt"
    echo "LAUNCH config=$cfg np=$np launch=$id sizes=$sizes ops=$ops rc=$rc status=$status secs=$((SECONDS - t0))" \
        >>"$OUT/launches.txt"
    printf '  %-26s %-14s %3ss %s\n' "$cfg" "${id%-"$cfg"}" \
        "$((SECONDS - t0))" "$([ $status = ok ] || echo "<-- $status (rc=$rc, $err)")"
}

# The machine's state (bench/machine_state.c): memcpy, cross-core copy
# and line round trip on two threads pinned to the first two cores, and
# osu_bw-style point-to-point bandwidth between two ranks bound to cores,
# through Open MPI's vader with CMA single copy and with two copies
# through shared memory.  Printed as one summary line plus the
# single-copy limits; stored in $OUT/state-PHASE.txt and the CSV.
measure_state() {
    local phase=$1 f="$OUT/state-$1.txt" mech rc
    local bind=(--bind-to core)
    (( NCORES < 2 )) && bind=(--oversubscribe --bind-to none)
    {
        echo "PHASE name=$phase date=$(date -Is)"
        if ! timeout -k 5 60 "$BIN/machine_state" local 2>"$RAW/state-$phase-local.err"; then
            echo "FAILED part=local (see $RAW/state-$phase-local.err)"
        fi
        for mech in cma none; do
            timeout -k 5 60 mpirun.openmpi --allow-run-as-root -np 2 "${bind[@]}" \
                --mca coll ^sharm --mca btl_vader_single_copy_mechanism "$mech" \
                "$BIN/machine_state" p2p --sizes 1M,4M \
                >"$RAW/state-$phase-$mech.out" 2>&1 </dev/null
            rc=$?
            if [ $rc = 0 ] && grep -q '^P2P ' "$RAW/state-$phase-$mech.out"; then
                sed -n "s/^P2P /P2P mech=$mech /p" "$RAW/state-$phase-$mech.out"
            else
                echo "FAILED part=p2p-$mech rc=$rc (see $RAW/state-$phase-$mech.out)"
            fi
        done
    } >"$f"
    python3 "$REPO/bench/report.py" --state "$f" --sizes "$SIZES" ||
        loud "machine state ($phase) incomplete: see $f"
}
record_config() { # name status reason
    echo "CONFIG name=$1 status=$2 reason=\"$3\"" >>"$OUT/configs.txt"
}

if [ -n "$SIM_NODES" ]; then
    # shellcheck source=ci/bench-sim.sh
    . "$REPO/ci/bench-sim.sh"
    sim_main
    exit $?
fi

# ------------------------------------------------------------------- main
START=$SECONDS
ensure_tools
build_bench

ACTIVE=()
NEED_SHARM=0
for c in "${CONFIG_LIST[@]}"; do [[ $c == sharm* ]] && NEED_SHARM=1; done
[ $NEED_SHARM = 1 ] && prepare_sharm
if has_config impi; then
    log "bench: setting up Intel MPI in $(impi_venv) (log: $OUT/impi-setup.log)"
    if ! setup_impi >"$OUT/impi-setup.log" 2>&1; then
        tail -3 "$OUT/impi-setup.log" | sed 's/^/    /'
        loud "Intel MPI will NOT be measured: $IMPI_REASON (log: $OUT/impi-setup.log)"
        IMPI_ROOT=""
    fi
fi

log "bench: checking that each configuration's component is selected"
for c in "${CONFIG_LIST[@]}"; do
    if [[ $c == sharm* ]] && [ $SHARM_OK = 0 ]; then
        record_config "$c" skipped "$SHARM_REASON"
        continue
    fi
    if [ "$c" = impi ] && [ -z "$IMPI_ROOT" ]; then
        record_config "$c" "$IMPI_STATUS" "$IMPI_REASON"
        continue
    fi
    if [ "$c" = sharm-hier ]; then
        big=0
        for np in "${NP_LIST[@]}"; do (( np >= HIER_MIN_NP )) && big=1; done
        if [ $big = 0 ]; then
            log "bench: sharm-hier skipped: runs only at np >= $HIER_MIN_NP"
            record_config "$c" skipped "runs only at np >= $HIER_MIN_NP"
            continue
        fi
    fi
    if why=$(verify_selected "$c"); then
        ACTIVE+=("$c")
        record_config "$c" ok ""
    else
        log "bench: $c not usable: $why"
        record_config "$c" unavailable "$why"
        if [ "$c" = impi ]; then
            IMPI_STATUS=unavailable IMPI_REASON=$why
            loud "Intel MPI will NOT be measured: $why"
        fi
    fi
done
[ ${#ACTIVE[@]} -gt 0 ] || die "no configuration can run"
if [ "$REQUIRE_IMPI" = 1 ] && [ "$IMPI_STATUS" != ok ]; then
    die "--require-impi: Intel MPI is $IMPI_STATUS: $IMPI_REASON"
fi

measure_state start

{
    echo "date=$(date -Is) host=$(hostname) cores=$NCORES"
    echo "cpu=\"$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //')\""
    echo "git=$(git -C "$REPO" rev-parse --short HEAD 2>/dev/null || echo none)"
    echo "mode=$([ $FULL = 1 ] && echo full || echo short) sizes=$SIZES np=$NPS budget_ms=$BUDGET_MS repeat=$REPEAT method=$METHOD"
    echo "ops=$OPS"
} >"$OUT/meta.txt"

log "bench: configs: ${ACTIVE[*]}"
log "bench: np=$NPS sizes=$SIZES ops=$OPS budget=${BUDGET_MS}ms/(op,size) repeat=$REPEAT"

# Size groups of $GROUP sizes; barrier (size-less) runs with the first.
GROUPS_LIST=()
for ((i = 0; i < ${#SIZE_LIST[@]}; i += GROUP)); do
    g=("${SIZE_LIST[@]:i:GROUP}")
    GROUPS_LIST+=("$(IFS=,; echo "${g[*]}")")
done

for np in "${NP_LIST[@]}"; do
    if (( np > NCORES )); then
        # Oversubscribed: every iteration costs scheduler time slices, so
        # use fewer iterations; medians of few samples are still robust.
        args=(--budget-ms $((BUDGET_MS * 3 / 4)) --min-iters 3 --max-iters 200 --max-warmup 5)
    else
        args=(--budget-ms "$BUDGET_MS" --min-iters 5 --max-iters 1000 --max-warmup 20)
    fi
    args+=("${METHOD_ARGS[@]}")
    for gi in "${!GROUPS_LIST[@]}"; do
        log "bench: np=$np size group $((gi + 1))/${#GROUPS_LIST[@]}: ${GROUPS_LIST[gi]}"
        for ((round = 1; round <= REPEAT; round++)); do
            # Rotate the order per group and round so that no configuration
            # is always the first (or last) after a change of sizes.
            n=${#ACTIVE[@]}
            for ((k = 0; k < n; k++)); do
                c=${ACTIVE[(k + gi + round - 1) % n]}
                [ "$c" = sharm-hier ] && (( np < HIER_MIN_NP )) && continue
                launch_cmd "$c" "$np"
                ops=$OPS
                if [ -n "$CONF_OPS" ]; then
                    # the configuration's ops that were asked for
                    ops=$(tr , '\n' <<<"$CONF_OPS" | { grep -Fxf <(tr , '\n' <<<"$OPS") || true; } | paste -sd,)
                    [ -n "$ops" ] || continue
                fi
                if [ "$gi" != 0 ]; then
                    ops=$(echo ",$ops," | sed 's/,barrier,/,/; s/^,//; s/,$//')
                    [ -n "$ops" ] || continue
                fi
                run_launch "$c" "$np" "np${np}-g${gi}-r${round}-${c}" \
                    "${GROUPS_LIST[gi]}" "$ops" "${args[@]}"
            done
        done
    done
done

log "bench: measurements took $((SECONDS - START)) s; machine state again:"
# A second look at the state shows whether it changed during the run
# (report.py compares the two).
measure_state end
log "bench: writing report"
python3 "$REPO/bench/report.py" "$OUT" --metric "$METRIC"
rc=$?
if has_config impi && [ "$IMPI_STATUS" != ok ]; then
    loud "Intel MPI was NOT measured ($IMPI_STATUS): $IMPI_REASON"
fi
log "bench: total wall time $((SECONDS - START)) s"
exit $rc
