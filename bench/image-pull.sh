#!/usr/bin/env bash
# Benchmark: pull + convert of the python test image from a loopback
# registry (through registry_mirrors), then the same pull again, which only
# checks the manifest and finds the stored image (both --no-template), then
# the pull of the stored image that makes its VM template (one cold boot
# and the save), then ensure() on its own (bench/image_ensure.c: the cache
# hit every sandbox create pays).
# Usage: bench/image-pull.sh [BUILD_DIR]   (root; needs the python rootfs
# fixture: tests/fixtures/rootfs/debian-rootfs.sh python .cache/fixtures/rootfs python3)
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$repo/build}
bin=$build/sandbox-libkrun
rootfs=$repo/.cache/fixtures/rootfs/python
[ -d "$rootfs" ] || { echo "no python rootfs at $rootfs" >&2; exit 1; }
"$repo/tests/fixtures/images/build-oci.sh" python "$rootfs" "$repo/.cache/fixtures/images"
work=$(mktemp -d /tmp/sbx-image-bench.XXXXXX)
pid=
# The template's RAM directory on /dev/shm names the state directory.
remove_template_ram() {
	local d real
	real=$(realpath "$work/state" 2>/dev/null) || return 0
	for d in /dev/shm/sandbox-libkrun-*; do
		[ "$(cat "$d/owner" 2>/dev/null)" = "$real" ] && rm -rf "$d"
	done
	return 0
}
trap '[ -n "$pid" ] && kill $pid; remove_template_ram; rm -rf "$work"' EXIT
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
pid=$("$repo/tests/fixtures/images/start-registry.sh" "$work/reg" "$port")
skopeo copy -q oci:"$repo/.cache/fixtures/images/python":latest docker://127.0.0.1:$port/iiidev/python:latest --dest-tls-verify=false
echo "{\"registry_mirrors\": {\"docker.io\": \"http://127.0.0.1:$port\"}}" >"$work/config.json"
export III_SANDBOX_STATE_DIR=$work/state
ms() { date +%s%3N; }
t0=$(ms)
"$bin" image --config "$work/config.json" pull --no-template --json python >"$work/out"
t1=$(ms)
"$bin" image --config "$work/config.json" pull --no-template python >/dev/null
t2=$(ms)
"$bin" image --config "$work/config.json" pull python >/dev/null 2>"$work/template"
t3=$(ms)
# pull --json prints the image as one JSON object (ls --json's fields)
read -r digest size < <(python3 -c 'import json, sys; i = json.load(open(sys.argv[1])); print(i["digest"], i["size"])' "$work/out")
echo "image python: $digest, erofs $((size / 1048576)) MiB"
echo "cold pull + convert: $((t1 - t0)) ms"
echo "warm pull (manifest check, stored image found): $((t2 - t1)) ms"
echo "warm pull + VM template ($(sed -n 's/.*the template of python: //p' "$work/template")): $((t3 - t2)) ms"
"$build/bench/image_ensure_bench" "$work/config.json" python 2000
