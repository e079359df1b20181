// Snapshot templates made ahead and removed with their image, and the
// warm pool (docs/security.md, copy-on-write templates).  A daemon started
// with an allow-listed image already in its cache makes the image's
// template in the background, so the first create restores it (no new
// template generation, QEMU started with -incoming); `sandbox-libkrun image
// rm python` then leaves no template and no template RAM file behind.  With
// warm_pool {python: 2}, two parked VMs wait (adapter::info's capacity
// says so, as it says a standby waits); 10 racing creates get 10
// distinct VMs (two of them the parked ones), the pool is refilled, and
// a parked VM keeps nothing of its warm-up (`true` and python3, no file
// written anywhere) and gets the create's identity;
// every VM goes with the daemon.  With config standby (the default; the
// other suites turn it off), one QEMU waits for the template made ahead,
// with no guest memory of its own; the next create is restored in it with
// its own env, entropy and boot_id and nothing of the other VM's memory;
// the next one waits then; `image rm python` stops it; it goes with the
// daemon.  A template's RAM file changed on disk
// makes a new daemon fall back (a cold boot, a new template), never crash.
// `sandbox-libkrun image pull python` run by hand beside a running daemon
// with an empty cache makes the template, and the daemon's first create
// restores it.  About twenty-eight VM boots.
import { describe, test, before, after } from './lib/test-api.mjs';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, realpathSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { BIN } from './daemon.mjs';
import { eventually } from './lib.mjs';
import { registryUnavailable, startRegistry } from './lib/registry-fixture.mjs';
import { assertNoVmLeft, processesMentioning, startSandboxStack } from './lib/sandbox-stack.mjs';

const skip = registryUnavailable();

// The template directories of a state directory (64 hex digits each).
const templates = (stateDir) => {
	const dir = path.join(stateDir, 'snapshots');
	return existsSync(dir) ? readdirSync(dir).filter((d) => /^[0-9a-f]{64}$/.test(d)).sort() : [];
};

// The template RAM files of a state directory (each template's "ram", with
// its inode: a new generation is a new file).
const ramFiles = (stateDir) => templates(stateDir).map((t) => path.join(stateDir, 'snapshots', t, 'ram'))
	.filter((f) => existsSync(f)).map((f) => `${f} ${statSync(f).ino}`);

