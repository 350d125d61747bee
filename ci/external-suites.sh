#!/usr/bin/env bash
# Runs external correctness suites against Open MPI with sharm forced, and
# reports every test that fails with sharm but passes without it:
#
#  * MPICH's collective tests (test/mpi/coll of an MPICH source tree), built
#    against this machine's Open MPI with the tests' own support library
#    (util/ and dtpools/), run with the process counts and arguments of
#    coll/testlist.in;
#  * the Intel MPI Benchmarks' IMB-MPI1 built in check mode (-DCHECK), whose
#    "defects" column counts wrong results, for the 14 collectives sharm
#    serves or hands over, at 2..N processes;
#  * with --ompi-tests, two suites of Open MPI's own public tests
#    (open-mpi/ompi-tests-public): alltoallv_validation (Alltoallv over
#    derived datatypes with negative strides and lower bounds, holes and
#    padding, every pair of them, results and guard bytes checked) at 2, 3, 5
#    and 8 processes under several seeds, and collective-big-count (every
#    collective with a payload near 2 GB, and with counts near INT_MAX of
#    4- and 16-byte types, in place too) at 2 processes, each program under
#    BIGCOUNT_MEMORY_PERCENT of the RAM (--bigcount-percent, 40: the
#    largest calls then move several GB per process; about 15 minutes).
#
# With --sim-nodes LAYOUT every run goes across simulated nodes of this
# machine (ci/sim-nodes.sh: LAYOUT is slots per node, e.g. 3:1,2,3), so the
# hierarchy's groups, leaders and network algorithms serve the suites'
# calls; processes on different simulated nodes talk TCP over loopback.
#
# None of the suites is on a package registry this project may use, so the
# sources are given (at least one of them): an MPICH tree (`apt-get source
# mpich` with deb-src enabled, or a checkout of pmodels/mpich), an IMB tree
# (intel/mpi-benchmarks) and an ompi-tests-public tree.  Not part of .ci/run (it adds about half an
# hour, and the big counts need the memory); run it before a release.
#
# Usage: ci/external-suites.sh [--mpich DIR] [--imb DIR] [--imb-np N]
#                              [--ompi-tests DIR] [--bigcount-percent P]
#                              [--sim-nodes LAYOUT] [--out DIR]
#                              [--mca 'extra mpirun args'] [--only REGEX]
#   --mca adds arguments to the runs with sharm (e.g. "--mca
#   coll_sharm_fragment_size 64 --mca coll_sharm_queue_slots 2" to stress
#   the queues); --only runs the tests whose name matches REGEX (a quick
#   check of the script or of one failure); the plugin is
#   target/release/libmca_coll_sharm.so.
#
# What a run does not cover, by design: tests this MPI does not build (MPI-4's
# persistent collectives, p_*, on Open MPI 4.1, but for its five p_neighb_*;
# the MPI-4 large-count API, coll_large and uoplong_large, on 4.1 and 5.0),
# GPU tests, and testlist
# lines that only configure MPICH itself (env=MPIR_CVAR_*).  They are listed
# as skipped.  On Open MPI 5.0, run it inside ci/ompi5.sh's root
# (SHARM_OMPI5_SOURCES=DIR ci/ompi5.sh bash -c 'cargo build --release &&
# ci/external-suites.sh --mpich /sources/...').  The
# big-count programs run their blocking calls only
# (BIGCOUNT_ENABLE_NONBLOCKING=0): sharm hands nonblocking ones over.
set -uo pipefail
cd "$(dirname "$0")/.."
REPO=$(pwd)

