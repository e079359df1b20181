// Interactive terminals (terminal::open, resize, close) end to end: keys
// through the input channel's writer ref with iii-sdk's ChannelWriter, the
// screen from the output channel's reader ref with its ChannelReader; then
// the operator's `sandbox-libkrun shell` on a pseudo-terminal driven by
// lib/pty-drive.py.  One python sandbox serves every check.
import { describe, test, before, after } from './lib/test-api.mjs';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { ChannelReader, ChannelWriter } from 'iii-sdk/channel';
import { BIN } from './daemon.mjs';
import { registryUnavailable, startRegistry } from './lib/registry-fixture.mjs';
import { assertScode, startSandboxStack } from './lib/sandbox-stack.mjs';

const DRIVER = path.join(path.dirname(fileURLToPath(import.meta.url)), 'lib', 'pty-drive.py');
const WAIT_MS = 60000;
const skip = registryUnavailable();

// Runs a command; resolves {code, stdout, stderr}.
function run(file, args, { input, timeoutMs = 180000 } = {}) {
	return new Promise((resolve) => {
		const child = execFile(file, args, { timeout: timeoutMs, maxBuffer: 1 << 24 }, (err, stdout, stderr) => {
			resolve({ code: err ? (err.code ?? -1) : 0, stdout, stderr });
		});
		child.stdin.end(input ?? '');
	});
}

// One open terminal: what its screen showed so far, keys, waits.
function attach(url, t) {
	const writer = new ChannelWriter(url, t.input);
	const reader = new ChannelReader(url, t.output);
	const term = { id: t.terminal_id, screen: '', ended: false, texts: [] };
	reader.onMessage((m) => term.texts.push(m));
	reader.stream.on('data', (b) => { term.screen += b.toString(); });
	term.end = new Promise((resolve) => reader.stream.on('end', () => { term.ended = true; resolve(); }));
	term.type = (s) => writer.stream.write(s);
	term.closeKeys = () => writer.stream.end();
	// Waits for the screen to match re after the position `from`.
	term.waitFor = async (re, from = 0) => {
		const deadline = Date.now() + WAIT_MS;
		while (Date.now() < deadline) {
			const m = term.screen.slice(from).match(re);
			if (m) return from + m.index + m[0].length;
			if (term.ended) break;
			await new Promise((r) => setTimeout(r, 50));
		}
		assert.fail(`the screen never matched ${re}; it shows ${JSON.stringify(term.screen.slice(-2000))}`);
	};
	return term;
}

