// Host paths of Compose workers (issue 22, item 1): what a worker VM shares
// is the directory the daemon checked, never what its path names later.  A
// user who can write the project directory swaps the prepared directory for
// `ln -s / <dir>` before start, and the config_dir for a symlink out of the
// roots while the VM boots (config_dir is copied in after the boot).  One
// worker VM boot on the python image; the file re-executes itself in a
// fresh network namespace holding only `lo`, so no packet leaves the machine.
import { describe, test, before, after } from './lib/test-api.mjs';
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, renameSync, rmSync, symlinkSync, unlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { startStack } from './daemon.mjs';
import { eventually, sleep } from './lib.mjs';
import { ociLayout, registryUnavailable, startRegistry } from './lib/registry-fixture.mjs';

if (!process.env.SBX_E2E_NETNS && process.getuid?.() === 0) {
	// The python image is built (debootstrap) out here, where Debian's mirror is reachable.
	if (!registryUnavailable()) ociLayout('python');
	const r = spawnSync('unshare', ['-n', '--', 'sh', '-c', 'ip link set lo up && exec "$0" "$@"', process.execPath,
		...process.execArgv, ...process.argv.slice(1)], { stdio: 'inherit', env: { ...process.env, SBX_E2E_NETNS: '1' } });
	process.exit(r.status ?? 1);
}

const TOKEN = 'compose-paths-e2e-token';
const START_MS = 240000;
const SECRET = 'host-secret-outside-the-roots';

// The worker prints what its share and its config directory hold, then waits.
const MANIFEST = `name: paths
runtime:
  base_image: iiidev/python:latest
scripts:
  start: >-
    echo "share: $(ls -A /mnt/host-src | tr '\\n' ' ')";
    for f in /run/iii/config/*; do echo "config $f: $(cat "$f")"; done;
    echo listed; exec sleep 600
resources:
  cpus: 1
  memory: 512Mi
`;

function assertWorkerError(err, code, messageRe) {
	assert.ok(err?.envelope, `an S-code envelope (message: ${err?.message})`);
	assert.equal(err.envelope.code, code, `S-code (message: ${err.envelope.message})`);
	if (messageRe) assert.match(err.envelope.message, messageRe);
}

describe('Compose worker host paths', { skip: registryUnavailable() ?? false }, () => {
	let registry, stack, stateDir, projectDir, composeState, outside, workerDir, configDir;
	const call = (fn, payload, timeoutMs = 60000) => stack.call(`worker::${fn}`, { auth: TOKEN, ...payload }, { timeoutMs });
	const callError = (fn, payload) => stack.callError(`worker::${fn}`, { auth: TOKEN, ...payload });

	before(async () => {
		registry = await startRegistry({ images: ['python'] });
		stateDir = mkdtempSync(path.join(tmpdir(), 'sbx-e2e-paths-state-'));
		projectDir = mkdtempSync(path.join(tmpdir(), 'sbx-e2e-paths-project-'));
		composeState = mkdtempSync(path.join(tmpdir(), 'sbx-e2e-paths-compose-'));
		outside = mkdtempSync(path.join(tmpdir(), 'sbx-e2e-paths-outside-'));
		writeFileSync(path.join(outside, 'config.yaml'), `${SECRET}\n`);
		workerDir = path.join(projectDir, 'w');
		mkdirSync(workerDir);
		writeFileSync(path.join(workerDir, 'iii.worker.yaml'), MANIFEST);
		writeFileSync(path.join(workerDir, 'checked-marker'), 'x');
		configDir = path.join(projectDir, '.iii', 'w');
		mkdirSync(configDir, { recursive: true });
		writeFileSync(path.join(configDir, 'config.yaml'), 'from-the-checked-dir\n');
		// A FIFO nobody writes: opening it for reading would block forever.
		execFileSync('mkfifo', [path.join(configDir, 'a-fifo')]);
		stack = await startStack({
			config: { registry_mirrors: registry.mirrors },
			env: { III_SANDBOX_STATE_DIR: stateDir, III_SANDBOX_WORKER_TOKEN: TOKEN,
				III_COMPOSE_PROJECT_DIR: projectDir, III_COMPOSE_STATE_DIR: composeState },
		});
		const p = await call('prepare', { worker: 'w', host_path: workerDir }, START_MS);
		assert.equal(p.prepared, true);
	});

	after(async () => {
		if (stack) await stack.stop();
		if (registry) await registry.stop();
		for (const d of [stateDir, projectDir, composeState, outside]) if (d) rmSync(d, { recursive: true, force: true });
	});

	test('a prepared directory swapped for `ln -s / <dir>` before start is refused (S501), no VM boots', async () => {
		renameSync(workerDir, `${workerDir}.moved`);
		symlinkSync('/', workerDir);
		try {
			assertWorkerError(await callError('start', { worker: 'w' }), 'S501', /^worker w: host_path '.*\/w' \(resolved: '\/'\) is outside/);
			assert.equal((await call('status', { worker: 'w' })).state, 'prepared');
		} finally {
			unlinkSync(workerDir);
			renameSync(`${workerDir}.moved`, workerDir);
		}
	});

	test('config_dir swapped for a symlink out of the roots during the boot: the guest gets the checked files; a FIFO does not hang start', async () => {
		const console = path.join(stateDir, 'workers', 'w', 'logs', 'console.log');
		rmSync(console, { force: true }); // an earlier boot's
		const started = call('start', { worker: 'w', config_dir: configDir }, START_MS);
		// QEMU is up once its console log exists: start's checks are behind it,
		// the copy of config_dir (after the guest is ready) ahead of it.
		for (let i = 0; i < 6000 && !existsSync(console); i++) await sleep(20);
		assert.ok(existsSync(console), 'the worker VM started');
		renameSync(configDir, `${configDir}.moved`);
		symlinkSync(outside, configDir);
		const s = await started;
		assert.ok(['starting', 'running'].includes(s.state), JSON.stringify(s));
		const logs = await eventually(async () => {
			const l = await call('logs', { worker: 'w' });
			assert.match(l.stdout, /^listed$/m);
			return l;
		}, 120000);
		assert.match(logs.stdout, /^share: .*checked-marker/m, logs.stdout);
		assert.match(logs.stdout, /^config \/run\/iii\/config\/config\.yaml: from-the-checked-dir$/m, logs.stdout);
		assert.doesNotMatch(logs.stdout, new RegExp(SECRET));
		assert.doesNotMatch(logs.stdout, /a-fifo/, 'a FIFO is not copied');
		await call('stop', { worker: 'w' }, 60000);
	});
});
