// Helpers shared by the e2e tests: iii-sdk clients with telemetry off, a raw
// WebSocket peer for frames the SDK would never send, and small waits.
import { WebSocket } from 'ws';

process.env.OTEL_ENABLED = 'false';
// iii-sdk announces every (re)connect with console.debug; keep TAP output clean.
console.debug = () => {};

const { registerWorker, InvocationError } = await import('iii-sdk');
export { InvocationError };

export const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

// An iii-sdk client: fast reconnects, no telemetry, a short default timeout.
export function sdkClient(url, workerName, options = {}) {
	return registerWorker(url, {
		workerName,
		invocationTimeoutMs: 5000,
		otel: { enabled: false },
		enableMetricsReporting: false,
		reconnectionConfig: { initialDelayMs: 100, maxDelayMs: 500, backoffMultiplier: 2, jitterFactor: 0, maxRetries: -1 },
		...options,
	});
}

// Resolves with fn()'s value once it stops throwing, retrying every 100 ms.
export async function eventually(fn, timeoutMs = 10000) {
	const deadline = Date.now() + timeoutMs;
	for (;;) {
		try {
			return await fn();
		} catch (e) {
			if (Date.now() > deadline) throw e;
			await sleep(100);
		}
	}
}

// A bare WebSocket peer that records every JSON frame it receives.
export async function rawPeer(url) {
	const ws = new WebSocket(url);
	const peer = { ws, received: [], closed: false };
	ws.on('message', (data) => peer.received.push(JSON.parse(data.toString())));
	ws.on('close', () => { peer.closed = true; });
	await new Promise((resolve, reject) => {
		ws.once('open', resolve);
		ws.once('error', reject);
	});
	peer.send = (msg) => ws.send(typeof msg === 'string' ? msg : JSON.stringify(msg));
	peer.waitFor = async (pred, timeoutMs = 5000) => eventually(() => {
		const m = peer.received.find(pred);
		if (!m) throw new Error(`raw peer: no matching frame among ${JSON.stringify(peer.received)}`);
		return m;
	}, timeoutMs);
	peer.registered = await peer.waitFor((m) => m.type === 'workerregistered');
	return peer;
}

// Upgrade outcome of a WebSocket URL: 'open', then 'closed' if the server
// closes it at once, or the HTTP status of a refused upgrade.
export function probeUpgrade(url) {
	return new Promise((resolve) => {
		const ws = new WebSocket(url);
		ws.on('unexpected-response', (req, res) => resolve(res.statusCode));
		ws.on('error', () => {});
		ws.on('open', () => ws.on('close', () => resolve('closed')));
	});
}
