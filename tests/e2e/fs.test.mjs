// Files inside a live sandbox (contract §7.8-§7.18) end to end: the ten
// fs::* functions through the stand-in engine with iii-sdk, bytes through
// engine channels with iii-sdk's ChannelReader/ChannelWriter.  One python
// sandbox serves every check (boots are slow under TCG).
import { describe, test, before, after } from './lib/test-api.mjs';
import assert from 'node:assert/strict';
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { ChannelReader, ChannelWriter } from 'iii-sdk/channel';
import { registryUnavailable, startRegistry } from './lib/registry-fixture.mjs';
import { startSandboxStack } from './lib/sandbox-stack.mjs';

const MIB = 1048576;
const FS_TYPE = { S001: 'validation', S002: 'validation', S218: 'transient' };
const sha256 = (b) => createHash('sha256').update(b).digest('hex');

// An fs error envelope: code, type, retryable and fix as the contract pins them.
function assertFsError(err, code, messageRe) {
	const env = err.envelope;
	assert.ok(env, `S-coded error expected, got ${err.message}`);
	assert.equal(env.code, code, `S-code (message: ${env.message})`);
	assert.equal(env.type, FS_TYPE[code] ?? 'filesystem');
	assert.equal(env.retryable, code === 'S218');
	assert.match(env.docs_url, new RegExp(`#${code}$`));
	if (messageRe) assert.match(env.message, messageRe);
	return env;
}

const skip = registryUnavailable();

