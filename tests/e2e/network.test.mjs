// Guest networking end to end (issue 9): `network: true` sandboxes behind the
// stand-in engine, called through iii-sdk.  No packet leaves this machine:
// the whole file re-executes itself in a fresh network namespace holding
// only `lo` and a veth pair giving the "host" two addresses of its own
// (11.0.0.2, 203.0.113.2: the dummy driver is missing here), where the
// engine, the registry, HTTP servers and a DNS server run; the daemon's
// network helper sees nothing else.  Public addresses
// appear only as destinations the policy denies, and the config carries an
// `allow` list, so that a mistake is denied rather than sent.
import { describe, test, before, after } from './lib/test-api.mjs';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import dgram from 'node:dgram';
import http from 'node:http';
import net from 'node:net';
import { readdirSync, readFileSync, readlinkSync } from 'node:fs';
import { assertNoSanitizerReport, endDaemon } from './daemon.mjs';
import { eventually, sleep } from './lib.mjs';
import { promtool, samples, scrape } from './lib/metrics-scrape.mjs';
import { freePort, ociLayout, registryUnavailable, startRegistry } from './lib/registry-fixture.mjs';
import { assertScode, startSandboxStack } from './lib/sandbox-stack.mjs';

const HOST_IFACE = ['ip link add sbxh0 type veth peer name sbxh1', 'ip addr add 11.0.0.2/32 dev sbxh0',
	'ip addr add 203.0.113.2/32 dev sbxh0', 'ip link set sbxh0 up', 'ip link set sbxh1 up'].join(' && ');

if (!process.env.SBX_E2E_NETNS && process.getuid?.() === 0) {
	// The python image is built (debootstrap) out here, where Debian's mirror is reachable.
	if (!registryUnavailable()) ociLayout('python');
	const r = spawnSync('unshare', ['-n', '--', 'sh', '-c', `ip link set lo up && ${HOST_IFACE} && exec "$0" "$@"`, process.execPath,
		...process.execArgv, ...process.argv.slice(1)], { stdio: 'inherit', env: { ...process.env, SBX_E2E_NETNS: '1' } });
	process.exit(r.status ?? 1);
}

const PAGE = 'served from the host\n\u00e9\0bytes';
const DNS_ANSWERS = { 'good.test': ['203.0.113.10'], 'rebind.test': ['10.1.2.3'],
	'mixed.test': ['192.168.7.7', '203.0.113.11'], 'denied.test': ['203.0.113.12'] };

// A minimal DNS server for A queries: the names above, no answer at all for
// silent.test and its subdomains, NXDOMAIN otherwise.
function startDns() {
	const sock = dgram.createSocket('udp4');
	sock.on('message', (q, rinfo) => {
		if (q.length < 17) return;
		let off = 12;
		const labels = [];
		while (off < q.length && q[off] !== 0) {
			labels.push(q.subarray(off + 1, off + 1 + q[off]).toString());
			off += 1 + q[off];
		}
		const qend = off + 5;
		if (/(^|\.)silent\.test$/.test(labels.join('.'))) return;
		const addrs = DNS_ANSWERS[labels.join('.').toLowerCase()];
		const head = Buffer.from(q.subarray(0, qend));
		head.writeUInt16BE(0x8180 | (addrs ? 0 : 3), 2);
		head.writeUInt16BE(addrs ? addrs.length : 0, 6);
		const answers = (addrs ?? []).map((a) => Buffer.from([0xc0, 0x0c, 0, 1, 0, 1, 0, 0, 0, 60, 0, 4,
			...a.split('.').map(Number)]));
		sock.send(Buffer.concat([head, ...answers]), rinfo.port, rinfo.address);
	});
	return new Promise((resolve) => sock.bind(0, '127.0.0.1', () => resolve(sock)));
}

// /page: PAGE; /slow?s=N: one chunk every 500 ms for N seconds.  On every
// address of the namespace, as a host's services often are.
function startHttp() {
	const server = http.createServer((req, res) => {
		if (req.url === '/page') return res.end(PAGE);
		const m = /^\/slow\?s=(\d+)$/.exec(req.url);
		if (!m) return res.writeHead(404).end();
		let left = Number(m[1]) * 2;
		res.writeHead(200);
		const t = setInterval(() => {
			res.write('x'.repeat(1000));
			if (--left === 0) {
				clearInterval(t);
				res.end();
			}
		}, 500);
		req.on('close', () => clearInterval(t));
	});
	return new Promise((resolve) => server.listen(0, '0.0.0.0', () => resolve(server)));
}

