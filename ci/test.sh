#!/usr/bin/env bash
# The whole test suite: the README's test command, and what .ci/run calls.
#   formatting and lints, the plugin build, unit tests, the MPI suite under
#   mpirun (tests/mpi.rs), the benchmark's self-test, the Debian package
#   (ci/package.sh --check: built, installed in a throwaway overlay, used by a
#   plain mpirun, purged), mpi4py's collective tests with sharm forced
#   (ci/mpi4py.sh), and a check that no shared-memory file or MPI process is
#   left behind.
set -euo pipefail
cd "$(dirname "$0")/.."
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

ci/deps.sh
echo "== format and lints"
cargo fmt --check
cargo clippy --all-targets --release -- -D warnings
echo "== build"
cargo build --release
echo "== unit and MPI tests"
# One test at a time: the MPI scenarios each start an mpirun on a 2-core machine.
log=$(mktemp)
trap 'rm -f "$log"' EXIT
cargo test --release -- --test-threads=1 2>&1 | tee "$log"
if [ -x ci/bench-selftest.sh ]; then
    echo "== benchmark self-test"
    ci/bench-selftest.sh 2>&1 | tee -a "$log"
fi
# The package and mpi4py checks count one test each (mpi4py: one per test
# file and process count); a failure fails the suite after the closing line.
late_failures=0
echo "== Debian package (ci/package.sh --check)"
if ci/package.sh --check 2>&1; then
    echo "package-check: 1 passed, 0 failed" | tee -a "$log"
else
    echo "package-check: 0 passed, 1 failed" | tee -a "$log"
    late_failures=1
fi
echo "== mpi4py's collective tests with sharm forced (ci/mpi4py.sh)"
ci/mpi4py.sh 2>&1 | tee -a "$log" || late_failures=1
echo "== leftovers"
left=$(ls /dev/shm 2>/dev/null | grep '^sharm-' || true)
procs=$(pgrep -f '(^|/)(mpirun|mpirun\.openmpi|orted|orterun|prterun)( |$)' || true)
if [ -n "$left" ] || [ -n "$procs" ]; then
    echo "left behind: shm files [$left] processes [$procs]" >&2
    exit 1
fi
# One closing line over all the runners above.
summaries=$(grep -E '^test result:|^(bench-selftest|package-check|mpi4py): [0-9]+ passed' "$log")
passed=$(echo "$summaries" | grep -oE '[0-9]+ passed' | awk '{s += $1} END {print s + 0}')
failed=$(echo "$summaries" | grep -oE '[0-9]+ failed' | awk '{s += $1} END {print s + 0}')
skipped=$(grep -E '^mpi4py: SKIPPED' "$log" || true)
if [ "$late_failures" = 0 ]; then
    echo "ci/test.sh: all checks passed${skipped:+ ($skipped)}"
else
    echo "ci/test.sh: FAILED (package check or mpi4py, see above)"
fi
echo "total: $passed passed, $failed failed"
[ "$late_failures" = 0 ]
