// Soak benchmark through the engine (run by bench/soak): N python sandboxes
// live at once, each running short `sh -c` execs back to back for T
// seconds with every output checked, then all stopped.  Prints creates/s,
// exec p50/p99, failed execs, per-VM peak RSS and PSS (sampled every 2 s)
// with where a VM's memory goes at the end (guest RAM, TCG's translation
// cache, the rest of QEMU), the host's MemAvailable low point, the OOM kills
// the kernel counted during the run, the daemon's RSS and open fds before
// and after, and what was left behind.
// Every failed call is printed with its whole reply and when it happened;
// SBX_E2E_DAEMON_LOG=FILE keeps the daemon's log beside them.
// Usage: node bench/soak.mjs N SECONDS   (SOAK_CONFIG='{"tcg_cache_mb":32}'
// adds configuration keys; the default configuration otherwise)
import { readdirSync, readFileSync } from 'node:fs';
import { startRegistry } from '../tests/e2e/lib/registry-fixture.mjs';
import { processesMentioning, startSandboxStack, vmFilesLeft } from '../tests/e2e/lib/sandbox-stack.mjs';

const n = Number(process.argv[2] ?? 32);
const seconds = Number(process.argv[3] ?? 600);
if (!Number.isInteger(n) || n < 1 || !(seconds > 0)) throw new Error('usage: bench/soak [N] [SECONDS]');
const extra = JSON.parse(process.env.SOAK_CONFIG ?? '{}');

const MiB = 1024;
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const quantile = (values, q) => {
	const v = [...values].sort((a, b) => a - b);
	return v.length ? v[Math.min(v.length - 1, Math.ceil(q * v.length) - 1)] : NaN;
};
const kib = (text, key) => Number(new RegExp(`^${key}:\\s+(\\d+) kB`, 'm').exec(text)?.[1] ?? NaN);
const vmstat = (key) => Number(new RegExp(`^${key} (\\d+)$`, 'm').exec(readFileSync('/proc/vmstat', 'utf8'))?.[1] ?? NaN);

function daemonUsage(pid) {
	return { rss: kib(readFileSync(`/proc/${pid}/status`, 'utf8'), 'VmRSS'), fds: readdirSync(`/proc/${pid}/fd`).length };
}

const qemus = (dir) => processesMentioning(dir).filter((p) => /qemu-system/.test(p.cmdline)).map((p) => p.pid);

// Resident KiB of one QEMU by what the mapping holds: guest RAM (the
// anonymous mapping of the guest's size), the translation cache (the rwx
// mapping TCG generates code into), and the rest.
function breakdown(pid, guestKiB) {
	const out = { guest: 0, tcg: 0, other: 0 };
	let kind = 'other';
	for (const line of readFileSync(`/proc/${pid}/smaps`, 'utf8').split('\n')) {
		const head = /^([0-9a-f]+)-([0-9a-f]+) (\S{4})/.exec(line);
		if (head) {
			const size = (parseInt(head[2], 16) - parseInt(head[1], 16)) / 1024;
			kind = head[3].startsWith('rwx') ? 'tcg' : size >= guestKiB && size <= guestKiB + 4 * MiB ? 'guest' : 'other';
			continue;
		}
		const rss = /^Rss:\s+(\d+) kB/.exec(line);
		if (rss) out[kind] += Number(rss[1]);
	}
	return out;
}

