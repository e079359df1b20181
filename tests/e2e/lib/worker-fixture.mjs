// Helpers of the Compose worker test and benchmark: a Node worker directory
// holding iii-sdk.
import { cpSync, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));

// Copies iii-sdk and what it loads into dest/node_modules, without the type
// declarations, source maps, tests and duplicate module builds: the guest
// copies a path:// worker's directory at a start after it changed, under TCG.
export function copySdk(dest) {
	const src = path.resolve(here, '../node_modules');
	const keep = (p) => {
		const rel = path.relative(src, p);
		if (/(^|\/)(test|@types)(\/|$)|\/build\/(esm|esnext)(\/|$)|\.d\.ts$/.test(rel)) return false;
		return statSync(p).isDirectory() || /\.(m?js|cjs|json)$/.test(p);
	};
	cpSync(src, path.join(dest, 'node_modules'), { recursive: true, filter: keep, dereference: true });
}

// A Node worker using iii-sdk that registers `fnId`, answering with `body`
// (JavaScript source of an async function body).  The test image's Node is
// 18, whose ESM has no global `crypto`; iii-sdk uses it.
export function sdkWorkerSource(fnId, body, extra = '') {
	return `process.env.OTEL_ENABLED = 'false';
import { webcrypto } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
globalThis.crypto ??= webcrypto;
const { registerWorker } = await import('iii-sdk');
const iii = registerWorker(process.env.III_URL, {
	workerName: process.env.III_WORKER_NAME, otel: { enabled: false }, enableMetricsReporting: false,
	reconnectionConfig: { initialDelayMs: 100, maxDelayMs: 500, backoffMultiplier: 2, jitterFactor: 0, maxRetries: -1 },
});
iii.registerFunction(${JSON.stringify(fnId)}, async () => { ${body} });
${extra}
`;
}
