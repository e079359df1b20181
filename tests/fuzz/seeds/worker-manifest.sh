#!/usr/bin/env bash
# Seeds for fuzz_worker_manifest, written into DIR (default
# tests/fuzz/corpus/fuzz_worker_manifest) under their SHA-1 as libFuzzer
# names corpus files.  The first byte of each is the target's selector
# (bit 0: bundle rules), the rest an iii.worker.yaml: full and minimal
# manifests, every key and memory form, and hostile ones (aliases, the
# billion laughs, duplicate keys, deep nesting, complex keys, tags, many
# documents).
set -euo pipefail
repo=$(cd "$(dirname "$0")/../../.." && pwd)
out=${1:-$repo/tests/fuzz/corpus/fuzz_worker_manifest}
mkdir -p "$out"
seed() { # seed SELECTOR TEXT
	local f
	f=$(mktemp)
	printf '%s%s' "$1" "$2" >"$f"
	mv "$f" "$out/$(sha1sum "$f" | cut -d' ' -f1)"
}
seed p 'name: demo
description: a demo worker
runtime:
  base_image: docker.io/library/node:20
scripts:
  setup: apt-get update
  install: npm ci
  start: node main.js
env:
  NODE_VERSION: 20.10
  DEBUG: true
  EMPTY:
resources:
  cpus: 1.5
  memory: 1Gi
iii: {functions: [a, b]}
deploy: {replicas: 2}
manifest: 1
tags: [x, y]
dependencies: {other: ^1.0}
'
seed a 'name: bundle
scripts: {start: node index.js}
resources: {cpus: "500m", memory: "536870912"}
'
seed a 'scripts: {install: npm ci}'
seed p 'resources: {memory: 2048Ki, cpus: 64}'
seed p 'a: &a [lol, lol, lol, lol]
b: &b [*a, *a, *a, *a]
c: [*b, *b, *b, *b]
'
seed p 'env: {A: 1, A: 2}'
seed p '? [complex, key]
: 1
'
seed p 'name: !!str 5
description: !custom x
'
seed p 'name: a
---
name: b
'
seed p '[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]'
seed p 'scripts: |
  literal
env: >
  folded
'
seed p "name: 'quoted'
description: \"dq \\u00e9 \\x41\"
"
