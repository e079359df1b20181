// A stand-in iii engine for tests, written from shared/spec/iii-protocol.md
// §11: it routes invocations between connections, serves configuration::get
// from a fixture map, offers channels, and validates frames as strictly as
// the real engine (a frame that would not decode there is dropped here too,
// so a worker bug shows up as a caller timeout exactly as in production).
//
// Namespaces (0.23, §2.3, §2.4, §3.1, §3.3): functions are keyed by
// (namespace, id); engine.functions is the `default` table (what a client
// that names no namespace reaches), engine.functionsIn(ns) any other.
//
// Library use:
//   const engine = new StandinEngine({ config: { 'sandbox-libkrun': {...} } });
//   await engine.start();          // ephemeral port on 127.0.0.1; engine.url
//   engine.setConfig(id, value);   // or setConfigError / setConfigHang
//   await engine.restart();        // stop, then listen again on the same port
//   await engine.stop();
//   new StandinEngine({ auth: requireHeader('authorization', 'Bearer t') })
//                                  // RBAC (§1.2): `auth` plays the engine's
//                                  // rbac.auth_function_id; engine.authChecks
// Command line: node standin-engine.mjs [--port N] [--config ID=FILE.json]...
// ENGINE_TRACE=1 logs every frame to stderr.
import { EventEmitter } from 'node:events';
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import http from 'node:http';
import { pathToFileURL } from 'node:url';
import { WebSocketServer } from 'ws';
import { functionsList, workersList } from './standin-lists.mjs';

const TELEMETRY_PREFIXES = ['OTLP', 'MTRC', 'LOGS'];
const DEFAULT_CHANNEL_BUFFER = 64;
const MAX_CHANNEL_BUFFER = 1024;
const READER_HIGH_WATER = 1048576; // bytes waiting in a reader's socket before the queue holds back
const DEFAULT_NAMESPACE_GRACE_MS = 5000;
const DEFAULT_NAMESPACE = 'default';
const WORKER_TEXT_MAX = 280;
const WORKERS_AVAILABLE = 'engine::workers-available';
const FUNCTIONS_AVAILABLE = 'engine::functions-available';
const FUNCTIONS_CHANGED_COALESCE_MS = 100;
const BUILTIN_IDS = ['engine::workers::register', 'engine::workers::list', 'engine::functions::list',
	'engine::channels::create', 'configuration::get',
	...['info', 'warn', 'error', 'debug', 'trace'].map((l) => `engine::log::${l}`)];

// An auth check (the `auth` option) that accepts an upgrade only when header
// `name` (any case) has exactly `value`; the refusal names the header only.
export function requireHeader(name, value) {
	const key = name.toLowerCase();
	return ({ headers }) => headers[key] === value || `missing or wrong ${key} header`;
}

