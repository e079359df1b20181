#!/usr/bin/env bash
# Seeds for fuzz_vm_channel, written into DIR (default
# tests/fuzz/corpus/fuzz_vm_channel) by channel_seeds (channel_seeds.c:
# guest frames from the protocol's encoder).  Needs build-fuzz/ built.
set -euo pipefail
repo=$(cd "$(dirname "$0")/../../.." && pwd)
out=${1:-$repo/tests/fuzz/corpus/fuzz_vm_channel}
mkdir -p "$out"
"$repo/build-fuzz/tests/fuzz/vm/channel_seeds" "$out"
