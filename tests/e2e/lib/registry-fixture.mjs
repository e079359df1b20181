// The loopback OCI registry the sandbox tests and benchmark pull from:
// Debian's docker-registry on 127.0.0.1, holding the python and node test
// images (Debian bookworm trees with python3 / nodejs) as iiidev/python:latest
// and iiidev/node:latest, so a config with
//   registry_mirrors: {"docker.io": registry.url}
// makes the `python` and `node` presets resolve to it.  iiidev/pyw:latest
// is the python image with a WorkingDir and its own PATH (WORKDIR_IMAGE), for
// checks that the image config reaches the sandbox.
//
//   const reg = await startRegistry();   // throws FixtureUnavailable when it cannot run here
//   ... reg.url, reg.mirrors ...
//   await reg.stop();
//
// The trees and OCI layouts are built once under .cache/fixtures/ (the trees
// by debootstrap, minutes; later runs reuse them).  Needs root, debootstrap,
// skopeo, docker-registry, zstd.
import { execFileSync, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
export const REPO = path.resolve(here, '../../..');
const FIXTURES = path.join(REPO, 'tests/fixtures');
const CACHE = path.join(REPO, '.cache/fixtures');
// Image name -> the Debian package that makes it.
const IMAGES = { python: 'python3', node: 'nodejs' };
const TOOLS = ['debootstrap', 'skopeo', 'docker-registry', 'zstd', 'curl'];

// Why the fixture cannot run on this machine; tests skip with this reason.
export class FixtureUnavailable extends Error {}

function onPath(tool) {
	return spawnSync('sh', ['-c', `command -v ${tool}`], { stdio: 'ignore' }).status === 0;
}

// Why the registry cannot run here, or null.
export function registryUnavailable() {
	if (process.getuid?.() !== 0) return 'needs root (image ownership in the test layers)';
	const missing = TOOLS.filter((t) => !onPath(t));
	return missing.length ? `missing tools: ${missing.join(', ')} (scripts/setup installs them)` : null;
}

function run(cmd, args, what) {
	try {
		return execFileSync(cmd, args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], maxBuffer: 1 << 24 });
	} catch (e) {
		throw new Error(`${what} failed (exit ${e.status}): ${e.stderr || e.message}`);
	}
}

// Builds (or reuses) the tree and OCI layout of one image; returns the layout.
// The layouts live in their own directory: .cache/fixtures/images/ holds the
// integration tests' erofs images, whose stamps use the same names.
export function ociLayout(name) {
	const rootfs = path.join(CACHE, 'rootfs');
	run(path.join(FIXTURES, 'rootfs/debian-rootfs.sh'), [name, rootfs, IMAGES[name]], `debootstrap of the ${name} tree`);
	const oci = path.join(CACHE, 'oci');
	run(path.join(FIXTURES, 'images/build-oci.sh'), [name, path.join(rootfs, name), oci], `OCI layout of ${name}`);
	return path.join(oci, name);
}

// The python image's config changes of iiidev/pyw:latest.
export const WORKDIR_IMAGE = {
	ref: 'docker.io/iiidev/pyw:latest',
	workdir: '/opt/sbx',
	path: '/opt/sbx/bin:/usr/local/bin:/usr/bin:/bin',
};

// Writes an OCI layout at dir: base's layers (symlinked) under a new config
// and manifest, with `patch` merged into the config's "config" object.
function deriveLayout(base, dir, patch) {
	const blob = (digest) => path.join(base, 'blobs/sha256', digest.slice('sha256:'.length));
	const index = JSON.parse(readFileSync(path.join(base, 'index.json'), 'utf8'));
	const manifest = JSON.parse(readFileSync(blob(index.manifests[0].digest), 'utf8'));
	const config = JSON.parse(readFileSync(blob(manifest.config.digest), 'utf8'));
	mkdirSync(path.join(dir, 'blobs/sha256'), { recursive: true });
	const put = (text) => {
		const hex = createHash('sha256').update(text).digest('hex');
		writeFileSync(path.join(dir, 'blobs/sha256', hex), text);
		return { digest: `sha256:${hex}`, size: Buffer.byteLength(text) };
	};
	for (const l of manifest.layers) symlinkSync(blob(l.digest), path.join(dir, 'blobs/sha256', l.digest.slice(7)));
	config.config = { ...config.config, ...patch };
	manifest.config = { ...manifest.config, ...put(JSON.stringify(config)) };
	index.manifests[0] = { ...index.manifests[0], ...put(JSON.stringify(manifest)) };
	writeFileSync(path.join(dir, 'index.json'), JSON.stringify(index));
	writeFileSync(path.join(dir, 'oci-layout'), '{"imageLayoutVersion":"1.0.0"}');
}

export function freePort() {
	return new Promise((resolve, reject) => {
		const srv = net.createServer();
		srv.once('error', reject);
		srv.listen(0, '127.0.0.1', () => {
			const { port } = srv.address();
			srv.close(() => resolve(port));
		});
	});
}

// `derived` adds images made from one of `images` with a patched config:
// [{name, from, patch}] (pushed as iiidev/<name>:latest).
export async function startRegistry({ images = Object.keys(IMAGES), derived = [] } = {}) {
	const why = registryUnavailable();
	if (why) throw new FixtureUnavailable(why);
	const layouts = images.map((name) => [name, ociLayout(name)]);
	const work = mkdtempSync(path.join(tmpdir(), 'sbx-e2e-registry-'));
	const port = await freePort();
	let pid;
	try {
		const python = layouts.find(([name]) => name === 'python');
		if (python) {
			deriveLayout(python[1], path.join(work, 'pyw'),
				{ WorkingDir: WORKDIR_IMAGE.workdir, Env: [`PATH=${WORKDIR_IMAGE.path}`] });
			layouts.push(['pyw', path.join(work, 'pyw')]);
		}
		for (const d of derived) {
			deriveLayout(layouts.find(([name]) => name === d.from)[1], path.join(work, d.name), d.patch);
			layouts.push([d.name, path.join(work, d.name)]);
		}
		pid = Number(run(path.join(FIXTURES, 'images/start-registry.sh'), [path.join(work, 'reg'), String(port)],
			'starting docker-registry').trim());
		for (const [name, layout] of layouts) {
			run('skopeo', ['copy', '-q', `oci:${layout}:latest`, `docker://127.0.0.1:${port}/iiidev/${name}:latest`,
				'--dest-tls-verify=false'], `pushing ${name}`);
		}
	} catch (e) {
		if (pid) process.kill(pid, 'SIGKILL');
		rmSync(work, { recursive: true, force: true });
		throw e;
	}
	const url = `http://127.0.0.1:${port}`;
	return {
		port, url,
		mirrors: { 'docker.io': url },
		async stop() {
			try {
				process.kill(pid, 'SIGTERM');
			} catch {
				// already gone
			}
			rmSync(work, { recursive: true, force: true });
		},
	};
}
