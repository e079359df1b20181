// Published ports end to end (issue 41): sandboxes created with `ports` and
// no `network`, behind the stand-in engine, called through iii-sdk.  The
// file re-executes itself in a fresh network namespace holding only `lo`,
// as network.test.mjs does.  Two VM boots shared by every check: both run
// `python3 -m http.server 8000` in the background over a directory of their
// own; the host reaches each through its own host port, the guests reach
// nothing; a host port outside publish_port_range or taken creates nothing;
// 300 connections at once against publish_max_connections 64 cost bounded
// memory and are counted in /metrics, 300 short ones in a row are all
// served; `port ID` prints the mapping; after stop the port refuses.
import { describe, test, before, after } from './lib/test-api.mjs';
import assert from 'node:assert/strict';
import { execFile, spawnSync } from 'node:child_process';
import http from 'node:http';
import net from 'node:net';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { BIN } from './daemon.mjs';
import { eventually, sleep } from './lib.mjs';
import { ociLayout, registryUnavailable, startRegistry } from './lib/registry-fixture.mjs';
import { assertScode, startSandboxStack } from './lib/sandbox-stack.mjs';

if (!process.env.SBX_E2E_NETNS && process.getuid?.() === 0) {
	if (!registryUnavailable()) ociLayout('python');
	const r = spawnSync('unshare', ['-n', '--', 'sh', '-c', 'ip link set lo up && exec "$0" "$@"', process.execPath,
		...process.execArgv, ...process.argv.slice(1)], { stdio: 'inherit', env: { ...process.env, SBX_E2E_NETNS: '1' } });
	process.exit(r.status ?? 1);
}

const skip = registryUnavailable() ?? (process.getuid?.() !== 0 ? 'needs root (a network namespace)' : null);
const RANGE = [40000, 40999];
const MAX = 64; // publish_max_connections: 300 at once are well past it
// The ASan build (scripts/test runs this file against it too) spends about
// 1 MiB of the helper's memory a connection, the release build a few KiB;
// either way a connection may hold at most 2 x 128 KiB of libslirp's buffers.
const ASAN = readFileSync(BIN).includes('__asan_init');
const PER_CONNECTION_KIB = ASAN ? 2048 : 256;
const CONTRACT_LIST_KEYS = ['sandbox_id', 'name', 'image', 'age_secs', 'exec_in_progress', 'exec_in_flight',
	'exec_slots_free', 'stopped'];

// GET http://127.0.0.1:port/path: {status, body}, or throws (refused, reset).
function get(port, p = '/') {
	return new Promise((resolve, reject) => {
		const req = http.get({ host: '127.0.0.1', port, path: p, agent: false, timeout: 20000 }, (res) => {
			let body = '';
			res.setEncoding('utf8');
			res.on('data', (d) => { body += d; });
			res.on('end', () => resolve({ status: res.statusCode, body }));
		});
		req.on('timeout', () => req.destroy(new Error('timeout')));
		req.on('error', reject);
	});
}

// Resolves 'connected' or the error code of a plain TCP connect.
function connectResult(port) {
	return new Promise((resolve) => {
		const c = net.connect({ host: '127.0.0.1', port });
		c.on('connect', () => { c.destroy(); resolve('connected'); });
		c.on('error', (e) => resolve(e.code));
	});
}

// VmRSS in KiB of pid.
function rssKiB(pid) {
	const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
	return m ? Number(m[1]) : 0;
}

// Accepted connections of a listening port still open on its side
// (ESTABLISHED or CLOSE_WAIT; a TIME_WAIT the helper's libslirp keeps a few
// seconds is no caller's), from this namespace's /proc/net/tcp.
function openOn(port) {
	const hex = port.toString(16).toUpperCase().padStart(4, '0');
	return readFileSync('/proc/net/tcp', 'utf8').split('\n').slice(1).filter((l) => {
		const f = l.trim().split(/\s+/);
		return f[1]?.endsWith(`:${hex}`) && (f[3] === '01' || f[3] === '08');
	}).length;
}

// The network helper of a sandbox (the jailed one: the deepest process named so).
function helperPid(id) {
	const pids = readdirSync('/proc').filter((p) => /^\d+$/.test(p)).filter((p) => {
		try {
			const cmd = readFileSync(`/proc/${p}/cmdline`, 'utf8');
			return cmd.startsWith('sandbox-net-helper') && cmd.includes(id);
		} catch {
			return false;
		}
	});
	return pids.sort((a, b) => Number(b) - Number(a))[0];
}

function run(file, args) {
	return new Promise((resolve) => {
		execFile(file, args, { timeout: 60000 }, (err, stdout, stderr) => {
			resolve({ code: err ? (err.code ?? -1) : 0, stdout, stderr });
		});
	});
}

// Serves a directory holding one file named after the sandbox.
const SERVE = (name) => ['sh', '-c', `mkdir -p /srv && touch /srv/${name} && cd /srv && exec python3 -m http.server 8000`];

