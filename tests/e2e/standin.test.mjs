// Checks the stand-in engine itself with the official iii-sdk on both sides
// (Node caller -> stand-in -> Node worker), so that the stand-in cannot share
// a misreading of the protocol with our C worker unnoticed.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import WebSocket from 'ws';
import { StandinEngine, parseUuid, requireHeader } from './standin-engine.mjs';
import { sdkClient, eventually, rawPeer, probeUpgrade, sleep, InvocationError } from './lib.mjs';

const { createChannel } = await import('iii-sdk/helpers');
const { ChannelReader } = await import('iii-sdk/channel');

let engine;
let worker;
let caller;
const clients = [];
const client = (name, opts) => {
	const c = sdkClient(engine.url, name, opts);
	clients.push(c);
	return c;
};

before(async () => {
	engine = new StandinEngine({ config: { 'svc-a': { limit: 3 } } });
	await engine.start();
	worker = client('node-worker');
	worker.registerFunction('math::add', async (d) => ({ sum: d.a + d.b, caller: d._caller_worker_id }),
		{ description: 'adds', request_format: { type: 'object' } });
	worker.registerFunction('math::fail', async () => { throw new Error('no luck'); });
	worker.registerFunction('math::never', () => new Promise(() => {}));
	worker.registerFunction('blob::echo', async (d) => {
		const bytes = await d.content.readAll();
		return { text: bytes.toString('utf8') };
	});
	worker.registerFunction('blob::make', async (d) => {
		const ch = await createChannel(worker);
		ch.writer.stream.end(Buffer.from(d.text));
		return { content: ch.readerRef };
	});
	caller = client('node-caller');
	await engine.waitFor(() => engine.functions.has('blob::make') && engine.workers().length === 2, 10000, 'two workers');
});

after(async () => {
	for (const c of clients) await c.shutdown();
	await engine.stop();
});

test('parseUuid accepts the forms the engine parses and nothing else', () => {
	const canon = '6f1c2a4e-8b3d-4c5e-9f70-1a2b3c4d5e6f';
	for (const form of [canon, canon.toUpperCase(), `{${canon}}`, `urn:uuid:${canon}`, canon.replaceAll('-', '')])
		assert.equal(parseUuid(form), canon, form);
	for (const bad of ['', 'nope', `${canon}0`, `{${canon}`, 42, null]) assert.equal(parseUuid(bad), null, String(bad));
});

test('worker metadata arrives through engine::workers::register with name, runtime and pid', () => {
	const w = engine.workers().find((x) => x.name === 'node-worker');
	assert.ok(w, 'node-worker registered');
	assert.equal(w.runtime, 'node');
	assert.equal(w.pid, process.pid);
	assert.deepEqual(engine.functions.get('math::add').request_format, { type: 'object' });
	assert.equal(engine.functions.get('math::add').description, 'adds');
});

test('a call is routed to the owning worker and its result comes back', async () => {
	const r = await caller.trigger({ function_id: 'math::add', payload: { a: 2, b: 40 } });
	assert.equal(r.sum, 42);
	const callerConn = engine.workers().find((x) => x.name === 'node-caller');
	assert.equal(r.caller, callerConn.worker_id, '_caller_worker_id injected');
});

test('a handler error reaches the caller as InvocationError', async () => {
	await assert.rejects(caller.trigger({ function_id: 'math::fail', payload: {} }), (e) => {
		assert.ok(e instanceof InvocationError);
		assert.equal(e.code, 'invocation_failed');
		assert.equal(e.message, 'invocation_failed: no luck');
		return true;
	});
});

test('an unknown function gives function_not_found', async () => {
	await assert.rejects(caller.trigger({ function_id: 'nope::nothing', payload: {} }), (e) => {
		assert.equal(e.code, 'function_not_found');
		assert.match(e.message, /Function nope::nothing not found in namespace default\./);
		return true;
	});
});

test('the engine adds no timeout: the caller times out on its own', async () => {
	const t0 = Date.now();
	await assert.rejects(caller.trigger({ function_id: 'math::never', payload: {}, timeoutMs: 300 }),
		(e) => e.code === 'TIMEOUT');
	assert.ok(Date.now() - t0 < 2000);
});

