// Memory admission and dying VMs end to end: adapter::info's capacity
// counts a create; a create past memory_budget_mb is S400 with the
// numbers; a VM killed under an exec fails that exec with S300 naming the
// cause, the sandbox leaves `list` and later calls get S002;
// a VM killed by an out-of-memory killer (its QEMU moved into a small
// memory cgroup of the test's own) is reported as such.  A sandbox cannot
// write more than scratch_disk_mb.  A hostile exec (background processes,
// a fork bomb) never keeps the next exec or stop from working.  Every QEMU runs
// with oom_score_adj 1000.  A guest that fills its own memory or its own
// disk loses the process doing it, never its VM.  Same setup as
// sandbox.test.mjs.
import { describe, test, before, after } from './lib/test-api.mjs';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, readFileSync, rmdirSync, writeFileSync } from 'node:fs';
import { eventually, sleep } from './lib.mjs';
import { registryUnavailable, startRegistry } from './lib/registry-fixture.mjs';
import { assertNoVmLeft, assertScode, processesMentioning, startSandboxStack } from './lib/sandbox-stack.mjs';

const skip = registryUnavailable();
// One sandbox of 512 MiB with its VM (512 + QEMU's 64 + the 64 MiB
// translation cache = 640 MiB) fits, two do not.  The templates' memfds
// count too, and grow toward their guest RAM as clones touch pages: the
// last test's sandbox (448 MiB) fits beside the 512 and 256 MiB ones full.
const BUDGET = 1250;
// Small, so that filling the disk is quick.
const SCRATCH_MB = 256;

function qemuPids(stateDir) {
	return processesMentioning(stateDir).filter((p) => /qemu-system/.test(p.cmdline)).map((p) => p.pid);
}

// A memory cgroup the test owns: v1 where the memory controller is mounted
// on its own, else v2 with memory enabled at the root.  null when neither.
function makeMemoryCgroup(limitBytes) {
	const name = `sbx-e2e-oom-${process.pid}`;
	if (existsSync('/sys/fs/cgroup/memory/memory.limit_in_bytes')) {
		const dir = `/sys/fs/cgroup/memory/${name}`;
		mkdirSync(dir);
		writeFileSync(`${dir}/memory.limit_in_bytes`, String(limitBytes));
		return { dir, procs: `${dir}/cgroup.procs` };
	}
	if (existsSync('/sys/fs/cgroup/cgroup.subtree_control') &&
		readFileSync('/sys/fs/cgroup/cgroup.subtree_control', 'utf8').split(/\s+/).includes('memory')) {
		const dir = `/sys/fs/cgroup/${name}`;
		mkdirSync(dir);
		writeFileSync(`${dir}/memory.max`, String(limitBytes));
		writeFileSync(`${dir}/memory.swap.max`, '0');
		return { dir, procs: `${dir}/cgroup.procs` };
	}
	return null;
}

async function removeCgroup(cg) {
	for (let i = 0; cg && existsSync(cg.dir) && i < 50; i++) {
		try {
			rmdirSync(cg.dir);
		} catch {
			await sleep(100); // its last process is still exiting
		}
	}
}

async function untilUnlisted(s, id, ms) {
	const t0 = Date.now();
	while ((await s.listed(id)) !== undefined) {
		assert.ok(Date.now() - t0 < ms, `${id} still listed after ${ms} ms`);
		await sleep(200);
	}
}

