#!/usr/bin/env python3
"""scripts/tap_count.py's rules (how scripts/test's final line counts) over
crafted logs of each runner; prints TAP."""
import importlib.util
import json
import os
import sys

here = os.path.dirname(os.path.abspath(__file__))
spec = importlib.util.spec_from_file_location('tap_count', os.path.join(here, '../../../scripts/tap_count.py'))
tc = importlib.util.module_from_spec(spec)
spec.loader.exec_module(tc)

NODE_GATED = """TAP version 13
# Subtest: fs::* on a live sandbox
    # Subtest: write
    ok 1 - write # SKIP missing tools: skopeo (scripts/setup installs them)
    # Subtest: read
    ok 2 - read # SKIP missing tools: skopeo (scripts/setup installs them)
    # Subtest: kvm
    ok 3 - kvm # SKIP VMs run under KVM here
    1..3
ok 1 - fs::* on a live sandbox
# Subtest: worker
ok 2 - worker
1..2
# tests 4
# suites 1
# pass 1
# fail 0
# cancelled 0
# skipped 3
# todo 0
"""

NODE_HOOK = """TAP version 13
# Subtest: a stack
ok 1 - a stack
not ok 2 - /tmp/x.test.mjs
  ---
  failureType: 'hookFailed'
  error: |-
    the daemon's exit (after SIGTERM)
  ...
1..2
# tests 1
# pass 1
# fail 0
# cancelled 0
# skipped 0
# todo 0
"""

cases = []


def case(name, got, want):
    cases.append((name, got, want))


case('node: every skipped test of a describe counts', tc.count('node', NODE_GATED, 0), (1, 0, 3))
case('node on CI: a skip for what scripts/setup installs fails, others stay skips',
     tc.count('node', NODE_GATED, 0, ci=True), (1, 2, 1))
case('node: a failed hook (top-level not ok) counts though the summary says 0', tc.count('node', NODE_HOOK, 1), (1, 1, 0))
case('node: a crash before any summary counts one failure', tc.count('node', 'TAP version 13\n', 134), (0, 1, 0))
case('tap: ok, not ok and skip lines', tc.count('tap', '1..3\nok 1 - a\nnot ok 2 - b\nok 3 - c # SKIP no x\n', 1),
     (1, 1, 1))
case('tap: a plan longer than the lines counts the missing as failed',
     tc.count('tap', '1..5\nok 1 - a\nok 2 - b\nok 3 # SKIP x\n', 0), (2, 2, 1))
case('tap: more lines than the plan count one failure more (the plan is wrong)',
     tc.count('tap', '1..2\nok 1 - a\nok 2 - b\nok 3 - c\n', 0), (3, 1, 0))
case('tap: a plan at the end counts the same', tc.count('tap', 'ok 1\nok 2\n1..2\n', 0), (2, 0, 0))
case('tap: a plan of 0 with a skip directive alone is one skip', tc.count('tap', '1..0 # SKIP needs root\n', 0), (0, 0, 1))
case('tap on CI: a plan of 0 skipped for what scripts/setup installs fails',
     tc.count('tap', '1..0 # SKIP strace is not installed (scripts/setup installs it)\n', 0, ci=True), (0, 1, 0))
case('tap on CI: a per-case skip for what scripts/setup installs fails',
     tc.count('tap', '1..2\nok 1 # SKIP pandoc is missing (scripts/setup installs it)\nok 2 # SKIP no KVM\n', 0, ci=True),
     (0, 1, 1))
case('tap: an exit status with no failure line is one failure', tc.count('tap', '1..1\nok 1\n', 2), (1, 1, 0))
meson_log = '\n'.join(json.dumps(t) for t in [
    {'name': 'common_error', 'result': 'OK', 'stdout': 'ok 1 - a\nok 2 - b\n1..2\n'},
    {'name': 'vm_channel', 'result': 'FAIL', 'stdout': 'ok 1 - a\n'},
    {'name': 'probe', 'result': 'SKIP', 'stdout': ''},
    {'name': 'crashed', 'result': 'TIMEOUT', 'stdout': 'ok 1 - a\nnot ok 2 - b\n'},
])
case('meson: each test\'s TAP; a failed run without "not ok" counts once more', tc.count('meson', meson_log, 1),
     (4, 2, 1))
case('failures: the failing case with its error', tc.failed_cases('node', NODE_HOOK),
     ["    not ok 2 - /tmp/x.test.mjs (error: the daemon's exit (after SIGTERM))"])

print(f'1..{len(cases)}')
bad = 0
for i, (name, got, want) in enumerate(cases, 1):
    if got == want:
        print(f'ok {i} - {name}')
    else:
        bad += 1
        print(f'not ok {i} - {name}\n# got  {got!r}\n# want {want!r}')
sys.exit(1 if bad else 0)
