// The engine side of tests/integration/package: a stand-in engine on PORT
// that prints one line per event the test waits for: "registered all N in
// MEMBER" once the member (sandbox-libkrun.service, III_NAMESPACE=MEMBER) has
// registered every function (the 23 and the extensions, N of them),
// "registered all N" once the front (sandbox-libkrun-front.service) has in
// the default namespace, then the result of one sandbox-libkrun::run through
// an iii-sdk caller, which the front forwards to the member ("run: {json}"
// or "run error: message").  Runs until killed.
// Usage: node package-engine.mjs PORT MEMBER
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const e2e = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../e2e');
const { StandinEngine } = await import(path.join(e2e, 'standin-engine.mjs'));
const { sdkClient, sleep } = await import(path.join(e2e, 'lib.mjs'));
const { FUNCTIONS, EXTENSIONS } = await import(path.join(e2e, 'daemon.mjs'));

const engine = new StandinEngine({ port: Number(process.argv[2]) });
await engine.start();
console.log(`listening ${engine.url}`);
const all = [...FUNCTIONS, ...EXTENSIONS];
const member = process.argv[3];
while (!all.every((id) => engine.functionsIn(member).has(id))) await sleep(50);
console.log(`registered all ${all.length} in ${member}`);
while (!all.every((id) => engine.functions.has(id))) await sleep(50);
console.log(`registered all ${all.length}`);
const caller = sdkClient(engine.url, 'package-test', { invocationTimeoutMs: 300000 });
try {
	const r = await caller.trigger({ function_id: 'sandbox-libkrun::run',
		payload: { image: 'python', lang: 'python', code: 'print(6*7)' }, timeoutMs: 300000 });
	console.log(`run: ${JSON.stringify(r)}`);
} catch (e) {
	console.log(`run error: ${e.message}`);
}
