// GET /metrics (metrics_listen, docs/metrics.md): the text passes promtool,
// and the counters move with one real sandbox (one VM boot): live
// sandboxes, creates by boot mode, execs, S-codes; then a cheap daemon
// without VMs serves it on a unix socket, and bad addresses stop the
// daemon with a configuration error.
import { describe, test, before, after } from './lib/test-api.mjs';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { eventually } from './lib.mjs';
import { promtool, request, samples, scrape, sumOf, value } from './lib/metrics-scrape.mjs';
import { endDaemon, startStack } from './daemon.mjs';
import { freePort, registryUnavailable, startRegistry } from './lib/registry-fixture.mjs';
import { assertScode, startSandboxStack } from './lib/sandbox-stack.mjs';

const BOOT_MODES = ['pool', 'standby', 'restore', 'cold'];

const skip = registryUnavailable();

describe('metrics of a daemon with one sandbox', { skip: skip ?? false }, () => {
	let reg, s, port;
	before(async () => {
		reg = await startRegistry({ images: ['python'] });
		port = await freePort();
		s = await startSandboxStack({ registry: reg, config: { image_allowlist: ['python'],
			metrics_listen: `127.0.0.1:${port}` } });
	});
	let stopped = false;
	after(async () => {
		if (!stopped) await s?.stop();
		await reg?.stop();
		s?.cleanupState();
	});

	test('a create, an exec, a refused call and a stop move the metrics', async () => {
		const first = await scrape({ port });
		promtool(first.body);
		const s0 = samples(first.body);
		assert.equal(sumOf(s0, 'sandbox_libkrun_sandboxes{'), 0);
		assert.ok(value(s0, 'sandbox_libkrun_memory_budget_bytes') > 0);

		const { sandbox_id: id } = await s.vm('create', { image: 'python' });
		const r = await s.exec(id, { cmd: 'echo hi' });
		assert.equal(r.stdout, 'hi\n');
		await s.vm('fs::stat', { sandbox_id: id, path: '/' });
		assertScode(await s.callError('exec', { sandbox_id: '00000000-0000-4000-8000-000000000000', cmd: 'true' }),
			'S002');

		const live = await scrape({ port });
		promtool(live.body);
		// docs/metrics.md's sample: SBX_E2E_METRICS_SAMPLE=FILE keeps this scrape.
		if (process.env.SBX_E2E_METRICS_SAMPLE) writeFileSync(process.env.SBX_E2E_METRICS_SAMPLE, live.body);
		const s1 = samples(live.body);
		assert.equal(value(s1, 'sandbox_libkrun_sandboxes{image="python",state="ready"}'), 1);
		const modes = BOOT_MODES.filter((m) => value(s1, `sandbox_libkrun_creates_total{boot_mode="${m}"}`)
			- value(s0, `sandbox_libkrun_creates_total{boot_mode="${m}"}`) === 1);
		assert.equal(modes.length, 1, `one create counted under one boot mode:\n${live.body}`);
		assert.equal(sumOf(s1, 'sandbox_libkrun_creates_total{') - sumOf(s0, 'sandbox_libkrun_creates_total{'), 1);
		assert.equal(value(s1, `sandbox_libkrun_create_ready_seconds_count{boot_mode="${modes[0]}"}`), 1);
		const calls = (st, fn, outcome) => value(st, `sandbox_libkrun_calls_total{function="${fn}",outcome="${outcome}"}`);
		assert.equal(calls(s1, 'create', 'ok') - calls(s0, 'create', 'ok'), 1);
		assert.equal(calls(s1, 'exec', 'ok') - calls(s0, 'exec', 'ok'), 1);
		assert.equal(calls(s1, 'exec', 'S002') - calls(s0, 'exec', 'S002'), 1);
		assert.equal(value(s1, 'sandbox_libkrun_errors_total{scode="S002"}')
			- value(s0, 'sandbox_libkrun_errors_total{scode="S002"}'), 1);
		assert.equal(value(s1, 'sandbox_libkrun_call_duration_seconds_count{function="exec"}'), 2);
		assert.equal(value(s1, 'sandbox_libkrun_call_duration_seconds_bucket{function="exec",le="+Inf"}'), 2);
		assert.equal(value(s1, 'sandbox_libkrun_call_duration_seconds_count{function="fs::stat"}'), 1);
		assert.ok(value(s1, 'sandbox_libkrun_memory_committed_bytes') > value(s0, 'sandbox_libkrun_memory_committed_bytes'));
		assert.ok(value(s1, 'sandbox_libkrun_vm_processes') >= 1, live.body);
		assert.ok(value(s1, 'sandbox_libkrun_vm_rss_bytes') > 1 << 20, live.body);
		// The daemon's state directory starts empty: the create pulled python.
		assert.equal(value(s0, 'sandbox_libkrun_images_cached'), 0);
		assert.equal(value(s1, 'sandbox_libkrun_images_cached'), 1);
		assert.ok(value(s1, 'sandbox_libkrun_images_cached_bytes') > 1 << 20);
		assert.equal(value(s1, 'sandbox_libkrun_image_pulls_total{outcome="ok"}'), 1);
		assert.ok(value(s1, 'sandbox_libkrun_image_pull_bytes_total') > 1 << 20);

		await s.vm('stop', { sandbox_id: id, wait: true });
		await eventually(async () => {
			const s2 = samples((await scrape({ port })).body);
			assert.equal(value(s2, 'sandbox_libkrun_sandboxes{image="python",state="ready"}'), 0);
			assert.equal(sumOf(s2, 'sandbox_libkrun_sandboxes{'), 0);
			assert.equal(calls(s2, 'stop', 'ok') - calls(s0, 'stop', 'ok'), 1);
		});
	});

	test('only GET /metrics is served; an oversized request is refused and the server carries on', async () => {
		assert.equal((await request({ port }, { path: '/' })).status, 404);
		assert.equal((await request({ port }, { path: '/metrics/x' })).status, 404);
		assert.equal((await request({ port }, { method: 'POST' })).status, 404);
		assert.equal((await request({ port }, { method: 'HEAD' })).status, 404);
		const reply = await new Promise((resolve) => {
			const c = net.connect(port, '127.0.0.1');
			let got = '';
			c.on('data', (d) => { got += d; });
			c.on('error', () => resolve(got));
			c.on('close', () => resolve(got));
			c.end(`GET /metrics HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(256 * 1024)}\r\n\r\n`);
		});
		assert.doesNotMatch(reply, /^HTTP\/1\.1 200/);
		await scrape({ port });
	});

	test('the daemon stops cleanly with its endpoint open (no sanitizer report) and the port is free', async () => {
		stopped = true;
		await s.stopClean();
		await assert.rejects(request({ port }), /ECONNREFUSED/);
	});
});

