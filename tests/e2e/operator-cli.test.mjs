// The operator's CLI over the control socket (docs/cli.md): one daemon
// behind the stand-in engine, one python sandbox created through the
// engine, then the CLI binary: ps (a create in progress included; a
// background process and a terminal counted and listed), exec (its stdin
// with -i; a killed CLI ending its command), cp both ways (10 MiB, a
// directory), logs, status, a peer that is not root refused, stop; logs
// of a second sandbox, restored from the template the first one made,
// and of a third restored from it once its console file is gone (as a
// template of an earlier version).  Three VM boots (two restores).
import { describe, test, before, after } from './lib/test-api.mjs';
import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { assertNoSanitizerReport, BIN, endDaemon, startStack } from './daemon.mjs';
import { eventually, sleep } from './lib.mjs';
import { registryUnavailable, startRegistry } from './lib/registry-fixture.mjs';
import { startSandboxStack } from './lib/sandbox-stack.mjs';

// A time as the first line of `logs` gives it: ISO 8601, UTC.
const ISO = '\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}:\\d{2}\\.\\d{3}Z';
const sha256 = (buf) => createHash('sha256').update(buf).digest('hex');

// Runs a command; resolves {code, stdout, stderr} (stdout as a Buffer).
// `input`: what its stdin holds (else stdin is empty).
function run(file, args, timeoutMs = 120000, input = '') {
	return new Promise((resolve) => {
		const child = execFile(file, args, { encoding: 'buffer', timeout: timeoutMs, maxBuffer: 1 << 26 },
			(err, stdout, stderr) => {
				resolve({ code: err ? (err.code ?? -1) : 0, stdout, stderr: stderr.toString() });
			});
		child.stdin.on('error', () => {});
		child.stdin.end(input);
	});
}

const skip = registryUnavailable();

