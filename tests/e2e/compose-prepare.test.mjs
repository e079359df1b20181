// worker::prepare end to end (docs/workers.md; contract §7.19,
// §8): the token, the two roots, the manifest's refusals and the bundle
// kill switch through the stand-in engine with iii-sdk, then a real prepare
// of a path:// worker and of a bundle on the node image from the loopback
// registry (a prepare pulls the image and makes the data disk; it boots no
// VM).  worker::start and the rest are compose-worker.test.mjs's.
import { describe, test, before, after } from './lib/test-api.mjs';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { startStack } from './daemon.mjs';
import { registryUnavailable, startRegistry } from './lib/registry-fixture.mjs';

const TOKEN = `tok-${randomUUID()}`;
const OPS = ['prepare', 'start', 'status', 'logs', 'stop', 'destroy'];
const TYPE = { S001: 'validation', S101: 'internal', S501: 'validation', S503: 'validation', S504: 'config',
	S505: 'validation' };
const PREPARE_MS = 180000; // a first prepare pulls the image

function assertScode(err, code, messageRe) {
	assert.equal(err.code, 'invocation_failed', `outer code (message: ${err.message})`);
	const env = err.envelope;
	assert.ok(env, `"handler error: {json}" message: ${err.message}`);
	assert.deepEqual(Object.keys(env).sort(), ['code', 'docs_url', 'fix', 'fix_note', 'message', 'retryable', 'type']);
	assert.equal(env.code, code, `S-code (message: ${env.message})`);
	assert.equal(env.type, TYPE[code], `type of ${code}`);
	assert.equal(env.retryable, false);
	assert.match(env.docs_url, new RegExp(`#${code}$`));
	if (messageRe) assert.match(env.message, messageRe);
	return env;
}

// A temporary Compose layout: <root>/project (the project directory) with
// worker directories, <root>/compose/packages (the package cache) with
// bundles, and <root>/outside.
function composeTree() {
	const root = mkdtempSync(path.join(tmpdir(), 'sbx-e2e-compose-'));
	const dirs = { root, project: path.join(root, 'project'), cache: path.join(root, 'compose/packages'),
		outside: path.join(root, 'outside'), state: path.join(root, 'state') };
	for (const d of Object.values(dirs)) mkdirSync(d, { recursive: true });
	return dirs;
}

// Writes <dir>/iii.worker.yaml (dir created) and returns dir.
function worker(dir, manifest) {
	mkdirSync(dir, { recursive: true });
	writeFileSync(path.join(dir, 'iii.worker.yaml'), manifest);
	return dir;
}

const PATH_MANIFEST = `name: hello
description: a path worker
runtime:
  base_image: node
scripts:
  install: npm ci
  start: node main.js
env:
  GREETING: hi
resources:
  memory: 1Gi
iii:
  functions: [demo::hello]
tags: [demo]
`;

function stackEnv(t, extra = {}) {
	return { III_SANDBOX_STATE_DIR: t.state, III_SANDBOX_WORKER_TOKEN: TOKEN, III_COMPOSE_PROJECT_DIR: t.project,
		III_COMPOSE_STATE_DIR: path.join(t.root, 'compose'), ...extra };
}

