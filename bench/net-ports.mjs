// Published ports benchmark (issue 41).  Usage: node bench/net-ports.mjs [MIB] [SECONDS]
//
// In a private network namespace (it re-executes itself under `unshare -n`,
// as root): `python3 -m http.server` serves the same files twice, on the
// host's loopback and inside a sandbox created with `ports: [8000]` (no
// `network`), and this process measures both the same way: the download of
// a MIB-MiB file (default 64) and the request rate of a small file, 4
// clients in a loop for SECONDS (default 10), each request a connection of
// its own (http.server speaks HTTP/1.0).  Prints both and their ratios
// (published / direct), and the network helper's CPU time and peak RSS.
// SANDBOX_LIBKRUN_BIN picks the binary.
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import http from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { ociLayout, startRegistry } from '../tests/e2e/lib/registry-fixture.mjs';
import { startSandboxStack } from '../tests/e2e/lib/sandbox-stack.mjs';

if (!process.env.SBX_BENCH_NETNS) {
	ociLayout('python'); // built out here, where Debian's mirror is reachable
	const r = spawnSync('unshare', ['-n', '--', 'sh', '-c', 'ip link set lo up && exec "$0" "$@"', process.execPath,
		...process.argv.slice(1)], { stdio: 'inherit', env: { ...process.env, SBX_BENCH_NETNS: '1' } });
	process.exit(r.status ?? 1);
}

const MIB = Number(process.argv[2] ?? 64);
const SECONDS = Number(process.argv[3] ?? 10);
const CLIENTS = 4;

// GET once: resolves the body's length, or rejects.
function get(port, p) {
	return new Promise((resolve, reject) => {
		const req = http.get({ host: '127.0.0.1', port, path: p, agent: false }, (res) => {
			let n = 0;
			res.on('data', (d) => { n += d.length; });
			res.on('end', () => (res.statusCode === 200 ? resolve(n) : reject(new Error(`status ${res.statusCode}`))));
		});
		req.on('error', reject);
	});
}

async function ready(port) {
	for (let i = 0; i < 600; i++) {
		try {
			return await get(port, '/small');
		} catch {
			await new Promise((r) => setTimeout(r, 100));
		}
	}
	throw new Error(`nothing serves on ${port}`);
}

async function measure(port) {
	let t = process.hrtime.bigint();
	const n = await get(port, '/big');
	if (n !== MIB * 1048576) throw new Error(`got ${n} bytes of the big file`);
	const mibs = MIB / (Number(process.hrtime.bigint() - t) / 1e9);
	let requests = 0;
	const end = Date.now() + SECONDS * 1000;
	t = process.hrtime.bigint();
	await Promise.all(Array.from({ length: CLIENTS }, async () => {
		while (Date.now() < end) {
			await get(port, '/small');
			requests++;
		}
	}));
	return { mibs, rps: requests / (Number(process.hrtime.bigint() - t) / 1e9) };
}

const helperStat = (pid) => {
	const f = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
	const hwm = Number(/VmHWM:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))[1]);
	return { cpu: (Number(f[11]) + Number(f[12])) / 100, hwmMib: hwm / 1024 };
};

const dir = mkdtempSync(path.join(tmpdir(), 'sbx-bench-ports-'));
const reg = await startRegistry({ images: ['python'] });
const s = await startSandboxStack({ registry: reg, config: { image_allowlist: ['python'] } });
let server;
try {
	// The host's server: the same program, the same files.
	spawnSync('sh', ['-c', `head -c ${MIB * 1048576} /dev/urandom > big && echo hello > small`], { cwd: dir });
	server = spawn('python3', ['-m', 'http.server', '--bind', '127.0.0.1', '18081'], { cwd: dir, stdio: 'ignore' });
	await ready(18081);
	const c = await s.vm('create', { image: 'python', ports: [8000] });
	const id = c.sandbox_id;
	const host = c.ports[0].host;
	await s.vm('exec', { sandbox_id: id, argv: ['sh', '-c', `mkdir -p /srv && cd /srv && head -c ${MIB * 1048576} /dev/urandom > big && echo hello > small`] });
	await s.vm('exec', { sandbox_id: id, argv: ['sh', '-c', 'cd /srv && exec python3 -m http.server 8000'], background: true });
	await ready(host);
	const helper = spawnSync('pgrep', ['-n', '-f', `^sandbox-net-helper.*${id}`], { encoding: 'utf8' }).stdout.trim();
	const h0 = helper ? helperStat(helper) : null;
	const direct = await measure(18081);
	const published = await measure(host);
	const h1 = helper ? helperStat(helper) : null;
	console.log(`direct (host loopback):    ${direct.mibs.toFixed(1)} MiB/s download, ${direct.rps.toFixed(0)} requests/s`);
	console.log(`published port (TCG guest): ${published.mibs.toFixed(1)} MiB/s download, ${published.rps.toFixed(0)} requests/s`);
	console.log(`ratio published / direct:   download ${(published.mibs / direct.mibs).toFixed(3)}, requests ${(published.rps / direct.rps).toFixed(3)}`);
	if (h0 && h1) console.log(`network helper: ${(h1.cpu - h0.cpu).toFixed(2)} s CPU during the run, peak RSS ${h1.hwmMib.toFixed(1)} MiB`);
} finally {
	server?.kill();
	await s.stop();
	await reg.stop();
	s.cleanupState();
	rmSync(dir, { recursive: true, force: true });
}