// A TCP listener on every address of the namespace that counts the
// connections it accepts (and closes them).
function startCounter() {
	const c = { accepted: 0 };
	c.server = net.createServer((sock) => {
		c.accepted++;
		sock.on('error', () => {});
		sock.destroy();
	});
	return new Promise((resolve) => c.server.listen(0, '0.0.0.0', () => resolve(c)));
}

// Python run in a sandbox; prints one JSON line.
const PY_CONNECT = `
import json, socket, sys, time
out = {}
for spec in sys.argv[1:]:
    host, port = spec.rsplit(':', 1)
    t = time.time()
    s = socket.socket(); s.settimeout(10)
    try:
        s.connect((host, int(port))); r = 'connected'
    except OSError as e:
        r = e.__class__.__name__
    out[spec] = [r, round(time.time() - t, 3)]
print(json.dumps(out))
`;
const PY_DNS = `
import json, socket, struct, sys
def query(name):
    q = struct.pack('>HHHHHH', 0x1234, 0x0100, 1, 0, 0, 0) + b''.join(bytes([len(l)]) + l.encode() for l in name.split('.')) + b'\\0' + struct.pack('>HH', 1, 1)
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.settimeout(15)
    s.sendto(q, ('10.0.2.3', 53))
    a = s.recv(512)
    rcode = a[3] & 15; n = struct.unpack('>H', a[6:8])[0]
    addrs = [socket.inet_ntoa(a[len(a) - 16 * (n - i) + 12:len(a) - 16 * (n - i) + 16]) for i in range(n)]
    return [rcode, addrs]
print(json.dumps({n: query(n) for n in sys.argv[1:]}))
`;
// argv: N, first index: N A queries for q<i>.silent.test, sent without
// waiting for answers.
const PY_DNS_FLOOD = `
import socket, struct, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
n, first = int(sys.argv[1]), int(sys.argv[2])
for i in range(first, first + n):
    q = struct.pack('>HHHHHH', i & 0xffff, 0x0100, 1, 0, 0, 0) + b''.join(bytes([len(l)]) + l.encode() for l in ('q%d.silent.test' % i).split('.')) + b'\\0' + struct.pack('>HH', 1, 1)
    s.sendto(q, ('10.0.2.3', 53))
print(n)
`;

// argv: port (a host port), unlisted (a port not in host_ports).  Writes
// Ethernet frames of its own on eth0 (AF_PACKET: the guest is root), each
// a TCP segment to the gateway from its own source port: a spoofed source,
// a SYN split across two fragments, SYN|FIN to both ports, then an honest
// SYN (the control).  Prints, by source port, the flags of the TCP
// segments 10.0.2.2 sent back within 3 s of the control's answer.
const PY_RAW = `
import json, select, socket, struct, sys, time
port, unlisted = int(sys.argv[1]), int(sys.argv[2])
mac = bytes.fromhex(open('/sys/class/net/eth0/address').read().strip().replace(':', ''))
GW_MAC = bytes.fromhex('52550a000202')
GUEST, GW = socket.inet_aton('10.0.2.15'), socket.inet_aton('10.0.2.2')
def csum(b):
    b += b'\\0' * (len(b) % 2)
    s = sum(struct.unpack('!%dH' % (len(b) // 2), b))
    while s >> 16:
        s = (s & 0xffff) + (s >> 16)
    return ~s & 0xffff
def tcp(src, sport, dport, flags):
    h = struct.pack('!HHIIBBHHH', sport, dport, 1000, 0, 5 << 4, flags, 65535, 0, 0)
    return h[:16] + struct.pack('!H', csum(src + GW + struct.pack('!BBH', 0, 6, len(h)) + h)) + h[18:]
def ip(src, payload, ident, frag=0):
    h = struct.pack('!BBHHHBBH4s4s', 0x45, 0, 20 + len(payload), ident, frag, 64, 6, 0, src, GW)
    return h[:10] + struct.pack('!H', csum(h)) + h[12:] + payload
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(0x0800))
s.bind(('eth0', 0))
send = lambda packet: s.send(GW_MAC + mac + b'\\x08\\x00' + packet)
SYN, FIN = 2, 1
spoof = socket.inet_aton('10.0.2.99')
send(ip(spoof, tcp(spoof, 40001, port, SYN), 1))
seg = tcp(GUEST, 40002, port, SYN)
send(ip(GUEST, seg[:8], 2, 0x2000))
send(ip(GUEST, seg[8:], 2, 1))
send(ip(GUEST, tcp(GUEST, 40003, port, SYN | FIN), 3))
send(ip(GUEST, tcp(GUEST, 40004, unlisted, SYN | FIN), 4))
send(ip(GUEST, tcp(GUEST, 40005, port, SYN), 5))
seen, until = {}, time.time() + 30
while time.time() < until and select.select([s], [], [], until - time.time())[0]:
    f, addr = s.recvfrom(65535)
    p = f[14:]
    if addr[2] == socket.PACKET_OUTGOING or p[9] != 6 or p[12:16] != GW:
        continue
    t = p[(p[0] & 15) * 4:]
    sport = struct.unpack('!H', t[2:4])[0]
    seen.setdefault(sport, []).append(t[13])
    if sport == 40005:
        until = min(until, time.time() + 3)
print(json.dumps(seen))
`;

