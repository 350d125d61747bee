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
# None of the suites is on a package registry this project may use, so the
# sources are given: an MPICH tree (`apt-get source mpich` with deb-src
# enabled, or a checkout of pmodels/mpich), an IMB tree (intel/mpi-benchmarks)
# and an ompi-tests-public tree.  Not part of .ci/run (it adds about half an
# hour, and the big counts need the memory); run it before a release.
#
# Usage: ci/external-suites.sh --mpich DIR [--imb DIR] [--imb-np N] [--out DIR]
#                              [--ompi-tests DIR] [--bigcount-percent P]
#                              [--mca 'extra mpirun args'] [--only REGEX]
#   --mca adds arguments to the runs with sharm (e.g. "--mca
#   coll_sharm_fragment_size 64 --mca coll_sharm_queue_slots 2" to stress
#   the queues); --only runs the testlist lines whose test name matches REGEX
#   (a quick check of the script or of one failure); the plugin is
#   target/release/libmca_coll_sharm.so.
#
# What a run does not cover, by design: MPI-4 persistent collectives (p_*),
# the MPI-4 large-count API (coll_large, uoplong_large), GPU tests, and
# testlist lines that only configure MPICH itself (env=MPIR_CVAR_*): Open MPI
# 4.1 has no such functions or variables.  They are listed as skipped.  The
# big-count programs run their blocking calls only
# (BIGCOUNT_ENABLE_NONBLOCKING=0): sharm hands nonblocking ones over.
set -uo pipefail
cd "$(dirname "$0")/.."

MPICH=
IMB=
IMB_NP=8
OMPI_TESTS=
BIGCOUNT_PERCENT=40
OUT=${TMPDIR:-/tmp}/sharm-external
EXTRA_MCA=
ONLY=
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
        -h|--help) sed -n '2,42p' "$0"; exit 0 ;;
        *) echo "unknown option $1" >&2; exit 2 ;;
    esac
    shift
done
die() { echo "external-suites: $*" >&2; exit 2; }
say() { echo "external-suites: $*"; }
[ -n "$MPICH" ] || die "--mpich DIR is required (an MPICH source tree)"
T=$(cd "$MPICH" && pwd)/test/mpi
[ -f "$T/coll/testlist.in" ] || die "$MPICH has no test/mpi/coll/testlist.in"
PLUGIN=target/release/libmca_coll_sharm.so
[ -f "$PLUGIN" ] || die "build the plugin first (cargo build --release)"
CC=${MPICC:-mpicc.openmpi}
# Open MPI 4.1's own components (as in ci/bench.sh): the component path
# must keep them.
OMPI_LIB=/usr/lib/x86_64-linux-gnu/openmpi/lib/openmpi3

export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
rm -rf "$OUT"
mkdir -p "$OUT"/{plugin,include,obj,bin,logs}
# A copy: a rebuild while the suites run must not change what they test.
cp "$PLUGIN" "$OUT/plugin/mca_coll_sharm.so"
# A copy of the tests too: configure's outputs go next to them (dtpools
# includes "../dtpoolsconf.h"), and the given tree stays as it was.
cp -r "$T" "$OUT/mpi"
T=$OUT/mpi
SHARM=(--mca mca_base_component_path "$OUT/plugin:$OMPI_LIB" --mca coll sharm,tuned,basic,libnbc,self,inter)
BASE=(--mca coll tuned,basic,libnbc,self,inter)
# Every pass must be sharm's: a plugin Open MPI cannot load would leave the
# "forced" runs to the other components.
OMPI_MCA_mca_base_component_path="$OUT/plugin:$OMPI_LIB" ompi_info 2>/dev/null |
    grep -q 'MCA coll: sharm' || die "Open MPI does not load $OUT/plugin/mca_coll_sharm.so"
# Oversubscribed and polite: the lists ask for up to 10 processes.
MPIRUN=(mpirun --oversubscribe --mca mpi_yield_when_idle 1)

# ---- MPICH's collective tests ----------------------------------------------
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

# run_one MODE (sharm|base) LOG-NAME SECONDS PASS-REGEX REJECT-REGEX NP
# COMMAND...: one mpirun of COMMAND on NP processes (in $T/coll), with sharm
# forced or without it; prints PASS (exit 0, PASS-REGEX in the output and,
# unless empty, REJECT-REGEX not), FAIL or TIMEOUT.
run_one() {
    local mode=$1 name=$2 seconds=$3 pass=$4 reject=$5 np=$6; shift 6
    local log="$OUT/logs/$mode-$name-np$np.log" rc
    local mca=("${BASE[@]}")
    # shellcheck disable=SC2206
    [ "$mode" = sharm ] && mca=("${SHARM[@]}" $EXTRA_MCA)
    (cd "$T/coll" && timeout -k 5 "$seconds" "${MPIRUN[@]}" "${mca[@]}" -np "$np" "$@") \
        >"$log" 2>&1 </dev/null
    rc=$?
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

ran=0
passed=0
sharm_only=()
both=()
: > "$OUT/skipped.txt"
while read -r line; do
    line=${line%%#*}
    read -r name np rest <<<"$line"
    [ -n "${name:-}" ] || continue
    [ -z "$ONLY" ] || [[ $name =~ $ONLY ]] || continue
    why=
    case "$name $rest" in
        p_*|*mpiversion=4*) why="MPI-4 (persistent collectives or large counts)" ;;
        *env=MPIR_CVAR*) why="configures MPICH itself (env=MPIR_CVAR_*)" ;;
    esac
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
    result=$(judge "$log" 240 '^ *No Errors' '' "$np" "$OUT/bin/$name" "${args[@]}")
    case $result in
        PASS) passed=$((passed + 1)) ;;
        sharm*) sharm_only+=("$name np=$np ${args[*]} (${result#sharm })") ;;
        *) both+=("$name np=$np ${args[*]} (${result#both } with and without sharm)") ;;
    esac
done <"$T/coll/testlist.in"

say "MPICH coll tests: $passed of $ran passed with sharm; skipped $(wc -l <"$OUT/skipped.txt") (see $OUT/skipped.txt)"
for t in "${both[@]}"; do say "  fails without sharm too (not sharm's): $t"; done
for t in "${sharm_only[@]}"; do say "  FAILS ONLY WITH SHARM: $t"; done

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
    timeout -k 5 1800 "${MPIRUN[@]}" "${SHARM[@]}" $EXTRA_MCA -np "$IMB_NP" "$OUT/imb/IMB-MPI1" \
        -npmin 2 -msglog 0:22 -iter 20 -iter_policy off -time 10 -mem 2 \
        Barrier Bcast Allgather Allgatherv Gather Gatherv Scatter Scatterv Alltoall Alltoallv \
        Reduce Reduce_scatter Reduce_scatter_block Allreduce >"$OUT/logs/imb.log" 2>&1 </dev/null ||
        imb_bad=1
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
            -x BIGCOUNT_MEMORY_PERCENT="$BIGCOUNT_PERCENT" "${@:4}")
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

leftover=$(find /dev/shm -maxdepth 1 -name '*sharm*' 2>/dev/null | wc -l)
[ "$leftover" = 0 ] || say "left in /dev/shm: $leftover sharm files"
if [ ${#sharm_only[@]} = 0 ] && [ $imb_bad = 0 ] && [ ${#ompi_bad[@]} = 0 ] && [ "$leftover" = 0 ]; then
    say "PASS"
else
    say "FAIL"
    exit 1
fi
