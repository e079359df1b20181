// Density through the engine (run by bench/density): N python sandboxes
// created one after the other (each create timed: the call's round trip,
// create -> ready), then, with all N live and idle for a few seconds, each
// QEMU's memory from /proc/PID/smaps_rollup: PSS (its share of every page
// it maps: pages shared by all clones of a template count 1/N each) and
// private pages (Private_Clean + Private_Dirty: what it alone holds), their
// totals against N x guest RAM, and what the templates' RAM takes: the
// daemon's sealed memfds (shared memory, in no VM's PSS) and their sparse
// files on disk.  Then the VM layer on the same image file (`vm run -v`, the
// daemon's state directory so the same template serves): restored and
// cold (`--cold`) boots to ready, medians of 3, and their ratio.  Without
// a warm pool, create -> ready five times through the standby QEMU (config
// standby, the default; each create once a standby waits and had a second
// to start) against that cold boot; the standby counts among the live
// QEMUs above.  With
// warm_pool {python: K} in DENSITY_CONFIG, also create -> first exec of
// `true` four times, each once the pool is full again, against the cold
// boot (the parked VMs count among the live QEMUs above).
// Usage: node bench/density.mjs N   (DENSITY_LOG=FILE keeps the daemon's log)
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, readlinkSync, realpathSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { BIN } from '../tests/e2e/daemon.mjs';
import { startRegistry } from '../tests/e2e/lib/registry-fixture.mjs';
import { processesMentioning, startSandboxStack } from '../tests/e2e/lib/sandbox-stack.mjs';

const n = Number(process.argv[2] ?? 32);
if (!Number.isInteger(n) || n < 1) throw new Error('usage: bench/density [N]');
const extra = JSON.parse(process.env.DENSITY_CONFIG ?? '{}');
const guestMiB = extra.default_memory_mb ?? 512;

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const median = (v) => [...v].sort((a, b) => a - b)[Math.floor((v.length - 1) / 2)];
const kib = (text, key) => Number(new RegExp(`^${key}:\\s+(\\d+) kB`, 'm').exec(text)?.[1] ?? 0);
const mib = (k) => (k / 1024).toFixed(1);
const row = (label, value) => console.log(`${label.padEnd(58)} ${value}`);
const qemus = (dir) => processesMentioning(dir).filter((p) => /qemu-system/.test(p.cmdline)).map((p) => p.pid);

// The daemon's template RAM memfds (vm/template_memfd.h), each counted
// once: KiB allocated.
function templateMemfdKiB(pid) {
	const seen = new Set();
	let total = 0;
	for (const fd of readdirSync(`/proc/${pid}/fd`)) {
		try {
			if (!readlinkSync(`/proc/${pid}/fd/${fd}`).startsWith('/memfd:sandbox-libkrun-template')) continue;
			const st = statSync(`/proc/${pid}/fd/${fd}`);
			if (!seen.has(st.ino)) total += st.blocks / 2;
			seen.add(st.ino);
		} catch {
			// closed meanwhile
		}
	}
	return total;
}

// KiB the templates' sparse RAM files take on disk.
function templateFileKiB(stateDir) {
	const dir = path.join(stateDir, 'snapshots');
	let total = 0;
	for (const t of existsSync(dir) ? readdirSync(dir) : []) {
		const f = path.join(dir, t, 'ram');
		if (existsSync(f)) total += statSync(f).blocks / 2;
	}
	return total;
}

