#!/bin/bash
# The A/B of docs/benchmark/2026-11-30-b-guest-cache: sharm before the guest
# cache cap (OLD, twice: an A/A control) and with it (NEW), beside
# coll/tuned and Intel MPI, np=2 (bench/ab_with_peers.sh says how).
#   run.sh RUN OLD NEW [ROUNDS]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
exec "$here/../../../bench/ab_with_peers.sh" "$1" "$2" "$3" "${4:-12}" "$here" 2M,4M,8M,16M
