#!/usr/bin/env bash
# mpi4py's own collective tests (its sdist's test/test_cco_*.py) on this
# system's Open MPI with sharm forced, at 2 and 3 processes (3 oversubscribed
# on a 2-core machine), each run also proving from sharm's MPI_T counters
# (read at MPI_Finalize in every process by ci/sharm-pvars.c, preloaded)
# that sharm served the collectives.
#
#   ci/mpi4py.sh            (ci/test.sh runs it; needs target/release built)
#
# mpi4py $MPI4PY_VERSION is built once per flavour (Debian release, Open MPI
# version, Python version) from the sdist downloaded from PyPI, and kept in
# $SHARM_CACHE/mpi4py (default /var/cache/sharm/mpi4py: the sdist, and per
# flavour a virtual environment with the built wheel installed).  Inside
# ci/ompi5.sh's root that cache is the root's own /var/cache/sharm.  When
# PyPI cannot be reached and nothing is cached the test is skipped, loudly.
# Ends with "mpi4py: N passed, M failed" (one per test file and process
# count), which ci/test.sh counts.
set -euo pipefail
cd "$(dirname "$0")/.."
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# pip trusts the system's certificate authorities (ci/ompi5.sh's root gets the
# host's bundle; pip's own would not know a local proxy's authority).
if [ -z "${PIP_CERT:-}" ] && [ -f /etc/ssl/certs/ca-certificates.crt ]; then
    export PIP_CERT=/etc/ssl/certs/ca-certificates.crt
fi
export PIP_DISABLE_PIP_VERSION_CHECK=1

MPI4PY_VERSION=4.1.1
# Every collective test file of the sdist (test/test_cco_*.py: blocking,
# nonblocking, persistent, neighbourhood, intercommunicator; about a second each).
TESTS=""
NPS="2 3"
CACHE=${SHARM_CACHE:-/var/cache/sharm}/mpi4py
PY=/usr/bin/python3 # Debian's Python (the one python3-dev belongs to)
target=${CARGO_TARGET_DIR:-target}
plugin=$(readlink -f "$target/release/libmca_coll_sharm.so" 2>/dev/null || true)

say() { echo "ci/mpi4py.sh: $*"; }
skip() {
    echo "ci/mpi4py.sh: SKIPPED: $*" >&2
    echo "mpi4py: SKIPPED ($*)"
    echo "mpi4py: 0 passed, 0 failed"
    exit 0
}
fail() {
    echo "ci/mpi4py.sh: FAIL: $*" >&2
    echo "mpi4py: 0 passed, 1 failed"
    exit 1
}
[ -f "$plugin" ] || fail "no $target/release/libmca_coll_sharm.so (cargo build --release first)"