describe('metrics on a unix socket, and bad addresses', () => {
	let dir;
	before(() => { dir = mkdtempSync(path.join(tmpdir(), 'sbx-e2e-metrics-')); });
	after(() => rmSync(dir, { recursive: true, force: true }));

	test('the socket is mode 0600, serves the text, counts a reconnect and goes with the daemon', async () => {
		const socketPath = path.join(dir, 'metrics.sock');
		const s = await startStack({ config: { image_allowlist: ['python'], auto_install: false, standby: false,
			metrics_listen: socketPath } });
		try {
			const st = statSync(socketPath);
			assert.ok(st.isSocket());
			assert.equal(st.mode & 0o777, 0o600);
			await s.call('list', {});
			const r = await scrape({ socketPath });
			promtool(r.body);
			const got = samples(r.body);
			assert.equal(value(got, 'sandbox_libkrun_calls_total{function="list",outcome="ok"}'), 1);
			assert.equal(value(got, 'sandbox_libkrun_engine_up'), 1);
			assert.equal(value(got, 'sandbox_libkrun_engine_queued_invocations'), 0);
			assert.equal(value(got, 'sandbox_libkrun_engine_reconnects_total'), 0);
			assert.equal(value(got, 'sandbox_libkrun_vm_processes'), 0);
			assert.equal(value(got, 'sandbox_libkrun_workers{state="running"}'), 0);
			assert.equal((await request({ socketPath }, { path: '/other' })).status, 404);
			// A lost engine connection: the daemon reattaches and counts it.
			await s.engine.restart();
			await eventually(async () => {
				const again = samples((await scrape({ socketPath })).body);
				assert.equal(value(again, 'sandbox_libkrun_engine_reconnects_total'), 1);
				assert.equal(value(again, 'sandbox_libkrun_engine_up'), 1);
			}, 15000);
		} finally {
			await s.stopClean();
		}
		assert.ok(!existsSync(socketPath), 'the socket is removed at exit');
	});

	test('an address in use stops the daemon with exit 1 naming it', async () => {
		const held = net.createServer();
		await new Promise((resolve) => held.listen(0, '127.0.0.1', resolve));
		const listen = `127.0.0.1:${held.address().port}`;
		const s = await startStack({ config: { metrics_listen: listen }, waitRegistered: false });
		try {
			await endDaemon(s.daemon, { code: 1, send: null });
			assert.match(s.daemon.output(), new RegExp(`metrics_listen: bind ${listen}: Address already in use`));
		} finally {
			await s.stop();
			await new Promise((resolve) => held.close(resolve));
		}
	});

	for (const [listen, why] of [['0.0.0.0:9464', /not a loopback address/], ['192.0.2.1:9464', /not a loopback address/],
		['/nonexistent-dir-of-metrics/m.sock', /the directory of the socket/]]) {
		test(`metrics_listen ${listen} stops the daemon with exit 2`, async () => {
			const s = await startStack({ config: { metrics_listen: listen }, waitRegistered: false });
			try {
				await endDaemon(s.daemon, { code: 2, send: null });
				assert.match(s.daemon.output(), /metrics_listen/);
				assert.match(s.daemon.output(), why);
			} finally {
				await s.stop();
			}
		});
	}
});