describe('worker::* auth, roots and manifest checks (no image needed)', () => {
	let t, s;
	before(async () => {
		t = composeTree();
		worker(path.join(t.project, 'ok'), PATH_MANIFEST);
		worker(path.join(t.outside, 'w'), PATH_MANIFEST);
		worker(`${t.project}2`, PATH_MANIFEST); // a string prefix of the project is not in it
		symlinkSync(path.join(t.outside, 'w'), path.join(t.project, 'escape'));
		// auto_install off: a prepare that passes every check stops at the
		// image store with S101, as sandbox create does, without a registry.
		s = await startStack({ config: { auto_install: false }, env: stackEnv(t) });
	});
	after(async () => {
		await s?.stop();
		rmSync(t.root, { recursive: true, force: true });
	});
	const prep = (fields) => s.callError('worker::prepare', { auth: TOKEN, worker: 'w1', ...fields });

	test('S505: a wrong, missing or non-string token, on all six, before the shape is read', async () => {
		for (const op of OPS) {
			for (const payload of [{ auth: 'wrong', worker: 'w' }, { auth: `${TOKEN} `, worker: 'w' }, { worker: 'w' },
				{ auth: 5, worker: 'w' }, { auth: 'wrong' }, { auth: 'wrong', worker: 7, host_path: 3 }]) {
				const err = await s.callError(`worker::${op}`, payload);
				assertScode(err, 'S505');
				assert.ok(!err.message.includes(TOKEN), 'the token is never echoed');
			}
		}
	});

	test('S501: /etc, a symlink out of the project, `..` out of it, a missing or relative path; both roots named', async () => {
		const roots = `the Compose project directory '${t.project}' and the package cache '${t.cache}'`;
		const cases = ['/etc', path.join(t.project, 'escape'), `${t.project}/ok/../../outside/w`,
			path.join(t.project, 'missing'), 'project/ok', `${t.project}2`];
		for (const host_path of cases) {
			assertScode(await prep({ host_path }), 'S501', new RegExp(`^host_path '[^']*'( \\(.*\\))? is outside ${roots.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}$`));
		}
		assertScode(await prep({ host_path: path.join(t.project, 'escape') }), 'S501', /\(resolved: '.*\/outside\/w'\)/);
	});

	test('S503: an unknown key, a wrong type, a duplicate key, an alias, a 65 KiB manifest; the key is named', async () => {
		const cases = [
			['foo:\n  bar: 1\n', /^iii\.worker\.yaml: unknown key `foo`$/],
			['runtime:\n  base_image: node\n  bar: 1\n', /^iii\.worker\.yaml: unknown key `runtime\.bar`$/],
			['scripts:\n  start: [node]\n', /^iii\.worker\.yaml: `scripts\.start` must be a string, not a list$/],
			['env: [A=1]\n', /`env` must be a map/],
			['name: a\nname: b\n', /duplicate key at `name` \(line 2\)/],
			['a: &x [1]\niii: *x\n', /aliases \(\*name\) are not supported at `iii`/],
			[`${PATH_MANIFEST}${'# padding\n'.repeat(6700)}`, /^iii\.worker\.yaml: larger than 64 KiB$/],
			['name: x\n', /^iii\.worker\.yaml: `scripts\.start` is missing/],
			['scripts: {start: x}\n', /^iii\.worker\.yaml: `runtime\.base_image` is missing/],
		];
		for (const [i, [manifest, re]] of cases.entries()) {
			const dir = worker(path.join(t.project, `bad${i}`), manifest);
			assertScode(await prep({ host_path: dir }), 'S503', re);
		}
		const empty = path.join(t.project, 'empty');
		mkdirSync(empty);
		assertScode(await prep({ host_path: empty }), 'S503', new RegExp(`^iii\\.worker\\.yaml: not found in ${empty}$`));
	});

	test('S503: a bundle setting scripts.install, scripts.setup or runtime.base_image', async () => {
		for (const [key, manifest] of [['scripts.install', 'scripts: {install: npm ci, start: node x}\n'],
			['scripts.setup', 'scripts: {setup: x, start: node x}\n'],
			['runtime.base_image', 'runtime: {base_image: node}\nscripts: {start: node x}\n']]) {
			const dir = worker(path.join(t.cache, `b-${key}-1.0.0-x86_64`), manifest);
			assertScode(await prep({ host_path: dir, base_image: 'node' }), 'S503',
				new RegExp(`^iii\\.worker\\.yaml: \`${key.replace('.', '\\.')}\` is not allowed in a bundle`));
		}
	});

	test('S001: a bad worker name, a bundle without base_image, bad resources, a file as host_path; decode errors for wrong types', async () => {
		const ok = path.join(t.project, 'ok');
		assertScode(await prep({ host_path: ok, worker: '../x' }), 'S001', /worker name must be/);
		const b = worker(path.join(t.cache, 'plain-1.0.0-x86_64'), 'scripts: {start: node index.js}\n');
		assertScode(await prep({ host_path: b }), 'S001', /base_image is required for a bundle/);
		assertScode(await prep({ host_path: ok, resources: { cpus: 0 } }), 'S001', /`resources\.cpus` 0 is out of range/);
		assertScode(await prep({ host_path: ok, resources: { memory: '2GB' } }), 'S001', /`resources\.memory` must be/);
		const file = path.join(t.project, 'a-file');
		writeFileSync(file, 'not a directory');
		assertScode(await prep({ host_path: file }), 'S001', /^invalid request: host_path .*a-file: Not a directory$/);
		for (const bad of [{ host_path: 5 }, { exec: 'node x' }, { exec: [1] }, { resources: 2 }, { base_image: 3 }]) {
			const err = await s.callError('worker::prepare', { auth: TOKEN, worker: 'w1', host_path: ok, ...bad });
			assert.equal(err.envelope, null, JSON.stringify(bad));
			assert.match(err.message, /^serialization error/);
		}
		const err = await s.callError('worker::prepare', { auth: TOKEN, worker: 'w1' });
		assert.match(err.message, /^serialization error: missing field `host_path`/);
	});

	test('a valid path:// worker reaches the image store: S101 with auto_install off, as sandbox create', async () => {
		assertScode(await prep({ host_path: path.join(t.project, 'ok') }), 'S101',
			/^rootfs missing on disk for image 'node'\. Run: sandbox-libkrun image pull docker\.io\/iiidev\/node:latest/);
		assertScode(await prep({ host_path: path.join(t.project, 'ok'), worker: 'w2' }), 'S101');
	});

	test('SIGTERM: exit 0, no sanitizer report (no leak on any refusal path)', () => s.stopClean());
});

