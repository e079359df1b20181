// Runs `sandbox-libkrun serve` against its own stand-in engine, with an
// iii-sdk caller on the same engine.  SANDBOX_LIBKRUN_BIN picks the binary
// (default build/sandbox-libkrun), so the ASan build runs the same tests.
import { spawn } from 'node:child_process';
import { appendFileSync, existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import assert from 'node:assert/strict';
import { StandinEngine } from './standin-engine.mjs';
import { sdkClient, InvocationError } from './lib.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
// Removes a daemon's state directory (its templates' RAM files are in it).
export function removeStateDir(stateDir) {
	rmSync(stateDir, { recursive: true, force: true });
}

export const BIN = process.env.SANDBOX_LIBKRUN_BIN ?? path.resolve(here, '../../build/sandbox-libkrun');
export const WORKER_NAME = 'sandbox-libkrun';
export const FUNCTIONS = ['adapter::info', 'catalog::list', 'create', 'exec', 'stop', 'list', 'run',
	'fs::ls', 'fs::stat', 'fs::mkdir', 'fs::rm', 'fs::chmod', 'fs::mv', 'fs::grep', 'fs::sed', 'fs::write', 'fs::read',
	'worker::prepare', 'worker::start', 'worker::status', 'worker::logs', 'worker::stop', 'worker::destroy']
	.map((f) => `sandbox-libkrun::${f}`);
// The functions beyond the 23 (issue 26), listed by adapter::info.
export const EXTENSIONS = ['process::list', 'process::logs', 'process::wait', 'process::signal',
	'terminal::open', 'terminal::resize', 'terminal::close', 'pause', 'resume',
	'snapshot', 'fork', 'snapshot::list', 'snapshot::delete'].map((f) => `sandbox-libkrun::${f}`);

// A daemon configuration with `accel` from SBX_E2E_ACCEL (scripts/test sets
// kvm on a host that runs KVM guests) unless it names its own.
export function withAccel(config) {
	const accel = process.env.SBX_E2E_ACCEL;
	if (!accel || config === null || typeof config !== 'object' || Array.isArray(config) || 'accel' in config) {
		return config;
	}
	return { ...config, accel };
}

const SANITIZER_REPORT = /ERROR: (AddressSanitizer|LeakSanitizer|UndefinedBehaviorSanitizer)|runtime error: /;

// Spawns the daemon with III_URL pointing at `url`; the state directory is a
// fresh temporary one.  spawnOptions go to child_process.spawn (uid, gid to
// run it as another user; stdio for more descriptors) except `bin`, another
// executable in the daemon's place (harness.test.mjs's stand-ins); args
// after `serve`.  Returns {proc, output(), exited}; endDaemon stops it.
export function spawnDaemon(url, env = {}, { bin = BIN, ...spawnOptions } = {}, args = []) {
	assert.ok(existsSync(bin), `daemon binary ${bin} not found (build it, or set SANDBOX_LIBKRUN_BIN)`);
	const stateDir = mkdtempSync(path.join(tmpdir(), 'sbx-e2e-state-'));
	const childEnv = { ...process.env, III_URL: url, III_SANDBOX_STATE_DIR: stateDir, SANDBOX_LOG: 'debug' };
	delete childEnv.III_ENGINE_URL;
	delete childEnv.III_CONFIG_NAME;
	delete childEnv.III_WORKER_NAME;
	delete childEnv.III_SANDBOX_WORKER_TOKEN;
	delete childEnv.III_HEADERS_FILE;
	Object.assign(childEnv, env);
	for (const [k, v] of Object.entries(childEnv)) if (v === undefined) delete childEnv[k];
	const proc = spawn(bin, ['serve', ...args], { env: childEnv, stdio: ['ignore', 'pipe', 'pipe'], ...spawnOptions });
	let out = '';
	proc.stdout.on('data', (d) => { out += d; });
	proc.stderr.on('data', (d) => { out += d; });
	// To read a daemon's log while debugging a test: SBX_E2E_DAEMON_LOG=FILE.
	if (process.env.SBX_E2E_DAEMON_LOG) proc.stderr.on('data', (d) => appendFileSync(process.env.SBX_E2E_DAEMON_LOG, d));
	const exited = new Promise((resolve) => {
		proc.on('exit', (code, signal) => {
			removeStateDir(stateDir);
			resolve({ code, signal });
		});
	});
	return { proc, output: () => out, exited };
}

// How long endDaemon waits for an exit before it calls the daemon hung and
// kills it.  Not a speed target: an ASan daemon's exit includes
// LeakSanitizer's scan, and two loaded cores slow it many times over; a
// daemon that exits sooner is not waited for.
export const EXIT_TIMEOUT_MS = 120000;

const running = (d) => d.proc.exitCode === null && d.proc.signalCode === null;

// Waits for a daemon's exit; fails after timeoutMs (and kills it).
async function waitExit(d, timeoutMs) {
	let timer;
	const timeout = new Promise((resolve) => { timer = setTimeout(() => resolve(null), timeoutMs); });
	const r = await Promise.race([d.exited, timeout]);
	clearTimeout(timer);
	if (!r) {
		d.proc.kill('SIGKILL');
		await d.exited;
		assert.fail(`daemon did not exit within ${timeoutMs} ms; output:\n${d.output()}`);
	}
	return r;
}

// The one way a test ends a daemon it started, and checks how it ended.
// Sends `send` (SIGTERM; null: none, the daemon is to exit by itself) if it
// still runs, waits for its exit, and throws unless the exit is {code,
// signal} (default 0 and none; `code` may be a list of the codes allowed)
// and its output holds no sanitizer report:
// a leak (exit status 1 and LeakSanitizer's report under the ASan pass's
// options), any other status, a signal or a report
// fails the test or hook that awaited it, and with it the file.  A second
// call (an `after` hook behind a test that ended the daemon) neither sends
// nor checks again: it returns the first call's result, or null if that
// call threw (the first caller reported it).  Resolves with {code, signal}.
export function endDaemon(d, { signal = null, code = signal ? null : 0, send = 'SIGTERM', timeoutMs = EXIT_TIMEOUT_MS } = {}) {
	if (d.ended) return d.ended.catch(() => null);
	d.ended = (async () => {
		if (send && running(d)) d.proc.kill(send);
		const r = await waitExit(d, timeoutMs);
		const want = { code: Array.isArray(code) && code.includes(r.code) ? r.code : code, signal };
		assert.deepEqual(r, want, `the daemon's exit (after ${send ?? 'no signal'})\n${d.output()}`);
		assertNoSanitizerReport(d);
		return r;
	})();
	return d.ended;
}

export function assertNoSanitizerReport(d) {
	assert.doesNotMatch(d.output(), SANITIZER_REPORT, 'sanitizer report in the daemon output');
}

// A stand-in engine (config fixture under `configId`, unless config is
// undefined), the daemon connected to it, and an iii-sdk caller.
export async function startStack({ config, configId = WORKER_NAME, env = {}, waitRegistered = true, spawnOptions,
	args } = {}) {
	const engine = new StandinEngine();
	if (config !== undefined) engine.setConfig(configId, withAccel(config));
	await engine.start();
	const daemon = spawnDaemon(engine.url, env, spawnOptions, args);
	const caller = sdkClient(engine.url, 'e2e-caller', { invocationTimeoutMs: 10000 });
	const stack = {
		engine, daemon, caller,
		daemonConn: () => engine.workers().find((w) => w.name === WORKER_NAME && w.pid === daemon.proc.pid),
		call: (fn, payload, opts = {}) => caller.trigger({ function_id: `sandbox-libkrun::${fn}`, payload, ...opts }),
		// The error of a call that must fail: {code, message, envelope?}.
		callError: async (fn, payload) => {
			try {
				const r = await stack.call(fn, payload);
				assert.fail(`${fn} ${JSON.stringify(payload)} succeeded: ${JSON.stringify(r)}`);
			} catch (e) {
				if (!(e instanceof InvocationError)) throw e;
				return { code: e.code, message: e.message.slice(e.code.length + 2), envelope: parseEnvelope(e) };
			}
			return null;
		},
		// Ends the daemon (endDaemon: SIGTERM unless `send` says otherwise,
		// the exit checked against `expect`), then the caller and the engine.
		async stop(expect = {}) {
			await caller.shutdown();
			try {
				return await endDaemon(daemon, expect);
			} finally {
				await engine.stop();
			}
		},
		// The same as stop(): every stop is checked.
		stopClean: (expect = {}) => stack.stop(expect),
	};
	if (waitRegistered) {
		await engine.waitFor(() => {
			const w = stack.daemonConn();
			return w && [...FUNCTIONS, ...EXTENSIONS].every((f) => engine.functions.get(f)?.owner === w.worker_id);
		}, 15000, `the daemon's ${FUNCTIONS.length + EXTENSIONS.length} functions`).catch((e) => {
			e.message += `\ndaemon output:\n${daemon.output()}`;
			throw e;
		});
	}
	return stack;
}

// The S-code envelope in an InvocationError: `handler error: {json}` (§2.2).
export function parseEnvelope(e) {
	const prefix = 'handler error: ';
	const text = e.message.slice(e.code.length + 2);
	if (e.code !== 'invocation_failed' || !text.startsWith(prefix)) return null;
	return JSON.parse(text.slice(prefix.length));
}
