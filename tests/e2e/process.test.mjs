// Background processes (issue 26 item 3) in one VM: exec with
// `background: true` answers {process_id, pid} at once and holds no exec
// slot; a python http.server keeps running while four more execs run (one
// fetches from it inside the sandbox); process::logs from an offset gives
// exactly the bytes after it; signal TERM ends it and list shows its exit;
// the 17th running process of a sandbox gets S003 (max_background_per_sandbox
// 16, the default); stop with processes running leaves no VM behind, and
// so does the daemon's shutdown (exit 0, no sanitizer report: the ASan
// pass runs it with leak detection).
// process::logs with `follow` streams the bytes after next_offset to the
// caller's channel until the process ends; the 17th follow of a sandbox gets
// S003 (max_follows_per_sandbox), and a follow whose reader leaves ends and
// frees its slot.
import { describe, test, before, after } from './lib/test-api.mjs';
import assert from 'node:assert/strict';
import { ChannelReader } from 'iii-sdk/channel';
import { eventually } from './lib.mjs';
import { registryUnavailable, startRegistry } from './lib/registry-fixture.mjs';
import { assertNoVmLeft, assertScode, startSandboxStack, UUID_V4 } from './lib/sandbox-stack.mjs';

const skip = registryUnavailable();
const RFC3339_MS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

