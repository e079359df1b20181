// Helpers of the sandbox tests and benchmark: a daemon with a private state
// directory pulling from the loopback registry, VM calls with boot-sized
// timeouts, the S-code envelope check, and the leftover checks (QEMU
// processes and VM files of one state directory).
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parseEnvelope, removeStateDir, startStack } from '../daemon.mjs';
import { InvocationError } from '../lib.mjs';

// A create boots a VM (seconds under TCG, more while other boots share the
// two cores); a cold one also pulls its image.
export const BOOT_TIMEOUT_MS = 180000;
export const CALL_TIMEOUT_MS = 60000;

const TYPE = { S001: 'validation', S002: 'validation', S003: 'validation', S004: 'validation', S100: 'config',
	S200: 'execution', S300: 'platform', S400: 'config' };

// The contract's envelope members, in the order they come.
export const ENVELOPE_KEYS = ['type', 'code', 'message', 'docs_url', 'retryable', 'fix', 'fix_note'];
// S200's envelope also carries what the command had printed by its deadline.
export const PRINTED_KEYS = ['stdout', 'stderr', 'stdout_truncated', 'stderr_truncated'];

// Asserts an S-coded failure (§2.1, §2.2) as returned by stack.callError:
// the contract's envelope, plus PRINTED_KEYS (strings and booleans) for
// S200 only; returns the envelope.
export function assertScode(err, code, messageRe) {
	assert.ok(err, 'the call failed');
	assert.equal(err.code, 'invocation_failed', `outer code (message: ${err.message})`);
	const env = err.envelope;
	assert.ok(env, `"handler error: {json}" message: ${err.message}`);
	assert.deepEqual(Object.keys(env), code === 'S200' ? [...ENVELOPE_KEYS, ...PRINTED_KEYS] : ENVELOPE_KEYS,
		`members of the ${env.code} envelope`);
	if (code === 'S200') {
		for (const k of ['stdout', 'stderr']) assert.equal(typeof env[k], 'string', k);
		for (const k of ['stdout_truncated', 'stderr_truncated']) assert.equal(typeof env[k], 'boolean', k);
	}
	assert.equal(env.code, code, `S-code (message: ${env.message})`);
	assert.equal(env.type, TYPE[code], `type of ${code}`);
	assert.equal(env.retryable, false);
	assert.match(env.docs_url, new RegExp(`#${code}$`));
	if (messageRe) assert.match(env.message, messageRe);
	return env;
}

export const b64 = (s) => Buffer.from(s).toString('base64');
export const UUID_V4 = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

// Starts a daemon whose III_SANDBOX_STATE_DIR is ours (kept after it exits,
// for the leftover checks), with the registry as docker.io mirror.  With
// seedFrom, the image cache of that state directory is hard-linked in first,
// so this daemon does not pull again.  stack.boots counts successful VM boots
// (create, run) made through stack.vm.  With spawnOptions {uid, gid} the
// daemon runs as that user, owning its state directory.  With stateDir, the
// daemon takes that state directory as it is (another daemon's, stopped).
// The standby VM (config standby, on by default: a QEMU launched ahead for
// the next create) is off unless `standby` is true or the config names it,
// so that the tests counting a daemon's QEMU processes and VM files count
// its sandboxes only; templates.test.mjs tests the standby, the benchmarks
// run with it.  `env` adds to the daemon's environment.
// SANDBOX_E2E_FRONT=N starts N members behind a front instead (issue 28,
// lib/cluster-stack.mjs: startFrontStack), which answer like one daemon.
export async function startSandboxStack(options = {}) {
	const front = process.env.SANDBOX_E2E_FRONT;
	if (front) {
		assert.match(front, /^[1-9]$/, 'SANDBOX_E2E_FRONT is the number of members, 1-9');
		const { startFrontStack } = await import('./cluster-stack.mjs');
		return startFrontStack(Number(front), options);
	}
	return startOneDaemon(options);
}

