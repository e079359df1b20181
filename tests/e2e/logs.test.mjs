// The daemon's log with SANDBOX_LOG_FORMAT=json and SANDBOX_LOG=debug: every
// stderr line is one JSON object; each call has a start and an end line
// (fn, duration_ms, outcome); each refusal is at info with its S-code and
// cause; create says its boot mode and time to ready, stop its reason; an
// env value, a command, stdin and an auth token passed in never appear.
// One VM boot.
import { describe, test, before, after } from './lib/test-api.mjs';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { endDaemon, spawnDaemon } from './daemon.mjs';
import { registryUnavailable, startRegistry } from './lib/registry-fixture.mjs';
import { assertScode, b64, startSandboxStack } from './lib/sandbox-stack.mjs';

const TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
const LEVELS = ['debug', 'info', 'warn', 'error'];
const skip = registryUnavailable();

test('an unknown SANDBOX_LOG_FORMAT stops serve at start with exit 2, naming it', async () => {
	const d = spawnDaemon('ws://127.0.0.1:9', { SANDBOX_LOG_FORMAT: 'xml' });
	await endDaemon(d, { code: 2, send: null });
	assert.match(d.output(), /SANDBOX_LOG_FORMAT=xml is not a log format \(expected text or json\)/);
});

describe('logs: JSON lines that tell the story', { skip: skip ?? false }, () => {
	const secret = {
		env: `env-value-${randomUUID()}`,
		code: `code-string-${randomUUID()}`,
		stdin: `stdin-bytes-${randomUUID()}`,
		auth: `auth-token-${randomUUID()}`,
	};
	const unknownId = randomUUID();
	let reg, s, created, lines, raw;
	const calls = []; // [fn, want outcome]

	before(async () => {
		reg = await startRegistry({ images: ['python'] });
		s = await startSandboxStack({ registry: reg, config: { image_allowlist: ['python'] },
			env: { SANDBOX_LOG_FORMAT: 'json', SANDBOX_LOG: 'debug' } });
		created = await s.vm('create', { image: 'python', env: { LOG_TEST_VALUE: secret.env } });
		calls.push(['create', 'ok']);
		const r = await s.exec(created.sandbox_id, { argv: ['sh', '-c', 'cat', secret.code], stdin: b64(secret.stdin) });
		assert.equal(r.stdout, secret.stdin);
		calls.push(['exec', 'ok']);
		assertScode(await s.callError('create', { image: 'no-such-image' }), 'S100');
		calls.push(['create', 'S100']);
		assertScode(await s.callError('exec', { sandbox_id: unknownId, cmd: secret.code }), 'S002');
		calls.push(['exec', 'S002']);
		const bad = await s.callError('exec', { sandbox_id: 5, cmd: secret.code });
		assert.match(bad.message, /^serialization error: /);
		calls.push(['exec', 'decode']);
		await s.callError('worker::status', { auth: secret.auth, worker: 'log-test-worker' });
		calls.push(['worker::status', 'S505']);
		await s.vm('stop', { sandbox_id: created.sandbox_id });
		calls.push(['stop', 'ok']);
		await s.stopClean();
		raw = s.daemon.output();
		lines = raw.split('\n').filter((l) => l !== '').map((l) => {
			try {
				return JSON.parse(l);
			} catch {
				return assert.fail(`not a JSON line: ${l}`);
			}
		});
	});
	after(async () => {
		if (s && s.daemon.proc.exitCode === null) await s.stop();
		await reg?.stop();
		s?.cleanupState();
	});

	test('every line is an object with time (RFC 3339 UTC, ms), level and msg', () => {
		assert.ok(lines.length > 10, `${lines.length} lines`);
		for (const l of lines) {
			assert.equal(typeof l, 'object');
			assert.match(l.time, TIME, JSON.stringify(l));
			assert.ok(LEVELS.includes(l.level), JSON.stringify(l));
			assert.equal(typeof l.msg, 'string');
		}
	});

	test('each call has a debug start line and an end line with fn, duration_ms and outcome', () => {
		const starts = lines.filter((l) => l.msg === 'call started');
		const ends = lines.filter((l) => 'duration_ms' in l && 'outcome' in l && 'fn' in l);
		for (const l of starts) assert.equal(l.level, 'debug');
		for (const [fn, outcome] of calls) {
			const want = calls.filter(([f]) => f === fn).length;
			assert.equal(starts.filter((l) => l.fn === fn).length, want, `start lines of ${fn}`);
			const end = ends.filter((l) => l.fn === fn && l.outcome === outcome);
			assert.equal(end.length, 1, `end line of ${fn} with outcome ${outcome}`);
			assert.ok(Number.isInteger(end[0].duration_ms) && end[0].duration_ms >= 0);
			assert.equal(end[0].level, outcome === 'ok' ? 'debug' : 'info', JSON.stringify(end[0]));
		}
		assert.equal(ends.find((l) => l.fn === 'exec' && l.outcome === 'ok').sandbox_id, created.sandbox_id);
		assert.equal(ends.find((l) => l.fn === 'create' && l.outcome === 'ok').sandbox_id, created.sandbox_id);
	});

	test('each refusal is at info with its S-code and its cause', () => {
		const refused = (scode) => lines.find((l) => l.level === 'info' && l.scode === scode);
		assert.match(refused('S100')?.cause ?? '', /no-such-image/);
		assert.equal(refused('S002')?.sandbox_id, unknownId);
		assert.match(refused('S002')?.cause ?? '', new RegExp(unknownId));
		assert.match(refused('decode')?.cause ?? '', /sandbox_id/);
		assert.equal(refused('S505')?.worker, 'log-test-worker');
		assert.equal(typeof refused('S505')?.cause, 'string');
	});

	test('create says its pull, its boot mode (cold: a fresh state) and time to ready; stop says its reason', () => {
		const p = lines.find((l) => l.event === 'pull');
		assert.ok(p, 'a pull line');
		assert.equal(p.level, 'info');
		assert.match(p.ref, /python/);
		assert.match(p.registry, /^http:\/\/127\.0\.0\.1:\d+$/);
		assert.ok(Number.isInteger(p.bytes) && p.bytes > 1000000, `bytes ${p.bytes}`);
		assert.ok(Number.isInteger(p.duration_ms) && p.duration_ms >= 0, `duration_ms ${p.duration_ms}`);
		const layers = lines.filter((l) => l.event === 'pull_progress' && l.done === 'true');
		assert.equal(layers.length, p.layers, 'one line per layer downloaded');
		assert.equal(lines.filter((l) => l.event === 'layer_apply').length, p.layers, 'one line per layer unpacked');
		assert.equal(lines.filter((l) => l.event === 'erofs_build').length, 2, 'the erofs build starts and ends');
		const saved = lines.find((l) => l.event === 'template_save');
		assert.ok(saved && Number.isInteger(saved.duration_ms), 'a template_save line');
		const c = lines.find((l) => l.event === 'create' && l.sandbox_id === created.sandbox_id);
		assert.ok(c, 'a create line');
		assert.equal(c.level, 'info');
		assert.equal(c.image, 'python');
		assert.equal(c.boot, 'cold');
		assert.ok(Number.isInteger(c.ready_ms) && c.ready_ms > 0, `ready_ms ${c.ready_ms}`);
		const st = lines.find((l) => l.event === 'stop' && l.sandbox_id === created.sandbox_id);
		assert.ok(st, 'a stop line');
		assert.equal(st.level, 'info');
		assert.equal(st.reason, 'caller');
	});

	test('env values, commands, stdin and auth tokens never appear', () => {
		for (const [what, v] of Object.entries(secret)) assert.ok(!raw.includes(v), `the ${what} is in the log`);
		assert.ok(!raw.includes('LOG_TEST_VALUE='), 'an env entry is in the log');
	});
});
