// fs::* benchmark through the engine: the daemon behind the stand-in engine,
// called with iii-sdk, on one python sandbox from the loopback registry.
// Prints the fs::write + fs::read round trip of a 4 KiB file (median and
// p95 over RUNS, at least 20) and the throughput of a 100 MiB file through
// engine channels both ways (write: caller -> channel -> daemon -> guest;
// read: guest -> daemon -> channel -> caller), with the daemon's peak RSS.
// Beside each rate: the CPU seconds per GiB moved of the daemon, of the VM's
// QEMU (the guest's emulated CPU and QEMU's I/O threads) and of this node
// process (the stand-in engine relaying the channel, and the caller).
// Usage: node bench/fs.mjs [RUNS]   (SANDBOX_LIBKRUN_BIN picks the binary;
// FS_BENCH_MIB=1024 moves 1 GiB instead of 100 MiB, the flat-memory check).
// The big file goes to /var/tmp, on the scratch disk: the guest's /tmp is a
// tmpfs capped at half the VM's RAM.
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { ChannelReader, ChannelWriter } from '../tests/e2e/node_modules/iii-sdk/dist/channel.mjs';
import { startRegistry } from '../tests/e2e/lib/registry-fixture.mjs';
import { processesMentioning, startSandboxStack } from '../tests/e2e/lib/sandbox-stack.mjs';

const runs = Math.max(Number(process.argv[2] ?? 20), 20);
const MIB = 1048576;
const BIG_MIB = Number(process.env.FS_BENCH_MIB ?? 100);
const BIG = BIG_MIB * MIB;

const sorted = (v) => [...v].sort((a, b) => a - b);
const quantile = (v, q) => sorted(v)[Math.min(v.length - 1, Math.ceil(q * v.length) - 1)];
const peakRss = (pid) => Number(/VmHWM:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))[1]) / 1024;
const rss = (pid) => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))[1]) / 1024;
// utime + stime of a process (all its threads), in seconds (USER_HZ 100).
const cpuSec = (pid) => {
	const f = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
	return (Number(f[11]) + Number(f[12])) / 100;
};

const reg = await startRegistry({ images: ['python'] }); // the one image it uses
const s = await startSandboxStack({ registry: reg, standby: true, config: { image_allowlist: ['python'] } });
try {
	const id = (await s.vm('create', { image: 'python' })).sandbox_id;
	const fs = (op, payload, timeoutMs) => s.vm(`fs::${op}`, { sandbox_id: id, ...payload }, timeoutMs);
	const url = s.engine.url;
	const daemonPid = s.daemon.proc.pid;
	const qemuPids = processesMentioning(s.stateDir).filter((p) => /qemu-system/.test(p.cmdline)).map((p) => p.pid);
	const cpuNow = () => ({
		daemon: cpuSec(daemonPid),
		qemu: qemuPids.reduce((t, pid) => { try { return t + cpuSec(pid); } catch { return t; } }, 0),
		node: process.cpuUsage().user / 1e6 + process.cpuUsage().system / 1e6,
	});
	const cpuPerGiB = (c0) => {
		const c1 = cpuNow(), gib = BIG / (1024 * MIB);
		const per = (k) => ((c1[k] - c0[k]) / gib).toFixed(1);
		return `CPU s/GiB: daemon ${per('daemon')}, qemu ${per('qemu')}, engine+caller ${per('node')}`;
	};

	const small = randomBytes(4096).toString('base64');
	const rt = [];
	for (let i = 0; i < runs; i++) {
		const t0 = performance.now();
		await fs('write', { path: '/tmp/small.bin', content_b64: small });
		const r = await fs('read', { path: '/tmp/small.bin' });
		await new ChannelReader(url, r.content).readAll();
		rt.push(performance.now() - t0);
	}
	console.log(`fs::write + fs::read 4 KiB round trip: median ${quantile(rt, 0.5).toFixed(1)} ms, ` +
		`p95 ${quantile(rt, 0.95).toFixed(1)} ms (${runs} runs)`);

	const chunk = randomBytes(MIB);
	const ch = await s.caller.trigger({ function_id: 'engine::channels::create', payload: { buffer_size: 64 } });
	const writer = new ChannelWriter(url, ch.writer);
	// A failed fs::write closes the channel under the writer: report it through
	// the call's own error instead of dying before `finally` stops the registry.
	let writeError = null;
	writer.stream.on('error', (e) => { writeError = e; });
	const rssBefore = rss(daemonPid);
	let c0 = cpuNow();
	let t0 = performance.now();
	const feeding = (async () => {
		for (let i = 0; i < BIG / MIB && !writeError; i++) {
			if (!writer.stream.write(chunk)) {
				await new Promise((r) => {
					const done = () => { writer.stream.off('drain', done); writer.stream.off('error', done); r(); };
					writer.stream.on('drain', done);
					writer.stream.on('error', done);
				});
			}
		}
		writer.stream.end();
	})();
	await fs('write', { path: '/var/tmp/big.bin', content: ch.reader }, 900000);
	await feeding;
	const wsec = (performance.now() - t0) / 1000;
	console.log(`${BIG_MIB} MiB fs::write through a channel: ${wsec.toFixed(1)} s, ${(BIG_MIB / wsec).toFixed(1)} MiB/s; ${cpuPerGiB(c0)}`);

	c0 = cpuNow();
	t0 = performance.now();
	const r = await fs('read', { path: '/var/tmp/big.bin' });
	let n = 0;
	for await (const c of new ChannelReader(url, r.content).stream) n += c.length;
	const rsec = (performance.now() - t0) / 1000;
	if (n !== BIG) throw new Error(`read ${n} bytes, expected ${BIG}`);
	console.log(`${BIG_MIB} MiB fs::read through a channel: ${rsec.toFixed(1)} s, ${(BIG_MIB / rsec).toFixed(1)} MiB/s; ${cpuPerGiB(c0)}`);
	console.log(`daemon RSS before / after the big file: ${rssBefore.toFixed(0)} / ${rss(daemonPid).toFixed(0)} MiB, ` +
		`peak ${peakRss(daemonPid).toFixed(0)} MiB`);
} finally {
	await s.stop();
	await reg.stop();
	s.cleanupState();
}
