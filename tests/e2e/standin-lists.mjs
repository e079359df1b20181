// The stand-in engine's introspection builtins, engine::workers::list and
// engine::functions::list, with the row shapes, filters and order of the
// 0.23 engine (every row names its namespace: the same function id or worker
// name may exist once per namespace).  Each takes the engine and the call's
// data and returns the result, or {error} for input the engine's decoder
// refuses.
const isObject = (v) => v !== null && typeof v === 'object' && !Array.isArray(v);
const absent = (v) => v === undefined || v === null;

// Null when every key present in input has the expected JSON type.
function badInput(input, types) {
	if (!isObject(input)) return 'invalid input: expected an object';
	for (const [key, type] of Object.entries(types)) {
		const v = input[key];
		if (absent(v)) continue;
		const ok = type === 'strings' ? Array.isArray(v) && v.every((x) => typeof x === 'string') : typeof v === type;
		if (!ok) return `invalid input: ${key} must be ${type === 'strings' ? 'a list of strings' : `a ${type}`}`;
	}
	return null;
}

const refuse = (message) => ({ error: { code: 'deserialization_error', message } });
const contains = (hay, needle) => (hay ?? '').toLowerCase().includes(needle.toLowerCase());

// Connections that called engine::workers::register with a pid, by name then id.
export function workersList(engine, input) {
	const bad = badInput(input, { search: 'string', runtime: 'string', status: 'string' });
	if (bad) return refuse(bad);
	let rows = [...engine.conns.values()].filter((c) => c.registered && c.pid !== null).map((c) => ({
		name: c.name, description: c.description ?? null, version: c.version, id: c.worker_id,
		namespace: c.namespace, runtime: c.runtime, os: c.os ?? null, status: 'connected',
		function_count: engine.ownedBy(c).length, connected_at_ms: c.connectedAt,
		active_invocations: [...engine.pending.values()].filter((p) => p.target === c.worker_id).length,
		isolation: c.isolation ?? null, ip_address: null,
	}));
	if (!absent(input.runtime)) rows = rows.filter((w) => w.runtime === input.runtime);
	if (!absent(input.status)) rows = rows.filter((w) => w.status === input.status);
	if (input.search) rows = rows.filter((w) => contains(w.name, input.search));
	const key = (w) => w.name ?? w.id;
	rows.sort((a, b) => (key(a) < key(b) ? -1 : key(a) > key(b) ? 1 : a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
	return { workers: rows };
}

// 0: the needle anchors the id, 1: inside the id, 2: only in the description.
function searchRank(id, needle) {
	const lower = id.toLowerCase();
	if (lower.startsWith(needle) || lower.split('::').includes(needle)) return 0;
	return lower.includes(needle) ? 1 : 2;
}

// Every registered function, one row per (namespace, id); builtins in
// `default`.  engine::* (but engine::queue::*) and metadata.internal rows
// only with include_internal.
export function functionsList(engine, input) {
	const bad = badInput(input, { search: 'string', prefix: 'string', worker: 'string', workers: 'strings',
		include_internal: 'boolean' });
	if (bad) return refuse(bad);
	let rows = [];
	for (const [namespace, fns] of engine.namespaces) {
		for (const [id, f] of fns) {
			const row = { function_id: id, namespace, worker_name: engine.conns.get(f.owner)?.name ?? id.split('::')[0] };
			if (!absent(f.description)) row.description = f.description;
			if (!absent(f.metadata)) row.metadata = f.metadata;
			rows.push(row);
		}
	}
	for (const id of engine.builtinIds()) {
		if (!engine.functions.has(id)) rows.push({ function_id: id, namespace: 'default', worker_name: id.split('::')[0] });
	}
	if (input.include_internal !== true) {
		rows = rows.filter((f) => !(f.function_id.startsWith('engine::') && !f.function_id.startsWith('engine::queue::')) &&
			f.metadata?.internal !== true);
	}
	if (!absent(input.prefix)) rows = rows.filter((f) => f.function_id.startsWith(input.prefix));
	const names = [input.worker, ...(input.workers ?? [])].filter((w) => !absent(w));
	if (names.length > 0) rows = rows.filter((f) => names.includes(f.worker_name));
	const needle = input.search ? input.search.toLowerCase() : null;
	if (needle) rows = rows.filter((f) => contains(f.function_id, needle) || contains(f.description, needle));
	const order = (f) => [needle ? searchRank(f.function_id, needle) : 0, f.function_id, f.namespace];
	rows.sort((a, b) => {
		const [x, y] = [order(a), order(b)];
		for (let i = 0; i < x.length; i++) if (x[i] !== y[i]) return x[i] < y[i] ? -1 : 1;
		return 0;
	});
	return { functions: rows };
}