MPICH=
IMB=
IMB_NP=8
OMPI_TESTS=
BIGCOUNT_PERCENT=40
OUT=${TMPDIR:-/tmp}/sharm-external
EXTRA_MCA=
ONLY=
SIM_NODES=
while [ $# -gt 0 ]; do
    case $1 in
        --mpich) MPICH=${2:?}; shift ;;
        --imb) IMB=${2:?}; shift ;;
        --imb-np) IMB_NP=${2:?}; shift ;;
        --ompi-tests) OMPI_TESTS=${2:?}; shift ;;
        --bigcount-percent) BIGCOUNT_PERCENT=${2:?}; shift ;;
        --out) OUT=${2:?}; shift ;;
        --mca) EXTRA_MCA=${2:?}; shift ;;
        --only) ONLY=${2:?}; shift ;;
        --sim-nodes) SIM_NODES=${2:?}; shift ;;
        -h|--help) sed -n '2,/^set -uo/p' "$0" | sed '$d'; exit 0 ;;
        *) echo "unknown option $1" >&2; exit 2 ;;
    esac
    shift
done
die() { echo "external-suites: $*" >&2; exit 2; }
say() { echo "external-suites: $*"; }
[ -n "$MPICH$IMB$OMPI_TESTS" ] || die "nothing to run: give --mpich, --imb or --ompi-tests (see --help)"
if [ -n "$MPICH" ]; then
    T=$(cd "$MPICH" && pwd)/test/mpi
    [ -f "$T/coll/testlist.in" ] || die "$MPICH has no test/mpi/coll/testlist.in"
fi
PLUGIN=target/release/libmca_coll_sharm.so
[ -f "$PLUGIN" ] || die "build the plugin first (cargo build --release)"
CC=${MPICC:-mpicc.openmpi}
# Open MPI's own components: the component path must keep them.
OMPI_LIB=$(ci/ompi-component-dir) || die "cannot find Open MPI's component directory"

export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
rm -rf "$OUT"
mkdir -p "$OUT"/{plugin,include,obj,bin,logs}
# A copy: a rebuild while the suites run must not change what they test.
cp "$PLUGIN" "$OUT/plugin/mca_coll_sharm.so"
# What sharm served, counted by its MPI_T counters in every process of a run
# with sharm (ci/sharm-pvars.c, preloaded; read at MPI_Finalize): a suite
# passing on the next component alone proves nothing about sharm.
"$CC" -O2 -shared -fPIC -o "$OUT/obj/sharm-pvars.so" ci/sharm-pvars.c ||
    die "ci/sharm-pvars.c did not build"
SHARM=(--mca mca_base_component_path "$OUT/plugin:$OMPI_LIB" --mca coll sharm,tuned,basic,libnbc,self,inter
    -x LD_PRELOAD="$OUT/obj/sharm-pvars.so")
BASE=(--mca coll tuned,basic,libnbc,self,inter)
# Every pass must be sharm's: a plugin Open MPI cannot load would leave the
# "forced" runs to the other components.
OMPI_MCA_mca_base_component_path="$OUT/plugin:$OMPI_LIB" ompi_info 2>/dev/null |
    grep -q 'MCA coll: sharm' || die "Open MPI does not load $OUT/plugin/mca_coll_sharm.so"
if [ -n "$SIM_NODES" ]; then
    ci/sim-nodes.sh check >/dev/null || die "--sim-nodes: simulated nodes are not available here"
    ci/sim-nodes.sh hostfile "$SIM_NODES" >/dev/null || die "--sim-nodes: bad layout '$SIM_NODES'"
    say "every run across simulated nodes: $(ci/sim-nodes.sh hostfile "$SIM_NODES" | tr '\n' ' ')"
fi

# launch NP MPIRUN-OPTIONS... -- COMMAND...: one job, on this node or across
# the simulated nodes.  Oversubscribed and polite: MPICH's lists ask for up
# to 10 processes.  A job that outlives its time limit takes its simulated
# nodes' daemons and processes with it (they carry the run's marker).
launch() {
    local np=$1 seconds=$2 opts=() rc mark
    shift 2
    while [ "$1" != -- ]; do opts+=("$1"); shift; done
    shift
    if [ -z "$SIM_NODES" ]; then
        timeout -k 5 "$seconds" mpirun.openmpi --allow-run-as-root --oversubscribe \
            --mca mpi_yield_when_idle 1 \
            "${opts[@]}" -np "$np" "$@"
        return
    fi
    mark="external-$$-$RANDOM$RANDOM"
    SIM_NODES_RUN_ID=$mark timeout -k 5 "$seconds" "$REPO/ci/sim-nodes.sh" run --np "$np" \
        "$SIM_NODES" "${opts[@]}" -- "$@"
    rc=$?
    "$REPO/ci/sim-nodes.sh" sweep "$mark"
    return $rc
}

