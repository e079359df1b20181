// End-to-end tests of `sandbox-libkrun serve` against the stand-in engine,
// called through the official iii-sdk.  Expectations come from
// shared/spec/contract.md (§ numbers in the test names).
import { describe, test, before, after } from './lib/test-api.mjs';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { spawn, spawnSync } from 'node:child_process';
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { StandinEngine, requireHeader } from './standin-engine.mjs';
import { eventually, rawPeer, sdkClient, sleep } from './lib.mjs';
import { BIN, EXTENSIONS, FUNCTIONS, WORKER_NAME, startStack, spawnDaemon, endDaemon, assertNoSanitizerReport } from './daemon.mjs';

// What `create` answers for an allowed image here: the configs below set
// auto_install false and every daemon has an empty image cache, so the
// create passes the catalog and allowlist checks and stops at the image
// step with S101, without reaching for a registry.
const CREATE_ALLOWED = { code: 'S101', message: /sandbox-libkrun image pull docker\.io\/iiidev\// };

const DOCS_SUFFIX = (code) => new RegExp(`#${code}$`);
const FIX_NOTE = {
	S001: 'see message: examples are inline',
	S002: 'the sandbox is gone; call sandbox::create first',
	S100: 'set `image` to a value listed in the message or add a custom_images entry in iii.config.yaml',
	S300: 'platform-level failure; not auto-recoverable',
};
const TYPE = { S001: 'validation', S002: 'validation', S100: 'config', S101: 'internal', S210: 'filesystem', S300: 'platform',
	S505: 'validation' };
const TYPING_KEYWORDS = ['type', 'properties', '$ref', 'allOf', 'anyOf', 'oneOf', 'enum', 'items', 'const'];

// Asserts an S-coded failure with the full §2.1 envelope.
function assertScode(err, code, messageRe) {
	assert.equal(err.code, 'invocation_failed', `outer code (message: ${err.message})`);
	assert.ok(err.message.startsWith('handler error: '), `"handler error: " prefix: ${err.message}`);
	const env = err.envelope;
	assert.deepEqual(Object.keys(env).sort(), ['code', 'docs_url', 'fix', 'fix_note', 'message', 'retryable', 'type']);
	assert.equal(env.code, code, `S-code (message: ${env.message})`);
	if (TYPE[code]) assert.equal(env.type, TYPE[code]);
	assert.equal(env.retryable, false);
	assert.match(env.docs_url, DOCS_SUFFIX(code));
	if (code in FIX_NOTE) {
		assert.equal(env.fix, null);
		assert.equal(env.fix_note, FIX_NOTE[code]);
	}
	if (messageRe) assert.match(env.message, messageRe);
	return env;
}

function assertDecodeError(err) {
	assert.equal(err.code, 'invocation_failed');
	assert.match(err.message, /^serialization error/);
	assert.equal(err.envelope, null);
}

const TOKEN = `tok-${randomUUID()}`;
const MAIN_CONFIG = { image_allowlist: ['python', 'a'], custom_images: { b: 'x/b:1', a: 'x/a:1' }, auto_install: false };

describe('a daemon with a config entry and a worker token', () => {
	let s;
	before(async () => {
		s = await startStack({ config: MAIN_CONFIG, env: { III_SANDBOX_WORKER_TOKEN: TOKEN } });
	});
	after(() => s.stop());

	test('registers the 23 functions and the extensions with descriptions and typed schemas (§1.2, §1.5)', () => {
		const mine = [...s.engine.functions.keys()].filter((id) => id.startsWith('sandbox-libkrun::')).sort();
		assert.deepEqual(mine, [...FUNCTIONS, ...EXTENSIONS].sort());
		for (const id of [...FUNCTIONS, ...EXTENSIONS]) {
			const f = s.engine.functions.get(id);
			assert.equal(typeof f.description, 'string', `${id} description`);
			assert.ok(f.description.trim().length > 0, `${id} description`);
			for (const k of ['request_format', 'response_format']) {
				assert.ok(f[k] && typeof f[k] === 'object', `${id} ${k}`);
				assert.ok(TYPING_KEYWORDS.some((t) => t in f[k]), `${id} ${k} has a typing keyword`);
			}
		}
	});

	test('engine::workers::register comes before any registerfunction, with runtime, name and pid', () => {
		const conn = s.daemonConn();
		const frames = s.engine.frames.filter((f) => f.dir === 'in' && f.worker_id === conn.worker_id);
		const reg = frames.findIndex((f) => f.msg.type === 'invokefunction' && f.msg.function_id === 'engine::workers::register');
		const firstFn = frames.findIndex((f) => f.msg.type === 'registerfunction');
		assert.ok(reg >= 0, 'engine::workers::register sent');
		assert.ok(reg < firstFn, `register at ${reg}, first registerfunction at ${firstFn}`);
		const d = frames[reg].msg.data;
		assert.equal(d.runtime, 'c');
		assert.equal(d.name, WORKER_NAME);
		assert.equal(d.pid, s.daemon.proc.pid);
		assert.equal(typeof d.version, 'string');
	});

	test('adapter::info answers its shape in under 2 s (§7.1)', async () => {
		const r = await withinMs(s, 2000, () => s.call('adapter::info', { ignored: true }));
		assert.equal(r.adapter, 'sandbox-libkrun');
		assert.match(r.adapter_version, /^\d+\.\d+\.\d+/);
		assert.deepEqual(r.contract, { major: 1, minor: 1 });
		assert.ok(!('features' in r), 'a 0.2.x adapter sends no features');
		assert.deepEqual(r.extensions, EXTENSIONS);
	});

	test('catalog::list puts custom images after the presets, sorted (§7.2)', async () => {
		const r = await s.call('catalog::list', { filter: 'x', page: 3 });
		assert.deepEqual(r, { images: [
			{ name: 'python', oci_ref: 'docker.io/iiidev/python:latest', kind: 'preset' },
			{ name: 'node', oci_ref: 'docker.io/iiidev/node:latest', kind: 'preset' },
			{ name: 'a', oci_ref: 'x/a:1', kind: 'custom' },
			{ name: 'b', oci_ref: 'x/b:1', kind: 'custom' },
		] });
	});

	test('create: unknown or not allow-listed image is S100 with the full envelope (§3.1, §10.3)', async () => {
		const why = { ruby: 'not in catalog', node: 'not in image_allowlist', b: 'not in image_allowlist',
			'docker.io/iiidev/python:latest': 'not in catalog' };
		for (const image of Object.keys(why)) {
			const env = assertScode(await s.callError('create', { image }), 'S100');
			assert.ok(env.message.startsWith(`image '${image}' ${why[image]}`), env.message);
		}
	});

	test('create with an allowed image reaches the image step', async () => {
		const env = assertScode(await s.callError('create', { image: 'python' }), CREATE_ALLOWED.code, CREATE_ALLOWED.message);
		assert.equal(env.type, TYPE[CREATE_ALLOWED.code]);
	});

	test('a sandbox_id that is not a UUID is S001 in every sandbox operation (§1.5)', async () => {
		const bad = 'not-a-uuid';
		const calls = {
			exec: { cmd: 'ls' }, stop: {}, 'fs::ls': { path: '/' }, 'fs::stat': { path: '/' }, 'fs::mkdir': { path: '/x' },
			'fs::rm': { path: '/x' }, 'fs::chmod': { path: '/x', mode: '0644' }, 'fs::mv': { src: '/a', dst: '/b' },
			'fs::grep': { path: '/', pattern: 'x' }, 'fs::sed': { files: ['/a'], pattern: 'a', replacement: 'b' },
			'fs::write': { path: '/x', content: 'x' }, 'fs::read': { path: '/x' },
		};
		for (const [fn, payload] of Object.entries(calls)) {
			const env = assertScode(await s.callError(fn, { sandbox_id: bad, ...payload }), 'S001');
			assert.equal(env.message, `invalid request: sandbox_id is not a valid UUID: ${bad}`, fn);
		}
	});

	test('exec command shape errors are S001, checked before the sandbox lookup (§7.4, §10.6)', async () => {
		const id = randomUUID();
		const cases = [
			[{ cmd: 'node -v', args: ['x'] }, /ambiguous/],
			[{ cmd: "node 'x" }, /unbalanced/],
			[{ argv: ['python'], cmd: 'node' }, /`argv` cannot be combined/],
			[{ argv: ['python'], args: ['x'] }, /`argv` cannot be combined/],
			[{ cmd: '' }, /cmd is required/],
			[{}, /cmd is required/],
			[{ cmd: '   ' }, /./],
			[{ cmd: 'ls', env: { '9bad': 'x' } }, /env contains invalid variable name/],
		];
		for (const [payload, re] of cases) {
			const err = await s.callError('exec', { sandbox_id: id, ...payload });
			assertScode(err, 'S001', re);
		}
	});

	test('an unknown sandbox is S002 in every UUID form, echoed in canonical form (§1.5)', async () => {
		const id = randomUUID();
		for (const form of [id, id.toUpperCase(), `{${id}}`, `urn:uuid:${id}`, id.replaceAll('-', '')]) {
			const env = assertScode(await s.callError('exec', { sandbox_id: form, cmd: 'ls' }), 'S002');
			assert.equal(env.message, `sandbox not found: ${id}`, form);
		}
		assertScode(await s.callError('stop', { sandbox_id: id }), 'S002');
		assertScode(await s.callError('fs::ls', { sandbox_id: id, path: '/' }), 'S002');
		assertScode(await s.callError('fs::read', { sandbox_id: id, path: '/etc/hostname' }), 'S002');
	});

	test('fs::write body shape is S001 before the sandbox lookup (§7.17, §10.15)', async () => {
		const id = randomUUID();
		assertScode(await s.callError('fs::write', { sandbox_id: id, path: '/x', content: 'a', content_b64: 'YQ==' }),
			'S001', /not both/);
		assertScode(await s.callError('fs::write', { sandbox_id: 'nope', path: '/x', content: 'a', content_b64: 'YQ==' }),
			'S001', /not both/);
		assertScode(await s.callError('fs::write', { sandbox_id: id, path: '/x' }), 'S001', /missing file body/);
		assertScode(await s.callError('fs::write', { sandbox_id: id, path: '/x', content: null }), 'S001', /missing file body/);
		assertScode(await s.callError('fs::write', { sandbox_id: id, path: '/x', content_b64: '!!!' }), 'S001',
			/content_b64 is not valid base64/);
	});

	test('fs::sed with both or neither of files and path is S210 before the lookup (§7.16, §10.19)', async () => {
		const id = randomUUID();
		const base = { sandbox_id: id, pattern: 'a', replacement: 'b' };
		for (const extra of [{ files: ['/a'], path: '/' }, {}, { files: [] }]) {
			const env = assertScode(await s.callError('fs::sed', { ...base, ...extra }), 'S210', /^sed: /);
			assert.equal(env.fix, null);
			assert.equal(env.fix_note, null);
		}
	});

	test('payloads that do not decode are "serialization error", not S-coded (§2.5)', async () => {
		const id = randomUUID();
		const cases = [
			['exec', { cmd: 'ls' }], ['exec', null], ['exec', { sandbox_id: 5, cmd: 'ls' }], ['create', {}],
			['create', { image: 7 }], ['fs::read', { sandbox_id: id }], ['fs::chmod', { sandbox_id: id, path: '/x' }],
			['fs::mv', { sandbox_id: id, src: '/a' }], ['list', null], ['run', { image: 'python', code: 'x' }],
			['exec', { sandbox_id: id, cmd: 'ls', env: 'A=1' }], ['fs::write', { sandbox_id: id, path: '/x', content: 5 }],
		];
		for (const [fn, payload] of cases) {
			const err = await s.callError(fn, payload);
			assert.equal(err.code, 'invocation_failed', `${fn} ${JSON.stringify(payload)}`);
			assert.match(err.message, /^serialization error/, `${fn} ${JSON.stringify(payload)}`);
		}
	});

	test('worker::* with a wrong or missing token is S505, checked first (§3.3, §7.19)', async () => {
		for (const op of ['prepare', 'start', 'status', 'logs', 'stop', 'destroy']) {
			for (const payload of [{ auth: 'wrong', worker: 'w' }, { auth: `${TOKEN}x`, worker: 'w' }, { worker: 'w' },
				{ auth: 'wrong' }]) {
				const err = await s.callError(`worker::${op}`, payload);
				assert.equal(err.envelope?.code, 'S505', `worker::${op} ${JSON.stringify(payload)}: ${err.message}`);
				assert.equal(err.envelope.retryable, false);
				assert.ok(!err.message.includes(TOKEN), 'the token is never echoed');
			}
		}
	});

	test('many concurrent calls all complete promptly with matching replies', async () => {
		const ids = Array.from({ length: 60 }, () => randomUUID());
		const results = await withinMs(s, 5000, () => Promise.all(ids.map(async (id, i) => {
			if (i % 3 === 0) return { i, r: await s.call('adapter::info', {}) };
			if (i % 3 === 1) return { i, r: await s.call('catalog::list', {}) };
			return { i, id, e: await s.callError('exec', { sandbox_id: id, cmd: 'ls' }) };
		})), 60);
		for (const { i, id, r, e } of results) {
			if (i % 3 === 0) assert.equal(r.adapter, 'sandbox-libkrun');
			else if (i % 3 === 1) assert.equal(r.images.length, 4);
			else assert.equal(e.envelope.message, `sandbox not found: ${id}`);
		}
	});

	test('adapter::info answers within 2 s while creates are in flight (§1.1: never blocks on VM work)', async () => {
		const creates = [1, 2, 3].map(() => s.callError('create', { image: 'python' }));
		assert.equal((await withinMs(s, 2000, () => s.call('adapter::info', {}))).adapter, 'sandbox-libkrun');
		for (const c of await Promise.all(creates)) assert.equal(c.envelope?.code, CREATE_ALLOWED.code);
	});

	test('after the engine restarts on the same port, the functions are callable again within seconds', async () => {
		const port = s.engine.port;
		await s.engine.restart();
		assert.equal(s.engine.port, port);
		const t0 = Date.now();
		const r = await eventually(() => s.call('adapter::info', {}, { timeoutMs: 1000 }), 15000);
		assert.equal(r.adapter, 'sandbox-libkrun');
		assert.ok(Date.now() - t0 < 10000, `took ${Date.now() - t0} ms`);
		await s.engine.waitFor(() => {
			const w = s.daemonConn();
			return w && [...FUNCTIONS, ...EXTENSIONS].every((f) => s.engine.functions.get(f)?.owner === w.worker_id);
		}, 10000, 'all functions re-registered');
		assert.ok(s.daemon.proc.exitCode === null, 'daemon still running');
	});

	test('a second daemon with the same worker name is rejected, exits non-zero and does not reconnect', async () => {
		let connections = 0;
		const count = () => { connections++; };
		s.engine.on('connection', count);
		const second = spawnDaemon(s.engine.url, { III_CONFIG_NAME: undefined });
		// 1 (rejected), or 2 when the rejection ends the configuration read
		// still under way (a race the daemon has; the test takes either).
		const r = await endDaemon(second, { code: [1, 2], send: null });
		s.engine.off('connection', count);
		assert.notEqual(r.code, 0, `exit ${JSON.stringify(r)}\n${second.output()}`);
		assert.equal(r.signal, null);
		assert.equal(connections, 1, 'one connection, no reconnect');
		assert.ok(s.engine.rejections.some((x) => x.msg.code === 'WORKER_NAMESPACE_CONFLICT'));
		assertNoSanitizerReport(second);
		assert.equal((await s.call('adapter::info', {})).adapter, 'sandbox-libkrun', 'the first daemon still serves');
	});

	test('SIGTERM: exit 0 promptly, no sanitizer report, and the worker token never in the output', async () => {
		await s.stopClean();
		assert.ok(!s.daemon.output().includes(TOKEN));
	});
});

describe('a daemon without a config entry (NOT_FOUND) and without a worker token', () => {
	let s;
	before(async () => {
		s = await startStack();
	});
	after(() => s.stop());

	test('NOT_FOUND means defaults: presets only, and an empty allowlist denies everything (§4.2)', async () => {
		assert.deepEqual(s.engine.configReads, [WORKER_NAME]);
		const r = await s.call('catalog::list', {});
		assert.deepEqual(r.images.map((i) => [i.name, i.kind]), [['python', 'preset'], ['node', 'preset']]);
		assertScode(await s.callError('create', { image: 'python' }), 'S100');
	});

	test('worker::* fails closed with S505 when no token is configured (§3.3)', async () => {
		for (const op of ['prepare', 'start', 'status', 'logs', 'stop', 'destroy']) {
			for (const auth of ['', 'anything']) {
				const err = await s.callError(`worker::${op}`, { auth, worker: 'w', host_path: '/tmp' });
				assert.equal(err.envelope?.code, 'S505', `worker::${op}: ${err.message}`);
			}
		}
	});

	test('SIGTERM makes the daemon exit 0 promptly, with no sanitizer report', () => s.stopClean());
});

describe('configuration delivery (§4.1, §4.3)', () => {
	test('a list holding one map is accepted', async () => {
		const s = await startStack({ config: [{ image_allowlist: ['node'], custom_images: { c: 'x/c:1' }, auto_install: false }] });
		try {
			const r = await s.call('catalog::list', {});
			assert.deepEqual(r.images.map((i) => i.name), ['python', 'node', 'c']);
			assertScode(await s.callError('create', { image: 'python' }), 'S100');
			assertScode(await s.callError('create', { image: 'node' }), CREATE_ALLOWED.code, CREATE_ALLOWED.message);
			await s.stopClean();
		} finally {
			await s.stop();
		}
	});

	test('III_CONFIG_NAME picks the entry to read', async () => {
		const s = await startStack({ config: { custom_images: { z: 'x/z:1' } }, configId: 'alt-sandbox',
			env: { III_CONFIG_NAME: 'alt-sandbox' } });
		try {
			s.engine.setConfig(WORKER_NAME, { custom_images: { wrong: 'x/w:1' } });
			assert.deepEqual(s.engine.configReads, ['alt-sandbox']);
			const r = await s.call('catalog::list', {});
			assert.deepEqual(r.images.map((i) => i.name), ['python', 'node', 'z']);
			await s.stopClean();
		} finally {
			await s.stop();
		}
	});

	test('max_concurrent_exec_per_sandbox: 0 logs a warning at startup', async () => {
		const s = await startStack({ config: { max_concurrent_exec_per_sandbox: 0 } });
		try {
			await eventually(() => assert.match(s.daemon.output(), /warn.*max_concurrent_exec_per_sandbox|max_concurrent_exec_per_sandbox.*warn/i));
			await s.stopClean();
		} finally {
			await s.stop();
		}
	});

	// host_ports defaults to the engine's loopback port: guests with a
	// network can then call the engine, which serve says once at start;
	// host_ports: [] (the packaged example) closes it and silences it.
	test('guests that can reach the engine\'s port: one warning at start; none with host_ports: []', async () => {
		const warning = /warn.*network_policy\.host_ports holds the engine's port (\d+): code in a sandbox created with network: true can call the engine's functions/;
		const s = await startStack({ config: {} });
		try {
			await eventually(() => assert.match(s.daemon.output(), warning));
			assert.equal(s.daemon.output().match(warning)[1], new URL(s.engine.url).port);
			await s.stopClean();
			assert.equal(s.daemon.output().split('\n').filter((l) => warning.test(l)).length, 1, s.daemon.output());
		} finally {
			await s.stop();
		}
		const q = await startStack({ config: { network_policy: { host_ports: [] } } });
		try {
			await q.stopClean();
			assert.doesNotMatch(q.daemon.output(), /holds the engine's port/);
		} finally {
			await q.stop();
		}
	});

	// Each bad config must stop the daemon with exit code 2 and a message
	// that names the problem.
	const fatal = [
		['a wrong type', { auto_install: 'yes' }, /auto_install/],
		['a wrong type inside a list', { image_allowlist: ['python', 3] }, /image_allowlist/],
		['a negative number', { default_cpus: -1 }, /default_cpus/],
		['the legacy sandbox: wrapper', { sandbox: { auto_install: true } }, /legacy wrapped shape/],
		['a custom image shadowing a preset', { custom_images: { python: 'evil/x:1' } }, /shadows a built-in preset/],
		['an empty custom image name', { custom_images: { '': 'x/y:1' } }, /must not be empty/],
		['a non-map value', 42, /config/i],
		['a string value', 'auto_install: true', /config/i],
		['a list of two maps', [{}, {}], /config/i],
	];
	for (const [what, config, re] of fatal) {
		test(`${what} makes the daemon exit with code 2`, async () => {
			const engine = new StandinEngine({ config: { [WORKER_NAME]: config } });
			await engine.start();
			const d = spawnDaemon(engine.url);
			try {
				await endDaemon(d, { code: 2, send: null });
				assert.match(d.output(), re);
				assert.doesNotMatch(d.output(), /received/, 'no signal arrived, so none is logged');
				assertNoSanitizerReport(d);
			} finally {
				await engine.stop();
			}
		});

		test(`${what} in a file makes \`image --config\` exit 2 with serve's message`, async () => {
			const engine = new StandinEngine({ config: { [WORKER_NAME]: config } });
			await engine.start();
			const d = spawnDaemon(engine.url);
			const dir = mkdtempSync(path.join(tmpdir(), 'sbx-e2e-config-'));
			try {
				await endDaemon(d, { code: 2, send: null });
				const serveMessage = d.output().match(/sandbox-libkrun serve: configuration: configuration '[^']+': (.*)/)?.[1];
				assert.ok(serveMessage, d.output());
				const file = path.join(dir, 'config.json');
				writeFileSync(file, JSON.stringify(config));
				const r = spawnSync(BIN, ['image', '--config', file, 'ls'], { encoding: 'utf8',
					env: { ...process.env, III_SANDBOX_STATE_DIR: dir } });
				assert.equal(r.status, 2, r.stderr);
				assert.equal(r.stdout, '');
				assert.equal(r.stderr.trim(), `sandbox-libkrun image: ${file}: ${serveMessage}`);
			} finally {
				rmSync(dir, { recursive: true, force: true });
				await engine.stop();
			}
		});
	}

	test('a configuration read that fails makes the daemon exit with code 2', async () => {
		const engine = new StandinEngine();
		engine.setConfigError(WORKER_NAME, 'EXPAND_FAILED', 'environment variable SECRET_ROOT is not set');
		await engine.start();
		const d = spawnDaemon(engine.url);
		try {
			await endDaemon(d, { code: 2, send: null });
			assert.match(d.output(), /EXPAND_FAILED|configuration/);
			assertNoSanitizerReport(d);
		} finally {
			await engine.stop();
		}
	});
});

// Resolves with fn()'s result; fails unless it took less than `ms` plus
// the harness's own time for as many calls.  That error of the measurement
// is the time `calls` concurrent calls answered by the stand-in engine
// itself (engine::workers::list: the same caller, socket and event loop,
// no daemon) take just before and just after, the larger: a loaded machine
// slows node and the engine as much as the daemon, and widens the bound
// by what it costs them.
async function withinMs(s, ms, fn, calls = 1) {
	const harness = async () => {
		const t0 = performance.now();
		await Promise.all(Array.from({ length: calls },
			() => s.caller.trigger({ function_id: 'engine::workers::list', payload: {} })));
		return performance.now() - t0;
	};
	const before = await harness();
	const t0 = performance.now();
	const r = await fn();
	const took = performance.now() - t0;
	const error = Math.max(before, await harness());
	assert.ok(took < ms + error, `took ${took.toFixed(0)} ms; the bound ${ms} ms + ${error.toFixed(0)} ms (the harness's own)`);
	return r;
}

// Fails unless the daemon's exit came less than `ms` after t0 (a
// Date.now()) plus twice what starting and reaping the same binary takes
// just now (`--version`; under ASan that includes LeakSanitizer's scan at
// exit): a loaded machine slows an exit as much as that.
function assertExitWithin(t0, ms) {
	const took = Date.now() - t0;
	const s0 = performance.now();
	const v = spawnSync(BIN, ['--version']);
	const error = performance.now() - s0;
	assert.equal(v.status, 0, `${BIN} --version`);
	assert.ok(took < ms + 2 * error, `exit took ${took} ms; the bound ${ms} ms + 2 × ${error.toFixed(0)} ms`);
}

// A loopback port nothing listens on (yet).
async function freePort() {
	const srv = net.createServer();
	await new Promise((resolve) => srv.listen(0, '127.0.0.1', resolve));
	const { port } = srv.address();
	await new Promise((resolve) => srv.close(resolve));
	return port;
}

// Resolves once a worker called `name` with the daemon's pid owns all the
// functions.
function waitServing(engine, daemon, name, timeoutMs) {
	return engine.waitFor(() => {
		const w = engine.workers().find((c) => c.name === name && c.pid === daemon.proc.pid);
		return w && FUNCTIONS.every((f) => engine.functions.get(f)?.owner === w.worker_id);
	}, timeoutMs, `the daemon's functions as worker '${name}'`).catch((e) => {
		e.message += `\ndaemon output:\n${daemon.output()}`;
		throw e;
	});
}

describe('start-up (iii-protocol.md §1.4, §12)', () => {
	test('III_WORKER_NAME is the name in engine::workers::register; function ids stay sandbox-libkrun::*', async () => {
		const name = `sbx-compose-${randomUUID().slice(0, 8)}`;
		const s = await startStack({ env: { III_WORKER_NAME: name }, waitRegistered: false });
		try {
			await waitServing(s.engine, s.daemon, name, 15000);
			assert.ok(!s.engine.workers().some((w) => w.name === WORKER_NAME), 'no worker under the default name');
			const reg = s.engine.frames.find((f) => f.dir === 'in' && f.msg.function_id === 'engine::workers::register' &&
				f.msg.data?.pid === s.daemon.proc.pid);
			assert.equal(reg.msg.data.name, name);
			assert.equal((await s.call('adapter::info', {})).adapter, 'sandbox-libkrun');
			await s.stopClean();
		} finally {
			await s.stop();
		}
	});

	test('an empty III_WORKER_NAME means the default name', async () => {
		const s = await startStack({ env: { III_WORKER_NAME: '' } });
		try {
			assert.equal(s.daemonConn().name, WORKER_NAME);
			await s.stopClean();
		} finally {
			await s.stop();
		}
	});

	test('serve started before the engine keeps retrying, warning once per attempt, and serves once it is up', async () => {
		const port = await freePort();
		const d = spawnDaemon(`ws://127.0.0.1:${port}`);
		const engine = new StandinEngine({ port });
		try {
			// Past the old 30 s limit would take too long here; two failed
			// attempts and a running daemon show the wait has no fixed end.
			await eventually(() => assert.ok(d.output().match(/cannot connect/g)?.length >= 2, d.output()), 10000);
			assert.equal(d.proc.exitCode, null, `still running\n${d.output()}`);
			const failures = d.output().split('\n').filter((l) => l.includes('cannot connect'));
			for (const line of failures) assert.match(line, /\bwarn\b/, line);
			await engine.start();
			await waitServing(engine, d, WORKER_NAME, 40000);
			assert.deepEqual(engine.configReads, [WORKER_NAME]);
			const caller = sdkClient(engine.url, 'late-caller', { invocationTimeoutMs: 10000 });
			try {
				const r = await caller.trigger({ function_id: 'sandbox-libkrun::adapter::info', payload: {} });
				assert.equal(r.adapter, 'sandbox-libkrun');
			} finally {
				await caller.shutdown();
			}
			d.proc.kill('SIGTERM');
			await endDaemon(d, { send: null });
			assertNoSanitizerReport(d);
		} finally {
			await endDaemon(d);
			await engine.stop();
		}
	});

	test('SIGTERM while waiting for the engine exits 0 promptly', async () => {
		const d = spawnDaemon(`ws://127.0.0.1:${await freePort()}`);
		await eventually(() => assert.match(d.output(), /cannot connect/), 10000);
		const t0 = Date.now();
		d.proc.kill('SIGTERM');
		await endDaemon(d, { send: null });
		assertExitWithin(t0, 3000);
		assert.equal(d.output().match(/received Terminated/g)?.length, 1, d.output());
		assertNoSanitizerReport(d);
	});

	test('SIGTERM while the configuration read hangs exits 0 promptly, not 2', async () => {
		const engine = new StandinEngine();
		engine.setConfigHang(WORKER_NAME);
		await engine.start();
		const d = spawnDaemon(engine.url);
		try {
			await engine.waitFor(() => engine.configReads.length > 0, 15000, 'configuration::get');
			await sleep(200);
			const t0 = Date.now();
			d.proc.kill('SIGTERM');
			await endDaemon(d, { send: null });
			assertExitWithin(t0, 3000);
			assert.doesNotMatch(d.output(), /configuration::get .* failed|serve: configuration/, d.output());
			assertNoSanitizerReport(d);
		} finally {
			await engine.stop();
		}
	});
});

// The daemon's engine::workers::register payload, once it arrived.
async function registerPayload(s) {
	let frame;
	await s.engine.waitFor(() => {
		frame = s.engine.frames.find((f) => f.dir === 'in' && f.msg.function_id === 'engine::workers::register' &&
			f.msg.data?.pid === s.daemon.proc.pid);
		return frame;
	}, 15000, 'engine::workers::register');
	return frame.msg.data;
}

describe('under Compose and the engine (iii-protocol.md §1.4, §2.3)', () => {
	test('III_NAMESPACE and III_ISOLATION are declared in engine::workers::register', async () => {
		// Its functions land in `orders`, which iii-sdk 0.22.1 cannot name: a raw peer does.
		const s = await startStack({ env: { III_NAMESPACE: 'orders', III_ISOLATION: 'libkrun' }, waitRegistered: false });
		try {
			const d = await registerPayload(s);
			assert.equal(d.namespace, 'orders');
			assert.equal(d.isolation, 'libkrun');
			await s.engine.waitFor(() => [...FUNCTIONS, ...EXTENSIONS].every((f) => s.engine.functionsIn('orders').has(f)),
				15000, 'functions in orders');
			assert.ok(!s.engine.functions.has('sandbox-libkrun::adapter::info'), 'none in default');
			const peer = await rawPeer(s.engine.url);
			const invocation_id = randomUUID();
			peer.send({ type: 'invokefunction', invocation_id, function_id: 'sandbox-libkrun::adapter::info', data: {},
				namespace: 'orders' });
			const r = await peer.waitFor((m) => m.type === 'invocationresult' && m.invocation_id === invocation_id, 10000);
			assert.equal(r.result.adapter, 'sandbox-libkrun');
			peer.ws.close();
			await s.stopClean();
		} finally {
			await s.stop();
		}
	});

	test('empty III_NAMESPACE and III_ISOLATION are unset: neither key is sent', async () => {
		const s = await startStack({ env: { III_NAMESPACE: '', III_ISOLATION: '' } });
		try {
			const d = await registerPayload(s);
			assert.ok(!('namespace' in d), JSON.stringify(d));
			assert.ok(!('isolation' in d), JSON.stringify(d));
			await s.stopClean();
		} finally {
			await s.stop();
		}
	});

	test('serve --config FILE reads the YAML config map instead of configuration::get', async () => {
		const dir = mkdtempSync(path.join(tmpdir(), 'sbx-e2e-config-'));
		const file = path.join(dir, 'sandbox-libkrun.yaml');
		writeFileSync(file, '# written by the engine\nauto_install: false\nimage_allowlist: [node]\n' +
			'custom_images:\n  c: x/c:1\n', { mode: 0o600 });
		const s = await startStack({ config: { custom_images: { wrong: 'x/w:1' } }, args: ['--config', file] });
		try {
			const r = await s.call('catalog::list', {});
			assert.deepEqual(r.images.map((i) => i.name), ['python', 'node', 'c']);
			assert.deepEqual(s.engine.configReads, [], 'configuration::get is not called');
			assertScode(await s.callError('create', { image: 'python' }), 'S100');
			assertScode(await s.callError('create', { image: 'node' }), CREATE_ALLOWED.code, CREATE_ALLOWED.message);
			await s.stopClean();
		} finally {
			await s.stop();
			rmSync(dir, { recursive: true, force: true });
		}
	});

	test('serve --config with a bad or missing file exits 2 before connecting, naming the file', async () => {
		const dir = mkdtempSync(path.join(tmpdir(), 'sbx-e2e-config-'));
		const engine = new StandinEngine();
		await engine.start();
		try {
			for (const [text, re] of [['auto_install: maybe\n', /config key `auto_install`: expected a boolean/],
				['a: 1\na: 2\n', /duplicate key at `a`/], ['sandbox: {}\n', /legacy wrapped shape/], [null, /No such file/]]) {
				const file = path.join(dir, 'c.yaml');
				rmSync(file, { force: true });
				if (text !== null) writeFileSync(file, text);
				const d = spawnDaemon(engine.url, {}, {}, [`--config=${file}`]);
				await endDaemon(d, { code: 2, send: null });
				assert.match(d.output(), new RegExp(`serve: configuration: ${file}: `));
				assert.match(d.output(), re);
				assertNoSanitizerReport(d);
			}
			assert.equal(engine.workers().length, 0, 'it never registered');
		} finally {
			await engine.stop();
			rmSync(dir, { recursive: true, force: true });
		}
	});

	test('EOF on III_LIFELINE_FD (the engine died) makes serve exit 0', async () => {
		const s = await startStack({ env: { III_LIFELINE_FD: '3' },
			spawnOptions: { stdio: ['ignore', 'pipe', 'pipe', 'pipe'] } });
		try {
			await sleep(300);
			assert.equal(s.daemon.proc.exitCode, null, 'alive while the lifeline is open');
			const t0 = Date.now();
			s.daemon.proc.stdio[3].destroy();
			await endDaemon(s.daemon, { send: null });
			assertExitWithin(t0, 5000);
			assert.match(s.daemon.output(), /engine that started this worker is gone \(III_LIFELINE_FD closed\)/);
			assertNoSanitizerReport(s.daemon);
		} finally {
			await s.stop();
		}
	});

	test('III_ENGINE_PID gone makes serve exit 0', async () => {
		const engineProc = spawn('sleep', ['600'], { stdio: 'ignore' });
		const s = await startStack({ env: { III_ENGINE_PID: String(engineProc.pid) } });
		try {
			await sleep(300);
			assert.equal(s.daemon.proc.exitCode, null, 'alive while the engine pid lives');
			const t0 = Date.now();
			engineProc.kill('SIGKILL');
			await endDaemon(s.daemon, { send: null });
			assertExitWithin(t0, 5000);
			assert.match(s.daemon.output(), /\(III_ENGINE_PID exited\)/);
			assertNoSanitizerReport(s.daemon);
		} finally {
			engineProc.kill('SIGKILL');
			await s.stop();
		}
	});

	test('a III_LIFELINE_FD or III_ENGINE_PID that names nothing is refused (exit 1)', async () => {
		const engine = new StandinEngine();
		await engine.start();
		try {
			for (const [env, re] of [[{ III_LIFELINE_FD: '77' }, /III_LIFELINE_FD=77 is not an open file descriptor/],
				[{ III_LIFELINE_FD: 'x' }, /III_LIFELINE_FD=x/], [{ III_ENGINE_PID: '999999999' }, /III_ENGINE_PID=999999999 is not a running process/]]) {
				const d = spawnDaemon(engine.url, env);
				await endDaemon(d, { code: 1, send: null });
				assert.match(d.output(), re);
			}
		} finally {
			await engine.stop();
		}
	});
});

describe('an engine that authenticates workers (iii-protocol.md §1.2, III_HEADERS_FILE)', () => {
	const secret = `Bearer ${randomUUID()}`;
	let dir, file;
	before(() => {
		dir = mkdtempSync(path.join(tmpdir(), 'sbx-e2e-headers-'));
		file = path.join(dir, 'headers');
		writeFileSync(file, `# read by the engine's auth function\n\nAuthorization: ${secret}\nX-Tenant: e2e\n`, { mode: 0o600 });
	});
	after(() => rmSync(dir, { recursive: true, force: true }));

	test('serve is refused without the file and registered with it, and so is serve --front; the value is never logged', async () => {
		const engine = new StandinEngine({ auth: requireHeader('Authorization', secret) });
		await engine.start();
		try {
			const without = spawnDaemon(engine.url);
			try {
				await engine.waitFor(() => engine.authChecks.length > 0, 15000, 'an upgrade refused by the auth check');
				await eventually(() => assert.match(without.output(), /connection refused: AUTH_ERROR: missing or wrong authorization header/), 10000);
				assert.equal(engine.authChecks[0].accepted, false);
				assert.equal(engine.workers().length, 0);
				assert.equal(without.proc.exitCode, null, 'it keeps retrying');
			} finally {
				await endDaemon(without);
			}
			const d = spawnDaemon(engine.url, { III_HEADERS_FILE: file });
			try {
				await waitServing(engine, d, WORKER_NAME, 20000);
				const ok = engine.authChecks.at(-1);
				assert.equal(ok.accepted, true);
				assert.equal(ok.headers['x-tenant'], 'e2e');
				assert.match(d.output(), /2 upgrade headers from III_HEADERS_FILE/);
				assert.ok(!d.output().includes(secret.slice(7)), d.output());
				await endDaemon(d);
			} finally {
				if (d.proc.exitCode === null) d.proc.kill('SIGKILL');
			}
			// The front reads the same file.
			const checks = engine.authChecks.length;
			const front = spawnDaemon(engine.url, { III_HEADERS_FILE: file }, {}, ['--front']);
			try {
				await engine.waitFor(() => engine.workers().some((w) => w.pid === front.proc.pid), 20000, 'the front registered')
					.catch((e) => assert.fail(`${e.message}\n${front.output()}`));
				assert.ok(engine.authChecks.length > checks && engine.authChecks.slice(checks).every((c) => c.accepted),
					front.output());
				assert.ok(!front.output().includes(secret.slice(7)), front.output());
			} finally {
				await endDaemon(front);
			}
		} finally {
			await engine.stop();
		}
	});

	test('a file readable by others, or malformed, is refused at start with exit 2 (serve and serve --front)', async () => {
		const engine = new StandinEngine();
		await engine.start();
		const loose = path.join(dir, 'loose');
		writeFileSync(loose, `Authorization: ${secret}\n`);
		chmodSync(loose, 0o644);
		const bad = path.join(dir, 'bad');
		writeFileSync(bad, `Authorization: ${secret}\nX-Bad header ${secret}\n`, { mode: 0o600 });
		try {
			for (const [f, args, re] of [[loose, [], /III_HEADERS_FILE: .*loose: readable by group or others \(mode 644\)/],
				[loose, ['--front'], /III_HEADERS_FILE: .*loose: readable by group or others/],
				[bad, [], /III_HEADERS_FILE: .*bad: line 2: expected `Name: value`/]]) {
				const d = spawnDaemon(engine.url, { III_HEADERS_FILE: f }, {}, args);
				await endDaemon(d, { code: 2, send: null });
				assert.match(d.output(), re);
				assert.ok(!d.output().includes(secret.slice(7)), d.output());
			}
			assert.equal(engine.conns.size, 0, 'no connection was tried');
		} finally {
			await engine.stop();
		}
	});
});

describe('the caller side', () => {
	test('an iii-sdk caller sees function_not_found for an unregistered sandbox-libkrun function', async () => {
		const s = await startStack();
		try {
			const c = sdkClient(s.engine.url, 'other-caller');
			await assert.rejects(c.trigger({ function_id: 'sandbox-libkrun::nope', payload: {} }),
				(e) => e.code === 'function_not_found');
			await c.shutdown();
			await s.stopClean();
		} finally {
			await s.stop();
		}
	});
});