describe('templates and the warm pool', { skip: skip ?? false }, () => {
	let reg, seed;
	before(async () => {
		reg = await startRegistry({ images: ['python'] });
		// A first daemon pulls the image; the others start with it cached.
		seed = await startSandboxStack({ registry: reg, config: { image_allowlist: ['python'] } });
		const id = (await seed.vm('create', { image: 'python' })).sandbox_id;
		await seed.vm('stop', { sandbox_id: id });
		await seed.stop();
	});
	after(async () => {
		seed?.cleanupState();
		await reg?.stop();
	});

describe('templates made ahead and removed with their image', () => {
	let s;
	before(async () => {
		s = await startSandboxStack({ registry: reg, seedFrom: seed.stateDir, config: { image_allowlist: ['python'] } });
	});
	after(async () => {
		await s?.stop();
		s?.cleanupState();
	});

	test('the daemon makes the template of a cached image at start; the first create restores it', async () => {
		await eventually(() => assert.match(s.daemon.output(), /template of python ready ahead of its first create/),
			180000);
		const before = { templates: templates(s.stateDir), ram: ramFiles(s.stateDir) };
		assert.equal(before.templates.length, 1, 'one template');
		assert.equal(before.ram.length, 1, 'one RAM file');
		const id = (await s.vm('create', { image: 'python' })).sandbox_id;
		const qemu = processesMentioning(s.stateDir).filter((p) => /qemu-system/.test(p.cmdline));
		assert.equal(qemu.length, 1);
		assert.match(qemu[0].cmdline, /-incoming defer/);
		assert.match(qemu[0].cmdline, /mem-path=\/proc\/self\/fd\/\d+,.*share=off/);
		assert.deepEqual({ templates: templates(s.stateDir), ram: ramFiles(s.stateDir) }, before,
			'the create made no new template');
		const r = await s.exec(id, { cmd: 'python3 -c "print(6*7)"' });
		assert.equal(r.stdout, '42\n');
		await s.vm('stop', { sandbox_id: id });
	});

	test('a changed template RAM file makes a new daemon fall back to a cold boot, never crash', async () => {
		await s.stopClean();
		const [tpl] = templates(s.stateDir);
		const ram = path.join(s.stateDir, 'snapshots', tpl, 'ram'), ramId = `${ram}.id`;
		const saved = readFileSync(ramId, 'utf8');
		const { size } = statSync(ram);
		writeFileSync(ram, 'changed', { flag: 'r+' });
		assert.equal(statSync(ram).size, size);
		s = await startSandboxStack({ registry: reg, stateDir: s.stateDir, config: { image_allowlist: ['python'] } });
		const id = (await s.vm('create', { image: 'python' })).sandbox_id;
		const r = await s.exec(id, { cmd: 'python3 -c "print(6*7)"' });
		assert.equal(r.stdout, '42\n');
		assert.match(s.daemon.output(), /template RAM \S+ changed since the template was saved/);
		assert.ok(s.daemon.proc.exitCode === null, 'the daemon lives');
		assert.ok(!existsSync(ramId) || readFileSync(ramId, 'utf8') !== saved, 'the changed template is gone');
		await s.vm('stop', { sandbox_id: id });
	});

	test('image rm python removes the image and its templates', async () => {
		await s.stopClean();
		assertNoVmLeft(s.stateDir, 'after SIGTERM');
		const r = spawnSync(BIN, ['image', 'rm', 'python'], {
			encoding: 'utf8', env: { ...process.env, III_SANDBOX_STATE_DIR: s.stateDir },
		});
		assert.equal(r.status, 0, r.stderr);
		assert.deepEqual(templates(s.stateDir), []);
		assert.deepEqual(ramFiles(s.stateDir), []);
	});
});

// Runs the CLI without blocking the event loop (the stand-in engine and
// the daemon's connection live in it): {status, stdout, stderr}.
const runCli = (args, env) => new Promise((resolve, reject) => {
	const p = spawn(BIN, args, { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
	let stdout = '', stderr = '';
	p.stdout.on('data', (d) => { stdout += d; });
	p.stderr.on('data', (d) => { stderr += d; });
	p.on('error', reject);
	p.on('close', (status) => resolve({ status, stdout, stderr }));
});

describe('image pull by hand beside a running daemon', () => {
	let s, conf;
	before(async () => {
		s = await startSandboxStack({ registry: reg, config: { image_allowlist: ['python'] } });
		// The operator's file, in serve's YAML form (JSON in YAML flow style).
		conf = path.join(s.stateDir, 'serve.yaml');
		writeFileSync(conf, `registry_mirrors: ${JSON.stringify(reg.mirrors)}\nimage_allowlist: [python]\n`);
	});
	after(async () => {
		await s?.stop();
		s?.cleanupState();
	});

	test('the pull makes the template and the first create restores it', async () => {
		assert.deepEqual(templates(s.stateDir), [], 'an empty cache');
		const env = { III_SANDBOX_STATE_DIR: s.stateDir };
		const r = await runCli(['image', '--config', conf, 'pull', 'python'], env);
		assert.equal(r.status, 0, r.stderr);
		assert.match(r.stdout, /^REF +DIGEST +SIZE +LAST USED\ndocker\.io\/iiidev\/python:latest  sha256:[0-9a-f]{12}  /);
		assert.match(r.stderr, /making the VM template of python \(1 CPU, 512 MiB\)\n/);
		assert.match(r.stderr, /the template of python: saved in \d+\.\d s\n/);
		const made = { templates: templates(s.stateDir), ram: ramFiles(s.stateDir) };
		assert.equal(made.templates.length, 1, 'one template');
		assert.deepEqual(processesMentioning(s.stateDir).filter((p) => /qemu-system/.test(p.cmdline)), [],
			'the template VM went with the command');
		const id = (await s.vm('create', { image: 'python' })).sandbox_id;
		const qemu = processesMentioning(s.stateDir).filter((p) => /qemu-system/.test(p.cmdline));
		assert.equal(qemu.length, 1);
		assert.match(qemu[0].cmdline, /-incoming defer/, 'the first create restored');
		assert.deepEqual({ templates: templates(s.stateDir), ram: ramFiles(s.stateDir) }, made,
			'the create made no new template');
		assert.doesNotMatch(s.daemon.output(), /snapshot [0-9a-f]+ saved/);
		const out = await s.exec(id, { cmd: 'python3 -c "print(6*7)"' });
		assert.equal(out.stdout, '42\n');
		await s.vm('stop', { sandbox_id: id });
		// Pulled again: already there, and --no-template boots nothing.
		const again = await runCli(['image', '--config', conf, 'pull', '--no-template', 'python'], env);
		assert.equal(again.status, 0, again.stderr);
		assert.doesNotMatch(again.stderr, /template/);
		const present = await runCli(['image', '--config', conf, 'pull', 'python'], env);
		assert.equal(present.status, 0, present.stderr);
		assert.match(present.stderr, /the template of python: already made/);
		assert.deepEqual(templates(s.stateDir), made.templates);
	});
});

describe('the standby VM (config standby, the default)', () => {
	let s;
	before(async () => {
		s = await startSandboxStack({ registry: reg, seedFrom: seed.stateDir, standby: true,
			config: { image_allowlist: ['python'] } });
	});
	after(async () => {
		await s?.stop();
		s?.cleanupState();
	});
	const qemus = () => processesMentioning(s.stateDir).filter((p) => /qemu-system/.test(p.cmdline));
	const count = (re) => s.daemon.output().match(re)?.length ?? 0;
	const waiting = () => count(/standby: a VM of python waits for the next create/g);
	const taken = () => count(/standby: the VM waiting for python taken/g);

	test('a QEMU waits, not loaded, for the next create; that create loads the template into it and is a VM of its own', async () => {
		// The template made ahead at the daemon's start asks for the first.
		await eventually(() => assert.match(s.daemon.output(), /template of python ready ahead of its first create/),
			180000);
		await eventually(() => assert.equal(waiting(), 1, s.daemon.output().slice(-3000)), 60000);
		await eventually(() => assert.equal(qemus().length, 1, 'the standby alone'), 20000);
		assert.equal((await s.call('adapter::info', {})).capacity.standby_ready, true, 'adapter::info tells placement');
		const first = qemus()[0].pid;
		const script = 'echo "$GREETING"; cat /proc/sys/kernel/random/boot_id; head -c 16 /dev/urandom | od -An -tx1; ' +
			'cat /dev/shm/mark 2>/dev/null || echo no mark; echo x > /dev/shm/mark';
		const a = (await s.vm('create', { image: 'python', env: { GREETING: 'one' } })).sandbox_id;
		assert.equal(taken(), 1, 'the create took the standby');
		const ra = (await s.exec(a, { argv: ['sh', '-c', script] })).stdout.split('\n');
		// The next one, for the next create: one at a time.
		await eventually(() => assert.equal(waiting(), 2), 60000);
		const vms = qemus().map((p) => p.pid);
		assert.equal(vms.length, 2, 'the sandbox and the standby');
		assert.ok(vms.includes(first), 'the first standby QEMU serves the sandbox');
		const second = vms.find((pid) => pid !== first);
		// A standby has loaded nothing: QEMU waits for migrate-incoming, no
		// guest page of its own, no translated code.
		const anon = (pid) => Number(/^Pss_Anon:\s+(\d+)/m.exec(readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8'))[1]);
		const [idle, busy] = [anon(second), anon(first)];
		assert.ok(idle < 20 * 1024 && idle < busy, `the standby's ${idle} KiB of anonymous memory, the sandbox's ${busy} KiB`);
		const b = (await s.vm('create', { image: 'python', env: { GREETING: 'two' } })).sandbox_id;
		assert.equal(taken(), 2, 'the second create took the second standby');
		assert.ok(qemus().some((p) => p.pid === second), 'the second standby QEMU serves the sandbox');
		const rb = (await s.exec(b, { argv: ['sh', '-c', script] })).stdout.split('\n');
		assert.deepEqual([ra[0], rb[0]], ['one', 'two'], "each create's env");
		assert.notEqual(ra[1], rb[1], 'distinct boot_ids');
		assert.notEqual(ra[2], rb[2], 'distinct /dev/urandom bytes');
		assert.deepEqual([ra[3], rb[3]], ['no mark', 'no mark'], "a write in one VM's memory never shows in the other");
		const py = await s.exec(b, { cmd: 'python3 -c "print(6*7)"' });
		assert.equal(py.stdout, '42\n');
		await eventually(() => assert.equal(waiting(), 3), 60000);
		await Promise.all([a, b].map((id) => s.vm('stop', { sandbox_id: id })));
		await eventually(() => assert.equal(qemus().length, 1, 'the standby alone'), 20000);
	});

	test('image rm python stops the standby of the removed image', async () => {
		const r = await runCli(['image', 'rm', 'python'], { III_SANDBOX_STATE_DIR: s.stateDir });
		assert.equal(r.status, 0, r.stderr);
		await eventually(() => assert.match(s.daemon.output(), /standby: the VM waiting for python stopped: its image is gone/),
			20000);
		await eventually(() => assertNoVmLeft(s.stateDir, 'after image rm'), 20000);
		assert.deepEqual(templates(s.stateDir), []);
	});

	test('the standby goes with the daemon', async () => {
		const a = (await s.vm('create', { image: 'python' })).sandbox_id;
		await s.vm('stop', { sandbox_id: a });
		await eventually(() => assert.equal(waiting(), 4), 120000);
		await eventually(() => assert.equal(qemus().length, 1, 'the standby alone'), 20000);
		await s.stopClean();
		assertNoVmLeft(s.stateDir, 'after SIGTERM');
	});
});

describe('warm_pool {python: 2}', () => {
	let s;
	before(async () => {
		s = await startSandboxStack({ registry: reg, seedFrom: seed.stateDir,
			config: { image_allowlist: ['python'], warm_pool: { python: 2 } } });
	});
	after(async () => {
		await s?.stop();
		s?.cleanupState();
	});
	const qemus = () => processesMentioning(s.stateDir).filter((p) => /qemu-system/.test(p.cmdline)).map((p) => p.pid);

	test('10 racing creates get 10 distinct VMs, two of them parked ones; the pool refills', async () => {
		await eventually(() => assert.match(s.daemon.output(), /warm pool: 2 of 2 VMs of python parked/), 180000);
		const { capacity } = await s.call('adapter::info', {});
		assert.equal(capacity.pool_ready, 2, 'adapter::info tells placement');
		assert.deepEqual(capacity.images_cached, ['python']);
		const parked = qemus();
		assert.equal(parked.length, 2, 'two parked VMs');
		const ids = (await Promise.all(Array.from({ length: 10 }, () => s.vm('create', { image: 'python' }))))
			.map((r) => r.sandbox_id);
		assert.equal(new Set(ids).size, 10);
		const bootIds = await Promise.all(ids.map(async (id) => (await s.exec(id, { cmd: 'cat /proc/sys/kernel/random/boot_id' })).stdout));
		assert.equal(new Set(bootIds).size, 10, 'ten distinct VMs');
		assert.equal(s.daemon.output().match(/warm pool: a parked VM of python taken/g)?.length, 2);
		for (const pid of parked) assert.ok(qemus().includes(pid), `parked VM ${pid} serves a sandbox`);
		await eventually(() => assert.equal(s.daemon.output().match(/warm pool: 2 of 2 VMs of python parked/g)?.length, 2,
			'two replacements parked'), 180000);
		assert.equal(qemus().length, 12);
		await Promise.all(ids.map((id) => s.vm('stop', { sandbox_id: id })));
	});

	// A parked VM ran `true` and then python3 (the image's interpreter,
	// from run's lang table) through the guest's process server before it
	// waited (WARM_UP): nothing of that may be in the sandbox it becomes
	// (no process, cgroup, and no file anywhere: the listing of the whole
	// tree but /proc and /sys, with sizes, is the one of a VM that never
	// warmed up), and its identity still comes only with the create.
	test('a parked VM becomes a fresh sandbox: the create\'s env, its own entropy and boot_id, nothing of its warm-up', async () => {
		await eventually(() => assert.match(s.daemon.output(), /warm pool: 2 of 2 VMs of python parked/), 180000);
		const taken = () => s.daemon.output().match(/warm pool: a parked VM of python taken/g)?.length ?? 0;
		const before = taken();
		const script = 'echo "$GREETING"; cat /proc/sys/kernel/random/boot_id; head -c 16 /dev/urandom | od -An -tx1; ' +
			'n=0 z=0; for f in /proc/[0-9]*/stat; do read -r p c st pp r <"$f"; [ "$pp" = 1 ] && n=$((n + 1)); ' +
			'[ "$st" = Z ] && z=$((z + 1)); done; echo "children of init $n, zombies $z"; cat /proc/self/cgroup; ' +
			'ls /sys/fs/cgroup/sandbox | grep "^e"; ls -A /tmp /run /dev/shm | tr "\\n" " "; echo; ' +
			'find / \\( -path /proc -o -path /sys \\) -prune -o -printf "%p %s\\n" | sort > /dev/shm/l; ' +
			'wc -l < /dev/shm/l; cksum < /dev/shm/l; rm /dev/shm/l';
		const out = [];
		const run = async (args) => {
			const id = (await s.vm('create', { image: 'python', ...args })).sandbox_id;
			const r = (await s.exec(id, { argv: ['sh', '-c', script] })).stdout.split('\n');
			await s.vm('stop', { sandbox_id: id });
			return r;
		};
		for (const greeting of ['one', 'two']) out.push(await run({ env: { GREETING: greeting } }));
		assert.equal(taken() - before, 2, 'both creates took parked VMs');
		// Not the default size: no parked VM, no warm-up.
		const plain = await run({ env: { GREETING: 'three' }, memory_mb: 384 });
		assert.equal(taken() - before, 2, 'the third create did not take a parked VM');
		assert.deepEqual(out.map((o) => o[0]), ['one', 'two'], "the create's env");
		assert.notEqual(out[0][1], out[1][1], 'distinct boot_ids');
		assert.notEqual(out[0][2], out[1][2], 'distinct /dev/urandom bytes');
		assert.equal(plain[3], 'children of init 1, zombies 0');
		assert.ok(Number(plain.at(-3)) > 1000, `the listing covers the image's files: ${plain.at(-3)} entries`);
		for (const o of out) {
			assert.deepEqual(o.slice(3), plain.slice(3), 'no process, cgroup or file of the warm-up');
		}
	});

	test('parked VMs go with the daemon', async () => {
		await s.stopClean();
		assertNoVmLeft(s.stateDir, 'after SIGTERM');
	});
});
});
