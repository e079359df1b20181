// The jail (docs/security.md) end to end.  With `jail: required`, a
// sandbox's QEMU runs, in every thread, under a uid of its own with no
// groups, no capabilities, NO_NEW_PRIVS and its seccomp filter; in its own
// mount, PID, network, IPC and UTS namespaces (PID 1 of its own); in a root
// holding only /usr, its disks, a private /dev and a /proc of its own PID namespace (where it
// names its template's sealed RAM memfd; no file of template RAM is in the jail); in a cgroup
// leaf with the memory (guest + QEMU + TCG cache), pids and CPU limits; with the rlimits
// set.  A second sandbox restores the first one's snapshot template under
// another uid.  Stopping removes the leaf.  `jail: off` runs QEMU as
// before.  Without root, `required` refuses and `auto` warns, and a daemon
// run as nobody still serves sandboxes.  Four VM boots in all (one restored
// from a template).
import { describe, test, before, after } from './lib/test-api.mjs';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { closeSync, existsSync, lstatSync, openSync, readdirSync, readFileSync, readlinkSync, statSync, writeSync } from 'node:fs';
import path from 'node:path';
import { BIN } from './daemon.mjs';
import { eventually } from './lib.mjs';
import { registryUnavailable, startRegistry } from './lib/registry-fixture.mjs';
import { assertNoVmLeft, processesMentioning, startSandboxStack } from './lib/sandbox-stack.mjs';

const skip = registryUnavailable() ?? (process.getuid() !== 0 ? 'the jail needs root' : undefined);
const UID_BASE = 900000;
// python's default 512 MiB + QEMU's 64 + the 64 MiB translation cache
const MEMORY_LIMIT = (512 + 64 + 64) * 1024 * 1024;

function qemuOf(stateDir) {
	const p = processesMentioning(stateDir).filter((x) => /qemu-system/.test(x.cmdline));
	assert.equal(p.length, 1, `one QEMU of ${stateDir}: ${JSON.stringify(p)}`);
	return p[0].pid;
}

// Every path in a jail's root but /usr and /proc (QEMU's data files and
// its own PID namespace's /proc).
function jailFiles(root, rel = '') {
	const out = [];
	for (const e of readdirSync(path.join(root, rel))) {
		const p = path.join(rel, e);
		if (p === 'usr' || p === 'proc') continue;
		out.push('/' + p);
		if (lstatSync(path.join(root, p)).isDirectory()) out.push(...jailFiles(root, p));
	}
	return out;
}

function statusFields(file) {
	const f = {};
	for (const line of readFileSync(file, 'utf8').split('\n')) {
		const i = line.indexOf(':');
		if (i > 0) f[line.slice(0, i)] = line.slice(i + 1).trim();
	}
	return f;
}

function vmDirName(stateDir) {
	return readdirSync(path.join(stateDir, 'vms'));
}

// cgroup of a pid: { v: 1, paths: {memory, pids, cpu} } or { v: 2, path }.
function cgroupOf(pid) {
	const out = { paths: {} };
	for (const line of readFileSync(`/proc/${pid}/cgroup`, 'utf8').trim().split('\n')) {
		const [, ctl, p] = line.match(/^\d+:([^:]*):(.*)$/);
		if (ctl === '' && p.includes('/sandbox-libkrun/')) Object.assign(out, { v: 2, path: p });
		for (const c of ctl.split(',')) if (['memory', 'pids', 'cpu'].includes(c)) out.paths[c] = p;
	}
	if (!out.v) out.v = 1;
	return out;
}

function v2Mount() {
	const line = readFileSync('/proc/self/mountinfo', 'utf8').split('\n').find((l) => / - cgroup2 /.test(l));
	return line.split(' ')[4];
}

function limit(limits, name) {
	const line = limits.split('\n').find((l) => l.startsWith(name));
	assert.ok(line, `${name} in /proc/PID/limits`);
	return line.slice(name.length).trim().split(/\s+/).slice(0, 2);
}

