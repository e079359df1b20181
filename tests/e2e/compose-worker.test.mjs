// Compose worker VMs end to end (issue 10): worker::start, status, logs,
// stop and destroy behind the stand-in engine, called through iii-sdk.  A
// path:// worker in a temporary project directory runs a small Node worker
// (iii-sdk inside the VM) on the node image from the loopback registry; it
// registers demo::hello with the engine over the guest's network, and the
// test calls it through the engine.  A bundle in a temporary package cache
// starts from its exec.  The file re-executes itself in a fresh network
// namespace holding only `lo`, so no packet can leave the machine.  VM
// boots are few (each takes seconds under TCG): one path:// worker serves
// most checks.
import { describe, test, before, after } from './lib/test-api.mjs';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { endDaemon, startStack } from './daemon.mjs';
import { eventually } from './lib.mjs';
import { ociLayout, registryUnavailable, startRegistry } from './lib/registry-fixture.mjs';
import { copySdk, sdkWorkerSource } from './lib/worker-fixture.mjs';

if (!process.env.SBX_E2E_NETNS && process.getuid?.() === 0) {
	// The node image is built (debootstrap) out here, where Debian's mirror is reachable.
	if (!registryUnavailable()) ociLayout('node');
	const r = spawnSync('unshare', ['-n', '--', 'sh', '-c', 'ip link set lo up && exec "$0" "$@"', process.execPath,
		...process.execArgv, ...process.argv.slice(1)], { stdio: 'inherit', env: { ...process.env, SBX_E2E_NETNS: '1' } });
	process.exit(r.status ?? 1);
}

const TOKEN = 'compose-worker-e2e-token';
// A start boots a VM and waits for its guest; the node worker then loads
// iii-sdk under TCG before it registers.
const START_MS = 240000;
const REGISTER_MS = 240000;
const NODE_IMAGE = 'iiidev/node:latest';
const BROKEN_IMAGE = 'iiidev/nobody:latest';

// The Node worker of the path:// worker: demo::hello answers from inside the
// VM, counting its calls in a file on the data disk.
const HELLO_WORKER = sdkWorkerSource('demo::hello', `
	mkdirSync('/workspace/data', { recursive: true });
	const f = '/workspace/data/count';
	const count = (existsSync(f) ? Number(readFileSync(f, 'utf8')) : 0) + 1;
	writeFileSync(f, String(count));
	return {
		isolation: process.env.III_ISOLATION, worker: process.env.III_WORKER_NAME, greeting: process.env.GREETING,
		config: readFileSync(process.env.III_CONFIG, 'utf8').trim(), count,
		installs: readFileSync('/var/lib/iii-e2e-installs', 'utf8').split('\\n').filter(Boolean).length,
	};`, `console.log('hello worker up as ' + process.env.III_WORKER_NAME);
console.error('hello worker stderr line');
process.on('SIGTERM', () => { console.log('hello worker got SIGTERM'); process.exit(0); });`);

const HELLO_MANIFEST = `name: hello
description: the e2e path worker
runtime:
  base_image: ${NODE_IMAGE}
scripts:
  setup: mkdir -p /var/lib
  install: echo installed >> /var/lib/iii-e2e-installs
  start: node worker.mjs
env:
  GREETING: from-the-manifest
resources:
  cpus: 1
  memory: 1Gi
`;

const BUNDLE_WORKER = sdkWorkerSource('demo::bundle', 'return { isolation: process.env.III_ISOLATION, cwd: process.cwd() };');

// The processes whose parent chain leads to `root`.
function descendants(root) {
	const parent = new Map();
	for (const pid of readdirSync('/proc').filter((p) => /^\d+$/.test(p))) {
		try {
			const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
			parent.set(Number(pid), Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]));
		} catch {
			// exited meanwhile
		}
	}
	const out = [];
	for (const pid of parent.keys()) {
		for (let p = pid, hops = 0; p > 1 && hops < 64; p = parent.get(p) ?? 0, hops++) {
			if (p === root && pid !== root) {
				out.push(pid);
				break;
			}
		}
	}
	return out;
}

function alive(pid) {
	try {
		process.kill(pid, 0);
		return !readFileSync(`/proc/${pid}/stat`, 'utf8').includes(') Z ');
	} catch {
		return false;
	}
}

function cmdline(pid) {
	try {
		return readFileSync(`/proc/${pid}/cmdline`, 'utf8').replaceAll('\0', ' ').trim();
	} catch {
		return '';
	}
}

