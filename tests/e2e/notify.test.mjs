// serve under a service manager (systemd's Type=notify, through sd_notify):
// with NOTIFY_SOCKET set it says STATUS=waiting for the engine while none
// answers, READY=1 only once the engine has all 23 functions, and
// STOPPING=1 at SIGTERM.  No VM boot.
import { test } from './lib/test-api.mjs';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { endDaemon, spawnDaemon, FUNCTIONS } from './daemon.mjs';
import { StandinEngine } from './standin-engine.mjs';
import { sleep } from './lib.mjs';

// A datagram socket at `file` (what systemd listens on), as a child that
// prints each message it receives as one JSON string per line.
function notifyListener(file) {
	const py = `import json, socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(sys.argv[1])
print(json.dumps("LISTENING"), flush=True)
while True:
    print(json.dumps(s.recv(4096).decode()), flush=True)`;
	const proc = spawn('python3', ['-c', py, file], { stdio: ['ignore', 'pipe', 'inherit'] });
	const messages = [];
	let buf = '';
	proc.stdout.on('data', (d) => {
		buf += d;
		let nl;
		while ((nl = buf.indexOf('\n')) >= 0) {
			messages.push(JSON.parse(buf.slice(0, nl)));
			buf = buf.slice(nl + 1);
		}
	});
	return { proc, messages };
}

async function until(what, fn, timeoutMs) {
	const deadline = Date.now() + timeoutMs;
	while (!fn()) {
		if (Date.now() > deadline) assert.fail(`timed out waiting for ${what}`);
		await sleep(20);
	}
}

function freePort() {
	return new Promise((resolve) => {
		const srv = createServer().listen(0, '127.0.0.1', () => {
			const { port } = srv.address();
			srv.close(() => resolve(port));
		});
	});
}

test('READY=1 comes only once the engine has every function; STATUS says what serve waits for; STOPPING=1 at SIGTERM', async (t) => {
	const dir = mkdtempSync(path.join(tmpdir(), 'sbx-notify-'));
	t.after(() => rmSync(dir, { recursive: true, force: true }));
	const listener = notifyListener(path.join(dir, 'notify.sock'));
	t.after(() => listener.proc.kill());
	await until('the listener', () => listener.messages.includes('LISTENING'), 10000);
	const config = path.join(dir, 'config.yaml');
	writeFileSync(config, 'image_allowlist: [python]\n');

	const port = await freePort();
	const url = `ws://127.0.0.1:${port}`;
	const d = spawnDaemon(url, { NOTIFY_SOCKET: path.join(dir, 'notify.sock') }, {}, ['--config', config]);
	t.after(() => endDaemon(d));
	const has = (prefix) => listener.messages.some((m) => m.split('\n').some((l) => l.startsWith(prefix)));

	await until('STATUS=waiting', () => has(`STATUS=waiting for the engine at ${url}`), 20000);
	await sleep(1500);
	assert.ok(!has('READY=1'), `READY=1 sent with no engine: ${JSON.stringify(listener.messages)}`);

	const engine = new StandinEngine({ port });
	await engine.start();
	t.after(() => engine.stop());
	const ours = () => FUNCTIONS.filter((id) => engine.functions.has(id)).length;
	await until('READY=1', () => has('READY=1'), 60000);
	// The registrations went out on the connection before READY=1 did; the
	// engine has read them all within moments.
	await until('23 functions at the engine', () => ours() === FUNCTIONS.length, 2000);
	assert.ok(has(`STATUS=serving, connected to ${url}`));
	assert.ok(!has('STOPPING=1'));

	d.proc.kill('SIGTERM');
	await endDaemon(d, { send: null });
	await until('STOPPING=1', () => has('STOPPING=1'), 5000);
});