describe('the jail', { skip: skip ?? false }, () => {
	let reg, s;
	before(async () => {
		reg = await startRegistry({ images: ['python'] });
		s = await startSandboxStack({ registry: reg, config: { image_allowlist: ['python'], jail: 'required' } });
	});
	after(async () => {
		await s?.stop();
		s?.cleanupState();
		await reg?.stop();
	});

	let a, qemu, leaf;
	test('the start log says which jail is in force', async () => {
		// The log line may reach the pipe after the functions registered.
		await eventually(() => assert.match(s.daemon.output(), /jail: uid\/gid 900000-965535 \(one per VM\), cgroup v[12] under \S+sandbox-libkrun, mount\/PID\/IPC\/UTS\/network namespaces/), 5000);
	});

	test('every thread of a sandbox\'s QEMU: own uid and gid, no groups, no capabilities, NO_NEW_PRIVS, seccomp', async () => {
		a = (await s.vm('create', { image: 'python' })).sandbox_id;
		qemu = qemuOf(s.stateDir);
		const tasks = readdirSync(`/proc/${qemu}/task`);
		assert.ok(tasks.length > 1, `QEMU has ${tasks.length} threads`);
		let uid;
		for (const t of tasks) {
			const f = statusFields(`/proc/${qemu}/task/${t}/status`);
			const uids = f.Uid.split(/\s+/).map(Number), gids = f.Gid.split(/\s+/).map(Number);
			uid ??= uids[0];
			assert.ok(uid >= UID_BASE && uid < UID_BASE + 65536, `uid ${uid} in the jail range`);
			assert.deepEqual(uids, [uid, uid, uid, uid], `thread ${t} Uid`);
			assert.deepEqual(gids, [uid, uid, uid, uid], `thread ${t} Gid`);
			assert.equal(f.Groups, '', `thread ${t} Groups`);
			for (const c of ['CapInh', 'CapPrm', 'CapEff', 'CapBnd', 'CapAmb']) {
				assert.equal(BigInt('0x' + f[c]), 0n, `thread ${t} ${c}`);
			}
			assert.equal(f.NoNewPrivs, '1', `thread ${t} NoNewPrivs`);
			assert.equal(f.Seccomp, '2', `thread ${t} Seccomp`);
		}
		// PID 1 of its own namespace; `ps` shows it under its uid.
		assert.match(statusFields(`/proc/${qemu}/status`).NSpid, new RegExp(`^${qemu}\\s+1$`));
		const r = await s.exec(a, { cmd: 'echo jailed' });
		assert.equal(r.stdout, 'jailed\n');
		assert.equal(r.exit_code, 0);
	});

	test('its namespaces differ from the daemon\'s', () => {
		const daemon = s.daemon.proc.pid;
		for (const ns of ['mnt', 'pid', 'net', 'ipc', 'uts']) {
			assert.notEqual(readlinkSync(`/proc/${qemu}/ns/${ns}`), readlinkSync(`/proc/${daemon}/ns/${ns}`), `${ns} namespace`);
		}
	});

	test('its root is its jail: /usr, its own disks, a private /dev and its own /proc, nothing else of the host', () => {
		const root = `/proc/${qemu}/root`;
		assert.ok(existsSync(`${root}/usr/bin/qemu-system-x86_64`), 'QEMU in the jail');
		assert.deepEqual(readdirSync(`${root}/dev`).sort(), ['null', 'urandom']);
		// /proc of its own PID namespace: itself only.
		assert.deepEqual(readdirSync(`${root}/proc`).filter((e) => /^\d+$/.test(e)), ['1']);
		// No path to any template RAM file: its RAM is the memfd it inherited.
		const files = jailFiles(root);
		assert.deepEqual(files.filter((f) => /\.mem$|\/ram$|shm/.test(f)), [], files.join(' '));
		for (const gone of ['/home', '/etc/shadow', '/etc', '/sys', path.join(s.stateDir, 'snapshots'),
			path.join(s.stateDir, 'images', 'index.json')]) {
			assert.ok(!existsSync(root + gone), `${gone} is not in the jail`);
		}
		// Of the image cache, its own image only (bound at its path).
		assert.equal(readdirSync(path.join(root, s.stateDir, 'images', 'erofs')).length, 1);
		const [dir] = vmDirName(s.stateDir);
		const mine = readdirSync(path.join(root, s.stateDir, 'vms'));
		assert.deepEqual(mine, [dir], 'only its own VM directory');
		assert.deepEqual(readdirSync(path.join(root, s.stateDir, 'vms', dir)), ['scratch.ext4'], 'only its disk');
	});

	test('its guest RAM is the template\'s sealed memfd: a write through /proc/<qemu>/fd fails with EPERM', () => {
		const cmdline = readFileSync(`/proc/${qemu}/cmdline`, 'utf8').split('\0').join(' ');
		const m = cmdline.match(/mem-path=\/proc\/self\/fd\/(\d+),.*share=off/);
		assert.ok(m, cmdline);
		const fdPath = `/proc/${qemu}/fd/${m[1]}`;
		assert.match(readlinkSync(fdPath), /^\/memfd:/);
		const fd = openSync(fdPath, 'r+');
		try {
			assert.throws(() => writeSync(fd, 'x', 0), { code: 'EPERM' });
		} finally {
			closeSync(fd);
		}
		// F_GET_SEALS (node has no fcntl): F_SEAL_WRITE, and every other seal.
		const r = spawnSync('python3', ['-c', 'import fcntl, os, sys; fd = os.open(sys.argv[1], os.O_RDWR); '
			+ 'print(fcntl.fcntl(fd, 1034))', fdPath], { encoding: 'utf8' });
		assert.equal(r.status, 0, r.stderr);
		const seals = Number(r.stdout);
		for (const [name, bit] of [['F_SEAL_SEAL', 1], ['F_SEAL_SHRINK', 2], ['F_SEAL_GROW', 4], ['F_SEAL_WRITE', 8]]) {
			assert.ok(seals & bit, `${name} in ${seals}`);
		}
	});

	// A clone's memory limit: MEMORY_LIMIT and the holes its template's
	// memfd had when it started (a clone's first touch of a page the memfd
	// lacks adds the page there, charged to the clone); the memfd only
	// fills, so they were at least today's holes.
	function assertCloneLimit(value) {
		const m = readFileSync(`/proc/${qemu}/cmdline`, 'utf8').match(/mem-path=\/proc\/self\/fd\/(\d+),/);
		assert.ok(m);
		const held = statSync(`/proc/${qemu}/fd/${m[1]}`).blocks * 512;
		const holes = Math.ceil(Math.max(0, (512 << 20) - held) / (1 << 20)) * (1 << 20);
		const limit = Number(value);
		assert.ok(limit >= MEMORY_LIMIT + holes && limit <= MEMORY_LIMIT + (512 << 20),
			`limit ${limit}: ${MEMORY_LIMIT} and the memfd's holes (it holds ${held} bytes)`);
	}

	test('its cgroup is its own leaf, with the limits set', () => {
		const [dir] = vmDirName(s.stateDir);
		const cg = cgroupOf(qemu);
		if (cg.v === 2) {
			assert.ok(cg.path.endsWith(`/sandbox-libkrun/${dir}`), `leaf ${cg.path}`);
			leaf = path.join(v2Mount(), cg.path);
			const read = (f) => readFileSync(path.join(leaf, f), 'utf8').trim();
			assertCloneLimit(read('memory.max'));
			assert.equal(read('memory.oom.group'), '1');
			if (existsSync(path.join(leaf, 'memory.swap.max'))) assert.equal(read('memory.swap.max'), '0');
			assert.equal(read('pids.max'), '256');
			assert.equal(read('cpu.max'), '100000 100000');
		} else {
			for (const c of ['memory', 'pids', 'cpu']) {
				assert.ok(cg.paths[c]?.endsWith(`/sandbox-libkrun/${dir}`), `${c} leaf ${cg.paths[c]}`);
			}
			const read = (c, f) => readFileSync(path.join('/sys/fs/cgroup', c, cg.paths[c], f), 'utf8').trim();
			leaf = path.join('/sys/fs/cgroup/pids', cg.paths.pids);
			const limit = read('memory', 'memory.limit_in_bytes');
			assertCloneLimit(limit);
			if (existsSync(path.join('/sys/fs/cgroup/memory', cg.paths.memory, 'memory.memsw.limit_in_bytes'))) {
				assert.equal(read('memory', 'memory.memsw.limit_in_bytes'), limit);
			}
			assert.equal(read('pids', 'pids.max'), '256');
			assert.equal(read('cpu', 'cpu.cfs_quota_us'), '100000');
			assert.equal(read('cpu', 'cpu.cfs_period_us'), '100000');
		}
		assert.ok(readFileSync(path.join(leaf, 'cgroup.procs'), 'utf8').split('\n').includes(String(qemu)));
	});

	test('its rlimits', () => {
		const limits = readFileSync(`/proc/${qemu}/limits`, 'utf8');
		assert.deepEqual(limit(limits, 'Max core file size'), ['0', '0']);
		assert.deepEqual(limit(limits, 'Max file size'), [String(2 ** 31), String(2 ** 31)]); // the scratch disk
		const nofile = limit(limits, 'Max open files').map(Number);
		assert.ok(nofile[0] <= 4096 && nofile[0] === nofile[1], `NOFILE ${nofile}`);
	});

	test('a second sandbox restores the template under another uid; stop removes the cgroup leaf', async () => {
		const b = (await s.vm('create', { image: 'python' })).sandbox_id;
		const qemus = processesMentioning(s.stateDir).filter((x) => /qemu-system/.test(x.cmdline)).map((x) => x.pid);
		assert.equal(qemus.length, 2);
		const other = qemus.find((p) => p !== qemu);
		const uidOf = (p) => statusFields(`/proc/${p}/status`).Uid.split(/\s+/)[0];
		assert.notEqual(uidOf(other), uidOf(qemu));
		await s.exec(b, { cmd: 'true' });
		await s.vm('stop', { sandbox_id: b });
		await s.vm('stop', { sandbox_id: a });
		assert.ok(!existsSync(leaf), `${leaf} removed`);
		assertNoVmLeft(s.stateDir, 'after stop');
		assert.match(s.daemon.output(), /snapshot \w+ saved/);
	});

	test('SIGTERM: exit 0, no sanitizer report, nothing left', async () => {
		await s.stopClean();
		assertNoVmLeft(s.stateDir, 'after SIGTERM');
	});
});

