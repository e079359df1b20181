#!/usr/bin/env python3
"""The plans of tests/integration/*: every number a suite plans with is one
number, so that a path that cannot run (the binary not built, a fixture that
failed, a missing tool) reports as many cases as the path that runs; prints
TAP.

Each bash suite sources tap.sh and states its count (literally, or as
`plan=N` once and `$plan`) in each place it reports: `echo "1..N"`, `plan_skip N REASON`, `plan_fail N REASON`, and the
loops that fill the cases left with skips or failures
(`while [ "$n" -lt N ]`).  Those numbers must be equal; a plan printed from
the count (`echo "1..$n"`) must come after the last case; no suite prints a
bare `1..0` (scripts/tap_count.py counts it as one case, whatever the
suite holds).  A fill loop over a literal list (`for _ in 1 2 3`) or up to
another number cannot be checked and is refused.  At run time
scripts/tap_count.py counts a suite's lines against its plan both ways
(fewer: the missing ones failed; more: one failure).

The checker itself is first run on crafted suites, each wrong in one way,
which it must refuse.
"""
import os
import re
import sys

here = os.path.dirname(os.path.abspath(__file__))
suites_dir = os.path.normpath(os.path.join(here, '../../integration'))

PLAN_ECHO_RE = re.compile(r'^\s*echo\s+"?1\.\.([^"\s]+)"?\s*$', re.M)
PLAN_CALL_RE = re.compile(r'\bplan_(skip|fail)\s+(\S+)')
FILL_WHILE_RE = re.compile(r'while\s+\[\s+"?\$n"?\s+-lt\s+(\S+)\s+\]')
FILL_LIST_RE = re.compile(r'for\s+\w+\s+in\s+[0-9 ]+;\s*do\b[^\n]*(ok|SKIP)')
FILL_SEQ_RE = re.compile(r'for\s+\w+\s+in\s+\$\(seq\b[^\n]*?;\s*do\b[^\n]*\bok\b')
CASE_RE = re.compile(r'(^|[;&|{]\s*|\bthen\s+|\belse\s+|\bdo\s+)(ok|not_ok|nok)\s')


def problems(text):
    """What is wrong with one bash suite's plans (empty: nothing)."""
    out = []
    # A suite may name its count once (plan=33) and plan with $plan.
    named = re.findall(r'^\s*plan=(\d+)\s*$', text, re.M)
    if len(named) == 1:
        text = re.sub(r'\$\{?plan\}?(?!\w)', named[0], text)
    elif named:
        out.append('sets plan= more than once: ' + ', '.join(named))
    if not re.search(r'^\s*\.\s+"?\$repo/tests/integration/tap\.sh"?', text, re.M):
        out.append('does not source tests/integration/tap.sh')
    echoes = PLAN_ECHO_RE.findall(text)
    if not echoes:
        out.append('prints no plan (echo "1..N")')
    if any(e == '0' for e in echoes) or re.search(r'1\.\.0\b', text):
        out.append('prints a bare 1..0 (counted as one case)')
    numbers = []
    for e in echoes:
        numbers.append(('echo "1..%s"' % e, e))
    dynamic = [e for e in echoes if not e.isdigit()]
    for kind, num in PLAN_CALL_RE.findall(text):
        numbers.append(('plan_%s %s' % (kind, num), num))
    for num in FILL_WHILE_RE.findall(text):
        numbers.append(('a fill loop up to %s' % num, num))
    for m in FILL_LIST_RE.finditer(text):
        out.append('a fill loop over a literal list (%s): fill with while [ "$n" -lt N ]' % m.group(0)[:40])
    for m in FILL_SEQ_RE.finditer(text):
        out.append('a fill loop over seq (%s): fill with while [ "$n" -lt N ]' % m.group(0)[:40])
    if dynamic:
        # The plan is the count, printed last: the other numbers are the
        # cases of paths that stop early, each their own.
        last_plan = max(m.start() for m in PLAN_ECHO_RE.finditer(text))
        lines = text[last_plan:].splitlines()[1:]
        if any(CASE_RE.search(line) for line in lines if not line.lstrip().startswith('#')):
            out.append('prints its plan from the count before its last case')
        return out
    literal = sorted({num for _, num in numbers})
    if len(literal) > 1:
        out.append('plans with different numbers: ' + ', '.join(what for what, _ in numbers))
    return out