describe('memory budget and dying VMs', { skip: skip ?? false }, () => {
	let reg, s;
	before(async () => {
		reg = await startRegistry({ images: ['python'] });
		s = await startSandboxStack({ registry: reg, config: { image_allowlist: ['python'], memory_budget_mb: BUDGET,
			scratch_disk_mb: SCRATCH_MB } });
	});
	after(async () => {
		await s?.stop();
		s?.cleanupState();
		await reg?.stop();
	});

	let a;
	test('adapter::info\'s capacity counts the create: live 1, committed grown by its VM, the image cached', async () => {
		const capacity = async () => (await s.call('adapter::info', {})).capacity;
		const before = await capacity();
		assert.deepEqual(before.sandboxes, { live: 0, max: 32 });
		// 512 MiB guest + 64 for QEMU + 64 of translation cache, under TCG.
		assert.deepEqual(before.memory_mib, { committed: 0, budget: BUDGET, sandbox_default: 640 });
		assert.deepEqual(before.images_cached, [], 'nothing pulled yet');
		assert.equal(before.pool_ready, 0);
		assert.equal(typeof before.kvm, 'boolean');
		a = (await s.vm('create', { image: 'python' })).sandbox_id;
		const after = await capacity();
		assert.deepEqual(after.sandboxes, { live: 1, max: 32 });
		// The templates count from the next create on: this one measured none.
		assert.equal(after.memory_mib.committed, before.memory_mib.committed + 640);
		assert.deepEqual(after.images_cached, ['python']);
		assert.equal(after.standby_ready, false, 'this stack runs without standby VMs');
	});

	test('a create past memory_budget_mb is S400 naming the need, the commitment and the budget', async () => {
		assertScode(await s.vmError('create', { image: 'python' }), 'S400',
			new RegExp(`needs 640 MiB \\(512 MiB guest memory \\+ 128 MiB for its VM\\), 640 of memory_budget_mb ${BUDGET} ` +
				'MiB are committed to 1 sandbox, [1-9]\\d* MiB held by snapshot templates and 0 MiB by background ' +
				'processes\' logs; .*raise memory_budget_mb'));
		const [qemu] = qemuPids(s.stateDir);
		assert.equal(readFileSync(`/proc/${qemu}/oom_score_adj`, 'utf8').trim(), '1000');
		assert.match(readFileSync(`/proc/${qemu}/cmdline`, 'utf8'), /tb-size=64\0/);
	});

	test('a sandbox writes at most scratch_disk_mb, then gets ENOSPC and still answers', async () => {
		const r = await s.exec(a, { cmd: `dd if=/dev/zero of=/fill bs=1M count=${SCRATCH_MB}` });
		assert.notEqual(r.exit_code, 0);
		assert.match(r.stderr, /No space left on device/);
		const used = await s.exec(a, { cmd: "sh -c 'rm /fill && echo ok'" });
		assert.equal(used.stdout, 'ok\n', JSON.stringify(used));
	});

	test('a timeout kills everything the exec started, background and setsid processes included', async () => {
		assertScode(await s.vmError('exec', { sandbox_id: a, cmd: "sh -c 'sleep 300 & setsid sleep 301 & sleep 302'",
			timeout_ms: 3000 }), 'S200');
		const r = await s.exec(a, { cmd: "sh -c 'cat /proc/[0-9]*/comm'" });
		assert.doesNotMatch(r.stdout, /^sleep$/m, r.stdout);
	});

	test('a fork bomb left by one exec: the next exec answers, the bomb stays under max_guest_pids, stop works', async () => {
		const bomb = await s.exec(a, { cmd: "sh -c 'b() { b | b & }; b'", timeout_ms: 10000 });
		assert.equal(bomb.exit_code, 0);
		await sleep(3000);
		// Per exec cgroup "e<n> pids.current pids.max", then the guest's
		// process count: the bomb's cgroup is the one that filled up.
		const alive = await s.exec(a, { cmd: "sh -c 'echo alive; for d in /sys/fs/cgroup/sandbox/e*; do " +
			"echo ${d##*/} $(cat $d/pids.current) $(cat $d/pids.max); done; echo procs $(ls -d /proc/[0-9]* | wc -l)'" },
			120000);
		assert.match(alive.stdout, /^alive\n/);
		const groups = [...alive.stdout.matchAll(/^(e\d+) (\d+) (\S+)$/gm)]
			.map(([, name, current, max]) => ({ name, current: Number(current), max }));
		assert.ok(groups.length >= 1 && groups.every((g) => g.max === '1024'),
			`each exec's cgroup has pids.max max_guest_pids: ${alive.stdout}`);
		const bombGroup = groups.reduce((m, g) => (g.current > m.current ? g : m));
		// The bomb multiplied (so the bound, not a quiet shell, is what held
		// it) and its cgroup's count stays within the bound.
		assert.ok(bombGroup.current >= 32 && bombGroup.current <= 1024,
			`the bomb's cgroup counts 32..1024 processes: ${alive.stdout}`);
		const procs = Number(/^procs (\d+)$/m.exec(alive.stdout)?.[1]);
		assert.ok(procs >= bombGroup.current && procs <= 1024 + 64,
			`the guest holds at most max_guest_pids plus its own few processes: ${alive.stdout}`);
		const t0 = Date.now();
		assert.deepEqual(await s.vm('stop', { sandbox_id: a }), { sandbox_id: a, stopped: true });
		assert.ok(Date.now() - t0 < 10000, `stop took ${Date.now() - t0} ms`);
		a = (await s.vm('create', { image: 'python' })).sandbox_id;
	});

	test('kill -9 of the QEMU under an exec: S300 with the cause, then S002, nothing left', async () => {
		const inFlight = s.vmTry('exec', { sandbox_id: a, cmd: 'sleep 60' });
		await sleep(1000);
		const pids = qemuPids(s.stateDir);
		assert.equal(pids.length, 1);
		process.kill(pids[0], 'SIGKILL');
		const t0 = Date.now();
		const { err } = await inFlight;
		assert.ok(Date.now() - t0 < 10000, `the exec failed ${Date.now() - t0} ms after the kill`);
		// The contract's S300 message is "VM boot failed: <detail>".
		assertScode(err, 'S300', /^VM boot failed: the sandbox's VM exited: killed by signal 9 \(Killed\)$/);
		await untilUnlisted(s, a, 5000);
		assertScode(await s.vmError('exec', { sandbox_id: a, cmd: 'true' }), 'S002');
		await eventually(() => assertNoVmLeft(s.stateDir, 'after the kill'));
	});

	test('kill -9 of an idle QEMU, then fs calls: S300 with the cause at once, the sandbox leaves, then S002', async () => {
		const id = (await s.vm('create', { image: 'python' })).sandbox_id;
		const [qemu] = qemuPids(s.stateDir);
		process.kill(qemu, 'SIGKILL');
		// Only until QEMU is gone: the reaper's scan (every 10 s) would
		// unlist the sandbox before the call if it came in between.
		for (let i = 0; i < 500 && existsSync(`/proc/${qemu}`); i++) await sleep(10);
		const t0 = Date.now();
		const err = await s.vmError('fs::ls', { sandbox_id: id, path: '/' });
		assert.ok(Date.now() - t0 < 5000, `fs::ls failed ${Date.now() - t0} ms after the kill`);
		assertScode(err, 'S300', /^VM boot failed: the sandbox's VM exited: killed by signal 9 \(Killed\)$/);
		await untilUnlisted(s, id, 2000);
		assertScode(await s.vmError('fs::stat', { sandbox_id: id, path: '/' }), 'S002');
		await eventually(() => assertNoVmLeft(s.stateDir, 'after the kill'));
	});

	test('a VM killed idle leaves the list at the reaper\'s next scan (10 s)', async () => {
		const id = (await s.vm('create', { image: 'python' })).sandbox_id;
		process.kill(qemuPids(s.stateDir)[0], 'SIGKILL');
		await untilUnlisted(s, id, 15000);
		await eventually(() => assertNoVmLeft(s.stateDir, 'after the reaper'));
	});

	test('an out-of-memory kill is named as one', async (t) => {
		const id = (await s.vm('create', { image: 'python' })).sandbox_id;
		const [qemu] = qemuPids(s.stateDir);
		const cg = makeMemoryCgroup(96 << 20);
		if (cg === null) {
			t.skip('no memory cgroup controller to confine the QEMU in');
			await s.vm('stop', { sandbox_id: id });
			return;
		}
		try {
			writeFileSync(cg.procs, String(qemu));
			const err = await s.vmError('exec', { sandbox_id: id, cmd: 'python3 -c "a = b\'x\' * (400 << 20)"' });
			assertScode(err, 'S300', /^VM boot failed: the sandbox's VM was killed by the host's out-of-memory killer$/);
			await untilUnlisted(s, id, 5000);
			await eventually(() => assertNoVmLeft(s.stateDir, 'after the OOM kill'));
		} finally {
			await removeCgroup(cg);
		}
	});

	// The memory cgroup of a VM's QEMU is charged for QEMU's memory, for
	// the pages of its template's memfd it is the first to touch, and for
	// the host's page cache of what QEMU reads and writes: the guest's own
	// limits (its RAM, its disk's size) must act before the host's.  A
	// template's memfd keeps the pages its clones touched, so each test
	// has a guest size, and a template, of its own.
	test('a guest that fills its memory: its OOM killer ends the process (137), the sandbox answers', async () => {
		const id = (await s.vm('create', { image: 'python', memory_mb: 256 })).sandbox_id;
		const hog = await s.exec(id, { cmd: 'python3 -c "x=[]\nwhile True: x.append(bytearray(16<<20))"',
			timeout_ms: 120000 }, 180000);
		assert.equal(hog.exit_code, 137, JSON.stringify(hog));
		const next = await s.exec(id, { cmd: 'echo alive' });
		assert.equal(next.stdout, 'alive\n', JSON.stringify(next));
		assert.deepEqual(await s.vm('stop', { sandbox_id: id }), { sandbox_id: id, stopped: true });
	});

	test('a guest that fills its disk: ENOSPC at the scratch disk\'s size, the sandbox answers', async () => {
		const id = (await s.vm('create', { image: 'python', memory_mb: 320 })).sandbox_id;
		const fill = await s.exec(id, { cmd: 'dd if=/dev/zero of=/var/tmp/fill bs=1M', timeout_ms: 120000 }, 180000);
		assert.notEqual(fill.exit_code, 0, JSON.stringify(fill));
		assert.match(fill.stderr, /No space left on device/);
		const written = Number(/^(\d+) bytes/m.exec(fill.stderr)?.[1]);
		assert.ok(written > (SCRATCH_MB - 64) << 20 && written <= SCRATCH_MB << 20, fill.stderr);
		const next = await s.exec(id, { cmd: "sh -c 'rm /var/tmp/fill && echo alive'" });
		assert.equal(next.stdout, 'alive\n', JSON.stringify(next));
		assert.deepEqual(await s.vm('stop', { sandbox_id: id }), { sandbox_id: id, stopped: true });
	});
});