test('configuration::get serves fixtures and NOT_FOUND', async () => {
	const r = await caller.trigger({ function_id: 'configuration::get', payload: { id: 'svc-a' } });
	assert.deepEqual(r, { id: 'svc-a', value: { limit: 3 } });
	await assert.rejects(caller.trigger({ function_id: 'configuration::get', payload: { id: 'svc-b' } }), (e) => {
		assert.equal(e.code, 'NOT_FOUND');
		assert.match(e.message, /configuration 'svc-b' not found/);
		return true;
	});
	await assert.rejects(caller.trigger({ function_id: 'configuration::get', payload: { nid: 1 } }),
		(e) => e.code === 'deserialization_error');
	assert.deepEqual(engine.configReads.slice(-2), ['svc-a', 'svc-b']);
});

test('channel roundtrip: caller writes, a worker reads through iii-sdk ChannelReader', async () => {
	const ch = await createChannel(caller);
	const pending = caller.trigger({ function_id: 'blob::echo', payload: { content: ch.readerRef } });
	const big = 'x'.repeat(200 * 1024) + 'end';
	ch.writer.stream.end(Buffer.from(big));
	const r = await pending;
	assert.equal(r.text.length, big.length);
	assert.ok(r.text.endsWith('end'));
});

test('channel roundtrip: a worker returns a reader ref and the caller reads it', async () => {
	const r = await caller.trigger({ function_id: 'blob::make', payload: { text: 'hello channel' } });
	assert.equal(r.content.direction, 'read');
	const reader = new ChannelReader(engine.url, r.content);
	assert.equal((await reader.readAll()).toString(), 'hello channel');
});

test('channels refuse unknown ids and wrong keys, and each end is taken once', async () => {
	const ch = await createChannel(caller);
	const base = `${engine.url}/ws/channels/${ch.readerRef.channel_id}`;
	assert.equal(await probeUpgrade(`${base}?key=wrong&dir=read`), 404);
	assert.equal(await probeUpgrade(`${engine.url}/ws/channels/${crypto.randomUUID()}?key=x&dir=read`), 404);
	assert.equal(await probeUpgrade(`${engine.url}/elsewhere`), 404);
	const first = new ChannelReader(engine.url, ch.readerRef);
	const firstDone = first.readAll();
	await sleep(100);
	assert.equal(await probeUpgrade(`${base}?key=${ch.readerRef.access_key}&dir=read`), 'closed');
	ch.writer.stream.end(Buffer.from('ok'));
	assert.equal((await firstDone).toString(), 'ok');
});

test('a peer that resets its upgrade connection does not end the engine (an uncaught socket error)', async () => {
	// As a daemon killed while it connects: the request is refused (404)
	// and the connection reset under the answer.
	const { port } = new URL(engine.url);
	for (let i = 0; i < 20; i++) {
		await new Promise((resolve, reject) => {
			const c = net.connect(Number(port), '127.0.0.1', () => {
				c.write(`GET /ws/channels/${crypto.randomUUID()}?key=x&dir=read HTTP/1.1\r\nHost: x\r\n` +
					'Connection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\n' +
					'Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n');
				setTimeout(() => { c.resetAndDestroy(); resolve(); }, i % 3);
			});
			c.on('error', reject);
		});
	}
	await sleep(300);
	// Still serving.
	assert.equal(await probeUpgrade(`${engine.url}/elsewhere`), 404);
});

test('a worker that disconnects mid-call makes the engine answer invocation_stopped', async () => {
	const w = client('short-lived');
	w.registerFunction('slow::hang', () => new Promise(() => {}));
	await engine.waitFor(() => engine.functions.has('slow::hang'), 5000, 'slow::hang');
	const call = caller.trigger({ function_id: 'slow::hang', payload: {} });
	await engine.waitFor(() => engine.pending.size > 0, 5000, 'pending call');
	await w.shutdown();
	await assert.rejects(call, (e) => {
		assert.equal(e.code, 'invocation_stopped');
		return true;
	});
	await engine.waitFor(() => !engine.functions.has('slow::hang'), 5000, 'functions removed');
});

test('a second worker registering an owned function id is rejected; the owner keeps it', async () => {
	const peer = await rawPeer(engine.url);
	peer.send({ type: 'invokefunction', function_id: 'engine::workers::register', data: { name: 'dup-fn', pid: 1 },
		action: { type: 'void' } });
	peer.send({ type: 'registerfunction', id: 'math::add' });
	const rej = await peer.waitFor((m) => m.type === 'registrationrejected');
	assert.equal(rej.code, 'FUNCTION_NAMESPACE_CONFLICT');
	assert.equal(rej.function_id, 'math::add');
	assert.equal(rej.owner_worker_id, engine.workers().find((x) => x.name === 'node-worker').worker_id);
	assert.equal((await caller.trigger({ function_id: 'math::add', payload: { a: 1, b: 1 } })).sum, 2);
	peer.ws.close();
});

