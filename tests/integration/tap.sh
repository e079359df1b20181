# Sourced by the suites of tests/integration/ (not a suite itself: not
# executable).  A suite that cannot run reports each of its cases, so that
# scripts/test's final line counts them (a bare "1..0 # SKIP" counts one).
# A reason a prerequisite that scripts/setup installs is missing says
# "(scripts/setup installs it)": with CI=true such a skip counts as a
# failure (scripts/tap_count.py).

# plan_skip N REASON: the N cases did not run here (no root, a missing
# tool); exit 0.
plan_skip() {
	local i
	echo "1..$1"
	for ((i = 1; i <= $1; i++)); do echo "ok $i # SKIP $2"; done
	exit 0
}

# plan_fail N REASON: the N cases could not run though they should (the
# binary not built, a fixture that failed to build); exit 1.
plan_fail() {
	local i
	echo "1..$1"
	for ((i = 1; i <= $1; i++)); do echo "not ok $i - $2"; done
	exit 1
}