# ---- Debian packages: Python's headers and venv ---------------------------
need=()
pyver=$($PY -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2>/dev/null) || need+=(python3)
[ -n "${pyver:-}" ] && [ -e "/usr/include/python$pyver/Python.h" ] || need+=(python3-dev)
$PY -c 'import ensurepip, venv' 2>/dev/null || need+=(python3-venv)
if [ ${#need[@]} -gt 0 ]; then
    say "installing ${need[*]}"
    sudo_cmd=""
    [ "$(id -u)" -eq 0 ] || sudo_cmd="sudo"
    export DEBIAN_FRONTEND=noninteractive
    { $sudo_cmd apt-get update -qq && $sudo_cmd apt-get install -y -qq "${need[@]}" >/dev/null; } ||
        fail "could not install ${need[*]}"
    pyver=$($PY -c 'import sys; print("%d.%d" % sys.version_info[:2])')
fi

# ---- mpi4py, built once per flavour ----------------------------------------
ompi_ver=$(ompi_info --parsable --version 2>/dev/null | sed -n 's/^ompi:version:full://p' | head -1)
[ -n "$ompi_ver" ] || ompi_ver=$(ompi_info | sed -n 's/^ *Open MPI: *//p' | head -1)
codename=$(. /etc/os-release && echo "${VERSION_CODENAME:-unknown}")
flavour="$codename-ompi$ompi_ver-py$pyver"
venv=$CACHE/$flavour/venv
sdist=$CACHE/mpi4py-$MPI4PY_VERSION.tar.gz
mkdir -p "$CACHE/$flavour"
exec 9>"$CACHE/.lock"
flock 9 # one build at a time per machine (or root)
installed=$("$venv/bin/python" -c 'import mpi4py; print(mpi4py.__version__)' 2>/dev/null || true)
if [ "$installed" != "$MPI4PY_VERSION" ]; then
    t0=$SECONDS
    rm -rf "$venv"
    $PY -m venv "$venv" || fail "python3 -m venv failed"
    # pip reaches PyPI: the build tools go into the environment first (they
    # also let pip read the sdist's metadata without an isolated build).
    if ! timeout 600 "$venv/bin/pip" install --quiet "setuptools>=42" wheel "cython>=3.0.1"; then
        rm -rf "$venv"
        skip "PyPI unreachable: pip could not install setuptools, wheel and Cython"
    fi
    if [ ! -f "$sdist" ]; then
        say "downloading the mpi4py $MPI4PY_VERSION sdist from PyPI"
        tmp=$(mktemp -d)
        timeout 300 "$venv/bin/pip" download --quiet --no-deps --no-binary :all: \
            --no-build-isolation -d "$tmp" "mpi4py==$MPI4PY_VERSION" ||
            { rm -rf "$tmp" "$venv"; fail "pip could not download the mpi4py $MPI4PY_VERSION sdist"; }
        mv "$tmp/mpi4py-$MPI4PY_VERSION.tar.gz" "$sdist"
        rm -rf "$tmp"
    fi
    say "building mpi4py $MPI4PY_VERSION for $flavour (once; cached in $venv)"
    rm -rf "$CACHE/$flavour/wheel"
    MPICC=mpicc.openmpi timeout 1200 "$venv/bin/pip" wheel --quiet --no-deps --no-build-isolation \
        -w "$CACHE/$flavour/wheel" "$sdist" || { rm -rf "$venv"; fail "building mpi4py failed"; }
    "$venv/bin/pip" install --quiet --no-index --no-deps "$CACHE/$flavour"/wheel/mpi4py-*.whl ||
        { rm -rf "$venv"; fail "installing the mpi4py wheel failed"; }
    say "mpi4py $MPI4PY_VERSION built in $((SECONDS - t0)) s"
fi
flock -u 9
say "mpi4py $("$venv/bin/python" -c 'import mpi4py; print(mpi4py.__version__)') from $(ls "$CACHE/$flavour"/wheel/)"

# The tests come from the sdist (the wheel has none).
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
tar -C "$work" -xzf "$sdist" "mpi4py-$MPI4PY_VERSION/test"
testdir=$work/mpi4py-$MPI4PY_VERSION/test
[ -n "$TESTS" ] || TESTS=$(cd "$testdir" && ls test_cco_*.py | sed 's/\.py$//' | sort | paste -sd' ' -)

# ---- the runs ----------------------------------------------------------------
# sharm forced the way the MPI suite forces it (tests/support/launch.rs): its
# directory ahead of Open MPI's own component directory, priority 100.
compdir=$(ci/ompi-component-dir) || fail "cannot find Open MPI's component directory"
mkdir -p "$work/components"
ln -s "$plugin" "$work/components/mca_coll_sharm.so"
mpicc.openmpi -O2 -shared -fPIC -o "$work/pvars.so" ci/sharm-pvars.c
for v in $(env | sed -n 's/^\(\(OMPI\|PMIX\|PRTE\)_MCA_[^=]*\)=.*/\1/p'); do unset "$v"; done

# counts served|fallbacks|hierarchical LOG: "op=N ..." from sharm-pvars lines,
# summed over the processes (ci/sharm-pvars.awk).
counts() {
    awk -v want="$1" -f ci/sharm-pvars.awk "$2" | sort | paste -sd' ' -
}
passed=0
failed=0
for np in $NPS; do
    extra=()
    # 3 processes on 2 cores: oversubscribed, processes yield when idle.
    [ "$np" -le "$(nproc)" ] || extra=(--oversubscribe --mca mpi_yield_when_idle 1)
    for t in $TESTS; do
        log=$work/$t.np$np.log
        cmd=(mpirun.openmpi --allow-run-as-root -np "$np" "${extra[@]}"
            --mca mca_base_component_path "$work/components:$compdir"
            --mca coll_sharm_priority 100 -x LD_PRELOAD="$work/pvars.so"
            "$venv/bin/python" "$testdir/$t.py")
        t0=$SECONDS
        rc=0
        timeout -s KILL 600 "${cmd[@]}" >"$log" 2>&1 || rc=$?
        secs=$((SECONDS - t0))
        # The verdict is mpirun's exit status (a process whose unittest run
        # fails exits 1); the processes' "Ran N tests" / "OK" lines interleave.
        ran=$(grep -oE 'Ran [0-9]+ tests? in [0-9.]+s' "$log" | head -1 || true)
        nran=$(grep -oE 'Ran [0-9]+ tests? in' "$log" | wc -l)
        # sharm's counters, one line per process, summed over the processes
        # (anywhere in a line: `counts`).
        nlines=$({ grep -oE 'sharm-pvars: rank [0-9]+ served' "$log" || true; } | wc -l)
        unserved=$({ grep -oE 'sharm-pvars: rank [0-9]+ (served fallbacks|sharm not loaded)' "$log" || true; } | wc -l)
        served=$(counts served "$log")
        fell=$(counts fallbacks "$log")
        # sharm serves no neighbourhood or persistent collective: there only
        # the tests' verdict counts (and its counters are read all the same).
        need_served=1
        case "$t" in *_ngh_* | *_pr_*) need_served=0 ;; esac
        if [ "$rc" -eq 0 ] && [ "$nran" -eq "$np" ] && [ "$nlines" -eq "$np" ] &&
            { [ "$unserved" -eq 0 ] || [ "$need_served" = 0 ]; }; then
            passed=$((passed + 1))
            skipped=$(grep -oE 'OK \(skipped=[0-9]+\)' "$log" | head -1 | grep -oE '[0-9]+' || true)
            echo "ok   $t np=$np (${secs} s, $ran${skipped:+ ($skipped skipped by mpi4py)}, all $np processes passed)"
        else
            failed=$((failed + 1))
            echo "FAIL $t np=$np (${secs} s, exit $rc, ${ran:-no tests ran}, test runs ended in $nran of $np processes," \
                "sharm's counters from $nlines of $np processes, $unserved of them serving nothing)"
            echo "     command: ${cmd[*]}"
            tail -40 "$log" | sed 's/^/     | /'
        fi
        echo "     sharm served (calls, all processes): ${served:-nothing}"
        echo "     handed to the next component: ${fell:-none}"
    done
done
echo "mpi4py: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