const reg = await startRegistry({ images: ['python'] });
let s;
try {
	s = await startSandboxStack({ registry: reg, standby: true, config: { image_allowlist: ['python'], ...extra } });
	const createMs = [];
	const ids = [];
	const failures = [];
	for (let i = 0; i < n; i++) {
		const t = performance.now();
		try {
			ids.push((await s.vm('create', { image: 'python' })).sandbox_id);
			createMs.push(performance.now() - t);
		} catch (e) {
			failures.push(e.message);
		}
	}
	// Every sandbox answers, then all idle.
	for (const id of ids) await s.exec(id, { cmd: 'true' });
	await sleep(5000);
	const vms = qemus(s.stateDir).map((pid) => {
		const r = readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8');
		return { pss: kib(r, 'Pss'), priv: kib(r, 'Private_Clean') + kib(r, 'Private_Dirty'), rss: kib(r, 'Rss') };
	});
	const sum = (k) => vms.reduce((a, v) => a + v[k], 0);
	const tplKiB = templateMemfdKiB(s.daemon.proc.pid), tplFileKiB = templateFileKiB(s.stateDir);

	const erofsDir = path.join(s.stateDir, 'images', 'erofs');
	const image = path.join(erofsDir, readdirSync(erofsDir).find((f) => f.endsWith('.erofs')));
	const ready = (cold) => {
		const v = [];
		for (let i = 0; i < 3; i++) {
			const r = spawnSync(BIN, ['vm', 'run', '-v', ...(cold ? ['--cold'] : []), '--rootfs', image, '--', 'true'],
				{ encoding: 'utf8', env: { ...process.env, III_SANDBOX_STATE_DIR: s.stateDir } });
			const m = /ready (\d+) ms( \(restored)?/.exec(r.stderr);
			if (r.status !== 0 || !m || Boolean(m[2]) === cold) throw new Error(`vm run${cold ? ' --cold' : ''}: ${r.stderr}`);
			v.push(Number(m[1]));
		}
		return median(v);
	};

	row('sandboxes created (one after the other) / failed', `${ids.length} / ${failures.length}`);
	row('configuration', JSON.stringify({ image_allowlist: ['python'], ...extra }));
	row('create -> ready ms: first (template made) / median / max of the rest',
		`${createMs[0]?.toFixed(0)} / ${median(createMs.slice(1)).toFixed(0)} / ${Math.max(...createMs.slice(1)).toFixed(0)}`);
	row('create -> ready ms, each', createMs.map((x) => x.toFixed(0)).join(' '));
	row(`per-VM PSS MiB with ${vms.length} live: median / max`, `${mib(median(vms.map((v) => v.pss)))} / ${mib(Math.max(...vms.map((v) => v.pss)))}`);
	row(`per-VM private MiB with ${vms.length} live: median / max`, `${mib(median(vms.map((v) => v.priv)))} / ${mib(Math.max(...vms.map((v) => v.priv)))}`);
	row('per-VM RSS MiB: median', mib(median(vms.map((v) => v.rss))));
	row(`total PSS MiB / N x guest RAM (${n} x ${guestMiB})`, `${mib(sum('pss'))} / ${n * guestMiB} (${(sum('pss') / 1024 / (n * guestMiB)).toFixed(3)})`);
	row('total private MiB', mib(sum('priv')));
	row('template RAM: daemon memfds MiB / sparse files on disk MiB', `${mib(tplKiB)} / ${mib(tplFileKiB)}`);
	await Promise.all(ids.map((id) => s.vm('stop', { sandbox_id: id }).catch(() => {})));
	// With a warm pool: create -> first exec of `true` on a parked VM, each
	// once the pool is full again.
	const pooled = [];
	const want = extra.warm_pool?.python ?? 0;
	const count = (re) => s.daemon.output().match(re)?.length ?? 0;
	const parkedNow = () => count(/warm pool: \d+ of \d+ VMs of python parked/g) - count(/warm pool: a parked VM of python taken/g);
	for (let i = 0; i < 4 && want > 0; i++) {
		for (let t = 0; t < 1200 && parkedNow() < want; t++) await sleep(100);
		const t = performance.now();
		const id = (await s.vm('create', { image: 'python' })).sandbox_id;
		await s.exec(id, { cmd: 'true' });
		pooled.push(performance.now() - t);
		await s.vm('stop', { sandbox_id: id });
	}
	// Without a pool, a create restores into the standby QEMU launched
	// after the last create (config standby, the default): create -> ready
	// five times, each once a standby waits and had a second to start (a
	// caller's creates are seldom back to back).
	const standby = [];
	const waits = () => count(/standby: a VM of python waits for the next create/g);
	const takes = () => count(/standby: the VM waiting for python taken/g);
	// What a waiting standby holds and spends: its anonymous memory and
	// its CPU ticks over 5 s (all sandboxes are stopped: it is the only QEMU).
	let idle = null;
	if (want === 0 && extra.standby !== false) {
		for (let t = 0; t < 600 && waits() <= takes(); t++) await sleep(100);
		await sleep(1000);
		const q = processesMentioning(s.stateDir).filter((p) => /qemu-system/.test(p.cmdline));
		const ticks = (pid) => readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ')
			.slice(11, 13).reduce((a, x) => a + Number(x), 0);
		if (q.length === 1) {
			const before = ticks(q[0].pid);
			await sleep(5000);
			idle = { anonKiB: kib(readFileSync(`/proc/${q[0].pid}/smaps_rollup`, 'utf8'), 'Pss_Anon'),
				ticks: ticks(q[0].pid) - before };
		}
	}
	for (let i = 0; i < 5 && want === 0 && extra.standby !== false; i++) {
		for (let t = 0; t < 600 && waits() <= takes(); t++) await sleep(100);
		await sleep(1000);
		const before = takes();
		const t = performance.now();
		const id = (await s.vm('create', { image: 'python' })).sandbox_id;
		const ms = performance.now() - t;
		if (takes() > before) standby.push(ms);
		await s.vm('stop', { sandbox_id: id });
	}
	const restored = ready(false), cold = ready(true);
	row('vm run -v, same image: restored ready / cold ready ms (median of 3)', `${restored} / ${cold}`);
	row('restore -> ready / cold boot', (restored / cold).toFixed(3));
	if (idle) row('standby QEMU waiting: anonymous MiB / CPU ticks over 5 s', `${mib(idle.anonKiB)} / ${idle.ticks}`);
	if (standby.length) {
		row('standby QEMU: create -> ready ms, each', standby.map((x) => x.toFixed(0)).join(' '));
		row('standby QEMU: create -> ready (median) / cold ready', (median(standby) / cold).toFixed(3));
	}
	if (pooled.length) {
		row('warm pool: create -> first exec ms, each', pooled.map((x) => x.toFixed(0)).join(' '));
		row('warm pool: create -> first exec (median) / cold ready', (median(pooled) / cold).toFixed(3));
	}
	for (const f of failures.slice(0, 5)) console.log(`failure: ${f}`);
} finally {
	if (process.env.DENSITY_LOG && s) writeFileSync(process.env.DENSITY_LOG, s.daemon.output());
	await s?.stop();
	s?.cleanupState();
	await reg.stop();
}
