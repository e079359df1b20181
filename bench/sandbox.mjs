// Sandbox benchmark through the engine (run by bench/sandbox): the daemon
// behind the stand-in engine, called with iii-sdk, booting the python test
// image from the loopback registry.  Prints medians and p95 over RUNS runs
// beside bench/vm's numbers for the same kernel and image without the
// adapter (its bare-kernel floor, and python3 booted as init for `run`),
// so the ratios show the adapter's own cost.
// Usage: node bench/sandbox.mjs RUNS   (SANDBOX_BENCH_LOG=FILE keeps the
// daemon's debug log; SANDBOX_BENCH_CONFIG='{"key": value}' adds
// configuration keys: with warm_pool {python: K} each timed run, create and
// parallel creates starts once the pool is full again)
import { execFile, execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { startRegistry } from '../tests/e2e/lib/registry-fixture.mjs';
import { startSandboxStack } from '../tests/e2e/lib/sandbox-stack.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const runs = Number(process.argv[2] ?? 10);
if (!Number.isInteger(runs) || runs < 1) throw new Error(`bad RUNS: ${process.argv[2]}`);
const EXEC_RUNS = Math.max(runs, 20);
// On two shared cores an exec's round trip moves between about 8 and 20 ms
// from one VM (and minute) to the next, for the adapter's path and the VM
// API's alike: the ratio is taken over several sandboxes and VMs.
const EXEC_ROUNDS = 3;
const PARALLEL = 4;

function quantile(values, q) {
	const v = [...values].sort((a, b) => a - b);
	return v[Math.min(v.length - 1, Math.ceil(q * v.length) - 1)];
}
const median = (v) => {
	const s = [...v].sort((a, b) => a - b);
	return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};

async function timed(fn) {
	const t0 = performance.now();
	const r = await fn();
	return [Math.round(performance.now() - t0), r];
}

// bench/vm's medians by the label of its output lines.
function benchVm() {
	const out = execFileSync(path.join(here, 'vm'), [String(runs)], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] });
	const value = (label) => {
		const line = out.split('\n').find((l) => l.startsWith(label));
		if (!line) throw new Error(`bench/vm printed no "${label}" line:\n${out}`);
		return Number(line.trim().split(/\s+/).pop());
	};
	return {
		floor: value('floor: bare kernel boot to root mount'),
		floorPython: value('floor python: python3 as init prints 42'),
		ready: value('start -> guest init ready'),
		readyCold: value('cold: start -> guest init ready'),
		pythonCold: value('cold: start -> python print(6*7) output'),
		python: value('start -> python print(6*7) first output'),
		exec: value('exec round trip of true'),
	};
}

const extra = JSON.parse(process.env.SANDBOX_BENCH_CONFIG ?? '{}');
const poolWant = extra.warm_pool?.python ?? 0;
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const reg = await startRegistry({ images: ['python'] });
let s;
// Waits (up to 2 minutes) until the warm pool holds poolWant parked VMs.
async function poolFull() {
	const count = (re) => s.daemon.output().match(re)?.length ?? 0;
	const parked = () => count(/warm pool: \d+ of \d+ VMs of python parked/g) - count(/warm pool: a parked VM of python taken/g);
	for (let t = 0; t < 1200 && parked() < poolWant; t++) await sleep(100);
}
const samples = { run: [], first: [], stop: [], exec: [], parallel: [] };
// bench/vm's exec round trip uses the busybox image, whose static `true`
// starts faster under TCG than the python image's dynamic one: the VM API's
// round trip (bench/vm_exec.c, the control port without the adapter and the
// engine) on the image the sandboxes run.
const bin = process.env.SANDBOX_LIBKRUN_BIN ?? path.join(here, '../build/sandbox-libkrun');
const apiExecs = [];
async function vmApiExec() {
	const { stdout } = await promisify(execFile)(path.join(path.dirname(bin), 'bench/vm_exec_bench'),
		[path.join(here, '../.cache/fixtures/vm-images/python.erofs'), String(EXEC_RUNS)], { encoding: 'utf8' });
	return Number(stdout.match(/^exec_true_ms (\d+(?:\.\d+)?)$/m)[1]);
}
try {
	s = await startSandboxStack({ registry: reg, standby: true,
		config: { image_allowlist: ['python'], max_concurrent_sandboxes: PARALLEL, ...extra } });
	// Warm-up: the image pull, the kernel wrapper and the image's VM
	// snapshot are made once.
	const warm = await s.vm('create', { image: 'python' });
	await s.vm('stop', { sandbox_id: warm.sandbox_id });

	for (let i = 0; i < runs; i++) {
		await poolFull();
		const [ms, r] = await timed(() => s.vm('run', { image: 'python', lang: 'python', code: 'print(6*7)' }));
		if (r.stdout !== '42\n') throw new Error(`run printed ${JSON.stringify(r)}`);
		samples.run.push(ms);
	}
	for (let i = 0; i < runs; i++) {
		await poolFull();
		const [ms, id] = await timed(async () => {
			const { sandbox_id } = await s.vm('create', { image: 'python' });
			await s.exec(sandbox_id, { cmd: 'true' });
			return sandbox_id;
		});
		samples.first.push(ms);
		samples.stop.push((await timed(() => s.vm('stop', { sandbox_id: id })))[0]);
	}
	// Each round: a fresh sandbox, half its execs, the VM API's round trip
	// (a VM of its own), the other half, so both see the same machine.
	const execTimed = async (live) => {
		const t0 = performance.now();
		await s.exec(live, { cmd: 'true' });
		samples.exec.push(performance.now() - t0);
	};
	for (let round = 0; round < EXEC_ROUNDS; round++) {
		const { sandbox_id: live } = await s.vm('create', { image: 'python' });
		for (let i = 0; i < 3; i++) await s.exec(live, { cmd: 'true' });
		for (let i = 0; i < EXEC_RUNS / 2; i++) await execTimed(live);
		apiExecs.push(await vmApiExec());
		for (let i = 0; i < EXEC_RUNS / 2; i++) await execTimed(live);
		await s.vm('stop', { sandbox_id: live });
	}
	for (let i = 0; i < runs; i++) {
		await poolFull();
		const [ms, created] = await timed(() => Promise.all(Array.from({ length: PARALLEL },
			() => s.vm('create', { image: 'python' }))));
		samples.parallel.push(ms);
		await Promise.all(created.map(({ sandbox_id }) => s.vm('stop', { sandbox_id })));
	}
} finally {
	await s?.stop();
	s?.cleanupState();
	await reg.stop();
}
if (process.env.SANDBOX_BENCH_LOG) writeFileSync(process.env.SANDBOX_BENCH_LOG, s.daemon.output());