test('a second live connection with the same worker name gets WORKER_NAMESPACE_CONFLICT and is closed', async () => {
	const peer = await rawPeer(engine.url);
	const id = crypto.randomUUID();
	peer.send({ type: 'invokefunction', invocation_id: id, function_id: 'engine::workers::register',
		data: { name: 'node-worker', pid: 2 } });
	const rej = await peer.waitFor((m) => m.type === 'registrationrejected');
	assert.equal(rej.code, 'WORKER_NAMESPACE_CONFLICT');
	assert.equal(rej.worker_name, 'node-worker');
	assert.deepEqual((await peer.waitFor((m) => m.invocation_id === id)).result, { success: false });
	await eventually(() => assert.ok(peer.closed));
});

test('frames the real engine cannot decode are dropped, the connection stays open', async () => {
	const peer = await rawPeer(engine.url);
	const before = engine.dropped.length;
	peer.send({ type: 'invokefunction', invocation_id: 'not-a-uuid', function_id: 'math::add', data: { a: 1, b: 2 } });
	peer.send({ type: 'invokefunction', invocation_id: crypto.randomUUID(), function_id: 'math::add' });
	peer.send({ type: 'invocationresult', invocation_id: crypto.randomUUID(), result: 1 });
	peer.send({ type: 'invocationresult', invocation_id: crypto.randomUUID(), function_id: 'x', error: { code: 'E' } });
	peer.send({ type: 'registerfunction' });
	peer.send({ type: 'nonsense' });
	peer.send('{not json');
	await eventually(() => assert.equal(engine.dropped.length - before, 7));
	assert.equal(peer.received.filter((m) => m.type === 'invocationresult').length, 0, 'no reply to dropped calls');
	peer.send({ type: 'ping' });
	await peer.waitFor((m) => m.type === 'pong');
	const id = crypto.randomUUID();
	peer.send({ type: 'invokefunction', invocation_id: id.toUpperCase(), function_id: 'math::add', data: { a: 1, b: 2 } });
	const r = await peer.waitFor((m) => m.type === 'invocationresult');
	assert.equal(r.invocation_id, id, 'the engine answers with the canonical id');
	assert.equal(r.result.sum, 3);
	peer.ws.close();
});

test('reattach with the right token evicts the old connection and its functions', async () => {
	const old = await rawPeer(engine.url);
	old.send({ type: 'invokefunction', function_id: 'engine::workers::register', data: { name: 'reattacher', pid: 3 },
		action: { type: 'void' } });
	old.send({ type: 'registerfunction', id: 'ra::f' });
	await engine.waitFor(() => engine.functions.has('ra::f'), 5000, 'ra::f');
	const fresh = await rawPeer(engine.url);
	fresh.send({ type: 'reattach', previous_worker_id: old.registered.worker_id, reattach_token: 'wrong' });
	await sleep(200);
	assert.ok(!old.closed, 'a wrong token is ignored');
	fresh.send({ type: 'reattach', previous_worker_id: old.registered.worker_id,
		reattach_token: old.registered.reattach_token });
	await eventually(() => assert.ok(old.closed));
	assert.ok(!engine.functions.has('ra::f'));
	fresh.send({ type: 'invokefunction', function_id: 'engine::workers::register', data: { name: 'reattacher', pid: 3 },
		action: { type: 'void' } });
	fresh.send({ type: 'registerfunction', id: 'ra::f' });
	await engine.waitFor(() => engine.functions.get('ra::f')?.owner === fresh.registered.worker_id, 5000, 'ra::f again');
	assert.equal(engine.rejections.filter((r) => r.worker_id === fresh.registered.worker_id).length, 0);
	fresh.ws.close();
});

test('registrations wait for engine::workers::register (namespace grace)', async () => {
	const peer = await rawPeer(engine.url);
	peer.send({ type: 'registerfunction', id: 'late::f' });
	await sleep(200);
	assert.ok(!engine.functions.has('late::f'), 'buffered until the worker declares itself');
	peer.send({ type: 'invokefunction', function_id: 'engine::workers::register', data: { name: 'late', pid: 4 },
		action: { type: 'void' } });
	await engine.waitFor(() => engine.functions.has('late::f'), 2000, 'late::f');
	peer.ws.close();
});