const reg = await startRegistry({ images: ['python'] });
let s;
try {
	s = await startSandboxStack({ registry: reg, config: { image_allowlist: ['python'], ...extra } });
	const warm = await s.vm('create', { image: 'python' });
	await s.vm('stop', { sandbox_id: warm.sandbox_id });
	const before = daemonUsage(s.daemon.proc.pid);
	const oomBefore = vmstat('oom_kill');

	const t0 = performance.now();
	// When a failure happened, to match it with the daemon's log.
	const at = () => `+${((performance.now() - t0) / 1000).toFixed(1)} s`;
	const created = await Promise.allSettled(Array.from({ length: n }, () => s.vm('create', { image: 'python' })));
	const createMs = performance.now() - t0;
	const ids = created.filter((r) => r.status === 'fulfilled').map((r) => r.value.sandbox_id);
	const createFailures = created.filter((r) => r.status === 'rejected').map((r) => r.reason.message);

	const peak = new Map(); // pid -> {rss, pss}
	let memAvailableLow = Infinity;
	let sampling = true;
	const sampler = (async () => {
		while (sampling) {
			memAvailableLow = Math.min(memAvailableLow, kib(readFileSync('/proc/meminfo', 'utf8'), 'MemAvailable'));
			for (const pid of qemus(s.stateDir)) {
				try {
					const r = readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8');
					const p = peak.get(pid) ?? { rss: 0, pss: 0 };
					peak.set(pid, { rss: Math.max(p.rss, kib(r, 'Rss')), pss: Math.max(p.pss, kib(r, 'Pss')) });
				} catch {
					// exited meanwhile
				}
			}
			await sleep(2000);
		}
	})();

	const latencies = [];
	const failures = [];
	const deadline = performance.now() + seconds * 1000;
	await Promise.all(ids.map(async (id, k) => {
		for (let i = 0; performance.now() < deadline; i++) {
			const want = `soak ${k} ${i}\n5\n`;
			const t = performance.now();
			try {
				const r = await s.exec(id, { cmd: `sh -c 'echo soak ${k} ${i}; ls / | head -5 | wc -l'` });
				latencies.push(performance.now() - t);
				if (r.exit_code !== 0 || r.stdout !== want) failures.push(`${at()} ${id} exec ${i}: ${JSON.stringify(r)}`);
			} catch (e) {
				failures.push(`${at()} ${id} exec ${i}: ${e.message}`);
				await sleep(1000);
			}
		}
	}));
	const guestKiB = (extra.default_memory_mb ?? 512) * MiB;
	const parts = qemus(s.stateDir).map((pid) => breakdown(pid, guestKiB));
	sampling = false;
	await sampler;
	const listed = (await s.vm('list', {})).sandboxes.length;
	const tStop = performance.now();
	await Promise.all(ids.map((id) => s.vm('stop', { sandbox_id: id }).catch((e) => failures.push(`stop ${id}: ${e.message}`))));
	const stopMs = performance.now() - tStop;
	await sleep(1000);
	const after = daemonUsage(s.daemon.proc.pid);
	const oomKills = vmstat('oom_kill') - oomBefore;
	const leftQemu = qemus(s.stateDir).length;
	const leftFiles = vmFilesLeft(s.stateDir).length;

	const peaks = [...peak.values()];
	const mib = (k) => (k / MiB).toFixed(0);
	const row = (label, value) => console.log(`${label.padEnd(52)} ${value}`);
	row('sandboxes x seconds', `${n} x ${seconds}`);
	row('configuration', JSON.stringify({ image_allowlist: ['python'], ...extra }));
	row('created / failed creates', `${ids.length} / ${createFailures.length}`);
	row('creates/s', (ids.length / (createMs / 1000)).toFixed(2));
	row('execs / failed execs', `${latencies.length} / ${failures.length}`);
	row('exec p50 / p99 ms', `${quantile(latencies, 0.5).toFixed(0)} / ${quantile(latencies, 0.99).toFixed(0)}`);
	row('sandboxes listed at the end', listed);
	row('per-VM peak RSS MiB: median / max', `${mib(quantile(peaks.map((p) => p.rss), 0.5))} / ${mib(Math.max(...peaks.map((p) => p.rss)))}`);
	row('per-VM peak PSS MiB: median / max', `${mib(quantile(peaks.map((p) => p.pss), 0.5))} / ${mib(Math.max(...peaks.map((p) => p.pss)))}`);
	for (const k of ['guest', 'tcg', 'other']) {
		row(`  at the end, ${k === 'guest' ? 'guest RAM' : k === 'tcg' ? 'TCG cache' : 'rest of QEMU'} MiB: median / max`,
			`${mib(quantile(parts.map((p) => p[k]), 0.5))} / ${mib(Math.max(...parts.map((p) => p[k])))}`);
	}
	row('host MemAvailable low point MiB', mib(memAvailableLow));
	row('OOM kills during the run (/proc/vmstat oom_kill)', oomKills);
	row('stop all, ms', stopMs.toFixed(0));
	row('daemon RSS MiB before / after', `${mib(before.rss)} / ${mib(after.rss)}`);
	row('daemon open fds before / after', `${before.fds} / ${after.fds}`);
	row('left behind: QEMU processes / VM files', `${leftQemu} / ${leftFiles}`);
	// Every failure with its whole reply: one lost in a summary is not found again.
	for (const f of [...createFailures, ...failures]) console.log(`failure: ${f}`);
} finally {
	await s?.stop();
	s?.cleanupState();
	await reg.stop();
}
