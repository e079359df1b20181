// A cluster behind one stand-in engine (issue 28): members (`serve` with
// III_NAMESPACE m1..mN, each with its own state directory and its own
// configuration entry) and fronts (`serve --front`, default namespace),
// with an iii-sdk caller and a raw caller that can name a namespace (the
// iii-sdk 0.22.1 trigger cannot).  cluster.test.mjs and bench/cluster use
// it directly; startSandboxStack uses startFrontStack when
// SANDBOX_E2E_FRONT=N is set, so the same test files run through a front.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { WebSocket } from 'ws';
import { EXTENSIONS, FUNCTIONS, WORKER_NAME, endDaemon, parseEnvelope, removeStateDir, spawnDaemon, withAccel }
	from '../daemon.mjs';
import { StandinEngine } from '../standin-engine.mjs';
import { InvocationError, sdkClient } from '../lib.mjs';
import { assertNoVmLeft, withVmCalls } from './sandbox-stack.mjs';

export const DEFAULT_NAMESPACE = 'default';
export const memberNamespace = (i) => `m${i + 1}`;
const ALL_IDS = [...FUNCTIONS, ...EXTENSIONS];
const REGISTER_TIMEOUT_MS = 15000;

// The connection of the daemon with this pid, if it is live.
function connOf(engine, pid) {
	return engine.workers().find((w) => w.name === WORKER_NAME && w.pid === pid);
}

// Resolves once the daemon owns every function id in its namespace.
async function registered(engine, d, namespace, what) {
	await engine.waitFor(() => {
		const w = connOf(engine, d.proc.pid);
		return w && ALL_IDS.every((f) => engine.functionsIn(namespace).get(f)?.owner === w.worker_id);
	}, REGISTER_TIMEOUT_MS, `the ${ALL_IDS.length} functions of ${what} in namespace ${namespace}`).catch((e) => {
		e.message += `\n${what} output:\n${d.output()}`;
		throw e;
	});
}

// Starts one member in `namespace`: its configuration entry is
// sandbox-libkrun-<namespace> (registry mirrors, no standby unless asked,
// no control socket, then `config`), its state directory stateDir (made
// when absent; kept after it exits, for the leftover checks).
export async function startMember(engine, { namespace, registry, config = {}, stateDir, standby = false, env = {} }) {
	const dir = stateDir ?? mkdtempSync(path.join(tmpdir(), `sbx-e2e-${namespace}-`));
	mkdirSync(dir, { recursive: true, mode: 0o700 });
	const configId = `${WORKER_NAME}-${namespace}`;
	engine.setConfig(configId, withAccel({ registry_mirrors: registry.mirrors, control_socket: '',
		...(standby ? {} : { standby: false }), ...config }));
	const daemon = spawnDaemon(engine.url, { ...env, III_NAMESPACE: namespace, III_CONFIG_NAME: configId,
		III_SANDBOX_STATE_DIR: dir });
	const m = { namespace, stateDir: dir, configId, daemon, conn: () => connOf(engine, daemon.proc.pid) };
	await registered(engine, daemon, namespace, `member ${namespace}`);
	return m;
}

// Starts a front (`serve --front`) in the default namespace, finding its
// members by itself; wait false returns at once (a second front that the
// engine refuses never registers).  env adds to its environment (e.g.
// III_SANDBOX_METRICS_LISTEN, unset otherwise).
export async function startFront(engine, { wait = true, env = {} } = {}) {
	const daemon = spawnDaemon(engine.url, { III_NAMESPACE: undefined, III_SANDBOX_MEMBERS: undefined,
		III_SANDBOX_METRICS_LISTEN: undefined, ...env }, {}, ['--front']);
	const f = { daemon, conn: () => connOf(engine, daemon.proc.pid) };
	if (wait) await registered(engine, daemon, DEFAULT_NAMESPACE, 'the front');
	return f;
}

// SIGKILL, as a host that dies; resolves once it is reaped (endDaemon:
// the exit must be that signal, and a later stop does not check it again).
export function killDaemon(d) {
	return endDaemon(d, { send: 'SIGKILL', signal: 'SIGKILL' });
}

// The worker ids the engine refused a registration to, for one pid: each
// registration attempt is a new connection, so the attempts are counted by
// the pid they declared in engine::workers::register.
export function refusals(engine, pid, code = 'WORKER_NAMESPACE_CONFLICT') {
	const ids = new Set(engine.frames.filter((f) => f.dir === 'in' && f.msg.type === 'invokefunction'
		&& f.msg.function_id === 'engine::workers::register' && f.msg.data?.pid === pid).map((f) => f.worker_id));
	return engine.rejections.filter((r) => ids.has(r.worker_id) && r.msg.code === code);
}

// A raw caller whose invocations may name a namespace; results come back
// by invocation id without polling, so it also serves the benchmark.
// invoke() resolves with the result, or rejects with iii-sdk's
// InvocationError as its trigger does.
export async function rawCaller(url) {
	const ws = new WebSocket(url);
	const pending = new Map();
	ws.on('message', (raw) => {
		const m = JSON.parse(raw.toString());
		const p = m.type === 'invocationresult' && pending.get(m.invocation_id);
		if (!p) return;
		pending.delete(m.invocation_id);
		clearTimeout(p.timer);
		if (m.error) p.reject(new InvocationError({ ...m.error, function_id: m.function_id }));
		else p.resolve(m.result);
	});
	await new Promise((resolve, reject) => {
		ws.once('open', resolve);
		ws.once('error', reject);
	});
	return {
		invoke(function_id, data, { namespace, timeoutMs = 60000 } = {}) {
			const invocation_id = randomUUID();
			const msg = { type: 'invokefunction', invocation_id, function_id, data };
			if (namespace !== undefined) msg.namespace = namespace;
			return new Promise((resolve, reject) => {
				const timer = setTimeout(() => {
					pending.delete(invocation_id);
					reject(new Error(`${function_id} in ${namespace ?? DEFAULT_NAMESPACE}: no answer in ${timeoutMs} ms`));
				}, timeoutMs);
				pending.set(invocation_id, { resolve, reject, timer });
				ws.send(JSON.stringify(msg));
			});
		},
		close() {
			for (const p of pending.values()) clearTimeout(p.timer);
			ws.close();
		},
	};
}