describe('published ports in a private network namespace', { skip: skip ?? false }, () => {
	let reg, s, a, b, dir, sock, metricsSock, hostServer;
	before(async () => {
		dir = mkdtempSync(path.join(tmpdir(), 'sbx-ports-'));
		sock = path.join(dir, 'control.sock');
		metricsSock = path.join(dir, 'metrics.sock');
		reg = await startRegistry({ images: ['python'] });
		// A service of the host that the guests must not reach.
		hostServer = http.createServer((req, res) => res.end('host'));
		await new Promise((resolve) => hostServer.listen(0, '0.0.0.0', resolve));
		s = await startSandboxStack({ registry: reg, config: {
			image_allowlist: ['python'], control_socket: sock, publish_port_range: RANGE, metrics_listen: metricsSock,
			publish_max_connections: MAX,
			// would open the host's service to networked guests: not to these
			network_policy: { host_ports: [hostServer.address().port], allow: ['203.0.113.0/24'] },
		} });
		[a, b] = await Promise.all([s.vm('create', { image: 'python', ports: [8000] }),
			s.vm('create', { image: 'python', ports: [{ guest: 8000, host: 0 }] })]);
		await s.exec(a.sandbox_id, { argv: SERVE('served-by-a'), background: true });
		await s.exec(b.sandbox_id, { argv: SERVE('served-by-b'), background: true });
	});
	after(async () => {
		await s?.stop();
		await reg?.stop();
		hostServer?.close();
		s?.cleanupState();
		if (dir) rmSync(dir, { recursive: true, force: true });
	});

	test('create replies ports [{guest, address, host}]; list shows them beside the contract fields', async () => {
		for (const c of [a, b]) {
			assert.deepEqual(Object.keys(c).sort(), ['image', 'ports', 'sandbox_id']);
			assert.equal(c.ports.length, 1);
			assert.equal(c.ports[0].guest, 8000);
			assert.equal(c.ports[0].address, '127.0.0.1');
			assert.ok(Number.isInteger(c.ports[0].host) && c.ports[0].host > 0);
			const e = await s.listed(c.sandbox_id);
			assert.deepEqual(Object.keys(e).sort(), [...CONTRACT_LIST_KEYS, 'ports'].sort());
			assert.deepEqual(e.ports, c.ports);
		}
		assert.notEqual(a.ports[0].host, b.ports[0].host);
	});

	test('each host port serves its own guest\'s directory', async () => {
		for (const [c, name] of [[a, 'served-by-a'], [b, 'served-by-b']]) {
			const r = await eventually(() => get(c.ports[0].host), 60000);
			assert.equal(r.status, 200);
			assert.match(r.body, new RegExp(name));
			assert.doesNotMatch(r.body, new RegExp(name === 'served-by-a' ? 'served-by-b' : 'served-by-a'));
		}
	});

	test('the guest reaches nothing: no host, no gateway, no address, no name', async () => {
		const port = hostServer.address().port;
		const code = `
import json, socket
out = {}
for host in ['10.0.2.2', '127.0.0.1', '203.0.113.5', '10.0.2.3']:
    s = socket.socket(); s.settimeout(10)
    try:
        s.connect((host, ${port})); out[host] = 'connected'
    except OSError as e:
        out[host] = e.__class__.__name__
try:
    socket.gethostbyname('example.test'); out['dns'] = 'resolved'
except OSError as e:
    out['dns'] = e.__class__.__name__
print(json.dumps(out))`;
		const r = await s.exec(a.sandbox_id, { argv: ['python3', '-c', code] });
		assert.equal(r.exit_code, 0, r.stderr);
		const out = JSON.parse(r.stdout);
		for (const [k, v] of Object.entries(out)) assert.notEqual(v, k === 'dns' ? 'resolved' : 'connected', `${k}: ${v}`);
		// the guest's own server is its own
		const self = await s.exec(a.sandbox_id, { argv: ['python3', '-c',
			'import urllib.request; print(len(urllib.request.urlopen("http://127.0.0.1:8000/").read()) > 0)'] });
		assert.equal(self.stdout, 'True\n');
	});

	test('a host port outside publish_port_range or taken: S400 naming it, nothing created', async () => {
		const before = (await s.vm('list', {})).sandboxes.length;
		let e = await s.vmError('create', { image: 'python', ports: [{ guest: 80, host: 1000 }] });
		assertScode(e, 'S400', /1000/);
		const taken = net.createServer();
		await new Promise((resolve) => taken.listen(RANGE[0] + 7, '127.0.0.1', resolve));
		try {
			e = await s.vmError('create', { image: 'python', ports: [80, { guest: 81, host: RANGE[0] + 7 }] });
			assertScode(e, 'S400', new RegExp(String(RANGE[0] + 7)));
		} finally {
			taken.close();
		}
		e = await s.vmError('create', { image: 'python', ports: [{ guest: 0 }] });
		assertScode(e, 'S001', /ports\[0\]\.guest/);
		e = await s.vmError('create', { image: 'python', ports: Array(17).fill(80) });
		assertScode(e, 'S001', /at most 16/);
		e = await s.vmError('run', { image: 'python', lang: 'python', code: 'print(1)', ports: [8000] });
		assertScode(e, 'S001', /ports/);
		assert.equal((await s.vm('list', {})).sandboxes.length, before);
		assert.equal(s.boots, 2);
	});

	test('300 short requests in a row, 4 at a time, are all served: a closed connection frees its slot', async () => {
		// (slirp keeps a finished connection's socket through its TIME_WAIT)
		const port = a.ports[0].host;
		let served = 0;
		await Promise.all(Array.from({ length: 4 }, async () => {
			for (let i = 0; i < 75; i++) {
				const r = await get(port, '/served-by-a');
				assert.equal(r.status, 200);
				served++;
			}
		}));
		assert.equal(served, 300);
	});

	test('300 connections at once to the jailed helper: at most publish_max_connections held, the rest reset, memory bounded, the port serves again', async () => {
		const port = a.ports[0].host;
		const helper = helperPid(a.sandbox_id);
		assert.ok(helper, 'the network helper of the sandbox');
		// the forwarder is the jailed helper: not root, no capabilities, seccomp
		const status = readFileSync(`/proc/${helper}/status`, 'utf8');
		assert.doesNotMatch(status, /^Uid:\s+0\s/m);
		assert.match(status, /^CapEff:\s+0+$/m);
		assert.match(status, /^Seccomp:\s+2$/m);
		const daemonPid = s.daemon.proc.pid;
		const before = { daemon: rssKiB(daemonPid), helper: rssKiB(helper) };
		const socks = [];
		let closed = 0;
		await Promise.all(Array.from({ length: 300 }, () => new Promise((resolve) => {
			const c = net.connect({ host: '127.0.0.1', port }, resolve);
			c.on('error', () => resolve());
			c.on('close', () => { closed++; });
			socks.push(c);
		})));
		// The ones past the limit are reset once the helper sees them.
		await eventually(async () => assert.ok(closed >= 300 - MAX, `${closed} closed`), 60000);
		await sleep(2000);
		const during = { daemon: rssKiB(daemonPid), helper: rssKiB(helper) };
		// (a guest may reset one too: its listen queue is short)
		const held = openOn(port);
		assert.ok(held <= MAX && held >= MAX / 2, `${held} connections held`);
		for (const c of socks) c.destroy();
		const grew = { daemon: during.daemon - before.daemon, helper: during.helper - before.helper };
		console.log(`# 300 connections: daemon RSS ${before.daemon} -> ${during.daemon} KiB, ` +
			`helper ${before.helper} -> ${during.helper} KiB`);
		assert.ok(grew.helper < held * PER_CONNECTION_KIB + 4096, `helper grew ${grew.helper} KiB for ${held} connections`);
		assert.ok(grew.daemon < 8 * 1024, `daemon grew ${grew.daemon} KiB`);
		assert.match(s.daemon.output(), new RegExp(`connection to published port \\d+ \\(guest 8000\\) refused: ${MAX} open`));
		const r = await eventually(() => get(port), 60000);
		assert.match(r.body, /served-by-a/);
		// counted: sandbox_libkrun_published_connections_total{outcome}
		const text = await new Promise((resolve, reject) => {
			http.get({ socketPath: metricsSock, path: '/metrics' }, (res) => {
				let body = '';
				res.on('data', (d) => { body += d; });
				res.on('end', () => resolve(body));
			}).on('error', reject);
		});
		const count = (outcome) => Number(new RegExp(`^sandbox_libkrun_published_connections_total\\{outcome="${outcome}"\\} (\\d+)$`, 'm')
			.exec(text)?.[1] ?? -1);
		assert.ok(count('accepted') >= MAX / 2, `accepted: ${count('accepted')}`);
		assert.ok(count('refused') >= 300 - MAX, `refused: ${count('refused')}`);
	});

	test('sandbox-libkrun port ID prints the mapping as docker port does', async () => {
		const r = await run(BIN, ['port', '--socket', sock, a.sandbox_id]);
		assert.equal(r.code, 0, r.stderr);
		assert.equal(r.stdout, `8000/tcp -> 127.0.0.1:${a.ports[0].host}\n`);
		const one = await run(BIN, ['port', '--socket', sock, a.sandbox_id, '8000']);
		assert.equal(one.stdout, `127.0.0.1:${a.ports[0].host}\n`);
		const none = await run(BIN, ['port', '--socket', sock, a.sandbox_id, '9']);
		assert.equal(none.code, 1);
		// ps's PORTS column, as docker ps shows it (then SNAPSHOT: none)
		const ps = await run(BIN, ['ps', '--socket', sock]);
		const row = ps.stdout.split('\n').find((l) => l.startsWith(a.sandbox_id.slice(0, 12)));
		assert.match(row ?? '', new RegExp(`\\s127\\.0\\.0\\.1:${a.ports[0].host}->8000/tcp\\s+-$`));
	});

	test('after stop the host port refuses connections', async () => {
		const port = b.ports[0].host;
		assert.equal(await connectResult(port), 'connected');
		await s.vm('stop', { sandbox_id: b.sandbox_id });
		await eventually(async () => assert.equal(await connectResult(port), 'ECONNREFUSED'), 10000);
	});
});
