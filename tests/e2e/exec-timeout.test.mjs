// A timed-out exec or run keeps what the command had printed: its S200
// envelope carries `stdout` and `stderr` (capped at 1 MiB each and
// lossy-UTF-8 decoded as a reply's, with `stdout_truncated` and
// `stderr_truncated`).  Calls that do not time out keep the contract's
// reply, and other failures (S004) the contract's envelope.  One VM boot:
// the run keeps its sandbox (keep_sandbox) and the execs use it.
import { describe, test, before, after } from './lib/test-api.mjs';
import assert from 'node:assert/strict';
import { eventually } from './lib.mjs';
import { registryUnavailable, startRegistry } from './lib/registry-fixture.mjs';
import { assertNoVmLeft, assertScode, startSandboxStack } from './lib/sandbox-stack.mjs';

const MIB = 1048576;
const skip = registryUnavailable();

// The printed members of an S200 envelope.
const printed = (env) => ({ stdout: env.stdout, stderr: env.stderr, stdout_truncated: env.stdout_truncated,
	stderr_truncated: env.stderr_truncated });

describe('a timed-out exec or run keeps its output in the S200 envelope', { skip: skip ?? false }, () => {
	let reg, s, id;
	before(async () => {
		reg = await startRegistry({ images: ['python'] });
		s = await startSandboxStack({ registry: reg, config: { image_allowlist: ['python'] } });
	});
	after(async () => {
		await s?.stop();
		await reg?.stop();
		s?.cleanupState();
	});

	test('run: print("start") then a sleep past timeout_ms 5000 answers S200 at step `exec` with stdout "start\\n"', async () => {
		const env = assertScode(await s.vmError('run', { image: 'python', lang: 'python', keep_sandbox: true,
			code: 'import time; print("start", flush=True); time.sleep(30)', timeout_ms: 5000 }), 'S200');
		const m = env.message.match(/^during sandbox::run step `exec` \(sandbox_id=([0-9a-f-]{36})\): exec timed out after 5000 ms$/);
		assert.ok(m, env.message);
		assert.deepEqual(env.fix, { context: 'during sandbox::run step `exec`', sandbox_id: m[1], inner_code: 'S200' });
		assert.deepEqual(printed(env), { stdout: 'start\n', stderr: '', stdout_truncated: false, stderr_truncated: false });
		id = m[1]; // kept: the execs below run in it
		// The sleep was cut: no process of the run is left in the sandbox
		// (the run's wall time would not tell: it includes a boot, which a
		// loaded machine makes longer than the sleep).
		const left = await s.exec(id, { argv: ['python3', '-c', 'import os\nfor p in os.listdir("/proc"):\n'
			+ '    if p.isdigit():\n        try: print(open(f"/proc/{p}/cmdline", "rb").read().replace(b"\\0", b" ").decode())\n'
			+ '        except OSError: pass'] });
		assert.equal(left.exit_code, 0, left.stderr);
		assert.ok(!left.stdout.includes('time.sleep(30)'), `still running:\n${left.stdout}`);
	});

	test('exec: both streams as printed before the deadline, the contract\'s S200 message and fix_note', async () => {
		// The prints must come before the deadline: it is 1500 ms, or four
		// times what the same prints take now as a whole exec if that is
		// more (a loaded machine slows the guest's shell).
		const t0 = performance.now();
		const base = await s.exec(id, { argv: ['sh', '-c', 'echo out; echo err >&2; printf "no newline"'] });
		assert.equal(base.stdout, 'out\nno newline');
		const timeout_ms = Math.max(1500, Math.ceil((performance.now() - t0) * 4 / 100) * 100);
		const env = assertScode(await s.vmError('exec', { sandbox_id: id,
			argv: ['sh', '-c', 'echo out; echo err >&2; printf "no newline"; sleep 30'], timeout_ms }), 'S200');
		assert.equal(env.message, `exec timed out after ${timeout_ms} ms`);
		assert.equal(env.fix, null);
		assert.equal(env.fix_note, 'raise `timeout_ms` on the exec call or split the work into smaller steps');
		assert.deepEqual(printed(env), { stdout: 'out\nno newline', stderr: 'err\n', stdout_truncated: false,
			stderr_truncated: false });
	});

	test('exec: the 1 MiB cap and the lossy UTF-8 decoding of a reply apply', async () => {
		const env = assertScode(await s.vmError('exec', { sandbox_id: id, argv: ['sh', '-c',
			'head -c 2000000 /dev/zero | tr "\\0" x; printf "a\\377b" >&2; sleep 30'], timeout_ms: 8000 }), 'S200');
		assert.equal(env.stdout.length, MIB);
		assert.ok(/^x+$/.test(env.stdout), 'stdout holds only the x printed');
		assert.equal(env.stdout_truncated, true);
		assert.equal(env.stderr, 'a\ufffdb');
		assert.equal(env.stderr_truncated, false);
	});

	test('exec: timeout_ms 0 times out before anything runs: empty output', async () => {
		const env = assertScode(await s.vmError('exec', { sandbox_id: id, cmd: 'echo never', timeout_ms: 0 }), 'S200');
		assert.equal(env.message, 'exec timed out after 0 ms');
		assert.deepEqual(printed(env), { stdout: '', stderr: '', stdout_truncated: false, stderr_truncated: false });
	});

	test('an exec that ends in time answers the contract\'s reply, its members in the contract\'s order', async () => {
		const r = await s.exec(id, { cmd: 'echo done' });
		assert.deepEqual(Object.keys(r), ['stdout', 'stderr', 'exit_code', 'timed_out', 'duration_ms', 'success',
			'stdout_truncated', 'stderr_truncated']);
		assert.equal(r.stdout, 'done\n');
		assert.equal(r.timed_out, false);
	});

	test('an exec ended by stop gets S004 with the contract\'s envelope only', async () => {
		const running = s.vmTry('exec', { sandbox_id: id, argv: ['sh', '-c', 'echo before-stop; sleep 60'],
			timeout_ms: 60000 });
		await eventually(async () => assert.equal((await s.listed(id)).exec_in_flight, 1));
		await s.vm('stop', { sandbox_id: id });
		const { err } = await running;
		assertScode(err, 'S004'); // exactly the seven members: no stdout
		assertNoVmLeft(s.stateDir, 'after stop');
	});
});