test('an iii-sdk worker reconnects after the engine restarts on the same port', async () => {
	const port = engine.port;
	await engine.restart();
	assert.equal(engine.port, port);
	const r = await eventually(() => caller.trigger({ function_id: 'math::add', payload: { a: 5, b: 5 }, timeoutMs: 1000 }),
		15000);
	assert.equal(r.sum, 10);
	assert.ok(engine.workers().some((w) => w.name === 'node-worker'));
});

// ---- namespaces (0.23: iii-protocol.md §2.3, §2.4, §3.1, §3.3, §3.11, §4.5) ----

const INFO = 'sandbox-libkrun::adapter::info';

// A raw worker: declares {name, namespace?} with a synchronous
// engine::workers::register, registers ids, and answers every call with who
// served it.  opts.pid: null sends no pid.
async function nsWorker(name, namespace, ids = [], { pid = 1000, url = engine.url } = {}) {
	const peer = await rawPeer(url);
	peer.ws.on('message', (raw) => {
		const m = JSON.parse(raw.toString());
		if (m.type === 'invokefunction' && m.invocation_id)
			peer.send({ type: 'invocationresult', invocation_id: m.invocation_id, function_id: m.function_id,
				result: { served_by: name, namespace: namespace ?? 'default', data: m.data } });
	});
	const data = { name, runtime: 'raw' };
	if (pid !== null) data.pid = pid;
	if (namespace !== undefined) data.namespace = namespace;
	peer.register = await call(peer, 'engine::workers::register', data);
	for (const id of ids) peer.send({ type: 'registerfunction', id, description: `${id} of ${name}` });
	return peer;
}

// A synchronous invokefunction from a raw peer; resolves with the
// invocationresult frame.
async function call(peer, function_id, data, extra = {}) {
	const invocation_id = crypto.randomUUID();
	peer.send({ type: 'invokefunction', invocation_id, function_id, data, ...extra });
	return peer.waitFor((m) => m.type === 'invocationresult' && m.invocation_id === invocation_id);
}

const owner = (ns, id) => engine.functionsIn(ns).get(id)?.owner;
const rejectionsOf = (peer) => engine.rejections.filter((r) => r.worker_id === peer.registered.worker_id);

test('the same function id and worker name live once per namespace; invokefunction.namespace picks one', async () => {
	const m1 = await nsWorker('sandbox-libkrun', 'm1', [INFO]);
	const m2 = await nsWorker('sandbox-libkrun', 'm2', [INFO]);
	await engine.waitFor(() => owner('m1', INFO) && owner('m2', INFO), 5000, 'info in m1 and m2');
	assert.equal(owner('m1', INFO), m1.registered.worker_id);
	assert.equal(owner('m2', INFO), m2.registered.worker_id);
	assert.ok(!engine.functions.has(INFO), 'nothing landed in default');
	assert.deepEqual(m1.register.result, { success: true });
	assert.deepEqual(m2.register.result, { success: true });
	assert.deepEqual([...rejectionsOf(m1), ...rejectionsOf(m2)], []);
	const front = await nsWorker('front', undefined);
	for (const ns of ['m1', 'm2']) {
		const r = await call(front, INFO, { q: ns }, { namespace: ns });
		assert.equal(r.function_id, INFO);
		assert.equal(r.result.namespace, ns);
		assert.equal(r.result.data._caller_worker_id, front.registered.worker_id);
		const seen = engine.frames.findLast((f) => f.dir === 'out' && f.msg.type === 'invokefunction' && f.msg.data?.q === ns);
		assert.ok(!('namespace' in seen.msg) && !('action' in seen.msg), 'the target never sees namespace or action');
	}
	for (const p of [m1, m2, front]) p.ws.close();
});

