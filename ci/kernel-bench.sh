#!/usr/bin/env bash
# sharm's reduction kernels (src/kernels) against Open MPI's, in one process:
#   1. semantics: every predefined (operation, datatype) pair, sharm's result
#      byte for byte against Open MPI's base operations (op/avx excluded);
#      any difference fails;
#   2. the same against op/avx, what MPI_Reduce_local runs on this machine:
#      differences are listed and classified (op/avx's own deviations);
#   3. speed: GB/s table, float/double/int32 x SUM/MAX x 4 KiB .. 16 MiB.
# Usage: ci/kernel-bench.sh [repetitions]   (default 31; median reported)
set -euo pipefail
cd "$(dirname "$0")/.."
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

ci/deps.sh
cargo build --release --example kernel_bench
bin=target/release/examples/kernel_bench
echo "== sharm vs Open MPI base operations (op/avx disabled)"
OMPI_MCA_op='^avx' "$bin" check strict
echo "== sharm vs op/avx"
"$bin" check
echo "== speed"
"$bin" bench "${1:-31}"
