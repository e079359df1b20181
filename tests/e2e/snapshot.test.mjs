// Snapshots of a live sandbox (issue 39 items 1, 2, 4, 5 and 6) through the
// stand-in engine with iii-sdk, on ONE python source shared by the checks:
// a file written and a background process printing a numbered line every
// 100 ms; a foreground exec in flight while the snapshot is taken finishes
// in the source; the snapshot answers its fields and sits in
// <state>/sandbox-snapshots/<id> (0700, files 0600); the source answers on and
// diverges; two sandboxes created from the snapshot each see the file as
// it was, the background process still counting with its log from before,
// writes no other sees, random bytes no other reads, and not the
// foreground exec of the source; fork ×3 makes three more from the
// source's present; snapshot::list counts them; bad inputs
// get their S-codes with nothing created; the snapshot outlives a restart
// of serve and is created from afterwards; one whose guest kernel changed
// is listed restorable: false and create from it is S300; snapshot::delete takes it out
// of the list while its sandboxes run on.
import { describe, test, before, after } from './lib/test-api.mjs';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { BIN } from './daemon.mjs';
import { eventually } from './lib.mjs';
import { registryUnavailable, startRegistry } from './lib/registry-fixture.mjs';
import { assertScode, processesMentioning, startSandboxStack, UUID_V4 } from './lib/sandbox-stack.mjs';

const skip = registryUnavailable();
const TICKER = 'import itertools, time\nfor i in itertools.count():\n    print(i, flush=True)\n    time.sleep(0.1)\n';
const SNAPSHOT_KEYS = ['cpus', 'duration_ms', 'image', 'memory_mb', 'network', 'paused_ms', 'sandbox_id', 'size_bytes',
	'snapshot_id'];
const LISTED_KEYS = ['cpus', 'created_at', 'image', 'memory_mb', 'name', 'network', 'restorable', 'sandbox_id',
	'sandboxes_using', 'size_bytes', 'snapshot_id'];