const vm = benchVm();
const row = (label, v, base) => {
	const m = Math.round(median(v));
	const ratio = base ? (m / base).toFixed(2) : '';
	console.log(`${label.padEnd(46)} ${String(m).padStart(7)} ${String(quantile(v, 0.95)).padStart(7)} ${ratio.padStart(7)}`);
};
if (poolWant > 0) console.log(`configuration: ${JSON.stringify(extra)} (each run, create and parallel creates with the pool full)`);
console.log(`${`through the engine (ms, ${runs} runs)`.padEnd(46)} ${'median'.padStart(7)} ${'p95'.padStart(7)} ${'/floor'.padStart(7)}`);
row('run python print(6*7)', samples.run, vm.floor);
row('create -> first exec (true)', samples.first, vm.floor);
row(`${PARALLEL} creates in parallel`, samples.parallel, vm.floor);
row('stop', samples.stop);
const fixed = (v) => v.toFixed(1);
console.log(`${`exec round trip of true (n=${EXEC_RUNS * EXEC_ROUNDS})`.padEnd(46)} ${fixed(median(samples.exec)).padStart(7)} ` +
	`${fixed(quantile(samples.exec, 0.95)).padStart(7)}`);
console.log(`bench/vm, the same kernel and image without the adapter (medians of ${runs}):`);
console.log(`${'  floor: bare kernel boot to root mount'.padEnd(46)} ${String(vm.floor).padStart(7)}`);
console.log(`${'  floor python: python3 as init prints 42'.padEnd(46)} ${String(vm.floorPython).padStart(7)}`);
console.log(`${'  vm run: start -> guest init ready'.padEnd(46)} ${String(vm.ready).padStart(7)}`);
console.log(`${'  vm run --cold: start -> guest init ready'.padEnd(46)} ${String(vm.readyCold).padStart(7)}`);
console.log(`${'  vm run: start -> python print(6*7) output'.padEnd(46)} ${String(vm.python).padStart(7)}`);
console.log(`${'  vm run --cold: python print(6*7) output'.padEnd(46)} ${String(vm.pythonCold).padStart(7)}`);
console.log(`${'  vm API: exec round trip of true (busybox)'.padEnd(46)} ${String(vm.exec).padStart(7)}`);
console.log(`${`  vm API: exec round trip (python, ${EXEC_ROUNDS} VMs)`.padEnd(46)} ${fixed(median(apiExecs)).padStart(7)}`);
console.log(`run / floor python (like for like): ${(median(samples.run) / vm.floorPython).toFixed(2)}`);
console.log(`run / vm run python: ${(median(samples.run) / vm.python).toFixed(2)}; ` +
	`exec round trip / vm API exec (python image): ${(median(samples.exec) / median(apiExecs)).toFixed(2)} (target <= 1.25)`);
