// Sandboxes end to end: `sandbox-libkrun serve` behind the stand-in engine,
// called through iii-sdk, booting real VMs from images pulled from a
// loopback registry.  Boots cost seconds under TCG, so three long-lived
// sandboxes (two python, one node) serve most checks; each `run` boots one
// more.  Expectations come from shared/spec/contract.md (§ in the names).
import { describe, test, before, after } from './lib/test-api.mjs';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { readdirSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { eventually, sleep } from './lib.mjs';
import { REPO, registryUnavailable, startRegistry, WORKDIR_IMAGE } from './lib/registry-fixture.mjs';
import { assertNoVmLeft, assertScode, b64, processesMentioning, startSandboxStack, UUID_V4, vmFilesLeft } from './lib/sandbox-stack.mjs';

const EXEC_KEYS = ['duration_ms', 'exit_code', 'stderr', 'stderr_truncated', 'stdout', 'stdout_truncated', 'success',
	'timed_out'];
const MIB = 1048576;

// Asserts a successful exec/run reply: exactly the §7.4 keys, and `want`.
function assertReply(r, want) {
	assert.deepEqual(Object.keys(r).filter((k) => k !== 'sandbox_id').sort(), EXEC_KEYS);
	assert.ok(Number.isInteger(r.duration_ms) && r.duration_ms >= 0, `duration_ms ${r.duration_ms}`);
	assert.equal(r.timed_out, false);
	assert.equal(r.success, r.exit_code === 0);
	const { duration_ms: _, sandbox_id: __, ...rest } = r;
	assert.deepEqual(rest, { stderr: '', stdout_truncated: false, stderr_truncated: false, ...want,
		timed_out: false, success: want.exit_code === 0 });
}

const skip = registryUnavailable();

describe('sandboxes booted from the loopback registry', { skip: skip ?? false }, () => {
	let reg, s, py, py2, nd, kept;
	const started = Date.now();
	before(async () => {
		reg = await startRegistry();
		s = await startSandboxStack({ registry: reg, config: {
			image_allowlist: ['python', 'node', 'pyw'],
			custom_images: { pyw: WORKDIR_IMAGE.ref, denied: WORKDIR_IMAGE.ref },
		} });
		[py, py2, nd] = await Promise.all([
			s.vm('create', { image: 'python', name: 'p1', env: { GREETING: 'hello', B_VAR: 'b' } }),
			s.vm('create', { image: 'python', env: ['GREETING=list', 'NOEQUALS'] }),
			s.vm('create', { image: 'node' }),
		]);
	});
	after(async () => {
		await s?.stop();
		await reg?.stop();
		s?.cleanupState();
	});

	test('create answers {sandbox_id, image} with a canonical v4 UUID (§7.3)', () => {
		for (const [r, image] of [[py, 'python'], [py2, 'python'], [nd, 'node']]) {
			assert.deepEqual(Object.keys(r).sort(), ['image', 'sandbox_id']);
			assert.equal(r.image, image);
			assert.match(r.sandbox_id, UUID_V4);
		}
		assert.equal(new Set([py.sandbox_id, py2.sandbox_id, nd.sandbox_id]).size, 3);
	});

	test('list shows every sandbox with the §7.6 fields, name null when unset', async () => {
		const { sandboxes } = await s.vm('list', { show_all: true });
		assert.equal(sandboxes.length, 3);
		const want = { python: [py, 'p1'], node: [nd, null] };
		for (const [image, [r, name]] of Object.entries(want)) {
			const e = sandboxes.find((x) => x.sandbox_id === r.sandbox_id);
			assert.ok(Number.isInteger(e.age_secs) && e.age_secs >= 0 && e.age_secs < 600, `age_secs ${e.age_secs}`);
			const { age_secs: _, ...rest } = e;
			assert.deepEqual(rest, { sandbox_id: r.sandbox_id, name, image, exec_in_progress: false, exec_in_flight: 0,
				exec_slots_free: 4, stopped: false });
		}
		const e2 = sandboxes.find((x) => x.sandbox_id === py2.sandbox_id);
		assert.ok('name' in e2 && e2.name === null, 'name is null, not omitted');
	});

	test('python3 by bare name through the image PATH: print(6*7) is "42\\n" (§6.5)', async () => {
		assertReply(await s.exec(py.sandbox_id, { cmd: "python3 -c 'print(6*7)'" }), { stdout: '42\n', exit_code: 0 });
	});

	test('node in the node image', async () => {
		assertReply(await s.exec(nd.sandbox_id, { cmd: 'node -e "console.log(6*7)"' }), { stdout: '42\n', exit_code: 0 });
		const r = await s.exec(nd.sandbox_id, { argv: ['node', '--version'] });
		assert.match(r.stdout, /^v\d+\.\d+\.\d+\n$/);
	});

	test('the three command shapes: argv, cmd + args, a shlex-split cmd line (§7.4)', async () => {
		const id = py.sandbox_id;
		assertReply(await s.exec(id, { argv: ['python3', '-c', 'import sys; print(sys.argv[1:])', 'a b', 'c'] }),
			{ stdout: "['a b', 'c']\n", exit_code: 0 });
		assertReply(await s.exec(id, { cmd: 'python3', args: ['-c', 'print("x  y")'] }), { stdout: 'x  y\n', exit_code: 0 });
		assertReply(await s.exec(id, { cmd: `printf '%s|' "a b" c\\ d 'e;f' $HOME` }),
			{ stdout: 'a b|c d|e;f|$HOME|', exit_code: 0 });
		assertReply(await s.exec(id, { cmd: 'echo a ; echo b && echo c > /x' }), { stdout: 'a ; echo b && echo c > /x\n',
			exit_code: 0 });
	});

	test('env: the create map and list shapes are the boot env; exec env of both shapes layers on one call', async () => {
		const show = { argv: ['sh', '-c', 'echo "$GREETING|$B_VAR|$X"'] };
		assertReply(await s.exec(py.sandbox_id, { ...show, env: { X: '1' } }), { stdout: 'hello|b|1\n', exit_code: 0 });
		assertReply(await s.exec(py.sandbox_id, { ...show, env: ['X=2', 'GREETING=over'] }),
			{ stdout: 'over|b|2\n', exit_code: 0 });
		assertReply(await s.exec(py.sandbox_id, show), { stdout: 'hello|b|\n', exit_code: 0 });
		assertReply(await s.exec(py2.sandbox_id, show), { stdout: 'list||\n', exit_code: 0 });
		assertReply(await s.exec(py2.sandbox_id, { argv: ['sh', '-c', 'env | grep -c NOEQUALS'] }),
			{ stdout: '0\n', exit_code: 1 });
		assertReply(await s.exec(py.sandbox_id, { argv: ['sh', '-c', 'echo "$A"'], env: ['9bad=x', 'A=ok'] }),
			{ stdout: 'ok\n', exit_code: 0 });
	});

	test('stdin: base64 in, EOF after it, immediate EOF without it, bad base64 is S001 (§7.4, §10.8)', async () => {
		const id = py.sandbox_id;
		assertReply(await s.exec(id, { cmd: 'cat', stdin: 'aGkK' }), { stdout: 'hi\n', exit_code: 0 });
		assertReply(await s.exec(id, { cmd: 'cat' }), { stdout: '', exit_code: 0 });
		assertReply(await s.exec(id, { cmd: 'cat', stdin: '' }), { stdout: '', exit_code: 0 });
		assertReply(await s.exec(id, { argv: ['python3', '-c', 'import sys; print(sum(int(l) for l in sys.stdin))'],
			stdin: b64('3\n4\n') }), { stdout: '7\n', exit_code: 0 });
		assertReply(await s.exec(id, { cmd: 'wc -c', stdin: b64('z'.repeat(256 * 1024)) }),
			{ stdout: '262144\n', exit_code: 0 });
		assertScode(await s.vmError('exec', { sandbox_id: id, cmd: 'cat', stdin: '!!!' }), 'S001', /^invalid request: stdin base64/);
		assert.equal((await s.listed(id)).exec_in_flight, 0, 'the slot of the refused exec is released');
	});

	test('exit codes: non-zero, not found (127), not executable (126), killed by a signal (128+N) (§6.5, §10.9)', async () => {
		const id = py.sandbox_id;
		assertReply(await s.exec(id, { argv: ['sh', '-c', 'echo out; echo err >&2; exit 7'] }),
			{ stdout: 'out\n', stderr: 'err\n', exit_code: 7 });
		assertReply(await s.exec(id, { cmd: '/no/such' }), { stderr: 'exec: /no/such: not found\n', stdout: '',
			exit_code: 127 });
		assertReply(await s.exec(id, { cmd: 'no-such-program-anywhere' }),
			{ stderr: 'exec: no-such-program-anywhere: not found\n', stdout: '', exit_code: 127 });
		assertReply(await s.exec(id, { cmd: '/etc/passwd' }), { stderr: 'exec: /etc/passwd: permission denied\n',
			stdout: '', exit_code: 126 });
		assertReply(await s.exec(id, { argv: ['sh', '-c', 'kill -KILL $$'] }), { stdout: '', exit_code: 137 });
	});

	// Any answer will do (a reply, an S-code, a decode error); a caller left
	// waiting or a broken sandbox will not.
	async function assertAnswered(id, req) {
		const { ok, err } = await s.vmTry('exec', { sandbox_id: id, ...req }, 15000);
		const what = JSON.stringify(req).slice(0, 80);
		if (err) assert.equal(err.code, 'invocation_failed', `${what}: ${JSON.stringify(err)}`);
		else assert.ok(Number.isInteger(ok.exit_code), `${what}: ${JSON.stringify(ok)}`);
		assertReply(await s.exec(id, { cmd: 'echo still here' }), { stdout: 'still here\n', exit_code: 0 });
	}

	test('hostile exec requests get an answer and leave the sandbox working', async () => {
		for (const req of [
			{ cmd: 'pwd', workdir: '/no/such/dir' },
			{ cmd: 'pwd', workdir: 'x'.repeat(5000) },
			{ argv: ['true', ...Array.from({ length: 20000 }, (_, i) => `arg${i}`)] },
			{ argv: ['sh', '-c', 'echo "${#X}"'], env: { X: 'v'.repeat(512 * 1024) } },
			{ argv: ['sh', '-c', 'exec 0<&-; exec 1>&-; exec 2>&-; sleep 0.2'] },
		]) await assertAnswered(py.sandbox_id, req);
		assert.equal((await s.listed(py.sandbox_id)).exec_in_flight, 0);
	});

	test('a NUL byte in a request string is S001 "<field> contains a NUL byte" (JSON allows \\u0000)', async () => {
		for (const [req, field] of [[{ argv: ['echo', 'a\u0000b'] }, 'argv'], [{ cmd: 'true', env: { A: 'x\u0000y' } }, 'env'],
			[{ cmd: 'true', env: ['B\u0000=1'] }, 'env'], [{ cmd: 'echo a\u0000b' }, 'cmd'],
			[{ cmd: 'pwd', workdir: '/tmp\u0000/x' }, 'workdir']]) {
			await assertAnswered(py.sandbox_id, req);
			assertScode(await s.vmError('exec', { sandbox_id: py.sandbox_id, ...req }), 'S001',
				new RegExp(`^invalid request: ${field} contains a NUL byte$`));
		}
		// jansson cannot hold a NUL in an object key: still one answer.
		await assertAnswered(py.sandbox_id, { cmd: 'true', env: { 'A\u0000': 'x' } });
		assert.ok(Array.isArray((await s.call('catalog::list', { x: 'a\u0000b' })).images));
		assert.equal((await s.listed(py.sandbox_id)).exec_in_flight, 0);
	});

	test('workdir sets the cwd; relative resolves against /, "" is unset; the default is / here (§7.4, §7.8)',
		async () => {
			const id = py.sandbox_id;
			assertReply(await s.exec(id, { cmd: 'pwd', workdir: '/tmp' }), { stdout: '/tmp\n', exit_code: 0 });
			assertReply(await s.exec(id, { cmd: 'pwd', workdir: 'tmp' }), { stdout: '/tmp\n', exit_code: 0 });
			assertReply(await s.exec(id, { cmd: 'pwd', workdir: '' }), { stdout: '/\n', exit_code: 0 });
			assertReply(await s.exec(id, { cmd: 'pwd' }), { stdout: '/\n', exit_code: 0 });
		});

	test('output is lossy UTF-8: an invalid byte becomes U+FFFD', async () => {
		assertReply(await s.exec(py.sandbox_id, { cmd: "printf '\\377ok\\342\\202\\254'" }),
			{ stdout: '\ufffdok\u20ac', exit_code: 0 });
	});

	test('output keeps NUL bytes: U+0000 is valid UTF-8 and the reply is not cut at it', async () => {
		assertReply(await s.exec(py.sandbox_id, { cmd: "printf 'a\\000b\\000'" }),
			{ stdout: 'a\u0000b\u0000', exit_code: 0 });
	});

	test('timeout: S200 "exec timed out after N ms", the process is killed, the slot freed (§7.4, §10.10)', async () => {
		const id = py.sandbox_id;
		const t0 = Date.now();
		const env = assertScode(await s.vmError('exec', { sandbox_id: id, cmd: 'sleep 7', timeout_ms: 100 }), 'S200');
		assert.equal(env.message, 'exec timed out after 100 ms');
		assert.equal(env.fix, null);
		assert.equal(env.fix_note, 'raise `timeout_ms` on the exec call or split the work into smaller steps');
		assert.ok(Date.now() - t0 < 5000, `S200 took ${Date.now() - t0} ms`);
		assert.equal(assertScode(await s.vmError('exec', { sandbox_id: id, cmd: 'sleep 7', timeout_ms: 0 }), 'S200').message,
			'exec timed out after 0 ms');
		await eventually(async () => {
			const r = await s.exec(id, { argv: ['sh', '-c', 'cat /proc/[0-9]*/comm 2>/dev/null'] });
			assert.ok(!r.stdout.split('\n').includes('sleep'), `a timed-out sleep still runs:\n${r.stdout}`);
		}, 3000);
		const e = await s.listed(id);
		assert.equal(e.exec_in_flight, 0);
		assert.equal(e.exec_slots_free, 4);
	});

	test('1 MiB cap per stream: 2 MiB of output gives exactly 1048576 bytes and the truncated flag (§7.4, §10.12)', async () => {
		const id = py.sandbox_id;
		const big = await s.exec(id, { argv: ['python3', '-c', `import sys; sys.stdout.write('x' * ${2 * MIB})`] });
		assert.equal(big.stdout.length, MIB);
		assert.ok(/^x+$/.test(big.stdout), 'only the first bytes are kept');
		assert.deepEqual([big.exit_code, big.stdout_truncated, big.stderr_truncated, big.stderr], [0, true, false, '']);
		const err = await s.exec(id, { argv: ['python3', '-c', `import sys; sys.stderr.write('e' * ${MIB + 1}); print('done')`] });
		assert.deepEqual([err.stderr.length, err.stderr_truncated, err.stdout, err.stdout_truncated], [MIB, true, 'done\n', false]);
		const exact = await s.exec(id, { argv: ['python3', '-c', `import sys; sys.stdout.write('y' * ${MIB})`] });
		assert.deepEqual([exact.stdout.length, exact.stdout_truncated], [MIB, false], 'exactly 1 MiB is not truncated');
	});

	test('five concurrent sleeps with the default cap of 4: exactly one S003, list shows the slots (§7.4, §10.11)', async () => {
		const id = py.sandbox_id;
		const calls = Array.from({ length: 5 }, () => s.vmTry('exec', { sandbox_id: id, cmd: 'sleep 4' }));
		await sleep(1500);
		const during = await s.listed(id);
		const results = await Promise.all(calls);
		const refused = results.filter((x) => x.err);
		assert.equal(refused.length, 1, JSON.stringify(results));
		const env = assertScode(refused[0].err, 'S003');
		assert.equal(env.message, `sandbox ${id} is at its exec concurrency cap (max_concurrent_exec_per_sandbox)`);
		assert.equal(env.fix, null);
		assert.match(env.fix_note, /nohup/);
		for (const { ok } of results.filter((x) => x.ok)) assert.equal(ok.exit_code, 0);
		assert.deepEqual([during.exec_in_flight, during.exec_slots_free, during.exec_in_progress], [4, 0, true]);
		const afterwards = await s.listed(id);
		assert.deepEqual([afterwards.exec_in_flight, afterwards.exec_slots_free, afterwards.exec_in_progress], [0, 4, false]);
	});

	test('under TCG the guest runs without user-space ASLR (norandmaps): its processes reuse translated code', async (t) => {
		if (!/no hardware virtualization/.test(s.daemon.output())) return t.skip('VMs run under KVM here');
		const r = await s.exec(py.sandbox_id, { argv: ['sh', '-c',
			'cat /proc/sys/kernel/randomize_va_space; grep -m1 libc /proc/self/maps | cut -d- -f1; grep -m1 libc /proc/self/maps | cut -d- -f1'] });
		const [aslr, one, two] = r.stdout.trim().split('\n');
		assert.equal(aslr, '0', r.stdout);
		assert.equal(one, two, 'two processes map libc at one address');
	});

	test('a write in one sandbox is invisible in another of the same image, and host files are invisible', async () => {
		assertReply(await s.exec(py.sandbox_id, { argv: ['sh', '-c', 'echo one > /tmp/iso && echo two > /usr/iso && cat /tmp/iso /usr/iso'] }),
			{ stdout: 'one\ntwo\n', exit_code: 0 });
		const other = await s.exec(py2.sandbox_id, { argv: ['sh', '-c', 'cat /tmp/iso /usr/iso'] });
		assert.equal(other.stdout, '');
		assert.notEqual(other.exit_code, 0);
		const marker = `/tmp/sbx-host-marker-${randomUUID()}`;
		writeFileSync(marker, 'host');
		try {
			const r = await s.exec(py.sandbox_id, { argv: ['sh', '-c', `cat ${marker}; ls ${s.stateDir} ${REPO}`] });
			assert.equal(r.stdout, '');
			assert.notEqual(r.exit_code, 0);
		} finally {
			rmSync(marker, { force: true });
		}
	});

	test('run python print(6*7) is "42\\n", with no sandbox_id and no sandbox or VM left (§7.7)', async () => {
		const before = vmFilesLeft(s.stateDir).length;
		const r = await s.vm('run', { image: 'python', lang: 'python', code: 'print(6*7)' });
		assert.ok(!('sandbox_id' in r), 'no sandbox_id without keep_sandbox');
		assertReply(r, { stdout: '42\n', exit_code: 0 });
		assert.equal((await s.vm('list', {})).sandboxes.length, 3);
		// run replies before its VM has exited (its stop is best effort):
		// the VM's files go a moment later.
		await eventually(() => assert.equal(vmFilesLeft(s.stateDir).length, before, 'the run VM files are gone'));
	});

	test('run node with a sibling file and a list env', async () => {
		const r = await s.vm('run', { image: 'node', lang: 'js', env: ['N=6'],
			files: [{ path: '/srv/app/m.js', content: 'module.exports = 7;\n' }],
			code: "console.log(require('/srv/app/m.js') * Number(process.env.N))" });
		assertReply(r, { stdout: '42\n', exit_code: 0 });
	});

	test('run shell with stdin and a map env, exiting 5: a reply without sandbox_id (§7.7)', async () => {
		const r = await s.vm('run', { image: 'python', lang: 'shell', code: 'read x; echo "$GREETING:$x"; cat; exit 5',
			stdin: b64('abc\nrest\n'), env: { GREETING: 'hi' } });
		assert.ok(!('sandbox_id' in r), 'no sandbox_id without keep_sandbox');
		assertReply(r, { stdout: 'hi:abc\nrest\n', exit_code: 5 });
	});

	test('run exiting 3 with keep_sandbox: a reply, sandbox_id present and listed; the image WorkingDir and PATH apply (§10.21)', async () => {
		const r = await s.vm('run', { image: 'pyw', lang: 'py', keep_sandbox: true,
			code: 'import os, sys\nprint(os.getcwd())\nprint(os.environ["PATH"])\nsys.exit(3)' });
		assert.match(r.sandbox_id ?? '', UUID_V4);
		kept = r.sandbox_id;
		assertReply(r, { stdout: `${WORKDIR_IMAGE.workdir}\n${WORKDIR_IMAGE.path}\n`, exit_code: 3 });
		const e = await s.listed(kept);
		assert.deepEqual([e?.image, e?.name, e?.stopped], ['pyw', null, false]);
		assertReply(await s.exec(kept, { cmd: 'python3 -c "import os; print(os.getcwd())"' }),
			{ stdout: `${WORKDIR_IMAGE.workdir}\n`, exit_code: 0 });
	});

	test('stop twice: {stopped:true} in canonical form, then S002; every call after it is S002 (§7.5, §10.13)', async () => {
		assert.ok(kept, 'the kept sandbox of the previous test');
		assert.deepEqual(await s.vm('stop', { sandbox_id: kept.toUpperCase(), wait: true }), { sandbox_id: kept, stopped: true });
		const again = assertScode(await s.vmError('stop', { sandbox_id: kept }), 'S002');
		assert.equal(again.message, `sandbox not found: ${kept}`);
		assert.equal(again.fix_note, 'the sandbox is gone; call sandbox::create first');
		assertScode(await s.vmError('exec', { sandbox_id: kept, cmd: 'true' }), 'S002');
		assertScode(await s.vmError('fs::stat', { sandbox_id: kept, path: '/' }), 'S002');
		assert.equal(await s.listed(kept), undefined);
	});

	test('run with an image not allow-listed: S100 wrapped at step `create`, fix.sandbox_id "" (§2.4, §10.22)', async () => {
		const why = { denied: 'not in image_allowlist (add it', ruby: 'not in catalog' };
		for (const image of ['denied', 'ruby']) {
			const env = assertScode(await s.vmError('run', { image, lang: 'python', code: 'print(1)' }), 'S100');
			assert.ok(env.message.startsWith(`during sandbox::run step \`create\`: image '${image}' ${why[image]}`),
				env.message);
			assert.deepEqual(env.fix, { context: 'during sandbox::run step `create`', sandbox_id: '', inner_code: 'S100' });
			assert.equal(env.fix_note, null);
		}
	});

	test('run timing out: S200 wrapped at step `exec` with the sandbox id, and that sandbox is stopped (§7.7)', async () => {
		const env = assertScode(await s.vmError('run', { image: 'python', lang: 'sh', code: 'sleep 20', timeout_ms: 300 }), 'S200');
		const m = env.message.match(/^during sandbox::run step `exec` \(sandbox_id=([0-9a-f-]{36})\): exec timed out after 300 ms$/);
		assert.ok(m, env.message);
		assert.deepEqual(env.fix, { context: 'during sandbox::run step `exec`', sandbox_id: m[1], inner_code: 'S200' });
		assert.equal(env.fix_note, null);
		assert.equal(await s.listed(m[1]), undefined);
		assertScode(await s.vmError('exec', { sandbox_id: m[1], cmd: 'true' }), 'S002');
	});

	test('stopping every sandbox leaves no QEMU process and no VM file', async () => {
		// The runs' VMs went after their replies (QEMU first, then its
		// files): the three live ones stay.
		const qemus = () => processesMentioning(s.stateDir).filter((p) => /qemu-system/.test(p.cmdline)).length;
		const vmDirs = () => readdirSync(path.join(s.stateDir, 'vms')).length;
		await eventually(() => assert.deepEqual([qemus(), vmDirs()], [3, 3]));
		for (const { sandbox_id } of [py, py2, nd]) {
			assert.deepEqual(await s.vm('stop', { sandbox_id }), { sandbox_id, stopped: true });
		}
		assert.deepEqual((await s.vm('list', {})).sandboxes, []);
		assertNoVmLeft(s.stateDir, 'after stop');
	});

	test('SIGTERM: exit 0, no sanitizer report, nothing left', async (t) => {
		await s.stopClean();
		assertNoVmLeft(s.stateDir, 'after SIGTERM');
		t.diagnostic(`${s.boots} VM boots, ${Math.round((Date.now() - started) / 1000)} s`);
	});
});