// Forms the engine's UUID parser accepts (hyphenated, simple, braced, urn, any
// case); returns the canonical lowercase hyphenated text or null.
export function parseUuid(text) {
	if (typeof text !== 'string') return null;
	let s = text;
	if (/^urn:uuid:/i.test(s)) s = s.slice(9);
	else if (s.startsWith('{') && s.endsWith('}')) s = s.slice(1, -1);
	let hex;
	if (/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(s)) hex = s.replaceAll('-', '');
	else if (/^[0-9a-f]{32}$/i.test(s) && s === text) hex = s;
	else return null;
	hex = hex.toLowerCase();
	return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

const isObject = (v) => v !== null && typeof v === 'object' && !Array.isArray(v);
const absent = (v) => v === undefined || v === null;
const optString = (v) => absent(v) || typeof v === 'string';
// Present but only whitespace: a namespace named and left empty (§3.3).
const blank = (ns) => typeof ns === 'string' && ns.trim() === '';
const blankMessage = (field) =>
	`\`${field}\` is empty: it was named and left blank. Give it a name, or omit it to use \`${DEFAULT_NAMESPACE}\`.`;

// Worker-supplied display text as the engine stores it (§2.3): control and
// bidi-override characters stripped, at most 280 characters, trimmed; empty
// is no value.
export function sanitizeWorkerText(text) {
	if (typeof text !== 'string') return null;
	const unsafe = /[\p{Cc}\u202A-\u202E\u2066-\u2069\u2028\u2029]/u;
	const kept = [...text].filter((c) => !unsafe.test(c)).slice(0, WORKER_TEXT_MAX).join('').trim();
	return kept === '' ? null : kept;
}

// Required keys and field types per message type (§3).  Returns an error
// text when the frame would not decode in the real engine, else null.
function validate(msg) {
	const str = (k) => (typeof msg[k] === 'string' ? null : `${k} must be a string`);
	const optStr = (...keys) => {
		for (const k of keys) if (!optString(msg[k])) return `${k} must be a string`;
		return null;
	};
	switch (msg.type) {
	case 'registerfunction':
		if (!absent(msg.invocation) && !isObject(msg.invocation)) return 'invocation must be an object';
		return str('id') ?? optStr('description');
	case 'unregisterfunction':
		return str('id');
	case 'invokefunction': {
		if (!absent(msg.invocation_id) && !parseUuid(msg.invocation_id)) return 'invocation_id is not a UUID';
		if (!('data' in msg)) return 'missing field data';
		if (!absent(msg.action)) {
			const a = msg.action;
			if (!isObject(a) || (a.type !== 'void' && a.type !== 'enqueue')) return 'bad action';
			if (a.type === 'enqueue' && typeof a.queue !== 'string') return 'enqueue action without queue';
		}
		return str('function_id') ?? optStr('traceparent', 'baggage', 'namespace');
	}
	case 'invocationresult': {
		if (!parseUuid(msg.invocation_id)) return 'invocation_id missing or not a UUID';
		if (!absent(msg.error)) {
			const e = msg.error;
			if (!isObject(e) || typeof e.code !== 'string' || typeof e.message !== 'string' || !optString(e.stacktrace))
				return 'error must be {code: string, message: string, stacktrace?: string}';
		}
		return str('function_id') ?? optStr('traceparent', 'baggage');
	}
	case 'registertrigger':
		if (!('config' in msg)) return 'missing field config';
		return str('id') ?? str('trigger_type') ?? str('function_id');
	case 'unregistertrigger':
		return str('id') ?? optStr('trigger_type');
	case 'triggerregistrationresult':
		return str('id') ?? str('trigger_type') ?? str('function_id');
	case 'registertriggertype':
		return str('id') ?? str('description');
	case 'registerservice':
		return str('id');
	case 'reattach':
		return str('previous_worker_id') ?? optStr('reattach_token');
	case 'ping':
	case 'pong':
	case 'workerregistered':
	case 'registrationrejected':
		return null;
	default:
		return `unknown type ${JSON.stringify(msg.type)}`;
	}
}

const NAMESPACED = new Set(['registerfunction', 'unregisterfunction', 'registerservice', 'registertrigger',
	'unregistertrigger', 'registertriggertype']);

export class StandinEngine extends EventEmitter {
	constructor({ port = 0, host = '127.0.0.1', config = {}, trace = process.env.ENGINE_TRACE === '1',
		namespaceGraceMs = DEFAULT_NAMESPACE_GRACE_MS, auth = null } = {}) {
		super();
		// ({headers, query_params, ip_address}) -> true, or the refusal's message:
		// the engine's rbac.auth_function_id; null accepts every worker.
		this.auth = auth;
		this.host = host;
		this.port = port;
		this.trace = trace;
		this.namespaceGraceMs = namespaceGraceMs;
		// id -> {value} | {error: {code, message}} | {hang: true}
		this.configEntries = new Map();
		for (const [id, value] of Object.entries(config)) this.setConfig(id, value);
		this.reset();
	}

	// Forgets everything a run recorded (not the config fixtures).
	reset() {
		this.conns = new Map();      // worker_id -> conn
		// namespace -> (function_id -> {owner, namespace, description, request_format, response_format, metadata})
		this.namespaces = new Map([[DEFAULT_NAMESPACE, new Map()]]);
		this.pending = new Map();    // canonical invocation_id -> {caller, target, function_id}
		this.channels = new Map();   // channel_id -> channel
		this.leases = new Map();     // "namespace\0name" -> worker_id
		this.triggers = new Map();   // trigger id -> {owner, trigger_type, function_id, namespace}
		this.frames = [];            // {dir: 'in'|'out', worker_id, msg}
		this.dropped = [];           // {worker_id, reason, raw}
		this.configReads = [];       // ids asked for with configuration::get
		this.rejections = [];        // registrationrejected frames sent
		this.authChecks = [];        // {accepted, headers} of each worker upgrade the auth check saw
	}

	get url() {
		return `ws://${this.host}:${this.port}`;
	}

	// The `default` namespace's functions: what a caller naming no namespace reaches.
	get functions() {
		return this.functionsIn(DEFAULT_NAMESPACE);
	}

	// Functions registered in namespace ns (an empty map when it has none).
	functionsIn(ns) {
		return this.namespaces.get(ns) ?? new Map();
	}

	// Every namespace holding function_id, sorted (the function_not_found hint);
	// builtins live in `default`.
	namespacesFor(id) {
		const found = [...this.namespaces].filter(([, fns]) => fns.has(id)).map(([ns]) => ns);
		if (BUILTIN_IDS.includes(id) && !found.includes(DEFAULT_NAMESPACE)) found.push(DEFAULT_NAMESPACE);
		return found.sort();
	}

	setConfig(id, value) { this.configEntries.set(id, { value }); }
	setConfigError(id, code, message) { this.configEntries.set(id, { error: { code, message } }); }
	setConfigHang(id) { this.configEntries.set(id, { hang: true }); }
	deleteConfig(id) { this.configEntries.delete(id); }

	async start() {
		this.server = http.createServer((req, res) => {
			res.writeHead(404).end();
		});
		this.wss = new WebSocketServer({ noServer: true });
		this.server.on('upgrade', (req, socket, head) => this.onUpgrade(req, socket, head));
		await new Promise((resolve, reject) => {
			this.server.once('error', reject);
			this.server.listen(this.port, this.host, () => {
				this.server.off('error', reject);
				resolve();
			});
		});
		this.port = this.server.address().port;
		this.log(`listening on ${this.url}`);
	}

	// Like a crash of the real engine: every socket is cut without a close
	// handshake, and every routing table is lost.
	async stop() {
		if (!this.server) return;
		for (const conn of this.conns.values()) clearTimeout(conn.graceTimer);
		for (const ws of this.wss.clients) ws.terminate();
		for (const ch of this.channels.values()) for (const end of [ch.reader, ch.writer]) end?.terminate();
		this.wss.close();
		this.server.closeAllConnections();
		await new Promise((resolve) => this.server.close(resolve));
		this.server = null;
		clearTimeout(this.functionsChangedTimer);
		this.functionsChangedTimer = null;
		this.conns.clear();
		this.namespaces = new Map([[DEFAULT_NAMESPACE, new Map()]]);
		this.pending.clear();
		this.channels.clear();
		this.leases.clear();
		this.triggers.clear();
		this.log('stopped');
	}

	async restart() {
		await this.stop();
		await this.start();
	}

	// Resolves once predicate() holds, checking after every frame and every
	// 50 ms; rejects after timeoutMs.
	waitFor(predicate, timeoutMs = 10000, what = 'condition') {
		return new Promise((resolve, reject) => {
			const check = () => {
				let v;
				try {
					v = predicate();
				} catch (e) {
					done();
					reject(e);
					return;
				}
				if (v) {
					done();
					resolve(v);
				}
			};
			const timer = setInterval(check, 50);
			const deadline = setTimeout(() => {
				done();
				reject(new Error(`stand-in engine: timed out after ${timeoutMs} ms waiting for ${what}`));
			}, timeoutMs);
			const done = () => {
				clearInterval(timer);
				clearTimeout(deadline);
				this.off('frame', check);
			};
			this.on('frame', check);
			check();
		});
	}

	// Live connections that announced themselves with engine::workers::register.
	workers() {
		return [...this.conns.values()].filter((c) => c.registered).map((c) => ({
			worker_id: c.worker_id, name: c.name, pid: c.pid, runtime: c.runtime, version: c.version,
			namespace: c.namespace, functions: this.ownedBy(c).map((f) => f.id),
		}));
	}

	// [{id, ...entry}] of the functions conn owns (all in its namespace).
	ownedBy(conn) {
		const fns = this.namespaces.get(conn.namespace);
		if (!fns) return [];
		return [...fns].filter(([, f]) => f.owner === conn.worker_id).map(([id, f]) => ({ id, ...f }));
	}

	log(text) {
		if (this.trace) process.stderr.write(`[standin] ${text}\n`);
	}

	onUpgrade(req, socket, head) {
		// A peer that goes (a daemon stopped or killed) may reset its
		// connection: node leaves an upgraded socket without an 'error'
		// listener, and the reset would end the test process as an
		// uncaught exception.  Logged, as the engine would.
		socket.on('error', (e) => this.log(`upgrade socket error: ${e.message}`));
		const url = new URL(req.url, 'http://standin');
		// A test's outage: new worker connections fail as an engine that is
		// unreachable would; the open ones stay.
		if (url.pathname === '/' && this.refuseWorkers) {
			socket.end('HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\nConnection: close\r\n\r\n');
			return;
		}
		if (url.pathname === '/' && this.auth && !this.authorize(req, url)) {
			// As handle_worker does: the upgrade completes, then one error frame and a close.
			this.wss.handleUpgrade(req, socket, head, (ws) => {
				ws.send(JSON.stringify({ type: 'error', error: { code: 'AUTH_ERROR', message: this.authChecks.at(-1).message } }));
				ws.close();
			});
		} else if (url.pathname === '/') {
			this.wss.handleUpgrade(req, socket, head, (ws) => this.onWorker(ws));
		} else if (url.pathname === '/otel') {
			this.wss.handleUpgrade(req, socket, head, (ws) => ws.on('message', () => {}).on('error', () => {}));
		} else if (url.pathname.startsWith('/ws/channels/')) {
			this.onChannelUpgrade(url, req, socket, head);
		} else {
			socket.end('HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n');
		}
	}

	// Runs the auth check on a worker's upgrade request (rbac_session.rs's
	// input); records it in authChecks and emits 'frame' so waitFor sees it.
	authorize(req, url) {
		const input = { headers: { ...req.headers }, query_params: Object.fromEntries(url.searchParams),
			ip_address: req.socket.remoteAddress };
		let verdict;
		try {
			verdict = this.auth(input);
		} catch (e) {
			verdict = `auth function failed: ${e.message}`;
		}
		const accepted = verdict === true;
		const message = accepted ? null : String(verdict || 'authentication failed');
		this.authChecks.push({ accepted, headers: input.headers, message });
		this.log(`auth ${accepted ? 'accepted' : `refused: ${message}`}`);
		this.emit('frame');
		return accepted;
	}

	// ---- the worker protocol ----

	onWorker(ws) {
		const conn = {
			ws, worker_id: randomUUID(), reattach_token: randomUUID(), registered: false, connectedAt: Date.now(),
			namespace: null, buffered: [], name: null, pid: null, runtime: null, version: null, lease: null,
		};
		this.conns.set(conn.worker_id, conn);
		conn.graceTimer = setTimeout(() => this.resolveNamespace(conn), this.namespaceGraceMs);
		this.log(`connect ${conn.worker_id}`);
		this.send(conn, { type: 'workerregistered', worker_id: conn.worker_id, reattach_token: conn.reattach_token });
		ws.on('message', (data, isBinary) => this.onFrame(conn, data, isBinary));
		ws.on('close', () => this.cleanup(conn, 'closed'));
		ws.on('error', (e) => this.log(`socket error ${conn.worker_id}: ${e.message}`));
		this.fireTriggers(WORKERS_AVAILABLE, { event: 'worker_connected', worker_id: conn.worker_id });
		this.emit('connection', conn.worker_id);
	}

	send(conn, msg) {
		if (!this.conns.has(conn.worker_id) || conn.ws.readyState !== conn.ws.OPEN) return false;
		const text = JSON.stringify(msg);
		this.frames.push({ dir: 'out', worker_id: conn.worker_id, msg });
		this.log(`-> ${conn.worker_id.slice(0, 8)} ${text}`);
		conn.ws.send(text);
		return true;
	}

	drop(conn, reason, raw) {
		this.dropped.push({ worker_id: conn.worker_id, reason, raw });
		this.log(`DROP ${conn.worker_id.slice(0, 8)} (${reason}): ${raw.slice(0, 500)}`);
		this.emit('frame');
	}

	onFrame(conn, data, isBinary) {
		if (isBinary && TELEMETRY_PREFIXES.includes(data.subarray(0, 4).toString('latin1'))) return;
		const raw = data.toString('utf8');
		if (raw.trim() === '') return;
		let msg;
		try {
			msg = JSON.parse(raw);
		} catch {
			this.drop(conn, 'not JSON', raw);
			return;
		}
		if (!isObject(msg)) {
			this.drop(conn, 'not an object', raw);
			return;
		}
		const problem = validate(msg);
		if (problem) {
			this.drop(conn, problem, raw);
			return;
		}
		this.frames.push({ dir: 'in', worker_id: conn.worker_id, msg });
		this.log(`<- ${conn.worker_id.slice(0, 8)} ${raw.length > 2000 ? `${raw.slice(0, 2000)}...` : raw}`);
		if (NAMESPACED.has(msg.type) && conn.namespace === null) conn.buffered.push(msg);
		else this.dispatch(conn, msg);
		this.emit('frame');
	}

	dispatch(conn, msg) {
		switch (msg.type) {
		case 'registerfunction': return this.onRegisterFunction(conn, msg);
		case 'unregisterfunction': {
			const fns = this.namespaces.get(conn.namespace);
			if (fns?.get(msg.id)?.owner === conn.worker_id) {
				fns.delete(msg.id);
				this.functionsChanged();
			}
			return undefined;
		}
		case 'invokefunction': return this.onInvoke(conn, msg);
		case 'invocationresult': return this.onResult(conn, msg);
		case 'reattach': return this.onReattach(conn, msg);
		case 'ping': return this.send(conn, { type: 'pong' });
		case 'registertrigger': return this.onRegisterTrigger(conn, msg);
		case 'unregistertrigger':
			if (this.triggers.get(msg.id)?.owner === conn.worker_id) this.triggers.delete(msg.id);
			return undefined;
		default: return undefined; // trigger types, services, pong: accepted and ignored
		}
	}

	// Registrations wait until the worker declared its namespace (0.23, §2.4);
	// the grace timer fixes it to `default`.  Once fixed it never changes.
	resolveNamespace(conn, namespace = DEFAULT_NAMESPACE) {
		clearTimeout(conn.graceTimer);
		if (conn.namespace !== null) return;
		conn.namespace = namespace;
		const queued = conn.buffered;
		conn.buffered = [];
		for (const msg of queued) this.dispatch(conn, msg);
	}

	// One live owner per (namespace, id) (§3.1); engine::* is reserved to
	// `default`, refused elsewhere with an empty owner.
	onRegisterFunction(conn, msg) {
		const ns = conn.namespace;
		const refuse = (owner) => this.reject(conn, { code: 'FUNCTION_NAMESPACE_CONFLICT', namespace: ns,
			function_id: msg.id, owner_worker_id: owner });
		if (msg.id.startsWith('engine::') && ns !== DEFAULT_NAMESPACE) {
			refuse('');
			return;
		}
		if (!this.namespaces.has(ns)) this.namespaces.set(ns, new Map());
		const fns = this.namespaces.get(ns);
		const current = fns.get(msg.id);
		if (current && current.owner !== conn.worker_id && this.conns.has(current.owner)) {
			refuse(current.owner);
			return;
		}
		fns.set(msg.id, {
			owner: conn.worker_id, namespace: ns, description: msg.description, request_format: msg.request_format,
			response_format: msg.response_format, metadata: msg.metadata,
		});
		this.functionsChanged();
		this.emit('function', msg.id, ns);
	}

	// Only the engine's own trigger types are served; any other binding is
	// accepted and never fires (no provider), as on an engine without one.
	// The target resolves in msg.namespace, absent: `default` (not the
	// connection's; the SDKs fill in their own).
	onRegisterTrigger(conn, msg) {
		for (const field of ['namespace', 'trigger_namespace']) {
			if (!blank(msg[field])) continue;
			this.send(conn, { type: 'triggerregistrationresult', id: msg.id, trigger_type: msg.trigger_type,
				function_id: msg.function_id, error: { code: 'INVALID_NAMESPACE', message: blankMessage(field) } });
			return;
		}
		this.triggers.set(msg.id, { owner: conn.worker_id, trigger_type: msg.trigger_type, function_id: msg.function_id,
			namespace: msg.namespace ?? DEFAULT_NAMESPACE, metadata: msg.metadata });
	}

	// Fire-and-forget calls of every binding of an engine trigger type.
	fireTriggers(type, data) {
		for (const t of this.triggers.values()) {
			if (t.trigger_type !== type) continue;
			const target = this.namespaces.get(t.namespace)?.get(t.function_id);
			const conn = target && this.conns.get(target.owner);
			if (!conn) continue;
			const out = { type: 'invokefunction', invocation_id: randomUUID(), function_id: t.function_id, data };
			if (!absent(t.metadata)) out.metadata = t.metadata;
			this.pending.set(out.invocation_id, { caller: null, target: conn.worker_id, function_id: t.function_id });
			this.send(conn, out);
		}
	}

	// Registry changes within FUNCTIONS_CHANGED_COALESCE_MS fire one
	// engine::functions-available with the whole list.
	functionsChanged() {
		if (this.functionsChangedTimer) return;
		this.functionsChangedTimer = setTimeout(() => {
			this.functionsChangedTimer = null;
			this.fireTriggers(FUNCTIONS_AVAILABLE, { event: 'functions_changed',
				functions: functionsList(this, { include_internal: true }).functions });
		}, FUNCTIONS_CHANGED_COALESCE_MS);
	}

	reject(conn, body) {
		const msg = { type: 'registrationrejected', ...body };
		this.rejections.push({ worker_id: conn.worker_id, msg });
		this.send(conn, msg);
	}

	onReattach(conn, msg) {
		const old = this.conns.get(msg.previous_worker_id);
		if (!old || old === conn || !msg.reattach_token || msg.reattach_token !== old.reattach_token) return;
		this.log(`reattach: evicting ${old.worker_id}`);
		this.cleanup(old, 'evicted by reattach');
		old.ws.terminate();
	}

	reply(conn, msg, body) {
		if (absent(msg.invocation_id) || msg.action?.type === 'void') return;
		const out = { type: 'invocationresult', invocation_id: parseUuid(msg.invocation_id), function_id: msg.function_id };
		Object.assign(out, body);
		this.send(conn, out);
	}

	// function_id resolves in msg.namespace alone (absent: `default`), never
	// in the caller's own namespace (§3.3); builtins live in `default`.
	onInvoke(conn, msg) {
		if (isObject(msg.data)) msg.data._caller_worker_id = conn.worker_id;
		if (blank(msg.namespace)) {
			this.reply(conn, msg, { error: { code: 'INVALID_NAMESPACE', message: blankMessage('namespace') } });
			return;
		}
		if (msg.action?.type === 'enqueue') {
			this.reply(conn, msg, { error: { code: 'enqueue_error', message: 'no queue worker in the stand-in engine' } });
			return;
		}
		const ns = msg.namespace ?? DEFAULT_NAMESPACE;
		const fn = this.namespaces.get(ns)?.get(msg.function_id);
		if (fn && this.conns.has(fn.owner)) {
			this.route(conn, msg, this.conns.get(fn.owner));
			return;
		}
		const builtin = ns === DEFAULT_NAMESPACE && this.builtin(msg.function_id);
		if (builtin) {
			builtin.call(this, conn, msg);
			return;
		}
		const known = this.namespacesFor(msg.function_id);
		const hint = known.length > 0 ? ` It is registered in namespace(s): ${known.join(', ')}.` : '';
		this.reply(conn, msg, { error: { code: 'function_not_found',
			message: `Function ${msg.function_id} not found in namespace ${ns}.${hint}` } });
	}

	route(caller, msg, target) {
		const wantsReply = !absent(msg.invocation_id) && msg.action?.type !== 'void';
		const id = wantsReply ? parseUuid(msg.invocation_id) : randomUUID();
		if (this.pending.has(id)) {
			this.drop(caller, 'invocation_id already in flight', JSON.stringify(msg));
			return;
		}
		this.pending.set(id, { caller: wantsReply ? caller.worker_id : null, target: target.worker_id,
			function_id: msg.function_id });
		const out = { type: 'invokefunction', invocation_id: id, function_id: msg.function_id, data: msg.data };
		for (const k of ['traceparent', 'baggage', 'metadata']) if (!absent(msg[k])) out[k] = msg[k];
		this.send(target, out);
	}

	onResult(conn, msg) {
		const id = parseUuid(msg.invocation_id);
		const p = this.pending.get(id);
		if (!p) {
			this.drop(conn, 'result for an unknown invocation', JSON.stringify(msg));
			return;
		}
		if (p.target !== conn.worker_id) {
			this.drop(conn, 'result from a connection that was not the target', JSON.stringify(msg));
			return;
		}
		this.pending.delete(id);
		const caller = p.caller && this.conns.get(p.caller);
		if (!caller) return;
		const out = { type: 'invocationresult', invocation_id: id, function_id: p.function_id };
		if (!absent(msg.error)) out.error = msg.error;
		else if (msg.result !== undefined) out.result = msg.result;
		for (const k of ['traceparent', 'baggage']) if (!absent(msg[k])) out[k] = msg[k];
		this.send(caller, out);
	}

	// Connection X is gone: its functions, leases and calls go with it (§2.7).
	cleanup(conn, why) {
		if (this.conns.get(conn.worker_id) !== conn) return;
		this.conns.delete(conn.worker_id);
		clearTimeout(conn.graceTimer);
		this.log(`disconnect ${conn.worker_id} (${why})`);
		const owned = this.ownedBy(conn);
		for (const f of owned) this.namespaces.get(conn.namespace).delete(f.id);
		if (owned.length > 0) this.functionsChanged();
		for (const [key, owner] of this.leases) if (owner === conn.worker_id) this.leases.delete(key);
		for (const [id, t] of this.triggers) if (t.owner === conn.worker_id) this.triggers.delete(id);
		for (const [id, p] of this.pending) {
			if (p.target === conn.worker_id) {
				this.pending.delete(id);
				const caller = p.caller && this.conns.get(p.caller);
				if (caller) this.send(caller, { type: 'invocationresult', invocation_id: id, function_id: p.function_id,
					error: { code: 'invocation_stopped', message: 'Invocation stopped' } });
			} else if (p.caller === conn.worker_id) {
				p.caller = null;
			}
		}
		this.fireTriggers(WORKERS_AVAILABLE, { event: 'worker_disconnected', worker_id: conn.worker_id });
		this.emit('disconnect', conn.worker_id);
		this.emit('frame');
	}

	// ---- builtins ----

	builtinIds() {
		return BUILTIN_IDS;
	}

	builtin(id) {
		if (id === 'engine::workers::register') return this.fnRegisterWorker;
		if (id === 'engine::workers::list') return this.fnList(workersList);
		if (id === 'engine::functions::list') return this.fnList(functionsList);
		if (id === 'configuration::get') return this.fnConfigurationGet;
		if (id === 'engine::channels::create') return this.fnChannelsCreate;
		if (/^engine::log::(info|warn|error|debug|trace)$/.test(id)) return this.fnLog;
		return null;
	}

	// Claims the lease (namespace, name) and fixes the connection's namespace
	// (§2.3).  A namespace already fixed (grace expired, or an earlier call)
	// wins over the declared one, so lease and functions stay together.
	fnRegisterWorker(conn, msg) {
		const d = isObject(msg.data) ? msg.data : {};
		if (!optString(d.namespace)) {
			this.reply(conn, msg, { error: { code: 'deserialization_error', message: 'namespace must be a string' } });
			return;
		}
		const name = sanitizeWorkerText(d.name);
		if (blank(d.namespace)) {
			this.reply(conn, msg, { error: { code: 'INVALID_NAMESPACE', message: `namespace is empty: worker '${
				name ?? '<unnamed>'}' declared ${JSON.stringify(d.namespace)}. Give it a name, or omit the field to register in '${
				DEFAULT_NAMESPACE}'.` } });
			return;
		}
		const namespace = conn.namespace ?? d.namespace ?? DEFAULT_NAMESPACE;
		if (name !== null) {
			const key = `${namespace}\0${name}`;
			const holder = this.leases.get(key);
			if (holder && holder !== conn.worker_id && this.conns.has(holder)) {
				this.reply(conn, msg, { result: { success: false } });
				this.reject(conn, { code: 'WORKER_NAMESPACE_CONFLICT', namespace, worker_name: name,
					owner_worker_id: holder });
				this.cleanup(conn, 'worker name conflict');
				conn.ws.close(1008, 'worker name conflict');
				return;
			}
			if (conn.lease && conn.lease !== key && this.leases.get(conn.lease) === conn.worker_id)
				this.leases.delete(conn.lease);
			this.leases.set(key, conn.worker_id);
			conn.lease = key;
		}
		Object.assign(conn, {
			registered: true, name,
			pid: Number.isInteger(d.pid) ? d.pid : null, runtime: typeof d.runtime === 'string' ? d.runtime : 'unknown',
			version: typeof d.version === 'string' ? d.version : null, registerPayload: d,
			description: sanitizeWorkerText(d.description), os: typeof d.os === 'string' ? d.os : null,
			isolation: typeof d.isolation === 'string' ? d.isolation : null,
		});
		this.resolveNamespace(conn, namespace);
		this.reply(conn, msg, { result: { success: true } });
		this.fireTriggers(WORKERS_AVAILABLE, { event: 'worker_metadata_updated', worker_id: conn.worker_id });
		this.emit('worker', conn.worker_id);
	}

	// engine::workers::list / engine::functions::list: filter input checked
	// the way the engine's decoder would, then the list.
	fnList(list) {
		return function listBuiltin(conn, msg) {
			const out = list(this, absent(msg.data) ? {} : msg.data);
			this.reply(conn, msg, out.error ? { error: out.error } : { result: out });
		};
	}

	fnConfigurationGet(conn, msg) {
		const d = msg.data;
		if (!isObject(d) || typeof d.id !== 'string') {
			this.reply(conn, msg, { error: { code: 'deserialization_error',
				message: 'invalid input: expected an object with a string `id`' } });
			return;
		}
		this.configReads.push(d.id);
		const entry = this.configEntries.get(d.id);
		if (!entry) {
			this.reply(conn, msg, { error: { code: 'NOT_FOUND', message: `configuration '${d.id}' not found` } });
		} else if (entry.hang) {
			// never answered, as when the configuration worker is wedged
		} else if (entry.error) {
			this.reply(conn, msg, { error: entry.error });
		} else {
			this.reply(conn, msg, { result: { id: d.id, value: entry.value } });
		}
	}

	fnLog(conn, msg) {
		this.log(`${msg.function_id}: ${JSON.stringify(msg.data)}`);
		this.reply(conn, msg, {});
	}

	// ---- channels (§7, §11.3) ----

	fnChannelsCreate(conn, msg) {
		const d = msg.data;
		if (!absent(d) && !isObject(d)) {
			this.reply(conn, msg, { error: { code: 'deserialization_error', message: 'invalid input' } });
			return;
		}
		let size = d?.buffer_size ?? DEFAULT_CHANNEL_BUFFER;
		if (!Number.isInteger(size) || size < 1) size = DEFAULT_CHANNEL_BUFFER;
		size = Math.min(size, MAX_CHANNEL_BUFFER);
		const channel_id = randomUUID();
		const access_key = randomUUID();
		this.channels.set(channel_id, { key: access_key, size, queue: [], reader: null, writer: null,
			writerTaken: false, readerTaken: false, writerDone: false });
		this.reply(conn, msg, { result: {
			writer: { channel_id, access_key, direction: 'write' },
			reader: { channel_id, access_key, direction: 'read' },
		} });
	}

	onChannelUpgrade(url, req, socket, head) {
		const id = decodeURIComponent(url.pathname.slice('/ws/channels/'.length));
		const ch = this.channels.get(id);
		const dir = url.searchParams.get('dir');
		if (!ch || url.searchParams.get('key') !== ch.key || (dir !== 'read' && dir !== 'write')) {
			socket.end('HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n');
			return;
		}
		this.wss.handleUpgrade(req, socket, head, (ws) => {
			const taken = dir === 'read' ? 'readerTaken' : 'writerTaken';
			if (ch[taken]) {
				ws.close(1008, 'channel end already taken');
				return;
			}
			ch[taken] = true;
			this.log(`channel ${id.slice(0, 8)} ${dir} end attached`);
			if (dir === 'write') this.attachWriter(id, ch, ws);
			else this.attachReader(id, ch, ws);
		});
	}

	attachWriter(id, ch, ws) {
		ch.writer = ws;
		ws.on('message', (data, isBinary) => {
			ch.queue.push({ data, isBinary });
			if (ch.queue.length >= ch.size) ws.pause();
			this.pump(ch);
		});
		ws.on('close', () => {
			ch.writerDone = true;
			ch.writer = null;
			this.pump(ch);
		});
		ws.on('error', () => {});
	}

	attachReader(id, ch, ws) {
		ch.reader = ws;
		ws.on('close', () => {
			ch.reader = null;
			ch.queue = [];
			ch.writer?.close(1000, 'reader gone');
			this.channels.delete(id);
		});
		ws.on('error', () => {});
		this.pump(ch);
	}

	// Writer frames reach the reader in order, binary as binary and text as
	// text; the reader is closed once the writer is done and the queue empty.
	// A reader that does not take its frames holds them back: past
	// READER_HIGH_WATER bytes waiting in its socket the queue waits for the
	// socket to drain, so the buffer_size frames of the queue are all the
	// engine holds and the writer is paused (backpressure).
	pump(ch) {
		if (!ch.reader || ch.reader.readyState !== ch.reader.OPEN) return;
		while (ch.queue.length > 0 && ch.reader.bufferedAmount < READER_HIGH_WATER) {
			const { data, isBinary } = ch.queue.shift();
			ch.reader.send(data, { binary: isBinary });
		}
		if (ch.writer && ch.writer.isPaused && ch.queue.length < ch.size) ch.writer.resume();
		if (ch.queue.length > 0) {
			const sock = ch.reader._socket;
			if (sock && !ch.awaitingDrain) {
				ch.awaitingDrain = true;
				sock.once('drain', () => {
					ch.awaitingDrain = false;
					this.pump(ch);
				});
			}
			return;
		}
		if (ch.writerDone) ch.reader.close(1000, 'stream complete');
	}
}

// Command line: a dev engine to run the daemon against by hand.
async function main(argv) {
	const config = {};
	let port = 49134;
	for (let i = 0; i < argv.length; i++) {
		if (argv[i] === '--port') port = Number(argv[++i]);
		else if (argv[i] === '--config') {
			const spec = argv[++i] ?? '';
			const eq = spec.indexOf('=');
			config[spec.slice(0, eq)] = JSON.parse(readFileSync(spec.slice(eq + 1), 'utf8'));
		} else {
			process.stderr.write('usage: node standin-engine.mjs [--port N] [--config ID=FILE.json]...\n');
			process.exit(2);
		}
	}
	const engine = new StandinEngine({ port, config });
	await engine.start();
	process.stdout.write(`stand-in iii engine listening on ${engine.url}\n`);
	const quit = () => engine.stop().then(() => process.exit(0));
	process.on('SIGINT', quit);
	process.on('SIGTERM', quit);
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) await main(process.argv.slice(2));
