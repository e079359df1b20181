// Reading the daemon's /metrics (docs/metrics.md) in the e2e tests.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import http from 'node:http';

// One HTTP request to the endpoint: {port} or {socketPath}.
export function request(target, { method = 'GET', path: p = '/metrics' } = {}) {
	return new Promise((resolve, reject) => {
		const req = http.request({ host: '127.0.0.1', ...target, method, path: p }, (res) => {
			let body = '';
			res.setEncoding('utf8');
			res.on('data', (d) => { body += d; });
			res.on('end', () => resolve({ status: res.statusCode, type: res.headers['content-type'], body }));
		});
		req.on('error', reject);
		req.end(method === 'POST' ? 'x=1' : undefined);
	});
}

// The samples of an exposition: "name{a=\"x\",b=\"y\"}" -> value, labels
// sorted as rendered.
export function samples(text) {
	const out = new Map();
	for (const line of text.split('\n')) {
		if (line === '' || line.startsWith('#')) continue;
		const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{.*\})? (\S+)$/.exec(line);
		assert.ok(m, `sample line: ${line}`);
		out.set(m[1] + (m[2] ?? ''), Number(m[3]));
	}
	return out;
}

export async function scrape(target) {
	const r = await request(target);
	assert.equal(r.status, 200, r.body);
	assert.equal(r.type, 'text/plain; version=0.0.4; charset=utf-8');
	return r;
}

export const value = (s, key) => s.get(key) ?? 0;
export const sumOf = (s, prefix) => [...s].filter(([k]) => k.startsWith(prefix)).reduce((a, [, v]) => a + v, 0);

export function promtool(text) {
	const r = spawnSync('promtool', ['check', 'metrics'], { input: text, encoding: 'utf8' });
	assert.ok(!r.error, `promtool (Debian's prometheus, scripts/setup): ${r.error?.message}`);
	assert.equal(r.status, 0, `promtool check metrics:\n${r.stdout}${r.stderr}\n---\n${text}`);
}
