#!/usr/bin/env bash
# Seeds for fuzz_net_guard, written into DIR (default
# tests/fuzz/corpus/fuzz_net_guard) as seed-<what> by guard_seeds
# (guard_seeds.c: frames from the unit tests' builder, on both sides of
# each of the guard's rules).  Needs build-fuzz/ built.
set -euo pipefail
repo=$(cd "$(dirname "$0")/../../.." && pwd)
out=${1:-$repo/tests/fuzz/corpus/fuzz_net_guard}
mkdir -p "$out"
"$repo/build-fuzz/tests/fuzz/net/guard_seeds" "$out"