describe('operator CLI over the control socket', { skip: skip ?? false }, () => {
	let reg, s, id, dir, sock, creatingSeen, template;
	const cli = (...args) => run(BIN, [args[0], '--socket', sock, ...args.slice(1)]);
	const psJson = async () => {
		const r = await cli('ps', '--json');
		assert.equal(r.code, 0, r.stderr);
		return JSON.parse(r.stdout.toString()).sandboxes;
	};

	before(async () => {
		dir = mkdtempSync(path.join(tmpdir(), 'sbx-e2e-cli-'));
		sock = path.join(dir, 'control.sock');
		reg = await startRegistry();
		s = await startSandboxStack({ registry: reg, config: { image_allowlist: ['python'], control_socket: sock } });
		// The create pulls the image and boots cold: seconds, in which ps
		// shows it as being created.
		let done = false;
		const created = s.vm('create', { image: 'python', name: 'cli-box' }).finally(() => { done = true; });
		while (!done && !creatingSeen) {
			const r = await cli('ps', '--json');
			if (r.code === 0) creatingSeen = JSON.parse(r.stdout.toString()).sandboxes.find((x) => x.state === 'creating');
			await sleep(100);
		}
		id = (await created).sandbox_id;
	});
	after(async () => {
		await s?.stop();
		await reg?.stop();
		s?.cleanupState();
		if (dir) rmSync(dir, { recursive: true, force: true });
	});

	test('the socket is 0600: root only', () => {
		const st = statSync(sock);
		assert.ok(st.isSocket());
		assert.equal(st.mode & 0o777, 0o600);
	});

	test('ps shows a sandbox from the moment its create starts', () => {
		assert.ok(creatingSeen, 'a row in state creating during the create');
		assert.equal(creatingSeen.name, 'cli-box');
		assert.equal(creatingSeen.image, 'python');
	});

	test('ps: a table with a header, and --json', async () => {
		const r = await cli('ps');
		assert.equal(r.code, 0, r.stderr);
		const lines = r.stdout.toString().trim().split('\n');
		assert.match(lines[0], /^ID\s+NAME\s+IMAGE\s+STATE\s+AGE\s+IDLE\s+CPUS\s+MEMORY\s+RSS\s+NET\s+PROCS\s+TERMS\s+PORTS\s+SNAPSHOT$/);
		assert.equal(lines.length, 2);
		assert.match(lines[1], new RegExp(`^${id.slice(0, 12)}\\s+cli-box\\s+python\\s+running\\s+.*\\s+1\\s+512\\s+[0-9.]+\\s+off\\s+0\\s+0\\s+-\\s+-$`));
		const [row] = await psJson();
		assert.equal(row.sandbox_id, id);
		assert.equal(row.state, 'running');
		assert.equal(row.cpus, 1);
		assert.equal(row.memory_mb, 512);
		assert.equal(row.network, false);
		assert.ok(row.rss_kib > 1024, `QEMU's RSS ${row.rss_kib} KiB`);
		assert.deepEqual(row.processes, { running: 0, exited: 0 });
		assert.equal(row.terminals, 0);
	});

	test('ps counts a background process and a terminal; ps --processes lists them', async () => {
		const bg = await s.exec(id, { argv: ['sleep', '300'], background: true });
		const done = await s.exec(id, { argv: ['sh', '-c', 'exit 7'], background: true });
		await s.vm('process::wait', { sandbox_id: id, process_id: done.process_id, timeout_ms: 20000 });
		// A terminal: shell with stdin a pipe runs until its command exits.
		const sh = spawn(BIN, ['shell', '--socket', sock, id, '--', 'sh']);
		let screen = '';
		sh.stdout.on('data', (d) => { screen += d; });
		const shellDone = new Promise((resolve) => sh.on('close', resolve));
		try {
			const [row] = await eventually(async () => {
				const rows = await psJson();
				assert.equal(rows[0].terminals, 1);
				return rows;
			}, 60000);
			assert.deepEqual(row.processes, { running: 1, exited: 1 });
			const table = (await cli('ps')).stdout.toString().trim().split('\n');
			assert.match(table[1], /\soff\s+1\s+1\s+-\s+-$/);

			const j = await cli('ps', '--processes', 'cli-box', '--json');
			assert.equal(j.code, 0, j.stderr);
			const act = JSON.parse(j.stdout.toString());
			assert.equal(act.sandbox_id, id);
			const running = act.processes.find((p) => p.process_id === bg.process_id);
			assert.equal(running.state, 'running');
			assert.equal(running.pid, bg.pid);
			assert.deepEqual(running.argv, ['sleep', '300']);
			const exited = act.processes.find((p) => p.process_id === done.process_id);
			assert.equal(exited.state, 'exited');
			assert.equal(exited.exit_code, 7);
			assert.equal(act.terminals.length, 1);
			assert.deepEqual(act.terminals[0].argv, ['sh']);
			assert.ok(act.terminals[0].pid > 1);

			const t = await cli('ps', '--processes', id.slice(0, 8));
			assert.equal(t.code, 0, t.stderr);
			const lines = t.stdout.toString().trim().split('\n');
			assert.match(lines[0], /^KIND\s+ID\s+PID\s+STATE\s+STARTED\s+COMMAND$/);
			assert.ok(lines.some((l) => new RegExp(`^process\\s+${bg.process_id.slice(0, 12)}\\s+${bg.pid}\\s+running\\s+\\S+Z\\s+sleep 300$`).test(l)), lines.join('\n'));
			assert.ok(lines.some((l) => /^process\s+\S+\s+\d+\s+exited 7\s+\S+Z\s+sh -c "exit 7"$/.test(l)), lines.join('\n'));
			assert.ok(lines.some((l) => /^terminal\s+\S+\s+\d+\s+open\s+\S+Z\s+sh$/.test(l)), lines.join('\n'));
			const unknown = await cli('ps', '--processes', 'no-such-box');
			assert.equal(unknown.code, 1);
			assert.match(unknown.stderr, /S002/);
		} finally {
			sh.stdin.end('exit\n');
			await shellDone;
			await s.vm('process::signal', { sandbox_id: id, process_id: bg.process_id, signal: 'KILL' });
		}
		const [after] = await psJson();
		assert.equal(after.terminals, 0);
	});

	test('exec passes stdout, stderr and the exit status through', async () => {
		const r = await cli('exec', id.slice(0, 8), '--', 'sh', '-c', 'echo out; echo err >&2; exit 3');
		assert.equal(r.code, 3, r.stderr);
		assert.equal(r.stdout.toString(), 'out\n');
		assert.equal(r.stderr, 'err\n');
		const byName = await cli('exec', 'cli-box', 'true');
		assert.equal(byName.code, 0, byName.stderr);
	});

	test('exec -i passes stdin to the command; without -i its stdin is empty', async () => {
		const r = await run(BIN, ['exec', '--socket', sock, '-i', id, '--', 'cat'], 120000, 'hi\n');
		assert.equal(r.code, 0, r.stderr);
		assert.equal(r.stdout.toString(), 'hi\n');
		const data = randomBytes(3 * 1048576 + 5);
		const big = await run(BIN, ['exec', '--socket', sock, '--interactive', id, '--', 'sha256sum'], 120000, data);
		assert.equal(big.stdout.toString().split(' ')[0], sha256(data), big.stderr);
		const none = await run(BIN, ['exec', '--socket', sock, id, '--', 'cat'], 120000, 'ignored\n');
		assert.equal(none.code, 0, none.stderr);
		assert.equal(none.stdout.toString(), '');
		const over = await run(BIN, ['exec', '--socket', sock, '-i', id, '--', 'cat'], 120000,
			Buffer.alloc(8 * 1048576 + 1));
		assert.equal(over.code, 125);
		assert.match(over.stderr, /stdin holds more than 8 MiB/);
	});

	test('a killed exec CLI ends its command in the guest', async () => {
		const p = spawn(BIN, ['exec', '--socket', sock, id, '--', 'sh', '-c', 'echo $$ > /tmp/sleeper.pid; exec sleep 600']);
		const closed = new Promise((resolve) => p.on('close', (code, signal) => resolve(signal)));
		const pid = await eventually(async () => {
			const r = await cli('exec', id, '--', 'sh', '-c', 'kill -0 "$(cat /tmp/sleeper.pid)" && cat /tmp/sleeper.pid');
			assert.equal(r.code, 0, r.stderr);
			return r.stdout.toString().trim();
		}, 60000);
		p.kill('SIGKILL');
		assert.equal(await closed, 'SIGKILL');
		// The daemon polls for its client a few times a second; 30 s is a
		// hang bound, not a speed target.
		await eventually(async () => {
			const r = await cli('exec', id, '--', 'sh', '-c', `kill -0 ${pid} 2>/dev/null && echo alive || echo gone`);
			assert.equal(r.stdout.toString(), 'gone\n');
		}, 30000);
		await eventually(async () => assert.equal((await psJson())[0].exec_in_flight, 0), 30000);
	});

	test('exec prints the output as it comes', async () => {
		const p = spawn(BIN, ['exec', '--socket', sock, id, '--', 'sh', '-c', 'echo first; sleep 3; echo second']);
		let out = '', firstAt = 0;
		p.stdout.on('data', (d) => { out += d; if (!firstAt && out.includes('first')) firstAt = Date.now(); });
		const code = await new Promise((resolve) => p.on('close', resolve));
		const endAt = Date.now();
		assert.equal(code, 0);
		assert.equal(out, 'first\nsecond\n');
		assert.ok(firstAt > 0 && endAt - firstAt >= 2000, `first line ${endAt - firstAt} ms before the end`);
	});

	test('cp: a 10 MiB file in and back out keeps its bytes', async () => {
		const data = randomBytes(10 * 1048576);
		const src = path.join(dir, 'big.bin');
		writeFileSync(src, data);
		const put = await cli('cp', src, `${id}:/tmp/big.bin`);
		assert.equal(put.code, 0, put.stderr);
		const sum = await cli('exec', id, '--', 'sha256sum', '/tmp/big.bin');
		assert.equal(sum.stdout.toString().split(' ')[0], sha256(data));
		const back = path.join(dir, 'back.bin');
		const get = await cli('cp', `${id}:/tmp/big.bin`, back);
		assert.equal(get.code, 0, get.stderr);
		assert.equal(sha256(readFileSync(back)), sha256(data));
	});

	test('cp: a directory both ways, modes kept', async () => {
		const tree = path.join(dir, 'tree');
		mkdirSync(path.join(tree, 'sub'), { recursive: true });
		writeFileSync(path.join(tree, 'a.txt'), 'alpha\n');
		writeFileSync(path.join(tree, 'sub', 'run.sh'), '#!/bin/sh\necho ran\n');
		chmodSync(path.join(tree, 'sub', 'run.sh'), 0o755);
		const put = await cli('cp', tree, `${id}:/tmp/`);
		assert.equal(put.code, 0, put.stderr);
		const ran = await cli('exec', id, '--', '/tmp/tree/sub/run.sh');
		assert.equal(ran.stdout.toString(), 'ran\n', ran.stderr);
		const out = path.join(dir, 'out');
		mkdirSync(out);
		const get = await cli('cp', `${id}:/tmp/tree`, out);
		assert.equal(get.code, 0, get.stderr);
		assert.equal(readFileSync(path.join(out, 'tree', 'a.txt'), 'utf8'), 'alpha\n');
		assert.equal(statSync(path.join(out, 'tree', 'sub', 'run.sh')).mode & 0o777, 0o755);
		const missing = await cli('cp', `${id}:/no/such/file`, path.join(dir, 'x'));
		assert.equal(missing.code, 1);
		assert.match(missing.stderr, /S211/);
	});

	test('logs prints the VM console, after a first line saying how it booted', async () => {
		const w = await cli('exec', id, '--', 'sh', '-c', 'echo cli-console-marker > /dev/console');
		assert.equal(w.code, 0, w.stderr);
		const r = await cli('logs', id);
		assert.equal(r.code, 0, r.stderr);
		const out = r.stdout.toString();
		// The first create of the image boots cold and makes its template.
		assert.match(out, new RegExp(`^boot: cold, saved as template [0-9a-f]{12} at ${ISO}\n`));
		assert.match(out, /cli-console-marker/);
		const [row] = await psJson();
		assert.match(row.boot, /^cold, saved as template /);
	});

	test("logs of a restored sandbox: how it booted, its template boot's console, what it wrote since", async () => {
		// The template the first create made: this create restores it.
		const other = (await s.vm('create', { image: 'python' })).sandbox_id;
		try {
			const w = await cli('exec', other, '--', 'sh', '-c', 'echo restored-marker > /dev/console');
			assert.equal(w.code, 0, w.stderr);
			const r = await cli('logs', other);
			assert.equal(r.code, 0, r.stderr);
			const out = r.stdout.toString();
			const head = out.match(new RegExp(`^boot: restore of template ([0-9a-f]{12}) at ${ISO}\n`));
			assert.ok(head, out.slice(0, 300));
			const key = head[1];
			const dir = readdirSync(path.join(s.stateDir, 'snapshots')).find((d) => d.startsWith(key) && !d.includes('.'));
			assert.ok(dir, `the template ${key} in the state directory`);
			template = { key, dir: path.join(s.stateDir, 'snapshots', dir) };
			const saved = readFileSync(path.join(template.dir, 'console'), 'utf8');
			assert.ok(saved.length <= 16384);
			const start = `--- the console of template ${key}'s boot, up to its save (at most its last 16384 bytes) ---\n`;
			const end = "--- the end of the template's console: this VM was restored from it ---\n";
			assert.equal(out.slice(head[0].length, head[0].length + start.length), start);
			const body = out.slice(head[0].length + start.length, out.indexOf(end));
			assert.equal(body.replace(/\n$/, ''), saved.replace(/\n$/, ''));
			assert.ok(out.indexOf(end) < out.indexOf('restored-marker'), 'what the guest wrote comes after');
		} finally {
			const r = await cli('stop', other);
			assert.equal(r.code, 0, r.stderr);
		}
	});

	test('a template made by an earlier version (no console file) still restores; logs says so', async () => {
		assert.ok(template, 'the template of the test before');
		rmSync(path.join(template.dir, 'console'));
		const other = (await s.vm('create', { image: 'python' })).sandbox_id;
		try {
			const r = await cli('logs', other);
			assert.equal(r.code, 0, r.stderr);
			const lines = r.stdout.toString().split('\n');
			assert.match(lines[0], new RegExp(`^boot: restore of template ${template.key} at ${ISO}$`));
			assert.equal(lines[1], `--- the console of template ${template.key}'s boot is not available (a template made ` +
				'by an earlier version) ---');
		} finally {
			const r = await cli('stop', other);
			assert.equal(r.code, 0, r.stderr);
		}
	});

	test('status answers', async () => {
		const r = await cli('status', '--json');
		assert.equal(r.code, 0, r.stderr);
		const st = JSON.parse(r.stdout.toString());
		assert.match(st.version, /^\d+\.\d+\.\d+$/);
		assert.equal(st.engine.connected, true);
		assert.equal(typeof st.jail.describe, 'string');
		assert.equal(st.sandboxes, 1);
		assert.ok(st.memory.committed_mib > 0 && st.memory.budget_mib >= st.memory.committed_mib);
		const t = await cli('status');
		assert.equal(t.code, 0, t.stderr);
		assert.match(t.stdout.toString(), /^FIELD\s+VALUE\n/);
	});

	test('a peer that is neither root nor in control_group is refused', async () => {
		const asNobody = (socket) => run('setpriv', ['--reuid=65534', '--regid=65534', '--clear-groups', BIN, 'ps',
			'--socket', socket]);
		const denied = await asNobody(sock);
		assert.equal(denied.code, 125, denied.stderr);
		// The file's mode is not the only guard: SO_PEERCRED is checked too.
		chmodSync(dir, 0o755);
		chmodSync(sock, 0o666);
		try {
			const refused = await asNobody(sock);
			assert.equal(refused.code, 125);
			assert.match(refused.stderr, /refused: uid 65534 may not use/);
		} finally {
			chmodSync(sock, 0o600);
			chmodSync(dir, 0o700);
		}
	});

	test('usage errors name the mistake and exit 2', async () => {
		const r = await cli('exec', id);
		assert.equal(r.code, 2);
		assert.match(r.stderr, /missing the command.*see `sandbox-libkrun exec --help`/);
		const unknown = await cli('exec', 'no-such-box', 'true');
		assert.equal(unknown.code, 125);
		assert.match(unknown.stderr, /S002/);
	});

	test('stop stops it: ps no longer lists it, logs -f ends', async () => {
		const follow = cli('logs', '-f', id);
		await sleep(500);
		const w = await cli('exec', id, '--', 'sh', '-c', 'echo cli-follow-marker > /dev/console');
		assert.equal(w.code, 0, w.stderr);
		const r = await cli('stop', id);
		assert.equal(r.code, 0, r.stderr);
		assert.equal(r.stdout.toString(), `${id}\n`);
		assert.deepEqual(await psJson(), []);
		const { sandboxes } = await s.vm('list', {});
		assert.deepEqual(sandboxes, []);
		const f = await follow;
		assert.equal(f.code, 0, f.stderr);
		assert.match(f.stdout.toString(), /cli-follow-marker/);
	});

	test('the daemon exits 0 and removes its socket', async () => {
		const r = await s.stop();
		assert.deepEqual(r, { code: 0, signal: null }, s.daemon.output());
		assertNoSanitizerReport(s.daemon);
		assert.equal(existsSync(sock), false);
		s = { ...s, stop: async () => {} };
	});
});