test('an id resolves only in the namespace asked for (absent = default); a miss names where it exists', async () => {
	const m1 = await nsWorker('w', 'm1', [INFO]);
	const m2 = await nsWorker('w', 'm2', [INFO, 'only::m2']);
	await engine.waitFor(() => owner('m2', 'only::m2'), 5000, 'only::m2');
	const front = await nsWorker('front', 'default');
	const miss = async (id, extra) => (await call(front, id, {}, extra)).error;
	assert.deepEqual(await miss(INFO, {}), { code: 'function_not_found',
		message: `Function ${INFO} not found in namespace default. It is registered in namespace(s): m1, m2.` });
	assert.deepEqual(await miss(INFO, { namespace: 'm3' }), { code: 'function_not_found',
		message: `Function ${INFO} not found in namespace m3. It is registered in namespace(s): m1, m2.` });
	assert.deepEqual(await miss('only::m2', { namespace: 'm1' }), { code: 'function_not_found',
		message: 'Function only::m2 not found in namespace m1. It is registered in namespace(s): m2.' });
	assert.deepEqual(await miss('nope::x', { namespace: 'm1' }), { code: 'function_not_found',
		message: 'Function nope::x not found in namespace m1.' });
	// Builtins exist in default only.
	assert.deepEqual(await miss('configuration::get', { namespace: 'm1' }), { code: 'function_not_found',
		message: 'Function configuration::get not found in namespace m1. It is registered in namespace(s): default.' });
	assert.equal((await call(front, 'configuration::get', { id: 'svc-a' }, { namespace: 'default' })).result.value.limit, 3);
	// The iii-sdk 0.22.1 caller names no namespace: default, with the same hint.
	await assert.rejects(caller.trigger({ function_id: 'only::m2', payload: {} }), (e) => {
		assert.equal(e.code, 'function_not_found');
		assert.equal(e.message, 'function_not_found: Function only::m2 not found in namespace default. ' +
			'It is registered in namespace(s): m2.');
		return true;
	});
	for (const p of [m1, m2, front]) p.ws.close();
});

test('the caller\'s own namespace plays no part: a member reaches default ids and builtins without naming one', async () => {
	const m1 = await nsWorker('member', 'm1', ['own::fn']);
	await engine.waitFor(() => owner('m1', 'own::fn'), 5000, 'own::fn');
	assert.equal((await call(m1, 'math::add', { a: 20, b: 22 })).result.sum, 42, 'an iii-sdk worker in default');
	assert.deepEqual((await call(m1, 'configuration::get', { id: 'svc-a' })).result, { id: 'svc-a', value: { limit: 3 } });
	assert.equal((await call(m1, 'engine::channels::create', {})).result.reader.direction, 'read');
	assert.equal((await call(m1, 'own::fn', {})).error.code, 'function_not_found', 'its own id needs its namespace');
	assert.equal((await call(m1, 'own::fn', { x: 1 }, { namespace: 'm1' })).result.data.x, 1);
	m1.ws.close();
});

test('a blank namespace is INVALID_NAMESPACE on invokefunction, engine::workers::register and registertrigger', async () => {
	const front = await nsWorker('front', undefined);
	for (const ns of ['', '  ']) {
		const r = await call(front, 'math::add', { a: 1, b: 1 }, { namespace: ns });
		assert.deepEqual(r.error, { code: 'INVALID_NAMESPACE',
			message: '`namespace` is empty: it was named and left blank. Give it a name, or omit it to use `default`.' });
	}
	const bad = await rawPeer(engine.url);
	bad.send({ type: 'registerfunction', id: 'blank::f' });
	const r = await call(bad, 'engine::workers::register', { name: 'blank', pid: 5, namespace: ' ' });
	assert.equal(r.error.code, 'INVALID_NAMESPACE');
	assert.match(r.error.message, /^namespace is empty: worker 'blank' declared " "\./);
	await sleep(100);
	assert.deepEqual(engine.namespacesFor('blank::f'), [], 'its registrations stay buffered');
	assert.ok(!engine.workers().some((w) => w.worker_id === bad.registered.worker_id));
	front.send({ type: 'registertrigger', id: 't-blank', trigger_type: 'engine::workers-available',
		function_id: 'front::x', config: {}, trigger_namespace: '' });
	const t = await front.waitFor((m) => m.type === 'triggerregistrationresult');
	assert.equal(t.error.code, 'INVALID_NAMESPACE');
	assert.match(t.error.message, /^`trigger_namespace` is empty/);
	front.ws.close();
	bad.ws.close();
});

test('FUNCTION_NAMESPACE_CONFLICT: a second live owner in the same namespace loses one id and keeps its connection', async () => {
	const a = await nsWorker('a', 'm1', ['dup::f']);
	await engine.waitFor(() => owner('m1', 'dup::f'), 5000, 'dup::f');
	const b = await nsWorker('b', 'm1', ['dup::f', 'b::own']);
	const rej = await b.waitFor((m) => m.type === 'registrationrejected');
	assert.deepEqual(rej, { type: 'registrationrejected', code: 'FUNCTION_NAMESPACE_CONFLICT', namespace: 'm1',
		function_id: 'dup::f', owner_worker_id: a.registered.worker_id });
	await engine.waitFor(() => owner('m1', 'b::own'), 5000, 'b::own');
	assert.equal(owner('m1', 'dup::f'), a.registered.worker_id);
	assert.ok(!b.closed);
	// Another namespace is no conflict.
	const c = await nsWorker('c', 'm2', ['dup::f']);
	await engine.waitFor(() => owner('m2', 'dup::f'), 5000, 'dup::f in m2');
	assert.deepEqual(rejectionsOf(c), []);
	assert.equal((await call(c, 'dup::f', {}, { namespace: 'm1' })).result.served_by, 'a');
	for (const p of [a, b, c]) p.ws.close();
});