describe('jail: off, and vm run without root', { skip: skip ?? false }, () => {
	let reg, s;
	before(async () => {
		reg = await startRegistry({ images: ['python'] });
		s = await startSandboxStack({ registry: reg, config: { image_allowlist: ['python'], jail: 'off' } });
	});
	after(async () => {
		await s?.stop();
		s?.cleanupState();
		await reg?.stop();
	});

	test('jail: off runs QEMU as before: the daemon\'s uid and namespaces', async () => {
		assert.match(s.daemon.output(), /jail: off \(configuration\)/);
		const id = (await s.vm('create', { image: 'python' })).sandbox_id;
		const qemu = qemuOf(s.stateDir);
		assert.equal(statusFields(`/proc/${qemu}/status`).Uid.split(/\s+/)[0], '0');
		assert.equal(readlinkSync(`/proc/${qemu}/ns/mnt`), readlinkSync(`/proc/${s.daemon.proc.pid}/ns/mnt`));
		await s.exec(id, { cmd: 'true' });
		await s.vm('stop', { sandbox_id: id });
		assertNoVmLeft(s.stateDir, 'after stop');
	});

	test('not root: required refuses to start (exit 2, naming what is missing), auto warns and goes on', () => {
		const nobody = ['--reuid=65534', '--regid=65534', '--clear-groups'];
		const req = spawnSync('setpriv', [...nobody, BIN, 'vm', 'run', '--jail', 'required', '--rootfs', '/nonexistent', '--', 'true'], { encoding: 'utf8' });
		assert.equal(req.status, 2, req.stderr);
		assert.match(req.stderr, /jail: required, but the daemon is not root; to enable it, run the daemon as root/);
		const auto = spawnSync('setpriv', [...nobody, BIN, 'vm', 'run', '-v', '--jail', 'auto', '--rootfs', '/nonexistent', '--', 'true'], { encoding: 'utf8' });
		assert.match(auto.stderr, /jail: not in force: the daemon is not root; .*to enable it, run the daemon as root/);
		assert.match(auto.stderr, /state directory|image \/nonexistent/); // it went on to start the VM
	});
});

