// More than one host (issue 28): three members (`serve` in namespaces
// m1..m3, own state directories and configuration entries) behind one
// front (`serve --front`) and the stand-in engine, called through iii-sdk
// in the default namespace.  The members' budgets differ (12, 8 and 4
// sandboxes of 256 MiB) so that placement is visible; each member's own
// `list`, read in its namespace, says where a sandbox landed.  Then a
// member dies (kill -9), a worker is prepared on one member, another loses the engine and comes back with its
// sandboxes, a second front is refused and keeps retrying, and
// the first front dies: the second takes over.  The first front serves
// GET /metrics on a unix socket (III_SANDBOX_METRICS_LISTEN): members up,
// calls forwarded per member, the S400 of a full cluster.  VM boots: 3 cold (one
// pull per member), 23 restored from the members' templates (26 creates).
import { describe, test, before, after } from './lib/test-api.mjs';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { eventually } from './lib.mjs';
import { registryUnavailable, startRegistry } from './lib/registry-fixture.mjs';
import { assertNoVmLeft, assertScode, BOOT_TIMEOUT_MS, UUID_V4 } from './lib/sandbox-stack.mjs';
import { cleanupCluster, DEFAULT_NAMESPACE, killDaemon, refusals, startCluster, startFront } from './lib/cluster-stack.mjs';
import { assertNoSanitizerReport, FUNCTIONS } from './daemon.mjs';

// A sandbox costs its guest memory, 64 MiB for QEMU and the TCG cache in
// the budget (mem_budget.c); the slack holds the member's snapshot template.
const GUEST_MIB = 256;
const TCG_CACHE_MIB = 32;
const COST_MIB = GUEST_MIB + 64 + TCG_CACHE_MIB;
const SLACK_MIB = 1024;
const SLOTS = { m1: 12, m2: 8, m3: 4 };
const TOTAL = Object.values(SLOTS).reduce((a, b) => a + b);

const skip = registryUnavailable();
const TOKEN = `tok-${randomUUID()}`;

// GET /metrics on the front's unix socket: its samples, "name{labels}" ->
// value, and the text.
function scrape(socketPath) {
	return new Promise((resolve, reject) => {
		const req = http.request({ socketPath, path: '/metrics' }, (res) => {
			let body = '';
			res.setEncoding('utf8');
			res.on('data', (d) => { body += d; });
			res.on('end', () => {
				assert.equal(res.statusCode, 200, body);
				const samples = new Map();
				for (const line of body.split('\n')) {
					if (line === '' || line.startsWith('#')) continue;
					const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{.*\})? (\S+)$/.exec(line);
					assert.ok(m, `sample line: ${line}`);
					samples.set(m[1] + (m[2] ?? ''), Number(m[3]));
				}
				resolve({ body, samples });
			});
		});
		req.on('error', reject);
		req.end();
	});
}
const upOf = (s, ns) => s.get(`sandbox_libkrun_front_member_up{member="${ns}"}`);
const fwdOf = (s, ns, outcome) => s.get(`sandbox_libkrun_front_forwarded_calls_total{member="${ns}",outcome="${outcome}"}`) ?? 0;

// promtool (Debian's prometheus, which scripts/setup installs) must accept
// the text, as in metrics.test.mjs: a missing promtool fails the check.
function promtool(text) {
	const r = spawnSync('promtool', ['check', 'metrics'], { input: text, encoding: 'utf8' });
	assert.ok(!r.error, `promtool (Debian's prometheus, scripts/setup): ${r.error?.message}`);
	assert.equal(r.status, 0, `promtool check metrics:\n${r.stdout}${r.stderr}\n---\n${text}`);
}