test('engine::* ids are refused outside default with an empty owner', async () => {
	const m = await nsWorker('m', 'm1', ['engine::fake', 'm::ok']);
	const rej = await m.waitFor((x) => x.type === 'registrationrejected');
	assert.deepEqual(rej, { type: 'registrationrejected', code: 'FUNCTION_NAMESPACE_CONFLICT', namespace: 'm1',
		function_id: 'engine::fake', owner_worker_id: '' });
	await engine.waitFor(() => owner('m1', 'm::ok'), 5000, 'm::ok');
	assert.ok(!engine.functionsIn('m1').has('engine::fake'));
	assert.ok(!m.closed);
	m.ws.close();
});

test('takeover: the lease (namespace, name) and the ids pass to a newcomer once the owner is gone, never before', async () => {
	const first = await nsWorker('sandbox-libkrun', 'm1', [INFO]);
	await engine.waitFor(() => owner('m1', INFO), 5000, 'info');
	const second = await nsWorker('sandbox-libkrun', 'm1', [INFO]);
	const rej = await second.waitFor((m) => m.type === 'registrationrejected');
	assert.deepEqual(rej, { type: 'registrationrejected', code: 'WORKER_NAMESPACE_CONFLICT', namespace: 'm1',
		worker_name: 'sandbox-libkrun', owner_worker_id: first.registered.worker_id });
	assert.deepEqual(second.register.result, { success: false });
	await eventually(() => assert.ok(second.closed, 'a fatal rejection closes the socket'));
	assert.equal(owner('m1', INFO), first.registered.worker_id);
	first.ws.close();
	await engine.waitFor(() => !owner('m1', INFO), 5000, 'owner gone');
	const third = await nsWorker('sandbox-libkrun', 'm1', [INFO]);
	await engine.waitFor(() => owner('m1', INFO) === third.registered.worker_id, 5000, 'taken over');
	assert.deepEqual(third.register.result, { success: true });
	assert.deepEqual(rejectionsOf(third), []);
	assert.equal(engine.leases.get('m1\0sandbox-libkrun'), third.registered.worker_id);
	const front = await nsWorker('front', undefined);
	assert.equal((await call(front, INFO, {}, { namespace: 'm1' })).result.served_by, 'sandbox-libkrun');
	for (const p of [third, front]) p.ws.close();
});

test('engine::workers::list reports each worker\'s namespace, hides pid-less ones and filters', async () => {
	const m1 = await nsWorker('sandbox-libkrun', 'm1', [INFO], { pid: 4242 });
	const hidden = await nsWorker('no-pid', 'm1', [], { pid: null });
	await engine.waitFor(() => owner('m1', INFO), 5000, 'info');
	const { workers } = (await call(m1, 'engine::workers::list', {})).result;
	const row = workers.find((w) => w.id === m1.registered.worker_id);
	assert.deepEqual(Object.keys(row).sort(), ['active_invocations', 'connected_at_ms', 'description', 'function_count',
		'id', 'ip_address', 'isolation', 'name', 'namespace', 'os', 'runtime', 'status', 'version']);
	assert.equal(row.namespace, 'm1');
	assert.equal(row.name, 'sandbox-libkrun');
	assert.equal(row.function_count, 1);
	assert.equal(row.status, 'connected');
	assert.ok(!workers.some((w) => w.id === hidden.registered.worker_id), 'no pid, not listed');
	const sdkRow = workers.find((w) => w.name === 'node-worker');
	assert.equal(sdkRow.namespace, 'default', 'an iii-sdk 0.22.1 worker is in default');
	assert.equal(sdkRow.runtime, 'node');
	const names = workers.map((w) => w.name ?? w.id);
	assert.deepEqual(names, [...names].sort(), 'ordered by name');
	// Through iii-sdk, with filters.
	const found = await caller.trigger({ function_id: 'engine::workers::list', payload: { search: 'SANDBOX-LIB' } });
	assert.deepEqual(found.workers.map((w) => [w.name, w.namespace]), [['sandbox-libkrun', 'm1']]);
	const raw = await caller.trigger({ function_id: 'engine::workers::list', payload: { runtime: 'raw' } });
	assert.ok(raw.workers.every((w) => w.runtime === 'raw') && raw.workers.length >= 1);
	await assert.rejects(caller.trigger({ function_id: 'engine::workers::list', payload: { search: 7 } }),
		(e) => e.code === 'deserialization_error');
	m1.ws.close();
	hidden.ws.close();
});