GOOD = '''#!/usr/bin/env bash
. "$repo/tests/integration/tap.sh"
[ -x "$bin" ] || plan_fail 3 "$bin not built"
echo "1..3"
ok "a"
ok "b"
if ! build_fixture; then
	while [ "$n" -lt 3 ]; do not_ok "no fixture"; done
	exit 1
fi
ok "c"
'''
CRAFTED = [
    ('a suite that plans as the checker wants passes', GOOD, False),
    ('plan_fail with another number than the plan is refused',
     GOOD.replace('plan_fail 3', 'plan_fail 2'), True),
    ('a fill loop to another number than the plan is refused (cli before issue 37)',
     GOOD.replace('-lt 3', '-lt 2'), True),
    ('a fill loop over seq is refused',
     GOOD.replace('while [ "$n" -lt 3 ]; do not_ok', 'for _ in $(seq $((n + 1)) 3); do ok "# SKIP x";'), True),
    ('a fill loop over a literal list is refused',
     GOOD.replace('while [ "$n" -lt 3 ]; do not_ok', 'for _ in 1 2; do n=$((n + 1)); echo "ok $n # SKIP x";'), True),
    ('a bare 1..0 is refused', GOOD.replace('echo "1..3"', 'echo "1..0 # SKIP no root"; exit 0\necho "1..3"'), True),
    ('a suite that does not source tap.sh is refused', GOOD.replace('. "$repo/tests/integration/tap.sh"\n', ''), True),
    ('a count named once (plan=3) and planned with $plan passes',
     GOOD.replace('[ -x', 'plan=3\n[ -x').replace('plan_fail 3', 'plan_fail $plan')
     .replace('"1..3"', '"1..$plan"').replace('-lt 3', '-lt $plan'), False),
    ('$plan with a fill loop to another number is refused',
     GOOD.replace('[ -x', 'plan=3\n[ -x').replace('"1..3"', '"1..$plan"').replace('-lt 3', '-lt 2'), True),
    ('a plan from the count printed last passes',
     GOOD.replace('echo "1..3"\n', '').replace('-lt 3', '-lt 1') + 'echo "1..$n"\n', False),
    ('a plan from the count printed before a case is refused',
     GOOD.replace('echo "1..3"\n', 'echo "1..$n"\n').replace('-lt 3', '-lt 1'), True),
]

cases = []
for name, text, refused in CRAFTED:
    got = problems(text)
    cases.append(('checker: ' + name, bool(got) == refused, got))

for name in sorted(os.listdir(suites_dir)):
    path = os.path.join(suites_dir, name)
    if not os.path.isfile(path) or not os.access(path, os.X_OK):
        continue
    with open(path, encoding='utf-8') as f:
        text = f.read()
    first = text.splitlines()[0] if text else ''
    if 'bash' not in first:
        # cp_hostile (python) prints "1..{len(cases)}" from its table of
        # cases on every path.
        cases.append((f'{name}: not bash, its plan is its table\'s length',
                      re.search(r'1\.\.\{len\(', text) is not None, ['no plan from its table']))
        continue
    got = problems(text)
    cases.append((f'{name}: one plan on every path', not got, got))

print(f'1..{len(cases)}')
bad = 0
for i, (name, good, why) in enumerate(cases, 1):
    if good:
        print(f'ok {i} - {name}')
    else:
        bad += 1
        print(f'not ok {i} - {name}')
        for w in why or ['(the checker found nothing wrong)']:
            print(f'# {w}')
sys.exit(1 if bad else 0)