describe('snapshot: one source, its snapshot and the sandboxes created from it', { skip: skip ?? false }, () => {
	let reg, s, src, ticker, snap, a, b;
	const sockDir = mkdtempSync(path.join(tmpdir(), 'sbx-e2e-snapshot-'));
	const sock = path.join(sockDir, 'control.sock');
	const config = { image_allowlist: ['python'], control_socket: sock };
	// The operator's CLI on the daemon's control socket: {code, stdout}.
	const cli = async (...args) => {
		try {
			const { stdout } = await promisify(execFile)(BIN, [...args, '--socket', sock]);
			return { code: 0, stdout };
		} catch (e) {
			return { code: e.code, stdout: e.stdout ?? '', stderr: e.stderr ?? '' };
		}
	};
	const snapDir = () => path.join(s.stateDir, 'sandbox-snapshots', snap.snapshot_id);
	// The ticker's numbers in sandbox `id`, asserted consecutive from 0.
	const ticks = async (id) => {
		const procs = (await s.vm('process::list', { sandbox_id: id })).processes;
		assert.ok(procs.some((p) => p.process_id === ticker && p.state === 'running'),
			`${id}: the background process runs: ${JSON.stringify(procs)}`);
		const l = await s.vm('process::logs', { sandbox_id: id, process_id: ticker });
		const nums = l.data.split('\n').filter((x) => x !== '').map(Number);
		nums.forEach((n, i) => assert.equal(n, i, `${id}: line ${i} of the background log is ${n}: a gap`));
		return nums.length;
	};
	const cat = async (id) => (await s.exec(id, { cmd: 'cat /root/note.txt' })).stdout;
	const random = async (id) => (await s.exec(id, { argv: ['sh', '-c', 'head -c 16 /dev/urandom | od -An -tx1'] })).stdout;
	const count = async () => (await s.vm('list', {})).sandboxes.length;
	before(async () => {
		reg = await startRegistry({ images: ['python'] });
		s = await startSandboxStack({ registry: reg, config });
		src = (await s.vm('create', { image: 'python', name: 'source' })).sandbox_id;
	});
	after(async () => {
		await s?.stop();
		await reg?.stop();
		s?.cleanupState();
		rmSync(sockDir, { recursive: true, force: true });
	});

	test('the source: a file and a background process printing a numbered line every 100 ms', async () => {
		await s.exec(src, { argv: ['sh', '-c', 'echo as-captured > /root/note.txt'] });
		ticker = (await s.exec(src, { argv: ['python3', '-u', '-c', TICKER], background: true })).process_id;
		await eventually(async () => assert.ok(await ticks(src) >= 5), 60000);
	});

	test('snapshot answers its fields; a foreground exec in flight finishes in the source, one made meanwhile answers', async () => {
		const fg = s.exec(src, { argv: ['sh', '-c', 'sleep 2; echo fg-done'], timeout_ms: 120000 }, 180000);
		await new Promise((r) => setTimeout(r, 500));
		const taking = s.vm('snapshot', { sandbox_id: src, name: 'after-setup' }, 180000);
		// A call made while the source stands still waits and answers.
		await new Promise((r) => setTimeout(r, 300));
		const during = await s.exec(src, { cmd: 'echo during' });
		assert.equal(during.stdout, 'during\n');
		snap = await taking;
		assert.deepEqual(Object.keys(snap).sort(), SNAPSHOT_KEYS);
		assert.match(snap.snapshot_id, UUID_V4);
		assert.equal(snap.sandbox_id, src);
		assert.equal(snap.image, 'python');
		assert.equal(snap.network, false);
		assert.ok(snap.size_bytes >= 1 << 20, `size_bytes ${snap.size_bytes}`);
		assert.ok(snap.paused_ms >= 0 && snap.paused_ms <= snap.duration_ms, JSON.stringify(snap));
		const r = await fg;
		assert.equal(r.stdout, 'fg-done\n', 'the exec in flight at the capture finished in the source');
		assert.equal(r.exit_code, 0);
	});

	test('the snapshot is kept in <state>/sandbox-snapshots/<id>: 0700, its files 0600 (the store image\'s second name aside)', async () => {
		assert.ok(existsSync(snapDir()), snapDir());
		assert.equal(statSync(snapDir()).mode & 0o777, 0o700);
		const files = readdirSync(snapDir()).filter((f) => f !== 'store.erofs');
		for (const f of ['state', 'scratch.ext4', 'vm.json', 'sandbox.json', 'snapshot.json']) assert.ok(files.includes(f), `${f} in ${files}`);
		for (const f of files) assert.equal(statSync(path.join(snapDir(), f)).mode & 0o777, 0o600, `${f} is 0600`);
		assert.deepEqual(readdirSync(path.join(s.stateDir, 'sandbox-snapshots')).filter((f) => f.startsWith('.')), [],
			'no capture left behind');
	});

	test('the source answers on and diverges: its background log goes on without a gap', async () => {
		const before = await ticks(src);
		await s.exec(src, { argv: ['sh', '-c', 'echo source-after > /root/note.txt'] });
		assert.equal(await cat(src), 'source-after\n');
		await eventually(async () => assert.ok(await ticks(src) > before + 5), 60000);
	});

	test('create with snapshot, twice: each sees the file as captured and the background process still counting', async () => {
		a = await s.vm('create', { snapshot: snap.snapshot_id, name: 'branch-a' });
		b = await s.vm('create', { snapshot: snap.snapshot_id, idle_timeout_secs: 600 });
		for (const r of [a, b]) {
			assert.deepEqual(Object.keys(r).sort(), ['image', 'sandbox_id', 'snapshot_id']);
			assert.match(r.sandbox_id, UUID_V4);
			assert.equal(r.image, 'python');
			assert.equal(r.snapshot_id, snap.snapshot_id);
			assert.equal(await cat(r.sandbox_id), 'as-captured\n');
			const n = await ticks(r.sandbox_id);
			await eventually(async () => assert.ok(await ticks(r.sandbox_id) > n + 3), 60000);
		}
		assert.notEqual(a.sandbox_id, b.sandbox_id);
		assert.equal((await s.listed(a.sandbox_id)).name, 'branch-a');
		const sources = (await s.vm('list', {})).sandboxes.filter((x) => x.sandbox_id === src);
		assert.equal(sources.length, 1);
	});

	test('each branch is its own machine: writes no other sees, random bytes no other reads, no exec of the source', async () => {
		await s.exec(a.sandbox_id, { argv: ['sh', '-c', 'echo only-a > /root/note.txt'] });
		assert.equal(await cat(a.sandbox_id), 'only-a\n');
		assert.equal(await cat(b.sandbox_id), 'as-captured\n');
		assert.equal(await cat(src), 'source-after\n');
		const bytes = await Promise.all([src, a.sandbox_id, b.sandbox_id].map(random));
		assert.equal(new Set(bytes).size, 3, `urandom: ${JSON.stringify(bytes)}`);
		const ps = (await s.exec(b.sandbox_id, { argv: ['sh', '-c', 'ps -eo args 2>/dev/null || cat /proc/[0-9]*/cmdline'] })).stdout;
		assert.doesNotMatch(ps, /sleep 2; echo fg-done/, 'the foreground exec in flight at the capture is not running in the branch');
	});

	test('fork ×3: three sandboxes at the source\'s present point, each its own machine; its snapshot goes', async () => {
		const f = await s.vm('fork', { sandbox_id: src, count: 3, name: 'fork' }, 300000);
		assert.deepEqual(Object.keys(f).sort(), ['ready_ms', 'sandbox_ids', 'snapshot_ms']);
		assert.equal(f.sandbox_ids.length, 3);
		assert.ok(f.snapshot_ms > 0 && f.ready_ms >= f.snapshot_ms, JSON.stringify(f));
		for (const id of f.sandbox_ids) {
			assert.match(id, UUID_V4);
			assert.equal(await cat(id), 'source-after\n');
			assert.equal((await s.listed(id)).name, 'fork');
			await ticks(id);
		}
		const bytes = await Promise.all(f.sandbox_ids.map(random));
		assert.equal(new Set(bytes).size, 3, `urandom: ${JSON.stringify(bytes)}`);
		assert.deepEqual((await s.vm('snapshot::list', {})).snapshots.map((x) => x.snapshot_id), [snap.snapshot_id],
			'the fork\'s own snapshot is gone');
		for (const id of f.sandbox_ids) await s.vm('stop', { sandbox_id: id });
		assertScode(await s.vmError('fork', { sandbox_id: src, count: 33 }), 'S001', /count must be 1 to 32/);
	});

	test('snapshot::list: its fields and the sandboxes using it', async () => {
		const l = (await s.vm('snapshot::list', {})).snapshots;
		assert.equal(l.length, 1);
		assert.deepEqual(Object.keys(l[0]).sort(), LISTED_KEYS);
		assert.equal(l[0].snapshot_id, snap.snapshot_id);
		assert.equal(l[0].name, 'after-setup');
		assert.equal(l[0].sandboxes_using, 2);
		assert.equal(l[0].restorable, true);
		assert.equal(l[0].size_bytes, snap.size_bytes);
		assert.match(l[0].created_at, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
	});

	test('the operator sees it: snapshot ls, and ps marks the sandboxes created from it', async () => {
		const ls = await cli('snapshot', 'ls');
		assert.equal(ls.code, 0, ls.stderr);
		const lines = ls.stdout.trim().split('\n');
		assert.match(lines[0], /^ID\s+NAME\s+IMAGE\s+SANDBOX\s+SIZE\s+CREATED\s+USED\s+RESTORABLE$/);
		assert.match(lines[1], new RegExp(`^${snap.snapshot_id.slice(0, 12)}\\s+after-setup\\s+python\\s+${src.slice(0, 12)}\\s+[0-9.]+\\s+\\S+\\s+2\\s+yes$`));
		const json = JSON.parse((await cli('snapshot', 'ls', '--json')).stdout);
		assert.equal(json.snapshots[0].snapshot_id, snap.snapshot_id);
		const ps = JSON.parse((await cli('ps', '--json')).stdout).sandboxes;
		assert.equal(ps.find((r) => r.sandbox_id === a.sandbox_id)?.snapshot_id, snap.snapshot_id);
		assert.equal(ps.find((r) => r.sandbox_id === src)?.snapshot_id, undefined);
		const table = (await cli('ps')).stdout.split('\n').find((l) => l.startsWith(b.sandbox_id.slice(0, 12)));
		assert.match(table ?? '', new RegExp(`\\s${snap.snapshot_id.slice(0, 12)}$`));
		const bad = await cli('snapshot', 'rm', 'nope');
		assert.equal(bad.code, 1);
	});

	test('bad inputs get their S-codes and create nothing', async () => {
		const n = await count();
		const id = snap.snapshot_id;
		assertScode(await s.vmError('create', { image: 'python', snapshot: id }), 'S001', /one of `image` and `snapshot`/);
		assertScode(await s.vmError('create', { snapshot: '00000000-0000-4000-8000-000000000000' }), 'S001', /unknown snapshot_id/);
		assertScode(await s.vmError('create', { snapshot: 'nope' }), 'S001', /unknown snapshot_id/);
		assertScode(await s.vmError('create', { snapshot: id, env: { A: '1' } }), 'S001', /`env`/);
		assertScode(await s.vmError('create', { snapshot: id, cpus: snap.cpus + 1 }), 'S001', /cpus/);
		assertScode(await s.vmError('create', { snapshot: id, memory_mb: snap.memory_mb + 1 }), 'S001', /memory_mb/);
		assertScode(await s.vmError('snapshot', { sandbox_id: '00000000-0000-4000-8000-000000000000' }), 'S002');
		assertScode(await s.vmError('snapshot', { sandbox_id: 'x' }), 'S001');
		assertScode(await s.vmError('snapshot::delete', { snapshot_id: '00000000-0000-4000-8000-000000000000' }), 'S001', /unknown snapshot_id/);
		assert.equal(await count(), n, 'nothing was created');
		assert.equal((await s.vm('snapshot::list', {})).snapshots.length, 1);
	});

	test('a networked sandbox\'s branch gets a network helper of its own, naming it', async () => {
		const net = (await s.vm('create', { image: 'python', network: true })).sandbox_id;
		const helpers = (id) => processesMentioning(`--sandbox ${id}`).filter((p) => /net-helper|sandbox-libkrun/.test(p.cmdline));
		assert.equal(helpers(net).length, 1, 'the source has its helper');
		const f = await s.vm('fork', { sandbox_id: net, count: 1 }, 300000);
		const [br] = f.sandbox_ids;
		assert.equal(helpers(br).length, 1, 'the branch has a helper naming it');
		assert.equal(helpers(net).length, 1, 'the source has its helper still');
		for (const id of [net, br]) {
			const r = await s.exec(id, { cmd: 'cat /sys/class/net/eth0/operstate' });
			assert.equal(r.stdout.trim(), 'up', `${id}: eth0`);
			await s.vm('stop', { sandbox_id: id });
		}
	});

	test('the snapshot outlives a restart of serve and is created from afterwards', async () => {
		const old = s;
		s = null;
		await old.stop();
		s = await startSandboxStack({ registry: reg, stateDir: old.stateDir, config });
		const l = (await s.vm('snapshot::list', {})).snapshots;
		assert.deepEqual(l.map((x) => [x.snapshot_id, x.sandboxes_using]), [[snap.snapshot_id, 0]]);
		const c = await s.vm('create', { snapshot: snap.snapshot_id });
		assert.equal(await cat(c.sandbox_id), 'as-captured\n');
		await ticks(c.sandbox_id);
		a = c;
	});

	test('a snapshot this build cannot run (its guest kernel changed) is listed restorable: false and create gets S300', async () => {
		const vmJson = path.join(snapDir(), 'vm.json');
		const text = readFileSync(vmJson, 'utf8');
		const desc = JSON.parse(text);
		desc.kernel.mtime_ns += 1;
		writeFileSync(vmJson, JSON.stringify(desc));
		try {
			const [e] = (await s.vm('snapshot::list', {})).snapshots;
			assert.equal(e.restorable, false);
			assert.match(e.restore_error, /kernel .* changed since the pause/);
			const n = await count();
			assertScode(await s.vmError('create', { snapshot: snap.snapshot_id }), 'S300', /kernel .* changed since the pause/);
			assert.equal(await count(), n, 'nothing was created');
		} finally {
			writeFileSync(vmJson, text);
		}
		assert.equal((await s.vm('snapshot::list', {})).snapshots[0].restorable, true);
	});

	test('snapshot rm (snapshot::delete): gone from the list at once, its sandboxes run on, a second delete is S001', async () => {
		const rm = await cli('snapshot', 'rm', snap.snapshot_id.slice(0, 8));
		assert.equal(rm.code, 0, rm.stderr);
		assert.equal(rm.stdout, `${snap.snapshot_id}\n`);
		assert.deepEqual((await s.vm('snapshot::list', {})).snapshots, []);
		assert.ok(!existsSync(snapDir()), `${snapDir()} removed`);
		assert.equal(await cat(a.sandbox_id), 'as-captured\n');
		assertScode(await s.vmError('snapshot::delete', { snapshot_id: snap.snapshot_id }), 'S001', /unknown snapshot_id/);
		assertScode(await s.vmError('create', { snapshot: snap.snapshot_id }), 'S001', /unknown snapshot_id/);
	});
});