async function startOneDaemon({ registry, config = {}, seedFrom, spawnOptions, stateDir: reuse, standby = false,
	env = {} } = {}) {
	const stateDir = reuse ?? mkdtempSync(path.join(tmpdir(), 'sbx-e2e-vmstate-'));
	if (spawnOptions?.uid !== undefined) chownSync(stateDir, spawnOptions.uid, spawnOptions.gid);
	if (seedFrom && existsSync(path.join(seedFrom, 'images'))) {
		execFileSync('cp', ['-al', path.join(seedFrom, 'images'), path.join(stateDir, 'images')]);
	}
	const s = await startStack({
		config: { registry_mirrors: registry.mirrors, ...(standby ? {} : { standby: false }), ...config },
		env: { ...env, III_SANDBOX_STATE_DIR: stateDir },
		spawnOptions,
	});
	s.stateDir = stateDir;
	return withVmCalls(s, () => removeStateDir(stateDir));
}

// Adds the VM call helpers to a stack (stack.call, stack.callError):
// s.boots counts successful VM boots (create, run) made through s.vm;
// s.cleanupState runs cleanup.
export function withVmCalls(s, cleanup) {
	s.boots = 0;
	// A VM call: create and run get the boot timeout, the rest CALL_TIMEOUT_MS.
	s.vm = async (fn, payload, timeoutMs = fn === 'create' || fn === 'run' ? BOOT_TIMEOUT_MS : CALL_TIMEOUT_MS) => {
		const r = await s.call(fn, payload, { timeoutMs });
		if (fn === 'create' || fn === 'run') s.boots++;
		return r;
	};
	// A VM call that may fail: {ok: reply} or {err} with err as
	// stack.callError returns it.  A run that failed after its create step
	// booted a VM too.
	s.vmTry = async (fn, payload, timeoutMs) => {
		try {
			return { ok: await s.vm(fn, payload, timeoutMs) };
		} catch (e) {
			if (!(e instanceof InvocationError)) throw e;
			const envelope = parseEnvelope(e);
			if (fn === 'run' && envelope?.fix?.sandbox_id) s.boots++;
			return { err: { code: e.code, message: e.message.slice(e.code.length + 2), envelope } };
		}
	};
	// The error of a VM call that must fail.
	s.vmError = async (fn, payload, timeoutMs) => {
		const { ok, err } = await s.vmTry(fn, payload, timeoutMs);
		if (err) return err;
		return assert.fail(`${fn} ${JSON.stringify(payload)} succeeded: ${JSON.stringify(ok)}`);
	};
	s.exec = (sandbox_id, req, timeoutMs) => s.vm('exec', { sandbox_id, ...req }, timeoutMs);
	s.listed = async (id) => (await s.vm('list', {})).sandboxes.find((x) => x.sandbox_id === id);
	s.cleanupState = cleanup;
	return s;
}

// Processes whose command line mentions dir (QEMU's holds its disks' paths).
export function processesMentioning(dir) {
	const found = [];
	for (const pid of readdirSync('/proc').filter((p) => /^\d+$/.test(p))) {
		let cmdline;
		try {
			cmdline = readFileSync(`/proc/${pid}/cmdline`, 'utf8').replaceAll('\0', ' ').trim();
		} catch {
			continue; // exited meanwhile
		}
		if (Number(pid) !== process.pid && cmdline.includes(dir)) found.push({ pid: Number(pid), cmdline });
	}
	return found;
}

// Files and directories left under <stateDir>/vms (scratch disks, sockets, logs).
export function vmFilesLeft(stateDir) {
	const vms = path.join(stateDir, 'vms');
	if (!existsSync(vms)) return [];
	return readdirSync(vms, { recursive: true }).map((f) => path.join(vms, f));
}

// Asserts that no QEMU process and no VM file of stateDir remains.
export function assertNoVmLeft(stateDir, what) {
	const procs = processesMentioning(stateDir).filter((p) => /qemu-system/.test(p.cmdline));
	assert.deepEqual(procs, [], `${what}: QEMU processes of ${stateDir} still running`);
	assert.deepEqual(vmFilesLeft(stateDir), [], `${what}: VM files left in ${stateDir}/vms`);
}
