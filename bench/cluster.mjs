// The front's cost (run by bench/cluster, issue 28): members in namespaces
// behind `serve --front` on the stand-in engine, the python test image from
// the loopback registry.
//   1. exec round trip of `true` on one sandbox of m1, through the front
//      (default namespace) and straight to m1 (its namespace), alternating
//      call by call from one raw caller, so both see the same machine;
//   2. creates/s through the front with 1 and with 3 members: CREATES
//      creates, PARALLEL in flight, each member warmed up first (its pull
//      and its snapshot template made), then all stopped.
// Usage: node bench/cluster.mjs EXECS CREATES   (SANDBOX_BENCH_CONFIG='{"key":
// value}' adds configuration keys to every member)
import { startRegistry } from '../tests/e2e/lib/registry-fixture.mjs';
import { cleanupCluster, startCluster } from '../tests/e2e/lib/cluster-stack.mjs';

const execs = Number(process.argv[2] ?? 200);
const creates = Number(process.argv[3] ?? 24);
for (const [name, v] of [['EXECS', execs], ['CREATES', creates]])
	if (!Number.isInteger(v) || v < 1) throw new Error(`bad ${name}: ${v}`);
const PARALLEL = 4;
const BOOT_MS = 180000;
const config = { image_allowlist: ['python'], default_memory_mb: 256, max_concurrent_sandboxes: creates,
	...JSON.parse(process.env.SANDBOX_BENCH_CONFIG ?? '{}') };

const quantile = (values, q) => {
	const v = [...values].sort((a, b) => a - b);
	return v[Math.min(v.length - 1, Math.ceil(q * v.length) - 1)];
};
const median = (v) => {
	const s = [...v].sort((a, b) => a - b);
	return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};
const fn = (f) => `sandbox-libkrun::${f}`;

// Each member's first create pulls the image and saves its template.
async function warmUp(c) {
	await Promise.all(c.members.map(async (m) => {
		const { sandbox_id } = await c.inNs(m.namespace, 'create', { image: 'python' }, BOOT_MS);
		await c.inNs(m.namespace, 'stop', { sandbox_id });
	}));
}

// {direct, front}: exec round trips (ms) on a sandbox of m1.
async function execRoundTrips(c) {
	const { sandbox_id } = await c.inNs('m1', 'create', { image: 'python' }, BOOT_MS);
	const req = { sandbox_id, cmd: 'true' };
	const ways = { direct: { namespace: 'm1' }, front: {} };
	const samples = { direct: [], front: [] };
	const ensureFound = await c.raw.invoke(fn('exec'), req, ways.front);
	if (ensureFound.exit_code !== 0) throw new Error(`exec true: ${JSON.stringify(ensureFound)}`);
	for (let i = 0; i < 5; i++) await c.raw.invoke(fn('exec'), req, ways.direct);
	for (let i = 0; i < execs; i++) {
		for (const way of i % 2 ? ['direct', 'front'] : ['front', 'direct']) {
			const t0 = performance.now();
			const r = await c.raw.invoke(fn('exec'), req, ways[way]);
			samples[way].push(performance.now() - t0);
			if (r.exit_code !== 0) throw new Error(`exec true (${way}): ${JSON.stringify(r)}`);
		}
	}
	await c.inNs('m1', 'stop', { sandbox_id });
	return samples;
}

// Creates/s through the front: `creates` creates, PARALLEL at a time; the
// members' share of them; all stopped after.
async function createRate(c) {
	const ids = [];
	let next = 0;
	const t0 = performance.now();
	await Promise.all(Array.from({ length: PARALLEL }, async () => {
		while (next < creates) {
			next++;
			ids.push((await c.raw.invoke(fn('create'), { image: 'python' }, { timeoutMs: BOOT_MS })).sandbox_id);
		}
	}));
	const secs = (performance.now() - t0) / 1000;
	const share = await Promise.all(c.members.map(async (m) =>
		`${m.namespace} ${(await c.inNs(m.namespace, 'list', {})).sandboxes.length}`));
	await Promise.all(ids.map((sandbox_id) => c.raw.invoke(fn('stop'), { sandbox_id })));
	return { rate: creates / secs, secs, share: share.join(', ') };
}

async function withCluster(registry, members, work) {
	const c = await startCluster({ registry, members, config, standby: true });
	try {
		await warmUp(c);
		return await work(c);
	} finally {
		await c.stop();
		cleanupCluster(c);
	}
}

const reg = await startRegistry({ images: ['python'] });
let three, one, rtt;
try {
	three = await withCluster(reg, 3, async (c) => {
		rtt = await execRoundTrips(c);
		return createRate(c);
	});
	one = await withCluster(reg, 1, createRate);
} finally {
	await reg.stop();
}

const ms = (v) => v.toFixed(1).padStart(8);
console.log(`${`exec round trip of true (ms, n=${execs} each, alternating)`.padEnd(52)} ${'median'.padStart(8)} ${'p95'.padStart(8)}`);
for (const [label, v] of [['  straight to member m1 (invokefunction.namespace)', rtt.direct], ['  through the front', rtt.front]])
	console.log(`${label.padEnd(52)} ${ms(median(v))} ${ms(quantile(v, 0.95))}`);
const added = median(rtt.front) - median(rtt.direct);
console.log(`front's added latency per call: ${added.toFixed(1)} ms (median), ratio front/direct ${
	(median(rtt.front) / median(rtt.direct)).toFixed(2)}; p95 ${(quantile(rtt.front, 0.95) - quantile(rtt.direct, 0.95)).toFixed(1)} ms`);
for (const [label, r] of [['1 member', one], ['3 members', three]])
	console.log(`creates/s through the front, ${label.padEnd(9)} ${r.rate.toFixed(2).padStart(6)} (${creates} creates, ${
		PARALLEL} in flight, ${r.secs.toFixed(1)} s; placed: ${r.share})`);
