// Streamed exec benchmark: the daemon behind the stand-in engine, called
// with iii-sdk, on python sandboxes from the loopback registry.
//  - Line latency: a python loop in the guest writes LINES lines (default
//    1000) with write(2), 10 ms apart, each holding the guest's
//    time.time(); the caller notes when the channel frame holding it
//    arrives.  latency = arrival - print, the guest clock moved onto the
//    host's with the middle of the offset interval that 20 execs of `date`
//    bound (printed: its half width is the error of every figure).  p50
//    and p99, alone, then with 8 more sandboxes busy (each running a shell
//    CPU loop in the guest for the duration).
//  - Throughput: `head -c SIZE /dev/zero` streamed (until the reply and the
//    channel's end) against the same command without `stream` (the reply
//    keeps the first 1 MiB, the daemon drains the rest), for 1 MiB and
//    64 MiB; median of 3.
// Usage: node bench/stream.mjs [LINES]   (SANDBOX_LIBKRUN_BIN picks the binary)
import { ChannelReader } from '../tests/e2e/node_modules/iii-sdk/dist/channel.mjs';
import { startRegistry } from '../tests/e2e/lib/registry-fixture.mjs';
import { startSandboxStack } from '../tests/e2e/lib/sandbox-stack.mjs';

const LINES = Number(process.argv[2] ?? 1000);
const BUSY = 8;
const MIB = 1048576;
const sorted = (v) => [...v].sort((a, b) => a - b);
const quantile = (v, q) => sorted(v)[Math.min(v.length - 1, Math.ceil(q * v.length) - 1)];

const reg = await startRegistry({ images: ['python'] });
const s = await startSandboxStack({ registry: reg, standby: true,
	config: { image_allowlist: ['python'], max_sandboxes: BUSY + 2 } });
const url = s.engine.url;

// A channel whose reader notes each frame's arrival time.
async function channel() {
	const ch = await s.caller.trigger({ function_id: 'engine::channels::create', payload: { buffer_size: 64 } });
	const reader = new ChannelReader(url, ch.reader);
	const got = { ref: ch.writer, frames: [], n: 0 };
	got.ended = new Promise((resolve, reject) => {
		reader.stream.on('end', resolve);
		reader.stream.on('error', reject);
	});
	reader.stream.on('data', (d) => {
		got.frames.push({ t: performance.timeOrigin + performance.now(), data: d });
		got.n += d.length;
	});
	return got;
}

// guest clock - host clock (ms) as an interval.
async function clockOffset(id) {
	let lo = -Infinity, hi = Infinity;
	for (let i = 0; i < 20; i++) {
		const t0 = performance.timeOrigin + performance.now();
		const r = await s.exec(id, { argv: ['date', '+%s%N'] });
		const t1 = performance.timeOrigin + performance.now();
		const g = Number(r.stdout.trim()) / 1e6;
		lo = Math.max(lo, g - t1);
		hi = Math.min(hi, g - t0);
	}
	return { lo, hi };
}

const LOOP = `import os, time
for i in range(${LINES}):
    os.write(1, b"%d %.3f\\n" % (i, time.time() * 1000))
    time.sleep(0.01)
`;

async function latencies(id) {
	const { lo, hi } = await clockOffset(id);
	const mid = (lo + hi) / 2;
	const out = await channel();
	await s.exec(id, { argv: ['python3', '-c', LOOP], stream: { stdout: out.ref }, timeout_ms: 600000 }, 600000);
	await out.ended;
	// Each line's arrival: the frame that completed it.
	const lat = [];
	let text = '';
	for (const f of out.frames) {
		text += f.data.toString();
		const parts = text.split('\n');
		text = parts.pop();
		for (const p of parts) lat.push(f.t - (Number(p.split(' ')[1]) - mid));
	}
	if (lat.length !== LINES) throw new Error(`${lat.length} lines arrived, expected ${LINES}`);
	return { p50: quantile(lat, 0.5), p99: quantile(lat, 0.99), err: (hi - lo) / 2 };
}

async function timed(fn) {
	const t0 = performance.now();
	await fn();
	return (performance.now() - t0) / 1000;
}

try {
	const id = (await s.vm('create', { image: 'python' })).sandbox_id;
	const a = await latencies(id);
	console.log(`write(2) -> caller frame, ${LINES} lines, alone: p50 ${a.p50.toFixed(1)} ms, p99 ${a.p99.toFixed(1)} ms ` +
		`(clock offset known to +-${a.err.toFixed(1)} ms)`);

	for (const size of [1 * MIB, 64 * MIB]) {
		const argv = ['head', '-c', String(size), '/dev/zero'];
		const st = [], rp = [];
		for (let i = 0; i < 3; i++) {
			st.push(await timed(async () => {
				const out = await channel();
				await s.exec(id, { argv, stream: { stdout: out.ref }, timeout_ms: 600000 }, 600000);
				await out.ended;
				if (out.n !== size) throw new Error(`streamed ${out.n} bytes, expected ${size}`);
			}));
			rp.push(await timed(() => s.exec(id, { argv, timeout_ms: 600000 }, 600000)));
		}
		const mib = size / MIB;
		console.log(`${mib} MiB of output: streamed ${quantile(st, 0.5).toFixed(2)} s (${(mib / quantile(st, 0.5)).toFixed(1)} MiB/s), ` +
			`in the reply ${quantile(rp, 0.5).toFixed(2)} s (${(mib / quantile(rp, 0.5)).toFixed(1)} MiB/s` +
			`${size > MIB ? ', the reply keeps 1 MiB' : ''})`);
	}

	const busy = [];
	for (let i = 0; i < BUSY; i++) busy.push((await s.vm('create', { image: 'python', memory_mb: 256 })).sandbox_id);
	const loops = busy.map((b) => s.vmTry('exec', { sandbox_id: b, argv: ['sh', '-c', 'while :; do :; done'],
		timeout_ms: 3600000 }, 3600000));
	await new Promise((r) => setTimeout(r, 3000));
	const b = await latencies(id);
	console.log(`write(2) -> caller frame, ${LINES} lines, ${BUSY} sandboxes busy: p50 ${b.p50.toFixed(1)} ms, ` +
		`p99 ${b.p99.toFixed(1)} ms (clock offset known to +-${b.err.toFixed(1)} ms)`);
	for (const x of busy) await s.vm('stop', { sandbox_id: x });
	await Promise.all(loops);
} finally {
	await s.stop();
	await reg.stop();
	s.cleanupState();
}
