// Cheap calls under load: 2000 concurrent adapter::info calls through the
// engine are all answered (calls past the handler threads wait in the
// daemon's queue instead of failing), and list keeps answering while long
// calls hold the daemon's threads.  No VM is booted.
import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startStack } from './daemon.mjs';

describe('a daemon under a burst of calls', () => {
	let s;
	before(async () => {
		s = await startStack({ config: { image_allowlist: ['python'] } });
	});
	after(() => s?.stop());

	test('2000 concurrent adapter::info calls are all answered', async () => {
		const results = await Promise.allSettled(Array.from({ length: 2000 }, () => s.call('adapter::info', {},
			{ timeoutMs: 120000 })));
		const failed = results.filter((r) => r.status === 'rejected').map((r) => r.reason.message);
		assert.deepEqual(failed.slice(0, 5), [], `${failed.length} of 2000 failed`);
		for (const r of results) assert.equal(r.value.adapter, 'sandbox-libkrun');
	});

	test('the daemon still answers list after the burst, and exits cleanly', async () => {
		assert.deepEqual(await s.call('list', {}), { sandboxes: [] });
		await s.stopClean();
	});
});