// The error of a call that must fail, as stack.callError gives it.
export async function errorOf(promise) {
	try {
		const r = await promise;
		return assert.fail(`the call succeeded: ${JSON.stringify(r)}`);
	} catch (e) {
		if (!(e instanceof InvocationError)) throw e;
		return { code: e.code, message: e.message.slice(e.code.length + 2), envelope: parseEnvelope(e) };
	}
}

// An engine, `members` (an array of {config, stateDir?} or a count), and
// one front (its environment adding frontEnv) that waits until it sees
// them all.  Returns
// {engine, members, front, fronts, caller, raw, call, callError, inNs, stop}.
export async function startCluster({ registry, members = 1, config = {}, standby = false, env = {}, frontEnv = {} } = {}) {
	const specs = Array.isArray(members) ? members : Array.from({ length: members }, () => ({}));
	const engine = new StandinEngine();
	await engine.start();
	const c = { engine, members: [], fronts: [] };
	try {
		c.members = await Promise.all(specs.map((spec, i) => startMember(engine, { namespace: memberNamespace(i),
			registry, standby, env, ...spec, config: { ...config, ...spec.config } })));
		const front = await startFront(engine, { env: frontEnv });
		c.front = front;
		c.fronts.push(front);
		c.caller = sdkClient(engine.url, 'e2e-caller', { invocationTimeoutMs: 10000 });
		c.raw = await rawCaller(engine.url);
	} catch (e) {
		await stopCluster(c);
		throw e;
	}
	c.call = (fn, payload, opts = {}) => c.caller.trigger({ function_id: `sandbox-libkrun::${fn}`, payload, ...opts });
	c.callError = (fn, payload) => errorOf(c.call(fn, payload));
	// A call straight to one member, in its namespace.
	c.inNs = (namespace, fn, payload, timeoutMs) => c.raw.invoke(`sandbox-libkrun::${fn}`, payload,
		{ namespace, timeoutMs });
	c.stop = () => stopCluster(c);
	return c;
}

// Stops every front and member still running (endDaemon: SIGTERM, in
// parallel; each exit checked), then the callers and the engine; resolves
// with each daemon's {code, signal}, or throws the first daemon's failure
// once all have exited.
export async function stopCluster(c) {
	await c.caller?.shutdown();
	c.raw?.close();
	let settled;
	try {
		settled = await Promise.allSettled([...c.fronts, ...c.members].map((x) => endDaemon(x.daemon)));
	} finally {
		await c.engine.stop();
	}
	const failed = settled.find((r) => r.status === 'rejected');
	if (failed) throw failed.reason;
	return settled.map((r) => r.value);
}

// Removes the members' state directories; asserts first that none kept a
// QEMU process or VM file.
export function cleanupCluster(c) {
	for (const m of c.members) {
		try {
			assertNoVmLeft(m.stateDir, `member ${m.namespace}`);
		} finally {
			removeStateDir(m.stateDir);
		}
	}
}

// startSandboxStack's stand-in with SANDBOX_E2E_FRONT=N: N members behind a
// front, answering like one daemon.  The members' state directories are
// <stateDir>/members/<namespace>, and their vms/ are one directory,
// <stateDir>/vms (a symlink in each; VM directories are named by the
// owning daemon's pid), so a test that counts QEMU processes or VM files
// of stack.stateDir counts every member's.  stack.daemon is the front;
// its output() is the front's and every member's.
export async function startFrontStack(count, { registry, config = {}, seedFrom, spawnOptions, stateDir: reuse,
	standby = false, env = {} } = {}) {
	assert.ok(spawnOptions === undefined && reuse === undefined,
		'SANDBOX_E2E_FRONT: a daemon run as another user or on a reused state directory is not a front\'s case');
	const stateDir = mkdtempSync(path.join(tmpdir(), 'sbx-e2e-vmstate-'));
	mkdirSync(path.join(stateDir, 'vms'), { mode: 0o700 });
	const members = Array.from({ length: count }, (_, i) => {
		const dir = path.join(stateDir, 'members', memberNamespace(i));
		mkdirSync(dir, { recursive: true, mode: 0o700 });
		symlinkSync(path.join(stateDir, 'vms'), path.join(dir, 'vms'));
		if (seedFrom && existsSync(path.join(seedFrom, 'images')))
			execFileSync('cp', ['-al', path.join(seedFrom, 'images'), path.join(dir, 'images')]);
		return { stateDir: dir };
	});
	const c = await startCluster({ registry, members, config, standby, env });
	const outputs = () => [c.front, ...c.members].map((x) => x.daemon.output()).join('\n');
	const front = c.front.daemon;
	const s = {
		engine: c.engine, caller: c.caller, cluster: c, stateDir,
		daemon: { proc: front.proc, exited: front.exited, output: outputs },
		daemonConn: c.front.conn,
		call: c.call, callError: c.callError,
		// Every daemon's exit is checked (stopCluster); stopClean is the same.
		async stop() {
			const results = await c.stop();
			return results[0];
		},
		stopClean: () => s.stop(),
	};
	return withVmCalls(s, () => removeStateDir(stateDir));
}
