// Snapshots through the engine (run by bench/snapshot; issue 39 item 8):
// the daemon behind the stand-in engine, called with iii-sdk.  A python
// sandbox (1024 MiB) whose guest holds TOUCH_MIB written by a background
// process and has WRITE_MIB of random bytes written to its disk is
// snapshotted RUNS times (paused_ms, duration_ms, size_bytes), a sandbox
// is created from the snapshot RUNS times (create -> first exec of
// `true`), and it is forked ×8 (ready_ms of the whole fork; PSS of the 8
// forks' QEMUs together against the source's).  The reference is one
// cold boot measured in the same run (`vm run --cold` of the same python
// image -> `true` exited).  Prints "key value" lines and the ratios to
// the cold boot against the targets.
// Usage: node bench/snapshot.mjs [RUNS] [TOUCH_MIB] [WRITE_MIB]
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { startRegistry } from '../tests/e2e/lib/registry-fixture.mjs';
import { processesMentioning, startSandboxStack } from '../tests/e2e/lib/sandbox-stack.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const repo = path.resolve(here, '..');
const runs = Number(process.argv[2] ?? 3);
const touchMib = Number(process.argv[3] ?? 256);
const writeMib = Number(process.argv[4] ?? 200);
const FORKS = 8;
for (const [name, v] of [['RUNS', runs], ['TOUCH_MIB', touchMib], ['WRITE_MIB', writeMib]]) {
	if (!Number.isInteger(v) || v < 1) throw new Error(`bad ${name}: ${v}`);
}
const bin = process.env.SANDBOX_LIBKRUN_BIN ?? path.join(repo, 'build/sandbox-libkrun');
process.env.SANDBOX_LIBKRUN_BIN = bin;

const median = (v) => {
	const s = [...v].sort((a, b) => a - b);
	return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};
async function timed(fn) {
	const t0 = performance.now();
	const r = await fn();
	return [Math.round(performance.now() - t0), r];
}

// The cold boot: the python image (tests/integration/run's fixture, built
// here from the debootstrap tree when missing) booted without a template,
// start -> `true` exited.
function coldBootMs() {
	const img = path.join(repo, '.cache/fixtures/vm-images/python.erofs');
	if (!existsSync(img)) {
		const tree = path.join(repo, '.cache/fixtures/rootfs/python');
		if (!existsSync(tree)) execFileSync(path.join(repo, 'tests/fixtures/rootfs/debian-rootfs.sh'), ['python', path.dirname(tree), 'python3'], { stdio: 'inherit' });
		execFileSync('mkdir', ['-p', path.dirname(img)]);
		execFileSync('mkfs.erofs', ['--quiet', '-x-1', img, tree]);
	}
	const t0 = performance.now();
	execFileSync(bin, ['vm', 'run', '--cold', '--rootfs', img, '--', 'true'], { stdio: 'ignore' });
	return Math.round(performance.now() - t0);
}

// The QEMUs of a state directory and their PSS (KiB) from smaps_rollup.
function qemus(stateDir) {
	return processesMentioning(stateDir).filter((p) => /qemu-system/.test(p.cmdline)).map((p) => {
		const m = readFileSync(`/proc/${p.pid}/smaps_rollup`, 'utf8').match(/^Pss:\s+(\d+) kB/m);
		return { pid: p.pid, pssKib: m ? Number(m[1]) : 0 };
	});
}
const pssMib = (list) => Math.round(list.reduce((a, q) => a + q.pssKib, 0) / 1024);

const cold = [];
for (let i = 0; i < runs; i++) cold.push(coldBootMs());
const reg = await startRegistry({ images: ['python'] });
const s = await startSandboxStack({ registry: reg,
	config: { image_allowlist: ['python'], max_concurrent_sandboxes: FORKS + 4, snapshot_store_mb: 65536 } });
const out = {};
try {
	const { sandbox_id: src } = await s.vm('create', { image: 'python', memory_mb: 1024 });
	const toucher = `import time\nb = bytearray(b'\\x5a') * (${touchMib} << 20)\nprint('touched', flush=True)\ntime.sleep(1e9)\n`;
	const { process_id } = await s.exec(src, { argv: ['python3', '-u', '-c', toucher], background: true });
	for (let t = 0; ; t++) {
		const l = await s.vm('process::logs', { sandbox_id: src, process_id });
		if (l.data.includes('touched')) break;
		if (t > 600) throw new Error('the toucher did not say it touched');
		await new Promise((r) => setTimeout(r, 200));
	}
	await s.exec(src, { argv: ['sh', '-c', `dd if=/dev/urandom of=/root/blob bs=1M count=${writeMib} 2>/dev/null && sync`], timeout_ms: 600000 }, 700000);
	const srcPss = pssMib(qemus(s.stateDir));

	const snaps = [];
	for (let i = 0; i < runs; i++) snaps.push(await s.vm('snapshot', { sandbox_id: src }, 600000));
	out.snapshot_paused_ms = median(snaps.map((x) => x.paused_ms));
	out.snapshot_duration_ms = median(snaps.map((x) => x.duration_ms));
	out.snapshot_size_bytes = median(snaps.map((x) => x.size_bytes));

	const created = [];
	for (let i = 0; i < runs; i++) {
		const [ms, id] = await timed(async () => {
			const { sandbox_id } = await s.vm('create', { snapshot: snaps[0].snapshot_id });
			await s.exec(sandbox_id, { cmd: 'true' });
			return sandbox_id;
		});
		created.push(ms);
		await s.vm('stop', { sandbox_id: id });
	}
	out.create_from_snapshot_first_exec_ms = median(created);
	for (const x of snaps) await s.vm('snapshot::delete', { snapshot_id: x.snapshot_id });

	const before = new Set(qemus(s.stateDir).map((q) => q.pid));
	const f = await s.vm('fork', { sandbox_id: src, count: FORKS }, 900000);
	for (const id of f.sandbox_ids) await s.exec(id, { cmd: 'true' });
	// The capture restarted the source's QEMU before the forks were made:
	// of the new QEMUs, the one started first is the source's.
	const started = (pid) => Number(readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ')[19]);
	const fresh = qemus(s.stateDir).filter((q) => !before.has(q.pid)).sort((x, y) => started(x.pid) - started(y.pid));
	const forks = fresh.slice(1);
	if (forks.length !== FORKS) throw new Error(`${forks.length} fork QEMUs, not ${FORKS}`);
	out.fork8_ready_ms = f.ready_ms;
	out.fork8_snapshot_ms = f.snapshot_ms;
	out.source_pss_mib = srcPss;
	out.fork8_pss_mib = pssMib(forks);
} finally {
	await s.stop();
	await reg.stop();
	s.cleanupState();
}
const coldMs = median(cold);
console.log(`cold_boot_ms ${coldMs}`);
for (const [k, v] of Object.entries(out)) console.log(`${k} ${v}`);
const ratio = (x, y) => (x / y).toFixed(3);
console.log(`ratio_fork8_ready_to_cold ${ratio(out.fork8_ready_ms, coldMs)} (target <= 0.5)`);
console.log(`ratio_create_from_snapshot_to_cold ${ratio(out.create_from_snapshot_first_exec_ms, coldMs)} (target <= 0.1)`);
console.log(`ratio_paused_to_cold ${ratio(out.snapshot_paused_ms, coldMs)} (target <= 0.2)`);
console.log(`ratio_fork8_pss_to_source ${ratio(out.fork8_pss_mib, out.source_pss_mib)} (target <= 2)`);
