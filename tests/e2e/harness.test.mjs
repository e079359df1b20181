// The harness's own checks, with no daemon and no VM: endDaemon (the one
// way a test ends a daemon, daemon.mjs) fails on a leak's exit status and report,
// another status, a signal or a sanitizer report, and a stack whose daemon
// leaks fails the file that started it; a skipped describe of
// lib/test-api.mjs counts each of its tests as skipped and starts nothing.
// Stand-in "daemons" are shell scripts that end as $STANDIN_END says, and
// one C program built with AddressSanitizer to leak.  scripts/test counts this file
// with the stand-in engine's self-tests, apart from the daemon's.
import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { chmodSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { endDaemon, spawnDaemon } from './daemon.mjs';
import { eventually } from './lib.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
// Nothing listens there: the stand-ins never connect.
const NO_ENGINE = 'ws://127.0.0.1:9';

const STANDIN = `#!/bin/sh
case "$STANDIN_END" in
clean) trap 'exit 0' TERM ;;
leak) trap 'echo "==1==ERROR: LeakSanitizer: detected memory leaks" >&2; exit 23' TERM ;;
report) trap 'echo "a.c:1:2: runtime error: signed integer overflow" >&2; exit 0' TERM ;;
signal) trap 'kill -SEGV $$' TERM ;;
status) echo ready >&2; exit 1 ;;
ignore) trap '' TERM ;;
esac
echo ready >&2
while :; do sleep 0.05; done
`;

// node --test FILE with the TAP reporter, as scripts/test runs it; without
// NODE_TEST_CONTEXT, which would make it report to this runner.
function runNodeTest(file) {
	const env = { ...process.env };
	delete env.NODE_TEST_CONTEXT;
	return spawnSync(process.execPath, ['--test', '--test-reporter=tap', file], { encoding: 'utf8', env, timeout: 120000 });
}

describe('endDaemon', () => {
	let dir, bin;
	before(() => {
		dir = mkdtempSync(path.join(tmpdir(), 'sbx-e2e-harness-'));
		bin = path.join(dir, 'standin-daemon');
		writeFileSync(bin, STANDIN);
		chmodSync(bin, 0o755);
	});
	after(() => rmSync(dir, { recursive: true, force: true }));

	// A stand-in ending as `end`, once it has set its trap.
	async function standin(end) {
		const d = spawnDaemon(NO_ENGINE, { STANDIN_END: end }, { bin });
		await eventually(() => assert.match(d.output(), /ready/), 30000);
		return d;
	}

	test('a clean exit 0 after SIGTERM passes, and a second call does not check again', async () => {
		const d = await standin('clean');
		assert.deepEqual(await endDaemon(d), { code: 0, signal: null });
		assert.deepEqual(await endDaemon(d, { code: 7 }), { code: 0, signal: null });
	});

	test('LeakSanitizer\'s exit 23 fails it', async () => {
		const d = await standin('leak');
		await assert.rejects(endDaemon(d), (e) => /code: 23/.test(e.message) && /LeakSanitizer/.test(e.message));
		assert.equal(await endDaemon(d), null, 'a later call returns null and does not throw again');
	});

	// A real daemon built to leak: C compiled with AddressSanitizer (whose
	// LeakSanitizer reports at exit), the block it allocated lost before
	// SIGTERM; its exit status and report must fail endDaemon as the
	// daemon's own would under the ASan pass.
	test('a daemon built with LeakSanitizer that leaks fails it', async () => {
		const src = path.join(dir, 'leaky.c'), leaky = path.join(dir, 'leaky');
		writeFileSync(src, `#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
static volatile sig_atomic_t stop;
static void on_term(int sig) { (void)sig; stop = 1; }
static char *volatile kept;
int main(void)
{
	signal(SIGTERM, on_term);
	kept = malloc(4096);
	memset(kept, 1, 4096);
	kept = NULL; /* lost: a leak */
	fprintf(stderr, "ready\\n");
	while (!stop)
		pause();
	return 0;
}
`);
		const cc = spawnSync('cc', ['-fsanitize=address', '-g', '-O0', '-o', leaky, src], { encoding: 'utf8' });
		assert.equal(cc.status, 0, `cc -fsanitize=address (build-essential, scripts/setup): ${cc.error?.message ?? ''}${cc.stderr}`);
		// scripts/test's options for the ASan pass: a leak ends the process
		// with status 1 and LeakSanitizer's report.
		const d = spawnDaemon(NO_ENGINE, { ASAN_OPTIONS: 'detect_leaks=1:fast_unwind_on_malloc=0:halt_on_error=1' },
			{ bin: leaky });
		await eventually(() => assert.match(d.output(), /ready/), 30000);
		await assert.rejects(endDaemon(d), (e) => /code: 1\b/.test(e.message) &&
			/LeakSanitizer: detected memory leaks/.test(e.message));
	});

	test('a sanitizer report fails it even with exit 0', async () => {
		const d = await standin('report');
		await assert.rejects(endDaemon(d), /sanitizer report/);
	});

	test('a death by a signal fails it', async () => {
		const d = await standin('signal');
		await assert.rejects(endDaemon(d), /SIGSEGV/);
	});

	test('a non-zero exit of its own fails it; the expected one passes', async () => {
		await assert.rejects(endDaemon(await standin('status'), { send: null }), /code: 1/);
		assert.deepEqual(await endDaemon(await standin('status'), { code: 1, send: null }), { code: 1, signal: null });
		assert.deepEqual(await endDaemon(await standin('status'), { code: [2, 1], send: null }), { code: 1, signal: null });
		await assert.rejects(endDaemon(await standin('status'), { code: [0, 2], send: null }), /code: 1/);
	});

	test('an expected SIGKILL passes', async () => {
		const d = await standin('ignore');
		assert.deepEqual(await endDaemon(d, { send: 'SIGKILL', signal: 'SIGKILL' }), { code: null, signal: 'SIGKILL' });
	});

	test('a daemon that ignores SIGTERM is killed and fails it', async () => {
		const d = await standin('ignore');
		await assert.rejects(endDaemon(d, { timeoutMs: 200 }), /did not exit within 200 ms/);
		assert.equal(d.proc.signalCode, 'SIGKILL');
	});

	// A test file that starts a stack on a stand-in and stops it in an
	// `after` hook, as the daemon's test files do.
	function runFile(end) {
		const file = path.join(dir, `stack-${end}.test.mjs`);
		writeFileSync(file, `import { after, test } from 'node:test';
import { startStack } from ${JSON.stringify(pathToFileURL(path.join(here, 'daemon.mjs')).href)};
let s;
after(() => s?.stop());
test('a stack on a stand-in daemon', async () => {
	s = await startStack({ waitRegistered: false, env: { STANDIN_END: '${end}' }, spawnOptions: { bin: ${JSON.stringify(bin)} } });
	await new Promise((resolve) => { const t = setInterval(() => { if (/ready/.test(s.daemon.output())) { clearInterval(t); resolve(); } }, 20); });
});
`);
		return runNodeTest(file);
	}

	test('a stack whose daemon leaks fails its file; a clean one passes', () => {
		const leak = runFile('leak');
		assert.notEqual(leak.status, 0, leak.stdout);
		assert.match(leak.stdout, /^not ok \d+ /m);
		assert.match(leak.stdout, /code: 23/);
		const clean = runFile('clean');
		assert.equal(clean.status, 0, clean.stdout + clean.stderr);
		assert.match(clean.stdout, /^# fail 0$/m);
	});
});

test('no e2e file or helper waits for a daemon\'s exit but through endDaemon', () => {
	const files = [...readdirSync(here).filter((f) => f.endsWith('.mjs') && f !== 'daemon.mjs' && f !== 'harness.test.mjs'),
		...readdirSync(path.join(here, 'lib')).filter((f) => f.endsWith('.mjs')).map((f) => `lib/${f}`)];
	const bypass = files.filter((f) => /\bdaemon\.exited\b|\bd\.exited\b|waitExit\(/.test(readFileSync(path.join(here, f), 'utf8')));
	assert.deepEqual(bypass, []);
});

test('a skipped describe of lib/test-api.mjs counts each test as skipped, runs no hook, and nests', () => {
	const dir = mkdtempSync(path.join(tmpdir(), 'sbx-e2e-harness-'));
	try {
		const file = path.join(dir, 'gated.test.mjs');
		writeFileSync(file, `import { describe, test, it, before, after } from ${JSON.stringify(pathToFileURL(path.join(here, 'lib/test-api.mjs')).href)};
describe('gated', { skip: 'no registry here' }, () => {
	before(() => { throw new Error('a hook of a skipped describe ran'); });
	after(() => { throw new Error('a hook of a skipped describe ran'); });
	test('a', () => { throw new Error('ran'); });
	it('b', { timeout: 5 }, () => { throw new Error('ran'); });
	describe('nested', () => { test('c', () => { throw new Error('ran'); }); });
});
describe('open', () => {
	test('d', () => {});
	describe('nested skip', { skip: 'needs root' }, () => { test('e', () => { throw new Error('ran'); }); });
	test('f', { skip: 'own reason' }, () => { throw new Error('ran'); });
});
`);
		const r = runNodeTest(file);
		assert.equal(r.status, 0, r.stdout + r.stderr);
		assert.match(r.stdout, /^# pass 1$/m);
		assert.match(r.stdout, /^# skipped 5$/m);
		assert.match(r.stdout, /^ {4}ok 1 - a # SKIP no registry here$/m);
		assert.match(r.stdout, /^ {8}ok 1 - c # SKIP no registry here$/m);
		assert.match(r.stdout, /^ {8}ok 1 - e # SKIP needs root$/m);
	} finally {
		rmSync(dir, { recursive: true, force: true });
	}
});

test('the daemon\'s test files take describe, test and hooks from lib/test-api.mjs', () => {
	const direct = readdirSync(here).filter((f) => f.endsWith('.test.mjs') && !['standin.test.mjs', 'harness.test.mjs'].includes(f))
		.filter((f) => /from 'node:test'/.test(readFileSync(path.join(here, f), 'utf8')));
	assert.deepEqual(direct, []);
});
