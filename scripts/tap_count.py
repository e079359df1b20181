#!/usr/bin/env python3
"""How scripts/test counts test cases, from the logs of its runners.

  tap_count.py count KIND FILE STATUS     prints "PASS FAIL SKIP"
  tap_count.py failures KIND FILE         the failing cases, one line each (at most 6)

KIND is the log's format:
  meson  meson's testlog.json: each test's own TAP lines count; a test that
         crashed or timed out without a "not ok" counts once more.
  node   node --test's TAP: its closing summary counts, and at least one
         failure per top-level "not ok" (a failed hook fails its suite
         without counting in the summary).
  tap    plain TAP (tests/integration/*): the "ok" / "not ok" lines count; a
         plan "1..N" with fewer lines counts the missing ones as failed (the
         script died on the way), with more lines one failure (a wrong
         plan); "1..0 # SKIP" alone counts one skip.
STATUS is the runner's exit status: non-zero with no failure seen is one
failure (a crash before any report).

Everywhere, with CI=true in the environment, a skip whose reason says
"scripts/setup installs" (a prerequisite missing from a machine that
scripts/setup prepared) counts as a failure, not a skip.

tests/unit/scripts/test_tap_count.py checks these rules on crafted logs.
"""
import json
import os
import re
import sys

SETUP_MARK = 'scripts/setup installs'
LINE_RE = re.compile(r'^(not ok|ok)\b[^#]*(#\s*(\w+)(.*))?', re.I)
SKIP_LINE_RE = re.compile(r'^\s*ok\b[^#]*#\s*SKIP\b(.*)$', re.I | re.M)
PLAN_RE = re.compile(r'^1\.\.(\d+)\s*(#\s*SKIP\b.*)?$', re.I)


def setup_skip(reason, ci):
    """A skip that is a failure: on CI, a prerequisite scripts/setup installs."""
    return ci and SETUP_MARK in reason


def count_tap(text, ci=False):
    """Top-level TAP lines of a plain TAP log: (pass, fail, skip)."""
    p = f = s = 0
    plan = None
    for line in text.splitlines():
        pm = PLAN_RE.match(line)
        if pm:
            plan = (int(pm.group(1)), pm.group(2) or '')
            continue
        m = LINE_RE.match(line)
        if not m:
            continue
        directive = (m.group(3) or '').upper()
        if directive in ('SKIP', 'TODO'):
            if setup_skip(m.group(4) or '', ci):
                f += 1
            else:
                s += 1
        elif m.group(1) == 'ok':
            p += 1
        else:
            f += 1
    if plan is not None:
        planned, skip_all = plan
        if planned == 0 and skip_all and p + f + s == 0:
            if setup_skip(skip_all, ci):
                f += 1
            else:
                s += 1
        elif p + f + s < planned:
            f += planned - (p + f + s)
        elif p + f + s > planned:
            # More lines than the plan: the plan is wrong, whatever passed.
            f += 1
    return p, f, s


def count_node(text, ci=False):
    p = f = s = 0
    summary = dict(re.findall(r'^# (pass|fail|cancelled|skipped|todo) (\d+)$', text, re.M))
    if summary:
        p = int(summary.get('pass', 0))
        f = int(summary.get('fail', 0)) + int(summary.get('cancelled', 0))
        s = int(summary.get('skipped', 0)) + int(summary.get('todo', 0))
    # A failing hook fails its suite without counting in the summary.
    f = max(f, len(re.findall(r'^not ok ', text, re.M)))
    if ci:
        setup = sum(1 for reason in SKIP_LINE_RE.findall(text) if setup_skip(reason, ci))
        setup = min(setup, s)
        s, f = s - setup, f + setup
    return p, f, s


def count_meson(text, ci=False):
    p = f = s = 0
    for line in text.splitlines():
        t = json.loads(line)
        tp, tf, ts = count_tap(t.get('stdout') or '', ci)
        bad = t['result'] not in ('OK', 'SKIP', 'EXPECTEDFAIL')
        if tp + tf + ts == 0:
            tp, ts = int(not bad and t['result'] != 'SKIP'), int(t['result'] == 'SKIP')
        if bad and tf == 0:
            tf = 1
            print(f"meson test {t['name']}: {t['result']}", file=sys.stderr)
        p, f, s = p + tp, f + tf, s + ts
    return p, f, s


COUNTERS = {'meson': count_meson, 'node': count_node, 'tap': count_tap}


def count(kind, text, status, ci=False):
    p, f, s = COUNTERS[kind](text, ci)
    if status != 0 and f == 0:
        f = 1
    return p, f, s


def failed_cases(kind, text):
    """The failing cases of a log, with the diagnostic line just before (or
    node's YAML `error:`), so a CI log's summary names what failed."""
    logs = []
    if kind == 'meson':
        for line in text.splitlines():
            t = json.loads(line)
            if t['result'] not in ('OK', 'SKIP', 'EXPECTEDFAIL'):
                logs.append((t['name'] + ': ', (t.get('stdout') or '') + '\n' + (t.get('stderr') or ''), t['result']))
    else:
        logs.append(('', text, ''))
    out = []
    for prefix, log, result in logs:
        diag, found = '', False
        lines = log.splitlines()
        for i, line in enumerate(lines):
            st = line.strip()
            if st.startswith('#') and not re.match(r'#\s*(Subtest|tests|suites|pass|fail|cancelled|skipped|todo|duration_ms)\b', st):
                diag = st
            elif re.match(r'not ok\b', st):
                # node's TAP says why in the YAML block after the line
                for k in range(i + 1, min(i + 40, len(lines))):
                    a = lines[k].strip()
                    if re.match(r'(not ok|ok)\b|# Subtest', a):
                        break
                    if a.startswith('error:'):
                        diag = a
                        if a in ('error: |-', 'error: |', 'error: >-'):
                            # a block: its first line says it
                            diag = 'error: ' + (lines[k + 1].strip() if k + 1 < len(lines) else '')
                        break
                found = True
                out.append(prefix + st + (' (' + diag + ')' if diag else ''))
                diag = ''
        if not found:
            out.append(prefix + (result or 'failed') + ' without a "not ok" line')
    lines = ['    ' + (line if len(line) <= 200 else line[:197] + '...') for line in out[:6]]
    if len(out) > 6:
        lines.append(f'    ... and {len(out) - 6} more')
    return lines


def read(path):
    try:
        with open(path, errors='replace') as f:
            return f.read()
    except OSError:
        return None


def main(argv):
    if len(argv) == 5 and argv[1] == 'count' and argv[2] in COUNTERS:
        print(*count(argv[2], read(argv[3]) or '', int(argv[4]), os.environ.get('CI') == 'true'))
        return 0
    if len(argv) == 4 and argv[1] == 'failures' and argv[2] in COUNTERS:
        text = read(argv[3])
        if text is not None:
            for line in failed_cases(argv[2], text):
                print(line)
        return 0
    print('\n'.join(__doc__.strip().splitlines()[2:4]), file=sys.stderr)
    return 2


if __name__ == '__main__':
    sys.exit(main(sys.argv))