function assertWorkerError(err, code, messageRe) {
	assert.ok(err, 'the call failed');
	assert.ok(err.envelope, `an S-code envelope (message: ${err.message})`);
	assert.equal(err.envelope.code, code, `S-code (message: ${err.envelope.message})`);
	if (messageRe) assert.match(err.envelope.message, messageRe);
}

const skip = registryUnavailable();

describe('Compose worker VMs', { skip: skip ?? false }, () => {
	let registry;
	let stack;
	let stateDir;
	let projectDir;
	let composeState;
	let helloDir;
	let configDir;
	let bundleDir;

	const env = () => ({
		III_SANDBOX_STATE_DIR: stateDir, III_SANDBOX_WORKER_TOKEN: TOKEN,
		III_COMPOSE_PROJECT_DIR: projectDir, III_COMPOSE_STATE_DIR: composeState,
	});
	const call = (fn, payload, timeoutMs = 60000) => stack.call(`worker::${fn}`, { auth: TOKEN, ...payload }, { timeoutMs });
	const callError = (fn, payload) => stack.callError(`worker::${fn}`, { auth: TOKEN, ...payload });
	const hello = () => stack.caller.trigger({ function_id: 'demo::hello', payload: {}, timeoutMs: 60000 });
	const startHello = () => call('start', {
		worker: 'hello', config_dir: configDir,
		env: { III_CONFIG: path.join(configDir, 'config.yaml'), III_ISOLATION: 'spoofed', EXTRA: 'x' },
	}, START_MS);

	before(async () => {
		registry = await startRegistry({ images: ['node'],
			derived: [{ name: 'nobody', from: 'node', patch: { User: 'no-such-user-e2e' } }] });
		stateDir = mkdtempSync(path.join(tmpdir(), 'sbx-e2e-worker-state-'));
		projectDir = mkdtempSync(path.join(tmpdir(), 'sbx-e2e-project-'));
		composeState = mkdtempSync(path.join(tmpdir(), 'sbx-e2e-compose-'));
		helloDir = path.join(projectDir, 'hello');
		mkdirSync(helloDir);
		writeFileSync(path.join(helloDir, 'iii.worker.yaml'), HELLO_MANIFEST);
		writeFileSync(path.join(helloDir, 'worker.mjs'), HELLO_WORKER);
		copySdk(helloDir);
		configDir = path.join(projectDir, '.iii', 'hello');
		mkdirSync(configDir, { recursive: true });
		writeFileSync(path.join(configDir, 'config.yaml'), 'value-from-the-config-dir\n');
		bundleDir = path.join(composeState, 'packages', 'bundle-1.0.0-x86_64-linux');
		mkdirSync(bundleDir, { recursive: true });
		writeFileSync(path.join(bundleDir, 'iii.worker.yaml'), 'name: bundle\n');
		writeFileSync(path.join(bundleDir, 'bundle.mjs'), BUNDLE_WORKER);
		copySdk(bundleDir);
		stack = await startStack({ config: { registry_mirrors: registry.mirrors }, env: env() });
	});

	after(async () => {
		if (stack) await stack.stop();
		if (registry) await registry.stop();
		for (const d of [stateDir, projectDir, composeState]) if (d) rmSync(d, { recursive: true, force: true });
	});

	test('a worker never prepared: status absent, start S502', async () => {
		assert.deepEqual(await call('status', { worker: 'nobody' }), { worker: 'nobody', state: 'absent' });
		assertWorkerError(await callError('start', { worker: 'nobody' }), 'S502', /not prepared/);
	});

	test('a path:// worker starts and answers demo::hello from inside its VM', async () => {
		const p = await call('prepare', { worker: 'hello', host_path: helloDir }, START_MS);
		assert.equal(p.prepared, true);
		assert.equal(p.source, 'path');
		assert.deepEqual(await call('status', { worker: 'hello' }), { worker: 'hello', state: 'prepared' });
		const s = await startHello();
		assert.equal(s.worker, 'hello');
		assert.ok(['starting', 'running'].includes(s.state), JSON.stringify(s));
		assert.ok(Number.isInteger(s.pid) && s.pid > 0, JSON.stringify(s));
		// A second start while it runs: the same VM.
		const again = await call('start', { worker: 'hello' });
		assert.equal(again.pid, s.pid);
		await stack.engine.waitFor(() => stack.engine.functions.has('demo::hello'), REGISTER_MS, 'demo::hello')
			.catch(async (e) => {
				e.message += `\nlogs: ${JSON.stringify(await call('logs', { worker: 'hello' }))}`;
				throw e;
			});
		const r = await hello();
		assert.deepEqual(r, { isolation: 'libkrun', worker: 'hello', greeting: 'from-the-manifest',
			config: 'value-from-the-config-dir', count: 1, installs: 1 });
		const st = await call('status', { worker: 'hello' });
		assert.equal(st.state, 'running');
		assert.equal(st.pid, s.pid);
		assert.match(st.started_at, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
		assert.ok(alive(s.pid), 'QEMU runs');
		// Installs never write into the host directory.
		assert.deepEqual(readdirSync(helloDir).sort(), ['iii.worker.yaml', 'node_modules', 'worker.mjs']);
	});

	test('worker::logs has the worker process output, bounded by tail', async () => {
		const l = await eventually(async () => {
			const x = await call('logs', { worker: 'hello' });
			assert.match(x.stdout, /hello worker up as hello/);
			return x;
		}, 30000);
		assert.match(l.stderr, /hello worker stderr line/);
		const one = await call('logs', { worker: 'hello', tail: 1 });
		assert.ok(one.stdout.split('\n').filter(Boolean).length <= 1, JSON.stringify(one));
		assert.ok(existsSync(path.join(stateDir, 'workers', 'hello', 'logs', 'console.log')));
	});

	test('stop unregisters the worker; its data disk keeps what it wrote across a start', async () => {
		const { pid } = await call('status', { worker: 'hello' });
		assert.deepEqual(await call('stop', { worker: 'hello', timeout_secs: 20 }), { worker: 'hello', stopped: true });
		await stack.engine.waitFor(() => !stack.engine.functions.has('demo::hello'), 30000, 'demo::hello gone');
		const st = await call('status', { worker: 'hello' });
		assert.equal(st.state, 'stopped');
		assert.equal(st.pid, undefined);
		await eventually(() => assert.ok(!alive(pid), 'QEMU gone'), 10000);
		assert.deepEqual(await call('stop', { worker: 'hello' }), { worker: 'hello', stopped: true }, 'idempotent');
		assert.match((await call('logs', { worker: 'hello' })).stdout, /hello worker got SIGTERM/, 'logs survive stop');

		await startHello();
		await stack.engine.waitFor(() => stack.engine.functions.has('demo::hello'), REGISTER_MS, 'demo::hello again');
		const r = await hello();
		assert.equal(r.count, 2, 'the count file survived on the data disk');
		assert.equal(r.installs, 1, 'setup and install ran once per data disk');
		await call('stop', { worker: 'hello' });
		await stack.engine.waitFor(() => !stack.engine.functions.has('demo::hello'), 30000, 'demo::hello gone');
	});

	test('a changed source reaches /workspace at the next start, beside what the worker wrote there', async () => {
		// The restarts above skipped the copy (the source was unchanged); an edit is copied.
		writeFileSync(path.join(helloDir, 'worker.mjs'),
			sdkWorkerSource('demo::hello', "return { edited: true, count: readFileSync('/workspace/data/count', 'utf8') };"));
		try {
			await startHello();
			await stack.engine.waitFor(() => stack.engine.functions.has('demo::hello'), REGISTER_MS, 'demo::hello edited');
			assert.deepEqual(await hello(), { edited: true, count: '2' });
			await call('stop', { worker: 'hello' });
			await stack.engine.waitFor(() => !stack.engine.functions.has('demo::hello'), 30000, 'demo::hello gone');
		} finally {
			writeFileSync(path.join(helloDir, 'worker.mjs'), HELLO_WORKER);
		}
	});

	test('a VM that cannot boot: start answers S506 with the console, state failed', async () => {
		// Its image's User exists nowhere in it: the guest's init refuses to start.
		const dir = path.join(projectDir, 'broken');
		mkdirSync(dir);
		writeFileSync(path.join(dir, 'iii.worker.yaml'),
			`name: broken\nruntime:\n  base_image: ${BROKEN_IMAGE}\nscripts:\n  start: "true"\n`);
		await call('prepare', { worker: 'broken', host_path: dir }, START_MS);
		const err = await stack.callError('worker::start', { auth: TOKEN, worker: 'broken' });
		assertWorkerError(err, 'S506', /worker broken: /);
		assert.equal((await call('status', { worker: 'broken' })).state, 'failed');
		await call('destroy', { worker: 'broken' });
	});

	test('destroy deletes the disk, logs and state; the worker is absent', async () => {
		assert.deepEqual(await call('destroy', { worker: 'hello' }), { worker: 'hello', destroyed: true });
		assert.ok(!existsSync(path.join(stateDir, 'workers', 'hello')), 'state directory gone');
		assert.deepEqual(await call('status', { worker: 'hello' }), { worker: 'hello', state: 'absent' });
		assertWorkerError(await callError('logs', { worker: 'hello' }), 'S502');
		assert.deepEqual(await call('destroy', { worker: 'hello' }), { worker: 'hello', destroyed: true }, 'idempotent');
		assert.ok(existsSync(path.join(helloDir, 'worker.mjs')), 'the host directory is untouched');
	});

	// The worker VMs of the daemon, found through its process tree.
	const vmProcesses = () => {
		const children = descendants(stack.daemon.proc.pid);
		const names = children.map(cmdline);
		assert.ok(names.some((c) => /qemu-system/.test(c)), `a QEMU among ${JSON.stringify(names)}`);
		assert.ok(names.some((c) => /virtiofsd/.test(c)), `a virtiofsd among ${JSON.stringify(names)}`);
		return children;
	};
	const assertGone = (children, what) => eventually(() => {
		const left = children.filter(alive).map((pid) => `${pid} ${cmdline(pid)}`);
		assert.deepEqual(left, [], `processes left after ${what}`);
	}, 20000);
	const restart = async ({ config = {}, extraEnv = {} } = {}) => {
		stack = null;
		stack = await startStack({ config: { registry_mirrors: registry.mirrors, ...config }, env: { ...env(), ...extraEnv } });
	};
	// Where this host has no /dev/kvm, the probe can be told to pass
	// (SANDBOX_TEST_KVM_PROBE, vm/accel.h): the first VM's QEMU then dies
	// under KVM before its guest's first word, and under accel auto the
	// daemon decides TCG and starts that VM again.  With no standby QEMU,
	// the first VM of the daemon is the worker's.
	const kvmRefused = !existsSync('/dev/kvm') && !process.env.SBX_E2E_ACCEL;

	test('a bundle in the package cache starts from its exec; SIGTERM of the daemon stops it', async () => {
		const p = await call('prepare', { worker: 'bundle', host_path: bundleDir, base_image: NODE_IMAGE,
			exec: ['node', '/workspace/bundle.mjs'] }, START_MS);
		assert.equal(p.source, 'package');
		await call('start', { worker: 'bundle' }, START_MS);
		await stack.engine.waitFor(() => stack.engine.functions.has('demo::bundle'), REGISTER_MS, 'demo::bundle');
		const r = await stack.caller.trigger({ function_id: 'demo::bundle', payload: {}, timeoutMs: 60000 });
		assert.deepEqual(r, { isolation: 'libkrun', cwd: '/workspace' });
		const children = vmProcesses();
		// Exit 0 within 5 s and, under ASan, no leak from any worker::* path.
		const stopping = stack;
		stack = null;
		await stopping.stopClean();
		await assertGone(children, 'SIGTERM of the daemon');
	});

	test('kill -9 of the daemon leaves no QEMU, virtiofsd or helper; a new daemon reports prepared', async () => {
		await restart(kvmRefused ? { config: { standby: false }, extraEnv: { SANDBOX_TEST_KVM_PROBE: 'usable' } } : {});
		assert.deepEqual(await call('status', { worker: 'bundle' }), { worker: 'bundle', state: 'prepared' });
		assert.equal((await call('start', { worker: 'bundle' }, START_MS)).state, 'running');
		if (kvmRefused) {
			// The worker's VM was refused by KVM and started again under TCG.
			const out = stack.daemon.output();
			assert.match(out, /a VM could not start under KVM \(.+\): from now on this process's VMs run under TCG/, out);
			const qemus = descendants(stack.daemon.proc.pid).map(cmdline).filter((c) => /qemu-system/.test(c));
			assert.ok(qemus.length > 0 && qemus.every((c) => / -accel tcg,/.test(c)), `the worker's QEMU runs under TCG: ${qemus}`);
		}
		const children = vmProcesses();
		await endDaemon(stack.daemon, { send: 'SIGKILL', signal: 'SIGKILL' });
		await assertGone(children, 'kill -9 of the daemon');
		const killed = stack;
		stack = null;
		await killed.stop();

		await restart();
		assert.deepEqual(await call('status', { worker: 'bundle' }), { worker: 'bundle', state: 'prepared' });
		assert.deepEqual(await call('destroy', { worker: 'bundle' }), { worker: 'bundle', destroyed: true });
		const last = stack;
		stack = null;
		await last.stopClean();
	});
});