describe('fs::* on a live sandbox', { skip: skip ?? false }, () => {
	let reg, s, id, url;
	const fs = (op, payload, timeoutMs) => s.vm(`fs::${op}`, { sandbox_id: id, ...payload }, timeoutMs);
	const fsError = (op, payload) => s.vmError(`fs::${op}`, { sandbox_id: id, ...payload });
	// The bytes behind a reader ref, and the channel's text frames.
	const readChannel = async (ref) => {
		const reader = new ChannelReader(url, ref);
		const texts = [];
		reader.onMessage((m) => texts.push(m));
		const bytes = await reader.readAll();
		return { bytes, texts };
	};
	// Creates a channel, streams `chunks` into its writer end (then an error
	// frame when `fail`), and returns the reader ref for fs::write.
	const upload = async (chunks, { fail } = {}) => {
		const ch = await s.caller.trigger({ function_id: 'engine::channels::create', payload: { buffer_size: 64 } });
		const writer = new ChannelWriter(url, ch.writer);
		(async () => {
			for (const c of chunks) {
				if (!writer.stream.write(c)) await new Promise((r) => writer.stream.once('drain', r));
			}
			if (fail) writer.sendMessage(JSON.stringify({ error: 'caller gave up' }));
			writer.stream.end();
		})();
		return ch.reader;
	};

	before(async () => {
		reg = await startRegistry();
		s = await startSandboxStack({ registry: reg, config: { image_allowlist: ['python'] } });
		url = s.engine.url;
		id = (await s.vm('create', { image: 'python' })).sandbox_id;
	});
	after(async () => {
		await s?.stop();
		await reg?.stop();
		s?.cleanupState();
	});

	test('write (string, base64) then read: body inline, same bytes on the channel (§7.17, §7.18)', async () => {
		assert.deepEqual(await fs('write', { path: '/tmp/t/a.txt', content: 'hello\n', parents: true }),
			{ bytes_written: 6, path: '/tmp/t/a.txt' });
		const r = await fs('read', { path: '/tmp/t/a.txt' });
		assert.equal(r.body, 'hello\n');
		assert.equal(r.size, 6);
		assert.equal(r.mode, '0644');
		assert.ok(Math.abs(r.mtime - Date.now() / 1000) < 3600, `mtime ${r.mtime}`);
		assert.equal(r.content.direction, 'read');
		assert.equal((await readChannel(r.content)).bytes.toString(), 'hello\n');

		await fs('write', { path: '/tmp/t/bin', content_b64: Buffer.from([0x41, 0xff, 0x00, 0x42]).toString('base64'),
			mode: '0600' });
		const b = await fs('read', { path: '/tmp/t/bin' });
		assert.ok(!('body' in b), 'no body for bytes that are not UTF-8 (§10 vector 20)');
		assert.equal(b.mode, '0600');
		assert.deepEqual([...(await readChannel(b.content)).bytes], [0x41, 0xff, 0x00, 0x42]);

		await fs('write', { path: '/tmp/t/empty', content: '' });
		const e = await fs('read', { path: '/tmp/t/empty' });
		assert.equal(e.body, '');
		assert.equal(e.size, 0);
		assert.equal((await readChannel(e.content)).bytes.length, 0);
	});

	test('write S211 with fix {parents:true}; the merged request succeeds (§10 vector 14)', async () => {
		const err = await fsError('write', { path: '/a/b/c.txt', content: 'x' });
		const env = assertFsError(err, 'S211', /^parent directory not found: .*\/a\/b/);
		assert.deepEqual(env.fix, { parents: true });
		assert.equal(typeof env.fix_note, 'string');
		assert.deepEqual(await fs('write', { path: '/a/b/c.txt', content: 'x', ...env.fix }),
			{ bytes_written: 1, path: '/a/b/c.txt' });
	});

	test('write: body shape first (S001 even for an unknown sandbox), then S002, S210, S216 (§7.17)', async () => {
		const both = await s.vmError('fs::write', { sandbox_id: randomUUID(), path: '/x', content: 'a', content_b64: 'YQ==' });
		assertFsError(both, 'S001', /not both/);
		assertFsError(await fsError('write', { path: '/x' }), 'S001', /missing file body/);
		assertFsError(await fsError('write', { path: '/x', content_b64: '!!!' }), 'S001', /not valid base64/);
		assertFsError(await s.vmError('fs::write', { sandbox_id: randomUUID(), path: '/x', content: 'a' }), 'S002');
		assertFsError(await s.vmError('fs::ls', { sandbox_id: 'nope', path: '/' }), 'S001');
		assertFsError(await fsError('write', { path: '/x', content: 'a', mode: '0999' }), 'S210', /invalid octal mode/);
		assertFsError(await fsError('write', { path: '/tmp', content: 'a' }), 'S216', /\/tmp/);
	});

	test('ls, stat, mkdir, chmod, mv, rm and their error codes (§7.9-§7.14)', async () => {
		assert.deepEqual(await fs('mkdir', { path: '/tmp/d/e', parents: true, mode: '0700' }), { created: true });
		assert.deepEqual(await fs('mkdir', { path: '/tmp', parents: true }), { created: false });
		assertFsError(await fsError('mkdir', { path: '/tmp' }), 'S213', /\/tmp/);
		const miss = assertFsError(await fsError('mkdir', { path: '/nox/y' }), 'S211', /\/nox\/y/);
		assert.equal(miss.fix, null, 'mkdir gives no fix (§7.11)');
		assertFsError(await fsError('mkdir', { path: '/tmp/q', mode: 'rwx' }), 'S210');

		const st = await fs('stat', { path: '/tmp/d/e' });
		assert.deepEqual(Object.keys(st).sort(), ['is_dir', 'is_symlink', 'mode', 'mtime', 'name', 'size']);
		assert.equal(st.name, 'e');
		assert.equal(st.is_dir, true);
		assert.equal(st.mode, '0700');
		assert.equal((await fs('stat', { path: '/' })).name, '/');
		assertFsError(await fsError('stat', { path: '/tmp/none' }), 'S211', /\/tmp\/none/);

		await fs('write', { path: '/tmp/d/f.txt', content: '12345' });
		const { entries } = await fs('ls', { path: '/tmp/d' });
		assert.deepEqual(entries.map((x) => x.name).sort(), ['e', 'f.txt']);
		const f = entries.find((x) => x.name === 'f.txt');
		assert.deepEqual({ ...f, mtime: 0 }, { name: 'f.txt', is_dir: false, size: 5, mode: '0644', mtime: 0,
			is_symlink: false });
		assertFsError(await fsError('ls', { path: '/tmp/d/f.txt' }), 'S212');
		assertFsError(await fsError('ls', { path: '/tmp/nodir' }), 'S211');

		assert.deepEqual(await fs('chmod', { path: '/tmp/d', mode: '750', recursive: true }), { updated: 3 });
		assert.equal((await fs('stat', { path: '/tmp/d/f.txt' })).mode, '0750');
		assertFsError(await fsError('chmod', { path: '/tmp/d', mode: '8' }), 'S210', /invalid octal mode: 8/);
		assertFsError(await fsError('chmod', { path: '/tmp/zz', mode: '644' }), 'S211');
		// Root may chmod most of procfs (/proc/version just changes), but
		// never a process directory: the kernel answers EPERM -> S215.
		assertFsError(await fsError('chmod', { path: '/proc/1', mode: '777' }), 'S215', /\/proc\/1\b/);

		assert.deepEqual(await fs('mv', { src: '/tmp/d/f.txt', dst: '/tmp/d/g.txt' }), { moved: true });
		await fs('write', { path: '/tmp/d/h.txt', content: 'h' });
		assertFsError(await fsError('mv', { src: '/tmp/d/g.txt', dst: '/tmp/d/h.txt' }), 'S213', /h\.txt/);
		assert.deepEqual(await fs('mv', { src: '/tmp/d/g.txt', dst: '/tmp/d/h.txt', overwrite: true }), { moved: true });
		assertFsError(await fsError('mv', { src: '/tmp/d/g.txt', dst: '/tmp/x' }), 'S211', /g\.txt/);

		assertFsError(await fsError('rm', { path: '/tmp/d' }), 'S214', /\/tmp\/d/);
		assert.deepEqual(await fs('rm', { path: '/tmp/d', recursive: true }), { removed: true });
		assertFsError(await fsError('rm', { path: '/tmp/d' }), 'S211');
		assertFsError(await fsError('read', { path: '/tmp' }), 'S212', /\/tmp/);
		assertFsError(await fsError('read', { path: '/tmp/none' }), 'S211', /\/tmp\/none/);
	});

	test('grep and sed: options and S210/S217 (§7.15, §7.16, §10 vectors 18-19)', async () => {
		await fs('write', { path: '/tmp/g/one.py', content: 'alpha\nbeta\nALPHA beta\n', parents: true });
		await fs('write', { path: '/tmp/g/sub/two.txt', content: 'alpha two\n', parents: true });
		let r = await fs('grep', { path: '/tmp/g', pattern: 'alpha' });
		assert.deepEqual(r.matches.map((m) => `${m.path}:${m.line}:${m.content}`).sort(),
			['/tmp/g/one.py:1:alpha', '/tmp/g/sub/two.txt:1:alpha two']);
		assert.equal(r.truncated, false);
		r = await fs('grep', { path: '/tmp/g', pattern: 'alpha', ignore_case: true, include_glob: ['*.py'] });
		assert.deepEqual(r.matches.map((m) => m.line), [1, 3]);
		r = await fs('grep', { path: '/tmp/g', pattern: 'alpha', max_matches: 1 });
		assert.equal(r.matches.length, 1);
		assert.equal(r.truncated, true);
		assertFsError(await fsError('grep', { path: '/tmp/g', pattern: '(' }), 'S217');
		assertFsError(await fsError('grep', { path: '/tmp/g', pattern: 'a', recursive: false }), 'S210');
		assertFsError(await fsError('grep', { path: '/tmp/none', pattern: 'a' }), 'S211');

		assertFsError(await s.vmError('fs::sed', { sandbox_id: randomUUID(), files: ['/a'], path: '/b', pattern: 'x',
			replacement: 'y' }), 'S210', /not both/);
		assertFsError(await fsError('sed', { files: ['/tmp/g/one.py'], pattern: '', replacement: 'y', regex: false }),
			'S210', /pattern is empty/);
		r = await fs('sed', { files: ['/tmp/g/one.py', '/tmp/g/missing'], pattern: 'al(p)ha', replacement: 'A$1' });
		assert.equal(r.total_replacements, 1);
		assert.deepEqual(r.results.map((x) => [x.path, x.replacements, x.success, 'error' in x]),
			[['/tmp/g/one.py', 1, true, false], ['/tmp/g/missing', 0, false, true]]);
		// The match is the whole "alpha" and $1 is "p": the line becomes "Ap".
		assert.equal((await fs('read', { path: '/tmp/g/one.py' })).body, 'Ap\nbeta\nALPHA beta\n');
		r = await fs('sed', { path: '/tmp/g', pattern: 'beta', replacement: 'B', regex: false });
		assert.equal(r.total_replacements, 2);
	});

	test('hostile paths stay inside the guest: .., symlinks out of a directory, very long names', async () => {
		assert.equal((await fs('read', { path: '/../../../etc/hostname' })).size >= 0, true);
		await fs('mkdir', { path: '/tmp/jail', parents: true });
		await s.exec(id, { cmd: 'ln -s / /tmp/jail/out' });
		const st = await fs('stat', { path: '/tmp/jail/out' });
		assert.equal(st.is_symlink, true);
		assertFsError(await fsError('ls', { path: '/tmp/jail/out' }), 'S212');
		const g = await fs('grep', { path: '/tmp/jail', pattern: 'root' });
		assert.deepEqual(g.matches, [], 'the walk does not follow a symlink out of the tree');
		assert.deepEqual(await fs('rm', { path: '/tmp/jail/out' }), { removed: true });
		assert.ok((await fs('ls', { path: '/' })).entries.length > 3, 'rm of a link never touches its target');
		const long = `/tmp/${'n'.repeat(300)}`;
		assertFsError(await fsError('write', { path: long, content: 'x' }), 'S216');
		assertFsError(await fsError('stat', { path: `/${'d/'.repeat(3000)}` }), 'S216', /too long/);
	});

	test('fs::write from a channel: S218 when the writer aborts; the target is untouched', async () => {
		await fs('write', { path: '/tmp/keep.txt', content: 'original' });
		const ref = await upload([Buffer.from('partial')], { fail: true });
		const err = await fsError('write', { path: '/tmp/keep.txt', content: ref });
		assertFsError(err, 'S218', /^fs channel aborted: .*caller gave up/);
		assert.equal((await fs('read', { path: '/tmp/keep.txt' })).body, 'original');
	});

	test('a 100 MiB binary file through channels both ways keeps its sha256', async () => {
		const chunk = randomBytes(MIB);
		const chunks = Array.from({ length: 100 }, (_, i) => Buffer.concat([Buffer.from([i]), chunk.subarray(1)]));
		const want = sha256(Buffer.concat(chunks));
		const ref = await upload(chunks);
		assert.deepEqual(await fs('write', { path: '/tmp/big.bin', content: ref }, 600000),
			{ bytes_written: 100 * MIB, path: '/tmp/big.bin' });
		const r = await fs('read', { path: '/tmp/big.bin' });
		assert.equal(r.size, 100 * MIB);
		assert.ok(!('body' in r));
		const reader = new ChannelReader(url, r.content);
		const h = createHash('sha256');
		let n = 0;
		for await (const c of reader.stream) {
			h.update(c);
			n += c.length;
		}
		assert.equal(n, 100 * MIB);
		assert.equal(h.digest('hex'), want);
		await fs('rm', { path: '/tmp/big.bin' });
	});

	test('grep over a tree of 10 000 files', async () => {
		const script = 'import os\nfor d in range(100):\n os.makedirs(f"/tmp/tree/{d}", exist_ok=True)\n' +
			' for f in range(100):\n  open(f"/tmp/tree/{d}/{f}.txt","w").write(f"line\\nneedle {d}-{f}\\n")\n';
		await fs('write', { path: '/tmp/mk.py', content: script });
		assert.equal((await s.exec(id, { cmd: 'python3 /tmp/mk.py' }, 600000)).exit_code, 0);
		const r = await fs('grep', { path: '/tmp/tree', pattern: 'needle 7-', max_matches: 0 }, 600000);
		assert.equal(r.matches.length, 100, 'needle 7-0 .. needle 7-99');
		assert.ok(r.matches.every((m) => m.line === 2));
		const all = await fs('grep', { path: '/tmp/tree', pattern: 'needle', max_matches: 10000 }, 600000);
		assert.equal(all.matches.length, 10000);
		assert.equal(all.truncated, true);
	});

	test('an agent writes main.py, runs it, greps its output, edits it with sed and reads it back', async () => {
		await fs('write', { path: '/work/main.py', parents: true,
			content: 'with open("/work/out.txt", "w") as f:\n    for i in range(5):\n        print(f"result {i*i}", file=f)\n' });
		const run = await s.exec(id, { cmd: 'python3 /work/main.py' });
		assert.equal(run.exit_code, 0, run.stderr);
		const g = await fs('grep', { path: '/work/out.txt', pattern: 'result (9|16)' });
		assert.deepEqual(g.matches.map((m) => m.content), ['result 9', 'result 16']);
		const sed = await fs('sed', { files: ['/work/main.py'], pattern: 'range\\(5\\)', replacement: 'range(3)' });
		assert.equal(sed.total_replacements, 1);
		const back = await fs('read', { path: '/work/main.py' });
		assert.match(back.body, /range\(3\)/);
		assert.equal((await readChannel(back.content)).bytes.toString(), back.body);
	});
});
