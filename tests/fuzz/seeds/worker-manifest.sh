#!/usr/bin/env bash
# Seeds for fuzz_worker_manifest, written into DIR (default
# tests/fuzz/corpus/fuzz_worker_manifest) as seed-<what>.  The first byte
# of each is the target's selector
# (bit 0: bundle rules), the rest an iii.worker.yaml: full and minimal
# manifests, every key and memory form, and hostile ones (aliases, the
# billion laughs, duplicate keys, deep nesting, complex keys, tags, many
# documents).
set -euo pipefail
repo=$(cd "$(dirname "$0")/../../.." && pwd)
out=${1:-$repo/tests/fuzz/corpus/fuzz_worker_manifest}
mkdir -p "$out"
seed() { # seed NAME SELECTOR TEXT
	printf '%s%s' "$2" "$3" >"$out/seed-$1"
}
seed full p 'name: demo
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
seed bundle a 'name: bundle
scripts: {start: node index.js}
resources: {cpus: "500m", memory: "536870912"}
'
seed bundle-install a 'scripts: {install: npm ci}'
seed memory-ki p 'resources: {memory: 2048Ki, cpus: 64}'
seed billion-laughs p 'a: &a [lol, lol, lol, lol]
b: &b [*a, *a, *a, *a]
c: [*b, *b, *b, *b]
'
seed duplicate-env p 'env: {A: 1, A: 2}'
seed complex-key p '? [complex, key]
: 1
'
seed tags p 'name: !!str 5
description: !custom x
'
seed two-documents p 'name: a
---
name: b
'
seed deep p '[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]'
seed block-scalars p 'scripts: |
  literal
env: >
  folded
'
seed quoted p "name: 'quoted'
description: \"dq \\u00e9 \\x41\"
"