describe('terminals in a live sandbox', { skip: skip ?? false }, () => {
	let reg, s, id, url, dir, sock;
	const cli = (args, opts) => run(BIN, [args[0], '--socket', sock, ...args.slice(1)], opts);
	const drive = (rows, cols, steps, args) =>
		run('python3', [DRIVER, String(rows), String(cols), JSON.stringify(steps), '--', BIN, 'shell', '--socket', sock,
			...args]).then((r) => {
			assert.equal(r.code, 0, r.stderr);
			return JSON.parse(r.stdout);
		});

	before(async () => {
		dir = mkdtempSync(path.join(tmpdir(), 'sbx-e2e-term-'));
		sock = path.join(dir, 'control.sock');
		reg = await startRegistry({ images: ['python'] });
		s = await startSandboxStack({ registry: reg, config: { image_allowlist: ['python'], control_socket: sock } });
		url = s.engine.url;
		id = (await s.vm('create', { image: 'python' })).sandbox_id;
	});
	after(async () => {
		await s?.stop();
		await reg?.stop();
		s?.cleanupState();
		if (dir) rmSync(dir, { recursive: true, force: true });
	});

	test('open 30x100: typed keys are echoed, `stty size` shows 30 100, TERM is set; resize to 40x120 shows; close ends the screen', async () => {
		const t = await s.vm('terminal::open', { sandbox_id: id, rows: 30, cols: 100 });
		assert.deepEqual(Object.keys(t), ['terminal_id', 'input', 'output']);
		assert.equal(t.input.direction, 'write');
		assert.equal(t.output.direction, 'read');
		const term = attach(url, t);
		term.type('echo "ab""cd"\n');
		// The keys come back as typed (the pty echoes them), then the output.
		let at = await term.waitFor(/echo "ab""cd"\r\n/);
		at = await term.waitFor(/abcd\r\n/, at);
		term.type('stty size; echo "T=$TERM"\n');
		at = await term.waitFor(/(?:^|\D)30 100\r\nT=xterm-256color\r\n/, at);
		assert.deepEqual(await s.vm('terminal::resize', { sandbox_id: id, terminal_id: term.id, rows: 40, cols: 120 }),
			{ resized: true });
		term.type('stty size\n');
		at = await term.waitFor(/(?:^|\D)40 120\r\n/, at);
		assert.deepEqual(await s.vm('terminal::close', { sandbox_id: id, terminal_id: term.id }), { closed: true });
		await term.end;
		assert.deepEqual(term.texts, [], 'no error frame on a close');
		term.closeKeys();
		// Gone: resize and close name it.
		for (const fn of ['terminal::resize', 'terminal::close']) {
			assertScode(await s.vmError(fn, { sandbox_id: id, terminal_id: term.id, rows: 5, cols: 5 }), 'S001',
				new RegExp(`unknown terminal_id ${term.id}`));
		}
	});

	test('a command that exits ends the output channel normally; the terminal is gone', async () => {
		const t = await s.vm('terminal::open', { sandbox_id: id, rows: 10, cols: 20, argv: ['sh', '-c', 'read x; echo "got $x"; exit 4'] });
		const term = attach(url, t);
		term.type('hi\n');
		await term.waitFor(/got hi\r\n/);
		await term.end;
		assert.deepEqual(term.texts, []);
		term.closeKeys();
		assertScode(await s.vmError('terminal::close', { sandbox_id: id, terminal_id: term.id }), 'S001');
	});

	test('S001 for an unknown terminal_id (named) and for a size out of 1..1000; S002 for an unknown sandbox', async () => {
		assertScode(await s.vmError('terminal::resize', { sandbox_id: id, terminal_id: 'no-such-terminal', rows: 5, cols: 5 }),
			'S001', /unknown terminal_id no-such-terminal/);
		assertScode(await s.vmError('terminal::close', { sandbox_id: id, terminal_id: 'no-such-terminal' }), 'S001',
			/unknown terminal_id no-such-terminal/);
		assertScode(await s.vmError('terminal::open', { sandbox_id: id, rows: 0, cols: 80 }), 'S001', /rows and cols must be 1 to 1000/);
		assertScode(await s.vmError('terminal::open', { sandbox_id: id, rows: 24, cols: 1001 }), 'S001');
		assertScode(await s.vmError('terminal::open', { sandbox_id: '00000000-0000-4000-8000-000000000000', rows: 24, cols: 80 }),
			'S002');
	});

	test('shell on a 30x100 terminal: `stty size`, a resize followed on SIGWINCH, the remote exit status, the local modes restored', async () => {
		const r = await drive(30, 100, [
			['send', 'stty size\n'], ['expect', '(?:^|\\D)30 100\\r\\n'],
			['resize', 40, 120], ['send', 'stty size\n'], ['expect', '(?:^|\\D)40 120\\r\\n'],
			['send', 'exit 3\n'],
		], [id]);
		assert.equal(r.failed, null, `step ${JSON.stringify(r.failed)}; screen ${JSON.stringify(r.screen.slice(-2000))}`);
		assert.equal(r.code, 3);
		assert.equal(r.restored, true, 'the local terminal is back in its modes');
	});

	test('shell -- CMD: its exit status; not on a terminal, stdin goes as it is at 24x80', async () => {
		const r = await cli(['shell', id, '--', 'sh', '-c', 'stty size; read x; echo "got $x"; exit 5'], { input: 'keys\n' });
		assert.equal(r.code, 5, r.stderr);
		assert.match(r.stdout, /24 80\r\n/);
		assert.match(r.stdout, /got keys\r\n/);
	});

	test('shell: an unknown sandbox exits 125 with S002, bad usage 2', async () => {
		const r = await cli(['shell', 'no-such-box']);
		assert.equal(r.code, 125);
		assert.match(r.stderr, /S002/);
		assert.equal((await cli(['shell', id, '--'])).code, 2);
	});

	test('stop ends an open terminal: its output channel ends', async () => {
		const term = attach(url, await s.vm('terminal::open', { sandbox_id: id, rows: 24, cols: 80 }));
		term.type('echo ready\n');
		await term.waitFor(/ready\r\n/);
		await s.vm('stop', { sandbox_id: id });
		await term.end;
		term.closeKeys();
		assertScode(await s.vmError('terminal::close', { sandbox_id: id, terminal_id: term.id }), 'S002');
	});
});