test('engine::functions::list has one row per (namespace, id) with its worker; a front finds its members by it', async () => {
	const m1 = await nsWorker('sandbox-libkrun', 'm1', [INFO, 'sandbox-libkrun::create']);
	const m2 = await nsWorker('sandbox-libkrun', 'm2', [INFO]);
	await engine.waitFor(() => owner('m1', 'sandbox-libkrun::create') && owner('m2', INFO), 5000, 'members');
	const { functions } = await caller.trigger({ function_id: 'engine::functions::list', payload: {} });
	const infos = functions.filter((f) => f.function_id === INFO);
	assert.deepEqual(infos, [
		{ function_id: INFO, namespace: 'm1', worker_name: 'sandbox-libkrun', description: `${INFO} of sandbox-libkrun` },
		{ function_id: INFO, namespace: 'm2', worker_name: 'sandbox-libkrun', description: `${INFO} of sandbox-libkrun` },
	]);
	assert.deepEqual(functions.find((f) => f.function_id === 'math::add'),
		{ function_id: 'math::add', namespace: 'default', worker_name: 'node-worker', description: 'adds' });
	assert.ok(functions.some((f) => f.function_id === 'configuration::get' && f.namespace === 'default'));
	assert.ok(!functions.some((f) => f.function_id.startsWith('engine::')), 'engine::* hidden by default');
	const ids = functions.map((f) => f.function_id);
	assert.deepEqual(ids, [...ids].sort());
	const members = [...new Set(functions.filter((f) => f.function_id === INFO && f.namespace !== 'default')
		.map((f) => f.namespace))];
	assert.deepEqual(members, ['m1', 'm2']);
	const internal = (await call(m1, 'engine::functions::list', { include_internal: true, prefix: 'engine::' })).result;
	assert.ok(internal.functions.some((f) => f.function_id === 'engine::workers::list' && f.namespace === 'default'));
	const scoped = (await call(m1, 'engine::functions::list', { prefix: 'sandbox-libkrun::', workers: ['sandbox-libkrun'] }))
		.result.functions;
	assert.deepEqual(scoped.map((f) => `${f.namespace}/${f.function_id}`),
		[`m1/${INFO}`, `m2/${INFO}`, 'm1/sandbox-libkrun::create']);
	m2.ws.close();
	await engine.waitFor(() => !owner('m2', INFO), 5000, 'm2 gone');
	const after = (await call(m1, 'engine::functions::list', { prefix: INFO })).result.functions;
	assert.deepEqual(after.map((f) => f.namespace), ['m1'], 'a member that left is gone from the list');
	m1.ws.close();
});

