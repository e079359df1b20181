// Compose worker benchmark (run by bench/worker): the daemon behind the
// stand-in engine, called with iii-sdk.  A path:// worker on the node test
// image runs a Node worker using iii-sdk; each run times worker::start until
// its function (bench::ping) answers through the engine, then stops it: once
// after the source changed (as a deploy does: the guest copies it into
// /workspace) and once more with the source unchanged (a restart).
// Beside it: sandbox create -> first exec of `true` on the same image.
// Prints medians (and min/max) over RUNS runs, after one warm-up of each.
// Usage: node bench/worker.mjs RUNS
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { startStack } from '../tests/e2e/daemon.mjs';
import { startRegistry } from '../tests/e2e/lib/registry-fixture.mjs';
import { copySdk, sdkWorkerSource } from '../tests/e2e/lib/worker-fixture.mjs';

const runs = Number(process.argv[2] ?? 5);
if (!Number.isInteger(runs) || runs < 1) throw new Error(`bad RUNS: ${process.argv[2]}`);
const TOKEN = 'bench-worker-token';
const LONG = 300000;

const median = (v) => {
	const s = [...v].sort((a, b) => a - b);
	return s.length % 2 ? s[(s.length - 1) / 2] : Math.round((s[s.length / 2 - 1] + s[s.length / 2]) / 2);
};

const reg = await startRegistry({ images: ['node'] });
const stateDir = mkdtempSync(path.join(tmpdir(), 'sbx-bench-worker-state-'));
const projectDir = mkdtempSync(path.join(tmpdir(), 'sbx-bench-worker-project-'));
const workerDir = path.join(projectDir, 'ping');
mkdirSync(workerDir);
writeFileSync(path.join(workerDir, 'iii.worker.yaml'),
	'name: ping\nruntime:\n  base_image: iiidev/node:latest\nscripts:\n  start: node worker.mjs\nresources:\n  cpus: 1\n  memory: 1Gi\n');
writeFileSync(path.join(workerDir, 'worker.mjs'), sdkWorkerSource('bench::ping', 'return { pong: true };'));
copySdk(workerDir);

// A process's user + system CPU time so far, in ms (/proc/PID/stat).
const cpuMs = (pid) => {
	const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
	const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
	return Math.round(((Number(f[11]) + Number(f[12])) * 1000) / TICKS);
};
const TICKS = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }));

let s;
const samples = { answered: [], changed: [], changedCpu: [], restart: [], restartCpu: [], stop: [], sandbox: [] };
try {
	s = await startStack({
		config: { registry_mirrors: reg.mirrors, image_allowlist: ['node'] },
		env: { III_SANDBOX_STATE_DIR: stateDir, III_SANDBOX_WORKER_TOKEN: TOKEN, III_COMPOSE_PROJECT_DIR: projectDir },
	});
	const call = (fn, payload) => s.call(`worker::${fn}`, { auth: TOKEN, worker: 'ping', ...payload }, { timeoutMs: LONG });
	await call('prepare', { host_path: workerDir });
	// worker::start until bench::ping answers through the engine: [ms, ms
	// until start answered, QEMU's CPU ms by then].  QEMU's CPU time is the
	// guest's work under TCG, less moved than the wall clock by the other
	// work on the machine's cores.
	const start = async () => {
		const t0 = performance.now();
		const { pid } = await call('start', {});
		const answered = Math.round(performance.now() - t0);
		await s.engine.waitFor(() => s.engine.functions.has('bench::ping'), LONG, 'bench::ping');
		const r = await s.caller.trigger({ function_id: 'bench::ping', payload: {}, timeoutMs: 60000 });
		if (!r?.pong) throw new Error(`bench::ping answered ${JSON.stringify(r)}`);
		const ms = Math.round(performance.now() - t0);
		return [ms, answered, cpuMs(pid)];
	};
	const stop = async () => {
		const t1 = performance.now();
		await call('stop', {});
		await s.engine.waitFor(() => !s.engine.functions.has('bench::ping'), 60000, 'bench::ping gone');
		return Math.round(performance.now() - t1);
	};
	// warm-up: the first start runs setup/install, the page cache fills
	await start();
	await stop();
	for (let i = 0; i < runs; i++) {
		// A deploy: the source changed (its mtime), so the start copies it.
		const now = new Date();
		utimesSync(path.join(workerDir, 'worker.mjs'), now, now);
		const [changed, , changedCpu] = await start();
		samples.changed.push(changed);
		samples.changedCpu.push(changedCpu);
		samples.stop.push(await stop());
		// A restart of the same source.
		const [ms, answered, cpu] = await start();
		samples.restart.push(ms);
		samples.restartCpu.push(cpu);
		samples.answered.push(answered);
		samples.stop.push(await stop());
	}
	const first = async () => {
		const t0 = performance.now();
		const { sandbox_id } = await s.call('create', { image: 'node' }, { timeoutMs: LONG });
		await s.call('exec', { sandbox_id, cmd: 'true' }, { timeoutMs: LONG });
		const ms = Math.round(performance.now() - t0);
		await s.call('stop', { sandbox_id }, { timeoutMs: LONG });
		return ms;
	};
	await first(); // warm-up: the image's snapshot template is saved
	for (let i = 0; i < runs; i++) samples.sandbox.push(await first());
} finally {
	await s?.stop();
	await reg.stop();
	rmSync(stateDir, { recursive: true, force: true });
	rmSync(projectDir, { recursive: true, force: true });
}
const row = (label, v) => console.log(`${label.padEnd(58)} ${String(median(v)).padStart(7)} ${String(Math.min(...v)).padStart(7)} ${String(Math.max(...v)).padStart(7)}`);
console.log(`${`node image through the engine (ms, ${runs} runs)`.padEnd(58)} ${'median'.padStart(7)} ${'min'.padStart(7)} ${'max'.padStart(7)}`);
row('worker::start answered (VM up, process spawned)', samples.answered);
row('worker::start -> first function answers, source changed', samples.changed);
row('restart (unchanged source) -> first function answers', samples.restart);
row('  QEMU CPU ms by then, source changed', samples.changedCpu);
row('  QEMU CPU ms by then, restart (unchanged source)', samples.restartCpu);
row('worker::stop -> function unregistered', samples.stop);
row('sandbox create -> first exec of true (snapshot)', samples.sandbox);
console.log(`worker restart / sandbox first exec: ${(median(samples.restart) / median(samples.sandbox)).toFixed(2)}`);
