#!/usr/bin/env bash
# Seeds of terminal streams for fuzz_frame and fuzz_request, written into
# FRAME_DIR and REQUEST_DIR (default tests/fuzz/corpus/fuzz_frame and
# tests/fuzz/corpus/fuzz_request) by frame_seeds (frame_seeds.c: frames
# from the protocol's encoder).  Needs build-fuzz/ built.
set -euo pipefail
repo=$(cd "$(dirname "$0")/../../.." && pwd)
frame=${1:-$repo/tests/fuzz/corpus/fuzz_frame}
request=${2:-$repo/tests/fuzz/corpus/fuzz_request}
mkdir -p "$frame" "$request"
"$repo/build-fuzz/tests/fuzz/proto/frame_seeds" "$frame" "$request"