describe('worker::* with no token, no project directory, bundles disabled', () => {
	let t;
	before(() => { t = composeTree(); });
	after(() => rmSync(t.root, { recursive: true, force: true }));

	test('S505 for everything when III_SANDBOX_WORKER_TOKEN is unset or empty', async () => {
		for (const token of [undefined, '']) {
			const s = await startStack({ config: {}, env: stackEnv(t, { III_SANDBOX_WORKER_TOKEN: token }) });
			try {
				for (const op of OPS) {
					for (const auth of ['', 'anything', TOKEN]) {
						assertScode(await s.callError(`worker::${op}`, { auth, worker: 'w', host_path: t.project }), 'S505');
					}
				}
				await s.stopClean();
			} finally {
				await s.stop();
			}
		}
	});

	test('S501 names an unset project directory as unset; S504 refuses bundles', async () => {
		const s = await startStack({ config: { auto_install: false },
			env: stackEnv(t, { III_COMPOSE_PROJECT_DIR: undefined, III_BUNDLE_WORKERS_DISABLED: '1' }) });
		try {
			const dir = worker(path.join(t.project, 'w'), PATH_MANIFEST);
			assertScode(await s.callError('worker::prepare', { auth: TOKEN, worker: 'w', host_path: dir }), 'S501',
				new RegExp(`outside the Compose project directory \\(unset: III_COMPOSE_PROJECT_DIR\\) and the package cache '${t.cache}'`));
			const b = worker(path.join(t.cache, 'b-1.0.0-x86_64'), 'scripts: {start: node index.js}\n');
			assertScode(await s.callError('worker::prepare', { auth: TOKEN, worker: 'b', host_path: b, base_image: 'node' }),
				'S504', /III_BUNDLE_WORKERS_DISABLED=1/);
			await s.stopClean();
		} finally {
			await s.stop();
		}
	});
});

const skip = registryUnavailable();