describe('three members behind a front', { skip: skip ?? false }, () => {
	let reg, c, project, metricsDir, metricsSock, beforeCreates;
	const started = Date.now();
	const ids = [];
	const create = async () => {
		const r = await c.call('create', { image: 'python' }, { timeoutMs: BOOT_TIMEOUT_MS });
		assert.match(r.sandbox_id, UUID_V4);
		ids.push(r.sandbox_id);
		return r.sandbox_id;
	};
	// Each member's sandbox ids, from its own `list` in its namespace.
	const placed = async (members = c.members) => Object.fromEntries(await Promise.all(members.map(async (m) =>
		[m.namespace, (await c.inNs(m.namespace, 'list', {})).sandboxes.map((x) => x.sandbox_id).sort()])));
	const ownerOf = (where, id) => Object.keys(where).find((ns) => where[ns].includes(id));
	const member = (ns) => c.members.find((m) => m.namespace === ns);

	before(async () => {
		reg = await startRegistry({ images: ['python'] });
		// A Compose project holding one path:// worker on the python image.
		project = mkdtempSync(path.join(tmpdir(), 'sbx-e2e-cluster-project-'));
		mkdirSync(path.join(project, 'w'));
		writeFileSync(path.join(project, 'w', 'iii.worker.yaml'),
			'runtime:\n  base_image: python\nscripts:\n  start: python3 -c pass\n');
		metricsDir = mkdtempSync(path.join(tmpdir(), 'sbx-e2e-cluster-metrics-'));
		metricsSock = path.join(metricsDir, 'front.sock');
		c = await startCluster({ registry: reg, env: { III_SANDBOX_WORKER_TOKEN: TOKEN, III_COMPOSE_PROJECT_DIR: project },
			frontEnv: { III_SANDBOX_METRICS_LISTEN: metricsSock },
			config: { image_allowlist: ['python'], default_memory_mb: GUEST_MIB, tcg_cache_mb: TCG_CACHE_MIB },
			members: Object.values(SLOTS).map((n) => ({ config: { memory_budget_mb: n * COST_MIB + SLACK_MIB,
				max_concurrent_sandboxes: n } })) });
	});
	after(async () => {
		if (c) {
			await c.stop();
			cleanupCluster(c);
		}
		await reg?.stop();
		if (project) rmSync(project, { recursive: true, force: true });
		if (metricsDir) rmSync(metricsDir, { recursive: true, force: true });
	});
	// Where the worker was prepared: the member whose status is not absent.
	const workerHome = async () => {
		const states = await Promise.all(c.members.filter((m) => m.daemon.proc.exitCode === null && m.daemon.proc.signalCode === null)
			.map(async (m) => [m.namespace, (await c.inNs(m.namespace, 'worker::status', { auth: TOKEN, worker: 'w' })).state]));
		const home = states.filter(([, state]) => state !== 'absent');
		assert.equal(home.length, 1, JSON.stringify(states));
		return home[0];
	};

	test('the front serves the contract\'s ids in the default namespace, the members in theirs', async () => {
		for (const id of FUNCTIONS) {
			assert.equal(c.engine.functions.get(id)?.owner, c.front.conn().worker_id, id);
			for (const m of c.members) assert.equal(c.engine.functionsIn(m.namespace).get(id)?.owner, m.conn().worker_id);
		}
	});

	test('the front\'s adapter::info lists the members, up, with their capacity', async () => {
		const info = await eventually(async () => {
			const r = await c.call('adapter::info', {});
			assert.equal(r.members?.filter((m) => m.up).length, 3, JSON.stringify(r.members));
			return r;
		});
		assert.equal(info.adapter, 'sandbox-libkrun');
		assert.deepEqual(info.members.map((m) => m.namespace).sort(), Object.keys(SLOTS));
		for (const m of info.members) {
			const cap = m.capacity;
			assert.deepEqual(cap.sandboxes, { live: 0, max: SLOTS[m.namespace] }, m.namespace);
			assert.equal(cap.memory_mib.budget, SLOTS[m.namespace] * COST_MIB + SLACK_MIB, m.namespace);
			assert.equal(cap.memory_mib.sandbox_default, COST_MIB, 'what a create adds to committed');
		}
	});

	test('the front\'s metrics: three members up, the engine connection up, no VM family; promtool accepts them',
		async (t) => {
			assert.equal(statSync(metricsSock).mode & 0o777, 0o600, 'the socket is the owner\'s only');
			const { body, samples } = await eventually(async () => {
				const r = await scrape(metricsSock);
				for (const ns of Object.keys(SLOTS)) assert.equal(upOf(r.samples, ns), 1, `${ns}\n${r.body}`);
				return r;
			});
			assert.equal(samples.get('sandbox_libkrun_engine_up'), 1, body);
			assert.ok(samples.get('sandbox_libkrun_front_refreshes_total') >= 1, body);
			assert.ok(!/^sandbox_libkrun_(sandboxes|vm_|creates_total|calls_total|warm_pool)/m.test(body), body);
			promtool(body);
			beforeCreates = samples;
		});

	test(`${TOTAL} creates land by capacity: ${Object.entries(SLOTS).map(([k, v]) => `${k} ${v}`).join(', ')}; one more is S400 naming every member`,
		async (t) => {
			// Each create goes to a member with the most room left, give or
			// take one sandbox: the members' templates (in the slack) differ.
			const t0 = Date.now();
			const left = { ...SLOTS };
			const order = [];
			for (let i = 0; i < TOTAL; i++) {
				const most = Math.max(...Object.values(left));
				const id = await create();
				const ns = ownerOf(await placed(), id);
				assert.ok(left[ns] >= most - 1, `create ${i + 1} went to ${ns} (room for ${left[ns]}) while another had room for ${
					most}; so far: ${order.join(' ')}`);
				left[ns]--;
				order.push(ns);
			}
			assert.equal(order[0], 'm1', 'the first create goes to the member with most budget left');
			const where = await placed();
			assert.deepEqual(Object.fromEntries(Object.entries(where).map(([ns, l]) => [ns, l.length])), SLOTS);
			assert.deepEqual(Object.values(where).flat().sort(), [...ids].sort(), 'every create is on exactly one member');
			const full = assertScode(await c.callError('create', { image: 'python' }), 'S400');
			for (const ns of Object.keys(SLOTS)) assert.match(full.message, new RegExp(`\\b${ns}\\b`), full.message);
			t.diagnostic(`${TOTAL} creates through the front in ${Date.now() - t0} ms, placed: ${order.join(' ')}`);
		});

	test('the front\'s metrics count each create once on the member that took it, and the S400 of a full cluster',
		async (t) => {
			const { body, samples } = await scrape(metricsSock);
			for (const [ns, n] of Object.entries(SLOTS)) {
				assert.equal(fwdOf(samples, ns, 'ok') - fwdOf(beforeCreates, ns, 'ok'), n, `${ns} ok\n${body}`);
				// The last create's S400, and any a member said on stale figures.
				assert.ok(fwdOf(samples, ns, 'error') - fwdOf(beforeCreates, ns, 'error') >= 1, `${ns} error\n${body}`);
				assert.equal(fwdOf(samples, ns, 'unreachable'), 0, `${ns} unreachable\n${body}`);
			}
			assert.equal(samples.get('sandbox_libkrun_front_full_refusals_total{function="create"}'), 1, body);
			promtool(body);
			// docs/cluster.md's sample: SBX_E2E_FRONT_METRICS_SAMPLE=FILE keeps this scrape.
			if (process.env.SBX_E2E_FRONT_METRICS_SAMPLE) writeFileSync(process.env.SBX_E2E_FRONT_METRICS_SAMPLE, body);
		});

	test('exec, fs::write, fs::read and stop reach the owner; list through the front shows all', async () => {
		const where = await placed();
		for (const ns of Object.keys(SLOTS)) {
			const id = where[ns][0];
			await c.call('fs::write', { sandbox_id: id, path: '/tmp/owner', content: `${ns}\n` });
			assert.equal((await c.call('fs::read', { sandbox_id: id, path: '/tmp/owner' })).body, `${ns}\n`);
			const direct = await c.inNs(ns, 'exec', { sandbox_id: id, cmd: 'cat /tmp/owner' });
			assert.equal(direct.stdout, `${ns}\n`, 'the member itself sees the file the front wrote');
			const r = await c.call('exec', { sandbox_id: id, argv: ['sh', '-c', 'cat /tmp/owner; exit 3'] });
			assert.deepEqual([r.stdout, r.exit_code], [`${ns}\n`, 3]);
		}
		const listed = (await c.call('list', {})).sandboxes.map((x) => x.sandbox_id).sort();
		assert.deepEqual(listed, [...ids].sort());
		// One stop per member frees one slot each for the creates after m3's death.
		for (const ns of Object.keys(SLOTS)) {
			const id = where[ns][0];
			assert.deepEqual(await c.call('stop', { sandbox_id: id }), { sandbox_id: id, stopped: true });
			assert.ok(!(await placed([member(ns)]))[ns].includes(id), `${ns} no longer lists ${id}`);
			assertScode(await c.callError('exec', { sandbox_id: id, cmd: 'true' }), 'S002');
			ids.splice(ids.indexOf(id), 1);
		}
		assert.equal((await c.call('list', {})).sandboxes.length, TOTAL - 3);
	});

	test('kill -9 of m3: its sandboxes answer S300 naming it at once, then S002; creates go to m1 and m2', async (t) => {
		const m3 = member('m3');
		const orphans = (await placed([m3])).m3;
		assert.equal(orphans.length, SLOTS.m3 - 1);
		// "At once": within 3 s plus twice what a call the front answers
		// itself (adapter::info) takes just before and after, the larger
		// (the loaded machine's share: the S300 path is that round trip
		// and one more from the front to the engine).
		const infoMs = async () => {
			const i0 = Date.now();
			await c.call('adapter::info', {});
			return Date.now() - i0;
		};
		const infoBefore = await infoMs();
		await killDaemon(m3.daemon);
		const t0 = Date.now();
		const env = assertScode(await c.callError('exec', { sandbox_id: orphans[0], cmd: 'true' }), 'S300');
		assert.match(env.message, /\bm3\b/, env.message);
		const s300 = Date.now() - t0;
		const bound = 3000 + 2 * Math.max(infoBefore, await infoMs());
		assert.ok(s300 < bound, `S300 took ${s300} ms (bound ${bound} ms)`);
		await eventually(async () => {
			for (const id of orphans) assertScode(await c.callError('exec', { sandbox_id: id, cmd: 'true' }), 'S002');
		}, 15000);
		const s002 = Date.now() - t0;
		assert.deepEqual((await c.call('list', {})).sandboxes.map((x) => x.sandbox_id).sort(),
			ids.filter((id) => !orphans.includes(id)).sort(), 'list shows the live members\' sandboxes');
		const live = c.members.filter((m) => m !== m3);
		const a = await create();
		const b = await create();
		const where = await placed(live);
		assert.deepEqual([ownerOf(where, a), ownerOf(where, b)].sort(), ['m1', 'm2']);
		await eventually(() => assertNoVmLeft(m3.stateDir, 'after kill -9 of m3'), 30000);
		t.diagnostic(`S300 after ${s300} ms, S002 for all ${orphans.length} after ${s002} ms`);
	});

	test('the front\'s metrics: m3 is down (0), m1 and m2 up; calls keep being counted on m1 and m2', async (t) => {
		const before = (await scrape(metricsSock)).samples;
		const { body, samples } = await eventually(async () => {
			const r = await scrape(metricsSock);
			assert.equal(upOf(r.samples, 'm3'), 0, r.body);
			return r;
		});
		assert.equal(upOf(samples, 'm1'), 1, body);
		assert.equal(upOf(samples, 'm2'), 1, body);
		const where = await placed(c.members.filter((m) => m.namespace !== 'm3'));
		for (const ns of ['m1', 'm2']) await c.call('exec', { sandbox_id: where[ns][0], cmd: 'true' });
		const after = (await scrape(metricsSock)).samples;
		for (const ns of ['m1', 'm2']) assert.equal(fwdOf(after, ns, 'ok') - fwdOf(before, ns, 'ok'), 1, ns);
		promtool(body);
	});

	test('worker::prepare is placed on one member; the other worker::* calls reach it; auth is checked', async () => {
		const r = await c.call('worker::prepare', { auth: TOKEN, worker: 'w', host_path: path.join(project, 'w') });
		assert.equal(r.prepared, true, JSON.stringify(r));
		const [home, state] = await workerHome();
		assert.equal(state, 'prepared');
		assert.equal((await c.call('worker::status', { auth: TOKEN, worker: 'w' })).state, 'prepared');
		// Prepared again: the same member, not a second one.
		await c.call('worker::prepare', { auth: TOKEN, worker: 'w', host_path: path.join(project, 'w') });
		assert.equal((await workerHome())[0], home);
		assert.equal((await c.callError('worker::status', { auth: 'wrong', worker: 'w' })).envelope?.code, 'S505');
	});

	test('m2 loses the engine and comes back with its sandboxes: S300, then S002, then reachable again', async (t) => {
		const m2 = member('m2');
		const kept = (await placed([m2])).m2;
		assert.ok(kept.length > 0);
		c.engine.refuseWorkers = true;
		const t0 = Date.now();
		try {
			c.engine.conns.get(m2.conn().worker_id).ws.terminate();
			await eventually(async () => {
				const env = assertScode(await c.callError('exec', { sandbox_id: kept[0], cmd: 'true' }), 'S300');
				assert.match(env.message, /\bm2\b/, env.message);
			}, 5000);
			await eventually(async () => assertScode(await c.callError('exec', { sandbox_id: kept[0], cmd: 'true' }), 'S002'),
				15000);
		} finally {
			c.engine.refuseWorkers = false;
		}
		const gone = Date.now() - t0;
		// Its reconnect backoff has grown while refused: up to ~10 s.
		await eventually(async () => {
			for (const id of kept) assert.equal((await c.call('exec', { sandbox_id: id, cmd: 'echo back' })).stdout, 'back\n');
		}, 30000);
		t.diagnostic(`forgotten after ${gone} ms away, reachable again ${Date.now() - t0} ms after the drop`);
	});

	test('a second front is refused (WORKER_NAMESPACE_CONFLICT) and keeps retrying; it takes over when the first dies',
		async (t) => {
			const first = c.front;
			// Its members pinned: a front asks members for a worker it did not
			// place (with the caller's token) only when the operator named them.
			const second = await startFront(c.engine, { wait: false, env: { III_SANDBOX_MEMBERS: 'm1,m2,m3' } });
			c.fronts.push(second);
			await c.engine.waitFor(() => refusals(c.engine, second.daemon.proc.pid).length >= 2, 10000,
				'two refused registrations of the second front');
			assert.equal(second.daemon.proc.exitCode, null, `the second front keeps running\n${second.daemon.output()}`);
			for (const id of FUNCTIONS) assert.equal(c.engine.functions.get(id)?.owner, first.conn().worker_id, id);
			const r = refusals(c.engine, second.daemon.proc.pid)[0].msg;
			assert.deepEqual([r.namespace, r.worker_name], [DEFAULT_NAMESPACE, 'sandbox-libkrun']);

			await killDaemon(first.daemon);
			const t0 = Date.now();
			await c.engine.waitFor(() => {
				const w = second.conn();
				return w && FUNCTIONS.every((id) => c.engine.functions.get(id)?.owner === w.worker_id);
			}, 15000, 'the second front owning the default ids').catch((e) => {
				e.message += `\nsecond front output:\n${second.daemon.output()}`;
				throw e;
			});
			const takeover = Date.now() - t0;
			c.front = second;
			const where = await placed(c.members.filter((m) => m.namespace !== 'm3'));
			await eventually(async () => assert.deepEqual((await c.call('list', {})).sandboxes.map((x) => x.sandbox_id).sort(),
				[...where.m1, ...where.m2].sort(), 'the new front\'s map is rebuilt from the members'));
			for (const ns of ['m1', 'm2']) {
				const r2 = await c.call('exec', { sandbox_id: where[ns][0], cmd: 'echo reachable' });
				assert.equal(r2.stdout, 'reachable\n', ns);
			}
			// The new front finds the worker by asking the (pinned) members.
			assert.equal((await c.call('worker::status', { auth: TOKEN, worker: 'w' })).state, 'prepared');
			assert.equal((await c.call('worker::destroy', { auth: TOKEN, worker: 'w' })).destroyed, true);
			await assert.rejects(workerHome(), /absent/);
			t.diagnostic(`takeover ${takeover} ms after the first front's death`);
		});

	test('SIGTERM: the second front and the live members exit 0, no sanitizer report, no VM left on any member', async (t) => {
		const results = await c.stop();
		const daemons = [...c.fronts, ...c.members];
		const alive = daemons.filter((x) => x !== c.fronts[0] && x !== member('m3'));
		for (const x of alive) assert.deepEqual(results[daemons.indexOf(x)], { code: 0, signal: null }, x.namespace ?? 'front');
		for (const x of daemons) assertNoSanitizerReport(x.daemon);
		const members = c.members;
		c = null;
		cleanupCluster({ members });
		t.diagnostic(`${Math.round((Date.now() - started) / 1000)} s for the file`);
	});
});