const skip = registryUnavailable() ?? (process.getuid?.() !== 0 ? 'needs root (a network namespace)' : null);

// sandbox_libkrun_network_denials_total's label values (src/net/net_report.h).
const REASONS = ['host_port', 'deny_rule', 'denied_range', 'not_allowed', 'dns_port', 'dns_name', 'dns_rebinding',
	'dns_busy', 'malformed', 'not_ipv4', 'fragment', 'spoofed'];

// The network helpers of a sandbox, by their command line.
function helperPids(id) {
	return readdirSync('/proc').filter((p) => /^\d+$/.test(p)).filter((p) => {
		try {
			const cmd = readFileSync(`/proc/${p}/cmdline`, 'utf8');
			return cmd.startsWith('sandbox-net-helper') && cmd.includes(id);
		} catch {
			return false;
		}
	});
}

describe('guest networking in a private network namespace', { skip: skip ?? false }, () => {
	let reg, s, web, other, dns, raw, net1, narrow, nonet, side, metricsPort;
	const ids = [];
	before(async () => {
		[reg, web, other, dns, raw] = await Promise.all([startRegistry({ images: ['python'] }), startHttp(), startHttp(), startDns(),
			startCounter()]);
		metricsPort = await freePort();
		s = await startSandboxStack({ registry: reg, config: {
			image_allowlist: ['python'],
			metrics_listen: `127.0.0.1:${metricsPort}`,
			network_policy: {
				host_ports: [web.address().port, raw.server.address().port],
				allow: ['203.0.113.0/24', '198.51.100.0/24', '*.test'],
				deny: ['198.51.100.0/24', 'denied.test'],
				dns_servers: [`127.0.0.1:${dns.address().port}`],
			},
		} });
		net1 = await s.vm('create', { image: 'python', network: true,
			env: { WEB: `http://localhost:${web.address().port}/page`, ENGINE: 'ws://127.0.0.1:49134/x' } });
		narrow = await s.vm('create', { image: 'python', network: { allow: ['good.test', '203.0.113.20'] } });
		nonet = await s.vm('create', { image: 'python', env: { WEB: 'http://localhost:1/' } });
		// its own helper, so that its floods do not spend net1's log budget
		side = await s.vm('create', { image: 'python', network: true });
		ids.push(net1.sandbox_id, narrow.sandbox_id, nonet.sandbox_id, side.sandbox_id);
	});
	after(async () => {
		await s?.stop();
		await reg?.stop();
		web?.close();
		other?.close();
		dns?.close();
		raw?.server.close();
		s?.cleanupState();
	});

	const py = async (id, code, args = []) => {
		const r = await s.exec(id, { argv: ['python3', '-c', code, ...args] });
		assert.equal(r.exit_code, 0, `python failed: ${r.stderr}`);
		return JSON.parse(r.stdout);
	};

	test('a page from a host-loopback server through the gateway arrives byte for byte', async () => {
		const r = await s.exec(net1.sandbox_id, { argv: ['python3', '-c',
			'import os, sys, urllib.request; sys.stdout.buffer.write(urllib.request.urlopen(os.environ["WEB"]).read())'] });
		assert.equal(r.exit_code, 0, r.stderr);
		assert.equal(r.stdout, PAGE);
	});

	test('create env values naming localhost reach the gateway; exec env and network: false are not rewritten', async () => {
		const port = web.address().port;
		let r = await s.exec(net1.sandbox_id, { argv: ['sh', '-c', 'echo "$WEB $ENGINE $X"'], env: { X: 'http://localhost:5/' } });
		assert.equal(r.stdout, `http://10.0.2.2:${port}/page ws://10.0.2.2:49134/x http://localhost:5/\n`);
		r = await s.exec(nonet.sandbox_id, { argv: ['sh', '-c', 'echo "$WEB"'] });
		assert.equal(r.stdout, 'http://localhost:1/\n');
	});

	test('network: false has no eth0; network: true has eth0 and the helper as resolver', async () => {
		// (the kernel's dummy0 is never configured)
		const ifaces = async (id) => (await s.exec(id, { argv: ['ls', '/sys/class/net'] })).stdout.split('\n');
		assert.ok(!(await ifaces(nonet.sandbox_id)).includes('eth0'));
		assert.ok((await ifaces(net1.sandbox_id)).includes('eth0'));
		const r = await s.exec(net1.sandbox_id, { argv: ['cat', '/etc/resolv.conf', '/proc/sys/net/ipv6/conf/all/disable_ipv6'] });
		assert.equal(r.stdout, 'nameserver 10.0.2.3\n1\n');
	});

	test('the network helper runs jailed: its own uid, no capabilities, a seccomp filter, its own namespaces but the host network, a cgroup leaf', {
		skip: process.getuid() !== 0 ? 'the jail needs root' : false }, () => {
		const pid = helperPids(net1.sandbox_id);
		assert.equal(pid.length, 1, 'one helper for the sandbox');
		const f = {};
		for (const line of readFileSync(`/proc/${pid[0]}/status`, 'utf8').split('\n')) {
			const i = line.indexOf(':');
			if (i > 0) f[line.slice(0, i)] = line.slice(i + 1).trim();
		}
		const [uid] = f.Uid.split(/\s+/);
		assert.ok(Number(uid) >= 900000, `uid ${f.Uid}`);
		assert.deepEqual(f.Uid.split(/\s+/), Array(4).fill(uid));
		assert.deepEqual(f.Gid.split(/\s+/), Array(4).fill(uid));
		assert.equal(f.Groups, '');
		for (const c of ['CapInh', 'CapPrm', 'CapEff', 'CapBnd', 'CapAmb']) assert.equal(f[c], '0000000000000000', c);
		assert.equal(f.NoNewPrivs, '1');
		assert.equal(f.Seccomp, '2', 'its own seccomp filter');
		const ns = (p, n) => readlinkSync(`/proc/${p}/ns/${n}`);
		const daemon = s.daemon.proc.pid;
		for (const n of ['mnt', 'pid', 'ipc', 'uts']) assert.notEqual(ns(pid[0], n), ns(daemon, n), n);
		assert.equal(ns(pid[0], 'net'), ns(daemon, 'net'), 'its sockets are the guest\'s connections out');
		const root = `/proc/${pid[0]}/root`;
		assert.ok(!readdirSync(root).includes('home') && !readdirSync(root).includes('root'), readdirSync(root).join(' '));
		assert.deepEqual(readdirSync(`${root}/etc`), ['resolv.conf']);
		assert.match(readFileSync(`/proc/${pid[0]}/cgroup`, 'utf8'), /\/sandbox-libkrun\/[0-9]+-[^/\n]*-net\n/);
	});

	test('denied destinations are refused at once and logged once with the rule', async () => {
		const unlisted = `10.0.2.2:${other.address().port}`;
		const dests = [unlisted, '169.254.169.254:80', '10.0.0.1:22', '198.51.100.7:443', '192.0.2.1:80'];
		const r = await py(net1.sandbox_id, PY_CONNECT, dests);
		for (const d of dests) {
			assert.equal(r[d][0], 'ConnectionRefusedError', `${d}: ${r[d]}`);
			assert.ok(r[d][1] < 2, `${d} refused in ${r[d][1]} s`);
		}
		const id = net1.sandbox_id;
		const out = s.daemon.output();
		for (const [d, why] of [[unlisted, 'gateway port not in network_policy.host_ports'],
			['169.254.169.254:80', 'always-denied range 169.254.0.0/16'], ['10.0.0.1:22', 'always-denied range 10.0.0.0/8'],
			['198.51.100.7:443', 'deny rule 198.51.100.0/24'], ['192.0.2.1:80', 'always-denied range 192.0.2.0/24']]) {
			const line = `net: sandbox ${id}: denied tcp ${d} (${why})`;
			assert.ok(out.includes(line), `log line: ${line}`);
		}
		// once per (sandbox, destination, port)
		await py(id, PY_CONNECT, ['10.0.0.1:22']);
		await sleep(200);
		assert.equal(s.daemon.output().split(`denied tcp 10.0.0.1:22 `).length - 1, 1);
	});

	test('DNS: served names resolve, denied names are REFUSED, rebinding answers are dropped, silence is SERVFAIL', async () => {
		const t0 = Date.now();
		const r = await py(net1.sandbox_id, PY_DNS, ['good.test', 'denied.test', 'rebind.test', 'mixed.test', 'nosuch.test',
			'silent.test']);
		assert.deepEqual(r['silent.test'], [2, []]);
		assert.ok(Date.now() - t0 < 12000, `answered in ${Date.now() - t0} ms`);
		assert.match(s.daemon.output(), /resolving silent\.test failed/);
		assert.deepEqual(r['good.test'], [0, ['203.0.113.10']]);
		assert.deepEqual(r['denied.test'], [5, []]);
		assert.deepEqual(r['rebind.test'], [0, []]);
		assert.deepEqual(r['mixed.test'], [0, ['203.0.113.11']]);
		assert.deepEqual(r['nosuch.test'], [3, []]);
		const g = await s.exec(net1.sandbox_id, { argv: ['python3', '-c', 'import socket; print(socket.gethostbyname("good.test"))'] });
		assert.equal(g.stdout, '203.0.113.10\n');
		assert.match(s.daemon.output(), /denied dns denied\.test \(deny rule denied\.test\)/);
		assert.match(s.daemon.output(), /dns answer rebind\.test -> 10\.1\.2\.3 \(answer into an always-denied range dropped/);
	});

	test('the host\'s own addresses are the gateway: only host_ports reach them, whatever the allow rules', async () => {
		const id = side.sandbox_id;
		const [listed, unlisted] = [web.address().port, other.address().port];
		// 203.0.113.0/24 is in the configured allow list, 11.0.0.0/8 is not
		const open = [`11.0.0.2:${listed}`, `203.0.113.2:${listed}`];
		const closed = [`11.0.0.2:${unlisted}`, `203.0.113.2:${unlisted}`];
		const r = await py(id, PY_CONNECT, [...open, ...closed]);
		for (const d of open) assert.equal(r[d][0], 'connected', `${d}: ${r[d]}`);
		const out = s.daemon.output();
		for (const d of closed) {
			assert.equal(r[d][0], 'ConnectionRefusedError', `${d}: ${r[d]}`);
			const line = `net: sandbox ${id}: denied tcp ${d} (the host's own address: port not in network_policy.host_ports)`;
			assert.ok(out.includes(line), `log line: ${line}`);
		}
		// an address the host gains while the sandbox runs counts within seconds
		const add = spawnSync('ip', ['addr', 'add', '11.0.0.3/32', 'dev', 'sbxh0']);
		assert.equal(add.status, 0, String(add.stderr));
		await sleep(2500);
		const later = await py(id, PY_CONNECT, [`11.0.0.3:${unlisted}`, `11.0.0.3:${listed}`]);
		assert.equal(later[`11.0.0.3:${unlisted}`][0], 'ConnectionRefusedError');
		assert.equal(later[`11.0.0.3:${listed}`][0], 'connected');
	});

	test('raw frames from a root guest: a spoofed source, a fragmented SYN and SYN|FIN never open a connection; an honest crafted SYN does', async () => {
		const id = side.sandbox_id;
		const [port, unlisted] = [raw.server.address().port, other.address().port];
		assert.equal(raw.accepted, 0);
		const seen = await py(id, PY_RAW, [String(port), String(unlisted)]);
		// the control reached the listener through slirp (and the guest's
		// own kernel reset the flow it never opened: slirp's SYN|ACK)
		assert.equal(seen['40005']?.[0], 0x12, JSON.stringify(seen));
		await eventually(() => assert.ok(raw.accepted >= 1, 'the control SYN reached the listener'), 10000);
		// the others were sent first, on the same link: they would be in the
		// listener's queue before it
		await sleep(500);
		assert.equal(raw.accepted, 1, 'only the control SYN opened a connection');
		// spoofed and fragmented: dropped unanswered; SYN|FIN: reset (by
		// slirp on the listed port, by the guard, which judged it, on the other)
		assert.equal(seen['40001'], undefined, JSON.stringify(seen));
		assert.equal(seen['40002'], undefined, JSON.stringify(seen));
		for (const p of ['40003', '40004']) assert.ok(seen[p]?.every((f) => f & 0x04), `${p}: ${JSON.stringify(seen)}`);
		const out = s.daemon.output();
		assert.ok(out.includes(`net: sandbox ${id}: denied tcp 10.0.2.2:${unlisted} (gateway port not in network_policy.host_ports)`),
			'the guard judged the SYN|FIN to the unlisted port');
		assert.ok(!out.includes(`denied tcp 10.0.2.2:${port} `), 'the listed port was never denied');
	});

	test('20,000 failing DNS queries from a guest leave a few log lines, which count what they suppressed', async (t) => {
		const id = side.sandbox_id;
		const t0 = Date.now();
		// 128 wait for a silent server; the rest find no resolver free
		assert.equal((await s.exec(id, { argv: ['python3', '-c', PY_DNS_FLOOD, '20000', '0'] }, 300000)).exit_code, 0);
		// the pending ones fail; a second, small flood comes after the limiter's period
		await sleep(7000);
		assert.equal((await s.exec(id, { argv: ['python3', '-c', PY_DNS_FLOOD, '300', '20000'] }, 60000)).exit_code, 0);
		await sleep(7000);
		const secs = (Date.now() - t0) / 1000;
		const lines = s.daemon.output().split('\n').filter((l) => l.includes(`net: sandbox ${id}: `) &&
			/silent\.test/.test(l));
		// each of the two lines (no resolver free, resolving failed): a burst of 10, then one per 5 s
		assert.ok(lines.length <= 2 * (10 + Math.ceil(secs / 5)), `${lines.length} lines in ${secs} s:\n${lines.slice(0, 40).join('\n')}`);
		const counted = lines.map((l) => /\((\d+) similar lines suppressed\)$/.exec(l)).filter(Boolean).map((m) => Number(m[1]));
		t.diagnostic(`${lines.length} lines in ${secs} s; suppressed counts ${counted}`);
		assert.ok(counted.reduce((a, b) => a + b, 0) >= 15000, `suppressed counts: ${counted}`);
	});

	test('a sandbox narrows the policy: only its rules (names by what it resolved) pass; widening is S001', async () => {
		const id = narrow.sandbox_id;
		const d = await py(id, PY_DNS, ['good.test', 'other.test']);
		assert.deepEqual(d['good.test'], [0, ['203.0.113.10']]);
		assert.equal(d['other.test'][0], 5);
		const r = await py(id, PY_CONNECT, ['203.0.113.10:80', '203.0.113.99:80', '203.0.113.20:80']);
		assert.equal(r['203.0.113.99:80'][0], 'ConnectionRefusedError');
		const out = s.daemon.output();
		assert.ok(out.includes(`net: sandbox ${id}: denied tcp 203.0.113.99:80 (no rule of the sandbox's allow list matches)`));
		assert.ok(!out.includes(`net: sandbox ${id}: denied tcp 203.0.113.10:80`), 'the resolved name passes');
		assert.ok(!out.includes(`net: sandbox ${id}: denied tcp 203.0.113.20:80`), 'the listed address passes');
		for (const rule of ['192.0.2.0/24', '10.0.0.0/8', 'example.com']) {
			const err = await s.vmError('create', { image: 'python', network: { allow: [rule] } });
			assertScode(err, 'S001', new RegExp(rule.replace(/\./g, '\\.')));
		}
	});

	// The daemon's denial counts by reason (a scrape reads the reports the
	// helpers sent; each then sends its next once it has one).
	const denials = async () => {
		const r = await scrape({ port: metricsPort });
		promtool(r.body);
		const m = samples(r.body);
		const listed = [...m.keys()].filter((k) => k.startsWith('sandbox_libkrun_network_denials_total{'));
		assert.deepEqual(listed.sort(), REASONS.map((x) => `sandbox_libkrun_network_denials_total{reason="${x}"}`).sort());
		return Object.fromEntries(REASONS.map((x) => [x, m.get(`sandbox_libkrun_network_denials_total{reason="${x}"}`)]));
	};
	// Two scrapes 2 s apart that agree: every helper's counts are read.
	const settled = () => eventually(async () => {
		const a = await denials();
		await sleep(2000);
		assert.deepEqual(await denials(), a);
		return a;
	}, 30000);

	test('a guest\'s denials move sandbox_libkrun_network_denials_total by reason, live and at its sandbox\'s stop, each once', async () => {
		const s0 = await settled();
		// the earlier cases' raw frames and DNS flood (on side), by the guard's and the resolver's reasons
		assert.ok(s0.fragment >= 1 && s0.spoofed >= 1 && s0.dns_busy >= 1, JSON.stringify(s0));
		const id = narrow.sandbox_id;
		const r = await py(id, PY_CONNECT, ['10.0.0.1:23', '198.51.100.8:80', '203.0.113.98:80', '10.0.2.3:80']);
		for (const d of Object.keys(r)) assert.equal(r[d][0], 'ConnectionRefusedError', `${d}: ${r[d]}`);
		assert.equal((await py(id, PY_DNS, ['blocked.test']))['blocked.test'][0], 5);
		const want = { ...s0, denied_range: s0.denied_range + 1, deny_rule: s0.deny_rule + 1,
			not_allowed: s0.not_allowed + 1, dns_port: s0.dns_port + 1, dns_name: s0.dns_name + 1 };
		await eventually(async () => assert.deepEqual(await denials(), want), 30000);
		// two more, and the stop at once: what the daemon had not read comes
		// with the helper's last report as it exits, nothing twice
		await py(id, PY_CONNECT, ['10.0.0.2:23', '10.0.0.3:23']);
		await s.vm('stop', { sandbox_id: id });
		want.denied_range += 2;
		await eventually(async () => assert.deepEqual(await denials(), want), 30000);
		assert.deepEqual(await settled(), want);
	});

	test('a sandbox kept busy only by a download is not reaped until the download stops', async () => {
		const port = web.address().port;
		const busy = await s.vm('create', { image: 'python', network: true, idle_timeout_secs: 4 });
		ids.push(busy.sandbox_id);
		await s.exec(busy.sandbox_id, { cmd: `setsid python3 -c 'import urllib.request; urllib.request.urlopen("http://10.0.2.2:${port}/slow?s=24").read()' >/dev/null 2>&1 &` });
		const t0 = Date.now();
		// two reaper scans (every 10 s) see it idle by its execs
		await sleep(22000);
		assert.ok(await s.listed(busy.sandbox_id), 'reaped while downloading');
		await eventually(async () => assert.equal(await s.listed(busy.sandbox_id), undefined), 30000);
		assert.ok(Date.now() - t0 >= 24000, 'reaped only after the download ended');
	});

	test('kill -9 of the daemon leaves no network helper', async () => {
		const helpers = () => ids.flatMap(helperPids);
		assert.ok(helpers().length >= 2, 'the live networked sandboxes have helpers');
		await endDaemon(s.daemon, { send: 'SIGKILL', signal: 'SIGKILL' });
		await eventually(() => assert.deepEqual(helpers(), []), 10000);
		// the helpers (their stderr is the daemon's) exited without a sanitizer report
		await sleep(500);
		assertNoSanitizerReport(s.daemon);
	});
});