// control_group, without a VM: the socket's group and mode, a member
// (primary or supplementary group) let in, an unknown group a bad config.
describe('control_group', { skip: process.getuid?.() === 0 ? false : 'needs root' }, () => {
	let s, dir, sock;
	before(async () => {
		dir = mkdtempSync(path.join(tmpdir(), 'sbx-e2e-cli-group-'));
		chmodSync(dir, 0o755);
		sock = path.join(dir, 'control.sock');
		s = await startStack({ config: { image_allowlist: [], control_socket: sock, control_group: 'nogroup' } });
	});
	after(async () => {
		await s?.stop();
		if (dir) rmSync(dir, { recursive: true, force: true });
	});
	const ps = (...ids) => run('setpriv', ['--reuid=65534', ...ids, BIN, 'ps', '--json', '--socket', sock]);

	test('the socket is 0660 with the group', () => {
		const st = statSync(sock);
		assert.equal(st.mode & 0o777, 0o660);
		assert.equal(st.gid, 65534);
	});

	test('members are let in, others are not', async () => {
		const primary = await ps('--regid=65534', '--clear-groups');
		assert.equal(primary.code, 0, primary.stderr);
		assert.deepEqual(JSON.parse(primary.stdout.toString()), { sandboxes: [] });
		const supplementary = await ps('--regid=12345', '--groups=65534');
		assert.equal(supplementary.code, 0, supplementary.stderr);
		const other = await ps('--regid=12345', '--clear-groups');
		assert.equal(other.code, 125);
		assert.match(other.stderr, /cannot reach the daemon/);
	});

	test('an unknown group stops serve with exit 2', async () => {
		const bad = await startStack({ config: { image_allowlist: [], control_socket: path.join(dir, 'bad.sock'),
			control_group: 'no-such-group-sbx' }, waitRegistered: false });
		try {
			await endDaemon(bad.daemon, { code: 2, send: null });
			assert.match(bad.daemon.output(), /control_group.*no-such-group-sbx/);
		} finally {
			await bad.stop();
		}
	});
});