# tally LOG NAME: appends "NAME served=S hierarchical=H pair_buffer=B" to
# served.txt, the calls sharm served in LOG's run (summed over its processes
# by ci/sharm-pvars.awk), how many of them went through the hierarchy's
# levels, and how many moved data through a two-process pair buffer.
tally() {
    local sum='BEGIN { FS = "=" } { s += $2 } END { print s + 0 }' group line=$2
    for group in served hierarchical pair_buffer; do
        line+=" $group=$(awk -v want=$group -f "$REPO/ci/sharm-pvars.awk" "$1" | awk "$sum")"
    done
    echo "$line" >>"$OUT/served.txt"
}

# run_one MODE (sharm|base) LOG-NAME SECONDS PASS-REGEX REJECT-REGEX NP
# [MPIRUN-OPTIONS...] -- COMMAND...: one job of COMMAND on NP processes (in
# $RUN_DIR, else $OUT), with sharm forced or without it; prints PASS (exit 0,
# PASS-REGEX in the output and, unless empty, REJECT-REGEX not), FAIL or
# TIMEOUT.
run_one() {
    local mode=$1 name=$2 seconds=$3 pass=$4 reject=$5 np=$6; shift 6
    local log="$OUT/logs/$mode-$name-np$np.log" rc
    local mca=("${BASE[@]}")
    # shellcheck disable=SC2206
    [ "$mode" = sharm ] && mca=("${SHARM[@]}" $EXTRA_MCA)
    (cd "${RUN_DIR:-$OUT}" && launch "$np" "$seconds" "${mca[@]}" "$@") >"$log" 2>&1 </dev/null
    rc=$?
    [ "$mode" != sharm ] || tally "$log" "$name-np$np"
    if [ $rc = 124 ] || [ $rc = 137 ]; then echo TIMEOUT
    elif [ $rc = 0 ] && grep -qE "$pass" "$log" && ! { [ -n "$reject" ] && grep -qE "$reject" "$log"; }; then
        echo PASS
    else echo FAIL; fi
}

# judge ARGS... (run_one's, after MODE): PASS with sharm; else whose failure
# it is, the same run without sharm deciding: "sharm VERDICT" when it passes
# there, "both VERDICT" when it does not.
judge() {
    local verdict
    verdict=$(run_one sharm "$@")
    if [ "$verdict" = PASS ]; then echo PASS
    elif [ "$(run_one base "$@")" = PASS ]; then echo "sharm $verdict"
    else echo "both $verdict"; fi
}

# ---- MPICH's collective tests ----------------------------------------------
ran=0
passed=0
sharm_only=()
both=()
if [ -n "$MPICH" ]; then
    # A copy of the tests: configure's outputs go next to them (dtpools includes
    # "../dtpoolsconf.h"), and the given tree stays as it was.
    cp -r "$T" "$OUT/mpi"
    T=$OUT/mpi
    # The headers MPICH's configure would write, for an MPI that is not MPICH:
    # strict MPI (no MPIX_), POSIX threads, the usual C types.
    cat > "$OUT/include/mpitestconf.h" <<'EOF'
#ifndef MPITESTCONF_H_INCLUDED
#define MPITESTCONF_H_INCLUDED
#define HAVE_STDARG_H 1
#define HAVE_STRING_H 1
#define HAVE_STDLIB_H 1
#define HAVE_UNISTD_H 1
#define HAVE_SYS_TIME_H 1
#define HAVE_SYS_RESOURCE_H 1
#define HAVE_GETRUSAGE 1
#define HAVE_LONG_DOUBLE 1
#define HAVE_LONG_LONG 1
#define HAVE_LONG_LONG_INT 1
#define HAVE_LONG_DOUBLE__COMPLEX 1
#define USE_LONG_DOUBLE_COMPLEX 1
#define HAVE_MPI_WIN_CREATE 1
#define HAVE_MPI_INIT_THREAD 1
#define USE_STRICT_MPI 1
#define ENABLE_STRICTMPI 1
#define THREAD_PACKAGE_NAME THREAD_PACKAGE_POSIX
#define POINTERINT_t long
#endif
EOF
    : > "$OUT/include/mtest_mpix.h"
    cat > "$T/dtpools/dtpoolsconf.h" <<'EOF'