describe('background processes: exec background, process::list/logs/wait/signal', { skip: skip ?? false }, () => {
	let reg, s, id, server, stopped = false;
	const p = (fn, payload) => s.vm(`process::${fn}`, { sandbox_id: id, ...payload });
	before(async () => {
		reg = await startRegistry({ images: ['python'] });
		s = await startSandboxStack({ registry: reg, config: { image_allowlist: ['python'] } });
		id = (await s.vm('create', { image: 'python' })).sandbox_id;
	});
	after(async () => {
		if (!stopped) await s?.stop();
		await reg?.stop();
		s?.cleanupState();
	});

	test('exec background answers {process_id, pid} at once; the server listens and holds no exec slot', async () => {
		const r = await s.exec(id, { argv: ['python3', '-u', '-m', 'http.server', '8000'], workdir: '/tmp',
			background: true, timeout_ms: 1000 });
		assert.deepEqual(Object.keys(r).sort(), ['pid', 'process_id']);
		assert.match(r.process_id, UUID_V4);
		assert.ok(Number.isInteger(r.pid) && r.pid > 1, `pid ${r.pid}`);
		server = r;
		await eventually(async () => {
			const l = await p('logs', { process_id: server.process_id });
			assert.match(l.data, /Serving HTTP on .* port 8000/);
		}, 60000);
		assert.equal((await s.listed(id)).exec_in_flight, 0);
	});

	test('four execs run while it runs, one of them fetching from it inside the sandbox', async () => {
		const [fetched, tcp, pidAlive, echo] = await Promise.all([
			s.exec(id, { argv: ['python3', '-c',
				'import urllib.request as u; r = u.urlopen("http://127.0.0.1:8000/"); print(r.status)'] }),
			s.exec(id, { cmd: 'cat /proc/net/tcp' }),
			s.exec(id, { argv: ['sh', '-c', `kill -0 ${server.pid} && echo alive`] }),
			s.exec(id, { cmd: 'echo four' }),
		]);
		assert.equal(fetched.stdout, '200\n', fetched.stderr);
		// 0.0.0.0:8000 (1F40 hex) in state 0A (LISTEN)
		assert.match(tcp.stdout, /^\s*\d+: 00000000:1F40 00000000:0000 0A /m);
		assert.equal(pidAlive.stdout, 'alive\n');
		assert.equal(echo.stdout, 'four\n');
		// timeout_ms 1000 did not apply to it: still running after those
		const row = (await p('list', {})).processes.find((x) => x.process_id === server.process_id);
		assert.equal(row.state, 'running');
		assert.deepEqual(row.argv, ['python3', '-u', '-m', 'http.server', '8000']);
		assert.match(row.started_at, RFC3339_MS);
		assert.ok(!('ended_at' in row) && !('exit_code' in row));
	});

	test('its logs read from offset N are exactly the bytes after N', async () => {
		// the request the fetch made is logged on stderr
		const all = await eventually(async () => {
			const l = await p('logs', { process_id: server.process_id, stream: 'stderr' });
			assert.match(l.data, /"GET \/ HTTP\/1.1" 200/);
			return l;
		});
		assert.equal(all.dropped, false);
		assert.equal(all.state, 'running');
		assert.equal(all.next_offset, Buffer.byteLength(all.data));
		const n = 7;
		const tail = await p('logs', { process_id: server.process_id, stream: 'stderr', offset: n });
		assert.equal(tail.data, Buffer.from(all.data).subarray(n).toString());
		assert.equal(tail.next_offset, all.next_offset);
		const beyond = await p('logs', { process_id: server.process_id, stream: 'stderr', offset: all.next_offset });
		assert.deepEqual(beyond, { data: '', next_offset: all.next_offset, dropped: false, state: 'running' });
	});

	test('wait gives up with state running; signal TERM ends it; list shows the exit', async () => {
		const w = await p('wait', { process_id: server.process_id, timeout_ms: 300 });
		assert.deepEqual(w, { state: 'running' });
		assert.deepEqual(await p('signal', { process_id: server.process_id, signal: 'TERM' }), { sent: true });
		assert.deepEqual(await p('wait', { process_id: server.process_id, timeout_ms: 20000 }),
			{ state: 'exited', exit_code: 143 });
		const row = (await p('list', {})).processes.find((x) => x.process_id === server.process_id);
		assert.equal(row.state, 'exited');
		assert.equal(row.exit_code, 143);
		assert.match(row.ended_at, RFC3339_MS);
		assert.ok(row.ended_at >= row.started_at);
		assert.ok(row.bytes.stdout > 0 && row.bytes.stderr > 0, JSON.stringify(row.bytes));
		assert.deepEqual(await p('signal', { process_id: server.process_id, signal: 'KILL' }), { sent: false });
		// its logs outlive it
		const l = await p('logs', { process_id: server.process_id });
		assert.match(l.data, /Serving HTTP/);
		assert.equal(l.state, 'exited');
	});

	test('logs with follow: the reply has what is there, the channel gets exactly the rest, then ends normally', async () => {
		const r = await s.exec(id, { argv: ['sh', '-c', 'for i in 1 2 3 4 5 6; do echo line$i; sleep 0.5; done'],
			background: true });
		await eventually(async () => {
			assert.match((await p('logs', { process_id: r.process_id })).data, /line1\n/);
		}, 20000);
		const ch = await s.caller.trigger({ function_id: 'engine::channels::create', payload: {} });
		const reader = new ChannelReader(s.engine.url, ch.reader);
		const frames = [];
		reader.stream.on('data', (d) => frames.push(d));
		const ended = new Promise((resolve, reject) => {
			reader.stream.on('end', resolve);
			reader.stream.on('error', reject);
		});
		const head = await p('logs', { process_id: r.process_id, follow: ch.writer });
		assert.equal(head.dropped, false);
		assert.equal(head.next_offset, Buffer.byteLength(head.data));
		await ended;
		const rest = Buffer.concat(frames).toString();
		assert.equal(head.data + rest, 'line1\nline2\nline3\nline4\nline5\nline6\n');
		assert.ok(rest.length > 0, `the follow got nothing after ${JSON.stringify(head.data)}`);
		assert.deepEqual(await p('wait', { process_id: r.process_id, timeout_ms: 10000 }), { state: 'exited', exit_code: 0 });
	});

	test('16 follows of a sandbox are the cap: the 17th gets S003; one whose reader leaves ends and frees its slot', async () => {
		const quiet = await s.exec(id, { argv: ['sleep', '600'], background: true });
		const newChannel = () => s.caller.trigger({ function_id: 'engine::channels::create', payload: {} });
		const follow = async (ch) => p('logs', { process_id: quiet.process_id, follow: ch.writer });
		const chans = [];
		for (let i = 0; i < 16; i++) {
			chans.push(await newChannel());
			await follow(chans[i]);
		}
		assertScode(await s.vmError('process::logs', { sandbox_id: id, process_id: quiet.process_id,
			follow: (await newChannel()).writer }), 'S003', /max_follows_per_sandbox: 16/);
		// the first one's reader comes and goes while the process writes
		// nothing: the engine closes the writer, the follow ends
		const reader = new ChannelReader(s.engine.url, chans[0].reader);
		reader.stream.on('data', () => {});
		reader.stream.on('error', () => {});
		await eventually(() => assert.equal(reader.ws?.readyState, 1), 10000);
		reader.stream.destroy();
		await eventually(async () => {
			const r = await s.vmTry('process::logs', { sandbox_id: id, process_id: quiet.process_id,
				follow: (await newChannel()).writer });
			assert.ok(r.ok, JSON.stringify(r.err));
		}, 10000);
		// the rest end with the process
		assert.deepEqual(await p('signal', { process_id: quiet.process_id, signal: 'KILL' }), { sent: true });
		assert.equal((await p('wait', { process_id: quiet.process_id, timeout_ms: 10000 })).state, 'exited');
	});

	test('unknown process ids get S001 naming them, other signals S001', async () => {
		assertScode(await s.vmError('process::wait', { sandbox_id: id, process_id: 'no-such-process' }), 'S001',
			/no-such-process/);
		assertScode(await s.vmError('process::signal', { sandbox_id: id, process_id: server.process_id,
			signal: 'USR1' }), 'S001', /USR1/);
	});

	test('16 running background processes are the cap: the 17th gets S003 naming max_background_per_sandbox', async () => {
		for (let i = 0; i < 16; i++)
			await s.exec(id, { argv: ['sleep', '600'], background: true });
		assertScode(await s.vmError('exec', { sandbox_id: id, argv: ['sleep', '600'], background: true }), 'S003',
			/max_background_per_sandbox.*16/);
		// a foreground exec still runs: no exec slot was taken
		assert.equal((await s.exec(id, { cmd: 'echo fg' })).stdout, 'fg\n');
		const running = (await p('list', {})).processes.filter((x) => x.state === 'running');
		assert.equal(running.length, 16);
	});

	test('stop with 16 processes running ends them and leaves no VM', async () => {
		await s.vm('stop', { sandbox_id: id });
		assertNoVmLeft(s.stateDir, 'after stop');
		assertScode(await s.vmError('process::list', { sandbox_id: id }), 'S002');
	});

	test('shutdown with background processes running (one printing, keep_alive_while_running): exit 0, no VM left', async () => {
		const other = (await s.vm('create', { image: 'python', keep_alive_while_running: true })).sandbox_id;
		const chatty = await s.exec(other, { background: true, argv: ['python3', '-u', '-c',
			'import time\nwhile True:\n print("tick", flush=True); time.sleep(0.05)'] });
		await s.exec(other, { argv: ['sleep', '600'], background: true });
		await eventually(async () => {
			const l = await s.vm('process::logs', { sandbox_id: other, process_id: chatty.process_id });
			assert.match(l.data, /^(tick\n){3}/);
		}, 30000);
		stopped = true;
		await s.stopClean();
		assertNoVmLeft(s.stateDir, 'after shutdown');
	});
});