describe('a daemon that is not root', { skip: skip ?? false }, () => {
	const NOBODY = 65534;
	let reg, s;
	before(async () => {
		reg = await startRegistry({ images: ['python'] });
		s = await startSandboxStack({ registry: reg, config: { image_allowlist: ['python'] },
			spawnOptions: { uid: NOBODY, gid: NOBODY } });
	});
	after(async () => {
		await s?.stop();
		s?.cleanupState();
		await reg?.stop();
	});

	test('jail: auto warns once, naming what is missing, and sandboxes still work', async () => {
		const warnings = s.daemon.output().match(/jail: not in force: the daemon is not root; .*to enable it, run the daemon as root/g);
		assert.equal(warnings?.length, 1, s.daemon.output());
		const id = (await s.vm('create', { image: 'python' })).sandbox_id;
		const qemu = qemuOf(s.stateDir);
		assert.equal(statusFields(`/proc/${qemu}/status`).Uid.split(/\s+/)[0], String(NOBODY));
		const r = await s.exec(id, { cmd: "python3 -c 'print(6*7)'" });
		assert.equal(r.stdout, '42\n');
		await s.vm('stop', { sandbox_id: id });
		await s.stopClean();
		assertNoVmLeft(s.stateDir, 'after SIGTERM');
	});
});
