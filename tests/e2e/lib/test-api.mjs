// node:test's describe, test, it and hooks, with one change: a skipped
// describe still lists its tests, each reported as skipped with the
// describe's reason, so that the TAP summary (and scripts/test's final
// line) counts every test that did not run.  Node 20 reports a skipped
// describe as one suite holding nothing ("# skipped 0").  Inside a skipped
// describe the hooks are not registered (no registry, no VM is started
// for tests that do not run) and nested describes are skipped with it.
// The daemon's test files import these instead of node:test's
// (harness.test.mjs checks it).
import * as nodeTest from 'node:test';

// The reasons of the skipped describes being built, innermost last.  A
// describe's function runs synchronously when it is declared, so the
// tests declared while a reason is on the stack are its tests.
const skipping = [];

// node:test's arguments: ([name], [options], [fn]).
function parts(args) {
	let name, fn, options = {};
	for (const a of args) {
		if (typeof a === 'string') name = a;
		else if (typeof a === 'function') fn = a;
		else if (a && typeof a === 'object') options = a;
	}
	return { name, options, fn };
}

const reasonOf = (skip) => (skip === true ? 'skipped' : skip || null);

export function describe(...args) {
	const { name, options, fn } = parts(args);
	const reason = skipping.at(-1) ?? reasonOf(options.skip);
	if (!reason) return nodeTest.describe(...args);
	const { skip: _skip, ...rest } = options;
	return nodeTest.describe(name, rest, () => {
		skipping.push(reason);
		try {
			fn?.();
		} finally {
			skipping.pop();
		}
	});
}

export function test(...args) {
	const reason = skipping.at(-1);
	if (!reason) return nodeTest.test(...args);
	const { name, options } = parts(args);
	return nodeTest.test(name, { ...options, skip: reason }, () => {});
}

export const it = test;

// A hook inside a skipped describe is not registered.
const hook = (register) => (...args) => (skipping.length ? undefined : register(...args));
export const before = hook(nodeTest.before);
export const after = hook(nodeTest.after);
export const beforeEach = hook(nodeTest.beforeEach);
export const afterEach = hook(nodeTest.afterEach);