// The client alone, against a scripted control socket (no daemon, no VM):
// the request it sends, raw mode and its restoration, keys as frames, a
// size on SIGWINCH, the screen printed, the exit status.
describe('shell\'s client against a scripted control socket', () => {
	let dir, sock, server, seen;
	before(async () => {
		dir = mkdtempSync(path.join(tmpdir(), 'sbx-e2e-shell-'));
		sock = path.join(dir, 'control.sock');
		seen = { requests: [], keys: '', sizes: [], ends: 0 };
		server = net.createServer((c) => {
			let buf = Buffer.alloc(0);
			let need = 0; // raw bytes of a frame still to come
			let started = false;
			const line = (o) => c.write(`${JSON.stringify(o)}\n`);
			const frame = (text) => { line({ data: Buffer.byteLength(text) }); c.write(text); };
			c.on('data', (d) => {
				buf = Buffer.concat([buf, d]);
				for (;;) {
					if (need > 0) {
						if (buf.length < need) return;
						const keys = buf.subarray(0, need).toString();
						buf = buf.subarray(need);
						need = 0;
						seen.keys += keys;
						frame(keys.replaceAll('\r', '\r\n')); // the "guest" echoes
						if (keys.includes('q')) {
							line({ ok: true, result: { exit_code: 7 } });
							c.end();
						}
						continue;
					}
					const nl = buf.indexOf(10);
					if (nl < 0) return;
					const msg = JSON.parse(buf.subarray(0, nl).toString());
					buf = buf.subarray(nl + 1);
					if (!started) {
						started = true;
						seen.requests.push(msg);
						if (msg.sandbox === 'nope') {
							line({ ok: false, error: { code: 'S002', message: 'sandbox not found: nope' } });
							c.end();
							return;
						}
						line({ terminal_id: 't1' });
						frame('$ ');
					} else if (msg.data) {
						need = msg.data;
					} else if (msg.end === true) {
						seen.ends++;
						c.end(); // gone without a final line
						return;
					} else if (msg.rows) {
						seen.sizes.push([msg.rows, msg.cols]);
						frame(`size ${msg.rows} ${msg.cols}\r\n`);
					}
				}
			});
		});
		await new Promise((r) => server.listen(sock, r));
	});
	after(() => {
		server?.close();
		if (dir) rmSync(dir, { recursive: true, force: true });
	});

	test('raw keys as frames, a resize on SIGWINCH, the exit status, the terminal\'s modes restored', async () => {
		const r = await run('python3', [DRIVER, '30', '100', JSON.stringify([
			['expect', '\\$ '], ['send', 'ab\r'], ['expect', 'ab\\r\\n'],
			['resize', 40, 120], ['expect', 'size 40 120\\r\\n'],
			['send', '\u0003q'],
		]), '--', BIN, 'shell', '--socket', sock, 'box', '--', 'top', '-b']);
		assert.equal(r.code, 0, r.stderr);
		const d = JSON.parse(r.stdout);
		assert.equal(d.failed, null, JSON.stringify(d));
		assert.equal(d.code, 7);
		assert.equal(d.restored, true);
		const req = seen.requests.at(-1);
		assert.deepEqual({ ...req, term: undefined }, { op: 'shell', sandbox: 'box', rows: 30, cols: 100,
			argv: ['top', '-b'], term: undefined });
		// Raw mode: Ctrl-C went as a key (the client did not die of SIGINT), CR not turned into NL.
		assert.equal(seen.keys, 'ab\r\u0003q');
		// One size per SIGWINCH the client saw (the kernel's and the driver's may come as one or two).
		assert.ok(seen.sizes.length >= 1 && seen.sizes.every(([r, c]) => r === 40 && c === 120), JSON.stringify(seen.sizes));
	});

	test('not on a terminal: 24x80, stdin as it is, then {"end": true}; an error before the start exits 125', async () => {
		const ends = seen.ends;
		const r = await run(BIN, ['shell', '--socket', sock, 'box2'], { input: 'x' });
		assert.equal(r.code, 125, 'the daemon closed without a final line');
		assert.equal(seen.ends, ends + 1, 'stdin\'s end was sent as {"end": true}');
		const q = await run(BIN, ['shell', '--socket', sock, 'box2'], { input: 'xq' });
		assert.equal(q.code, 7, q.stderr);
		assert.equal(q.stdout, '$ xq');
		assert.deepEqual({ rows: seen.requests.at(-1).rows, cols: seen.requests.at(-1).cols }, { rows: 24, cols: 80 });
		const e = await run(BIN, ['shell', '--socket', sock, 'nope']);
		assert.equal(e.code, 125);
		assert.match(e.stderr, /^sandbox-libkrun shell: S002: sandbox not found: nope\n$/);
	});
});