#define HAVE_STRDUP 1
#define HAVE_MEMSET 1
#define HAVE_STDLIB_H 1
#define HAVE_STRING_H 1
EOF
    # MPI_Errhandler_set left MPI-3; Open MPI 4.1 refuses to compile it (opsum, opprod).
    cat > "$OUT/include/compat.h" <<'EOF'
#include <mpi.h>
#undef MPI_Errhandler_set
#define MPI_Errhandler_set MPI_Comm_set_errhandler
EOF
    CFLAGS=(-O2 -g -w -I"$OUT/include" -I"$T/include" -I"$T/dtpools/include" -include "$OUT/include/compat.h")

    say "building MPICH's test support library"
    lib_ok=1
    for f in "$T"/util/{mtest,mtest_common,mtest_single,dtypes,run_mpitests}.c "$T"/dtpools/src/*.c; do
        "$CC" "${CFLAGS[@]}" -c "$f" -o "$OUT/obj/$(basename "$f" .c).o" 2>>"$OUT/logs/build.log" || lib_ok=0
    done
    [ $lib_ok = 1 ] || die "support library did not build (see $OUT/logs/build.log)"
    (cd "$OUT/obj" && ar rcs libmtest.a mtest.o mtest_common.o mtest_single.o dtypes.o dtpools*.o)

    # build NAME SOURCE [CFLAGS...]: tests that define run() get the suite's main.
    build() {
        local name=$1 src=$2; shift 2
        local driver=()
        grep -qE '^int main' "$T/coll/$src" || driver=("$OUT/obj/run_mpitests.o")
        "$CC" "${CFLAGS[@]}" "$@" -o "$OUT/bin/$name" "$T/coll/$src" "${driver[@]}" \
            "$OUT/obj/libmtest.a" -lm >"$OUT/logs/build-$name.log" 2>&1
    }
    say "building the tests in $T/coll"
    for src in "$T"/coll/*.c; do
        name=$(basename "$src" .c)
        case $name in *_gpu) continue ;; esac
        # The neighbourhood tests test nothing unless told they may (MPICH-only switch).
        case $name in neighb_*) build "$name" "$name.c" -DTEST_NEIGHB_COLL=1 ;; *) build "$name" "$name.c" ;; esac
    done

    : > "$OUT/skipped.txt"
    while read -r line; do
        line=${line%%#*}
        read -r name np rest <<<"$line"
        [ -n "${name:-}" ] || continue
        [ -z "$ONLY" ] || [[ $name =~ $ONLY ]] || continue
        why=
        case "$name $rest" in
            *env=MPIR_CVAR*) why="configures MPICH itself (env=MPIR_CVAR_*)" ;;
        esac
        # MPI-4's persistent collectives (p_*) build on Open MPI 5.0, not 4.1;
        # the large-count API (*_c) on neither.
        [ -z "$why" ] && [ ! -x "$OUT/bin/$name" ] && why="does not build with this MPI ($OUT/logs/build-$name.log)"
        if [ -n "$why" ]; then
            echo "$name $np $rest: $why" >>"$OUT/skipped.txt"
            continue
        fi
        # The list's arg=X entries are the program's arguments; other keys
        # (timeLimit=, mem=, xfail=) only steer MPICH's runner.
        args=()
        for word in $rest; do
            case $word in arg=*) args+=("${word#arg=}") ;; esac
        done
        ran=$((ran + 1))
        log="$name-$(echo "${args[*]}" | tr -c 'A-Za-z0-9=\n-' _)"
        result=$(RUN_DIR=$T/coll judge "$log" 240 '^ *No Errors' '' "$np" -- "$OUT/bin/$name" "${args[@]}")
        case $result in
            PASS) passed=$((passed + 1)) ;;
            sharm*) sharm_only+=("$name np=$np ${args[*]} (${result#sharm })") ;;
            *) both+=("$name np=$np ${args[*]} (${result#both } with and without sharm)") ;;
        esac
    done <"$T/coll/testlist.in"

    say "MPICH coll tests: $passed of $ran passed with sharm; skipped $(wc -l <"$OUT/skipped.txt") (see $OUT/skipped.txt)"
    for t in "${both[@]}"; do say "  fails without sharm too (not sharm's): $t"; done
    for t in "${sharm_only[@]}"; do say "  FAILS ONLY WITH SHARM: $t"; done
fi

# ---- Intel MPI Benchmarks in check mode -------------------------------------
imb_bad=0
if [ -n "$IMB" ]; then
    say "building IMB-MPI1 with -DCHECK in $OUT/imb"
    rm -rf "$OUT/imb" && cp -r "$IMB" "$OUT/imb"
    # Open MPI's C++ headers trip IMB's -Werror.
    sed -i 's/-Werror//g' "$OUT/imb/src_cpp/Makefile"
    make -C "$OUT/imb" IMB-MPI1 CC="$CC" CXX="${MPICXX:-mpicxx.openmpi}" CPPFLAGS=-DCHECK \
        >"$OUT/logs/imb-build.log" 2>&1 || die "IMB did not build ($OUT/logs/imb-build.log)"
    # shellcheck disable=SC2206
    launch "$IMB_NP" 1800 "${SHARM[@]}" $EXTRA_MCA -- "$OUT/imb/IMB-MPI1" \
        -npmin 2 -msglog 0:22 -iter 20 -iter_policy off -time 10 -mem 2 \
        Barrier Bcast Allgather Allgatherv Gather Gatherv Scatter Scatterv Alltoall Alltoallv \
        Reduce Reduce_scatter Reduce_scatter_block Allreduce >"$OUT/logs/imb.log" 2>&1 </dev/null ||
        imb_bad=1
    tally "$OUT/logs/imb.log" "IMB-MPI1-np$IMB_NP"
    # In check mode each result row ends with its defects count.
    rows=$(awk '/defects/{on=1; next} on && NF>=6 && $1 ~ /^[0-9]+$/ {print $NF}' "$OUT/logs/imb.log")
    defects=$(echo "$rows" | awk '$1+0 > 0' | wc -l)
    say "IMB-MPI1 check mode, 2..$IMB_NP processes: $(echo "$rows" | grep -c .) rows, $defects with defects"
    [ "$defects" = 0 ] && [ "$(echo "$rows" | grep -c .)" -gt 0 ] || imb_bad=1
fi

# ---- Open MPI's public tests ---------------------------------------------------
ompi_bad=()
ompi_both=()
if [ -n "$OMPI_TESTS" ]; then
    O=$(cd "$OMPI_TESTS" && pwd)
    [ -d "$O/collective-big-count" ] && [ -d "$O/alltoallv_validation" ] ||
        die "$OMPI_TESTS has no collective-big-count/ or alltoallv_validation/"
    rm -rf "$OUT/ompi-tests" && mkdir -p "$OUT/ompi-tests"
    cp -r "$O/collective-big-count" "$O/alltoallv_validation" "$OUT/ompi-tests/"
    A=$OUT/ompi-tests/alltoallv_validation
    B=$OUT/ompi-tests/collective-big-count
    say "building ompi-tests-public's alltoallv_ddt and collective-big-count"
    { "$CC" -O2 -c "$A/src/typemap.c" -o "$A/typemap.o" &&
        "${MPICXX:-mpicxx.openmpi}" -O2 -o "$A/alltoallv_ddt" "$A/src/alltoallv_ddt.cpp" "$A/typemap.o"
    } >"$OUT/logs/ompi-tests-build.log" 2>&1 || die "alltoallv_ddt did not build ($OUT/logs/ompi-tests-build.log)"
    make -C "$B" CC="$CC" all >>"$OUT/logs/ompi-tests-build.log" 2>&1 ||
        die "collective-big-count did not build ($OUT/logs/ompi-tests-build.log)"
    # ompi_case NAME NP PASS-REGEX COMMAND...: judged, big-count runs
    # under the memory share asked for; output reporting an error fails.
    ompi_ran=0
    ompi_passed=0
    ompi_case() {
        local result
        ompi_ran=$((ompi_ran + 1))
        result=$(judge "$1" 1200 "$3" 'ERROR|FAIL' "$2" -x BIGCOUNT_ENABLE_NONBLOCKING=0 \
            -x BIGCOUNT_MEMORY_PERCENT="$BIGCOUNT_PERCENT" -- "${@:4}")
        case $result in
            PASS) ompi_passed=$((ompi_passed + 1)) ;;
            sharm*) ompi_bad+=("$1 np=$2 (${result#sharm })") ;;
            *) ompi_both+=("$1 np=$2 (${result#both } with and without sharm)") ;;
        esac
    }
    seeds=("" "-w 1 -r 1 -i 1" "-s 1234 -c 40" "-w 0" "-s 7 -c 200 -t 3")
    for np in 2 3 5 8; do
        for k in "${!seeds[@]}"; do
            [ -z "$ONLY" ] || [[ alltoallv_ddt =~ $ONLY ]] || continue
            # shellcheck disable=SC2086
            ompi_case "alltoallv_ddt-$k" "$np" 'All tests passsed' "$A/alltoallv_ddt" ${seeds[$k]}
        done
    done
    for src in "$B"/test_*.c; do
        t=$(basename "$src" .c)
        for bin in "$t" "${t}_uniform_count"; do
            [ -z "$ONLY" ] || [[ $bin =~ $ONLY ]] || continue
            ompi_case "$bin" 2 'PASSED|Passed' "$B/$bin"
        done
    done
    say "ompi-tests-public: $ompi_passed of $ompi_ran passed with sharm (big counts at $BIGCOUNT_PERCENT % of the RAM)"
    for t in "${ompi_both[@]}"; do say "  fails without sharm too (not sharm's): $t"; done
    for t in "${ompi_bad[@]}"; do say "  FAILS ONLY WITH SHARM: $t"; done
fi

# ---- what sharm served ---------------------------------------------------------
touch "$OUT/served.txt"
awk '$2 == "served=0" { print $1 }' "$OUT/served.txt" >"$OUT/served-none.txt"
read -r runs served hier pair <<<"$(awk '{ split($2, s, "="); split($3, h, "="); split($4, b, "=")
    n++; served += s[2]; hier += h[2]; pair += b[2] }
    END { print n + 0, served + 0, hier + 0, pair + 0 }' "$OUT/served.txt")"
say "sharm served $served calls in $((runs - $(wc -l <"$OUT/served-none.txt"))) of $runs runs" \
    "($hier through the hierarchy, $pair through a pair buffer);" \
    "runs it served nothing in: $OUT/served-none.txt"
unserved=0
[ "$runs" = 0 ] || [ "$served" -gt 0 ] || { say "SHARM SERVED NOTHING"; unserved=1; }
if [ -n "$SIM_NODES" ] && [ "$runs" -gt 0 ] && [ "$hier" = 0 ]; then
    say "ACROSS THE SIMULATED NODES NOTHING WENT THROUGH THE HIERARCHY"
    unserved=1
fi

leftover=$(find /dev/shm -maxdepth 1 -name '*sharm*' 2>/dev/null | wc -l)
[ "$leftover" = 0 ] || say "left in /dev/shm: $leftover sharm files"
if [ ${#sharm_only[@]} = 0 ] && [ $imb_bad = 0 ] && [ ${#ompi_bad[@]} = 0 ] && [ "$leftover" = 0 ] &&
    [ $unserved = 0 ]; then
    say "PASS"
else
    say "FAIL"
    exit 1
fi