describe('worker::prepare on the node image from the loopback registry', { skip: skip ?? false }, () => {
	let t, reg, s;
	const workers = () => path.join(t.state, 'workers');
	before(async () => {
		t = composeTree();
		reg = await startRegistry({ images: ['node'] });
		s = await startStack({ config: { registry_mirrors: reg.mirrors, image_allowlist: [], worker_disk_mb: 64 },
			env: stackEnv(t) });
	});
	after(async () => {
		await s?.stop();
		await reg?.stop();
		rmSync(t.root, { recursive: true, force: true });
	});
	const prepare = (fields) => s.call('worker::prepare', { auth: TOKEN, ...fields }, { timeoutMs: PREPARE_MS });

	test('a path:// worker: the reply, worker.json, a sparse data disk in a private directory', async () => {
		const dir = worker(path.join(t.project, 'hello'), PATH_MANIFEST);
		const r = await prepare({ worker: 'hello', host_path: dir });
		assert.deepEqual(r, { worker: 'hello', prepared: true, source: 'path', base_image: 'docker.io/iiidev/node:latest',
			cpus: 2, memory_mb: 1024 });
		const wdir = path.join(workers(), 'hello');
		assert.equal(statSync(wdir).mode & 0o777, 0o700);
		const rec = JSON.parse(readFileSync(path.join(wdir, 'worker.json'), 'utf8'));
		assert.equal(rec.worker, 'hello');
		assert.equal(rec.source, 'path');
		assert.equal(rec.host_path, dir);
		assert.equal(rec.install, 'npm ci');
		assert.equal(rec.start, 'node main.js');
		assert.equal(rec.setup, null);
		assert.deepEqual(rec.env, ['GREETING=hi']);
		assert.equal(rec.exec, null);
		assert.match(rec.image_erofs, /\/images\/erofs\/[0-9a-f]{64}\.erofs$/);
		assert.ok(rec.image_env.some((e) => e.startsWith('PATH=')), 'the image config Env');
		const disk = statSync(path.join(wdir, 'data.ext4'));
		assert.equal(disk.size, 64 * 1048576);
		assert.ok(disk.blocks * 512 < disk.size, 'sparse');
	});

	test('re-prepare keeps the data disk (same inode and mtime); a changed manifest updates the record', async () => {
		const dir = path.join(t.project, 'hello');
		const diskPath = path.join(workers(), 'hello', 'data.ext4');
		const before = statSync(diskPath);
		const t0 = Date.now();
		await prepare({ worker: 'hello', host_path: dir });
		const again = Date.now() - t0;
		writeFileSync(path.join(dir, 'iii.worker.yaml'), PATH_MANIFEST.replace('GREETING: hi', 'GREETING: hello\n  PORT: 8080')
			.replace('memory: 1Gi', 'memory: 512Mi\n  cpus: 3'));
		const r = await prepare({ worker: 'hello', host_path: dir });
		assert.deepEqual([r.cpus, r.memory_mb], [3, 512]);
		const after = statSync(diskPath);
		assert.deepEqual([after.ino, after.mtimeMs, after.size], [before.ino, before.mtimeMs, before.size]);
		const rec = JSON.parse(readFileSync(path.join(workers(), 'hello', 'worker.json'), 'utf8'));
		assert.deepEqual(rec.env, ['GREETING=hello', 'PORT=8080']);
		assert.deepEqual([rec.cpus, rec.memory_mb], [3, 512]);
		assert.ok(again < 10000, `an unchanged re-prepare took ${again} ms`);
		assert.match(s.daemon.output(), /worker hello unchanged: path /);
		assert.match(s.daemon.output(), /worker hello updated: path /);
	});

	test('a bundle: base_image and exec from the request, resources capped at 4 / 4096 with a warning', async () => {
		const dir = worker(path.join(t.cache, 'demo-1.0.0-x86_64'), 'name: demo\nscripts: {start: node index.js}\n');
		const r = await prepare({ worker: 'demo', host_path: dir, base_image: 'docker.io/iiidev/node:latest',
			exec: ['node', 'index.js'], resources: { cpus: 8, memory: '8Gi' } });
		assert.deepEqual(r, { worker: 'demo', prepared: true, source: 'package', base_image: 'docker.io/iiidev/node:latest',
			cpus: 4, memory_mb: 4096 });
		assert.match(s.daemon.output(), /worker demo: a bundle asked for 8 vCPUs and 8192 MiB; capped at 4 vCPUs and 4096 MiB/);
		const rec = JSON.parse(readFileSync(path.join(workers(), 'demo', 'worker.json'), 'utf8'));
		assert.deepEqual(rec.exec, ['node', 'index.js']);
		assert.equal(rec.host_path, dir);
	});

	test('a base image that is not a reference is S503 in the manifest, S001 in the request', async () => {
		const dir = worker(path.join(t.project, 'badimg'), 'runtime: {base_image: "Not A Ref"}\nscripts: {start: x}\n');
		assertScode(await s.callError('worker::prepare', { auth: TOKEN, worker: 'badimg', host_path: dir }), 'S503',
			/^iii\.worker\.yaml: runtime\.base_image 'Not A Ref' is neither a catalog image nor an OCI reference/);
		const b = worker(path.join(t.cache, 'bi-1.0.0-x86_64'), 'scripts: {start: x}\n');
		assertScode(await s.callError('worker::prepare', { auth: TOKEN, worker: 'bi', host_path: b, base_image: 'no such:ref!' }),
			'S001', /^invalid request: base_image 'no such:ref!' is neither/);
	});

	test('SIGTERM: exit 0, no sanitizer report', () => s.stopClean());
});