test('engine::workers-available and engine::functions-available fire to a bound function as members come and go', async () => {
	const front = await nsWorker('front', undefined, ['front::workers', 'front::functions']);
	await engine.waitFor(() => owner('default', 'front::functions'), 5000, 'front functions');
	front.send({ type: 'registertrigger', id: 'tw', trigger_type: 'engine::workers-available',
		function_id: 'front::workers', config: {} });
	front.send({ type: 'registertrigger', id: 'tf', trigger_type: 'engine::functions-available',
		function_id: 'front::functions', config: {} });
	await engine.waitFor(() => engine.triggers.has('tf'), 5000, 'triggers');
	const fired = (fn, pred) => front.waitFor((m) => m.type === 'invokefunction' && m.function_id === fn && pred(m.data));
	// A member binding its own function must name its namespace: absent is default.
	const watcher = await nsWorker('watcher', 'm4', ['watch::w']);
	await engine.waitFor(() => owner('m4', 'watch::w'), 5000, 'watch::w');
	watcher.send({ type: 'registertrigger', id: 'tw-absent', trigger_type: 'engine::workers-available',
		function_id: 'watch::w', config: {} });
	watcher.send({ type: 'registertrigger', id: 'tw-m4', trigger_type: 'engine::workers-available',
		function_id: 'watch::w', config: {}, namespace: 'm4' });
	await engine.waitFor(() => engine.triggers.has('tw-m4'), 5000, 'watcher triggers');
	const m3 = await nsWorker('sandbox-libkrun', 'm3', [INFO]);
	const id = m3.registered.worker_id;
	await watcher.waitFor((m) => m.type === 'invokefunction' && m.data.worker_id === id);
	await sleep(100);
	assert.equal(watcher.received.filter((m) => m.type === 'invokefunction' && m.data.worker_id === id &&
		m.data.event === 'worker_connected').length, 1, 'only the binding naming m4 fired');
	watcher.ws.close();
	await fired('front::workers', (d) => d.event === 'worker_connected' && d.worker_id === id);
	await fired('front::workers', (d) => d.event === 'worker_metadata_updated' && d.worker_id === id);
	await fired('front::functions', (d) => d.event === 'functions_changed' &&
		d.functions.some((f) => f.function_id === INFO && f.namespace === 'm3'));
	m3.ws.close();
	await fired('front::workers', (d) => d.event === 'worker_disconnected' && d.worker_id === id);
	await fired('front::functions', (d) => d.event === 'functions_changed' &&
		!d.functions.some((f) => f.function_id === INFO && f.namespace === 'm3'));
	front.ws.close();
	await engine.waitFor(() => !engine.triggers.has('tw'), 5000, 'triggers gone with their owner');
});

test('without engine::workers::register a worker lands in default after the grace; a late declaration keeps it there', async () => {
	const quick = new StandinEngine({ namespaceGraceMs: 200 });
	await quick.start();
	try {
		const peer = await rawPeer(quick.url);
		peer.ws.on('message', (raw) => {
			const m = JSON.parse(raw.toString());
			if (m.type === 'invokefunction') peer.send({ type: 'invocationresult', invocation_id: m.invocation_id,
				function_id: m.function_id, result: { late: true } });
		});
		peer.send({ type: 'registerfunction', id: 'grace::f' });
		await quick.waitFor(() => quick.functions.has('grace::f'), 2000, 'grace::f in default');
		const r = await call(peer, 'engine::workers::register', { name: 'late', pid: 9, namespace: 'm9' });
		assert.deepEqual(r.result, { success: true });
		assert.equal(quick.workers().find((w) => w.name === 'late').namespace, 'default');
		assert.deepEqual(quick.namespacesFor('grace::f'), ['default']);
		assert.equal(quick.leases.get('default\0late'), peer.registered.worker_id, 'lease in the fixed namespace');
		const sdk = sdkClient(quick.url, 'sdk-in-default');
		sdk.registerFunction('sdk::f', async () => ({ ok: true }));
		await quick.waitFor(() => quick.functions.has('sdk::f'), 5000, 'sdk::f');
		assert.equal(quick.workers().find((w) => w.name === 'sdk-in-default').namespace, 'default');
		assert.deepEqual(await sdk.trigger({ function_id: 'grace::f', payload: {} }), { late: true });
		await sdk.shutdown();
		peer.ws.close();
	} finally {
		await quick.stop();
	}
});

test('with an auth check (RBAC, §1.2): an iii-sdk worker sending the header registers; a peer without it gets AUTH_ERROR and is closed', async () => {
	const rbac = new StandinEngine({ auth: requireHeader('Authorization', 'Bearer t0k') });
	await rbac.start();
	const w = sdkClient(rbac.url, 'rbac-worker', { headers: { Authorization: 'Bearer t0k' } });
	try {
		w.registerFunction('rbac::ping', async () => ({ pong: true }));
		await rbac.waitFor(() => rbac.functions.has('rbac::ping'), 10000, 'the authenticated worker');
		assert.equal(rbac.authChecks[0].accepted, true);
		assert.equal(rbac.authChecks[0].headers.authorization, 'Bearer t0k');

		const ws = new WebSocket(rbac.url, { headers: { Authorization: 'Bearer wrong' } });
		const received = [];
		ws.on('message', (d) => received.push(JSON.parse(d.toString())));
		await new Promise((resolve) => ws.on('close', resolve));
		assert.deepEqual(received, [{ type: 'error', error: { code: 'AUTH_ERROR', message: 'missing or wrong authorization header' } }]);
		assert.equal(rbac.authChecks.at(-1).accepted, false);
		assert.equal(rbac.workers().length, 1);
	} finally {
		await w.shutdown();
		await rbac.stop();
	}
});
