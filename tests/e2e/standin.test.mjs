// Checks the stand-in engine itself with the official iii-sdk on both sides
// (Node caller -> stand-in -> Node worker), so that the stand-in cannot share
// a misreading of the protocol with our C worker unnoticed.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { StandinEngine, parseUuid } from './standin-engine.mjs';
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
