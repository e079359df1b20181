#!/usr/bin/env bash
# Seeds for fuzz_net_report, written into DIR (default
# tests/fuzz/corpus/fuzz_net_report) as seed-<what>: sequences of
# length-prefixed messages (fuzz_report.c), honest reports (version 1,
# twelve little-endian counts) and the ways a compromised helper's may lie
# (a count going down, above the 2^40 cap, another version, cut short).
set -euo pipefail
repo=$(cd "$(dirname "$0")/../../.." && pwd)
out=${1:-$repo/tests/fuzz/corpus/fuzz_net_report}
mkdir -p "$out"
python3 - "$out" <<'PY'
import os, struct, sys
out, n = sys.argv[1], 12
def report(counts, version=1, ncounts=n):
    return bytes([version, ncounts]) + bytes(6) + b''.join(struct.pack('<Q', c) for c in counts)
def msg(b):
    return bytes([len(b)]) + b
seeds = {
    'honest-increments': b'\0' + bytes(range(1, 13)) + b'\0' + bytes([2] * 12),
    'raw-report': msg(report([1] * n)),
    'raw-then-lower': msg(report([5] * n)) + msg(report([4] * n)),
    'over-cap': msg(report([1 << 40] + [0] * (n - 1))) + msg(report([(1 << 40) + 1] + [0] * (n - 1))),
    'bad-version': msg(report([1] * n, version=2)),
    'short': msg(report([1] * n)[:50]),
}
for name, data in seeds.items():
    with open(os.path.join(out, 'seed-' + name), 'wb') as f:
        f.write(data)
PY
