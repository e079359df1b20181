#!/usr/bin/env bash
# Seeds for fuzz_image_registry (DIR, default
# tests/fuzz/corpus/fuzz_image_registry) and fuzz_image_manifest (DIR2,
# default tests/fuzz/corpus/fuzz_image_manifest): the index, manifest and
# config of the small fixture image (tiny-oci.sh) as a registry serves
# them, with the headers Debian's docker-registry and the fixture token
# server (tests/fixtures/images/token-server.py) send, in exchanges: bearer
# and basic challenges, redirects to blob storage, 429 / 5xx retries,
# failed transfers, short bodies, error bodies.  Needs root and zstd.
set -euo pipefail
repo=$(cd "$(dirname "$0")/../../.." && pwd)
out=${1:-$repo/tests/fuzz/corpus/fuzz_image_registry}
out_manifest=${2:-$repo/tests/fuzz/corpus/fuzz_image_manifest}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$out" "$out_manifest"
"$(dirname "$0")/tiny-oci.sh" "$work"

python3 - "$work/tiny" "$out" "$out_manifest" <<'PY'
import hashlib, json, os, sys

src, out, out_manifest = sys.argv[1:4]
SEP = b"\nSBXRESP\n"
blob = lambda d: open(os.path.join(src, "blobs/sha256", d[7:]), "rb").read()
index_raw = open(os.path.join(src, "index.json"), "rb").read()
index = json.loads(index_raw)
man_desc = index["manifests"][0]
man_raw = blob(man_desc["digest"])
man = json.loads(man_raw)
config_raw = blob(man["config"]["digest"])
layer2 = blob(man["layers"][1]["digest"])  # the small zstd layer
OCI_INDEX = "application/vnd.oci.image.index.v1+json"
OCI_MANIFEST = man_desc["mediaType"]

def resp(status, body=b"", headers=(), reason="OK", length=True):
    h = ["HTTP/1.1 %d %s" % (status, reason), "Docker-Distribution-Api-Version: registry/2.0"]
    h += list(headers)
    if length:
        h.append("Content-Length: %d" % len(body))
    return ("\r\n".join(h) + "\r\n\r\n").encode() + body

def digest_hdr(body):
    return "Docker-Content-Digest: sha256:" + hashlib.sha256(body).hexdigest()

def put(name, op, *responses):
    with open(os.path.join(out, "seed-" + name), "wb") as f:
        f.write(bytes([op]) + SEP.join(responses))

BEARER = 'WWW-Authenticate: Bearer realm="http://127.0.0.1:5001/token",service="sbx-fixture",scope="repository:team/app:pull"'
REMOTE_BEARER = 'WWW-Authenticate: Bearer realm="https://auth.registry.example/token",service="registry.example"'
token = json.dumps({"token": "eyJhbGciOiJub25lIn0.e30.", "expires_in": 300}).encode()
unauthorized = json.dumps({"errors": [{"code": "UNAUTHORIZED", "message": "authentication required",
                                       "detail": [{"Type": "repository", "Name": "team/app", "Action": "pull"}]}]}).encode()
unknown = json.dumps({"errors": [{"code": "MANIFEST_UNKNOWN", "message": "manifest unknown"}]}).encode()

put("index", 0, resp(200, index_raw, ["Content-Type: " + OCI_INDEX, digest_hdr(index_raw)]))
put("manifest-by-digest", 1, resp(200, man_raw, ["Content-Type: " + OCI_MANIFEST, digest_hdr(man_raw)]))
put("bearer-token", 0,
    resp(401, unauthorized, ["Content-Type: application/json", BEARER], "Unauthorized"),
    resp(200, token, ["Content-Type: application/json"]),
    resp(200, man_raw, ["Content-Type: " + OCI_MANIFEST, digest_hdr(man_raw)]))
put("bearer-remote-access-token", 4 | 8,
    resp(401, unauthorized, [REMOTE_BEARER], "Unauthorized"),
    resp(200, json.dumps({"access_token": "t0k3n"}).encode(), ["Content-Type: application/json"]),
    resp(200, index_raw, ["Content-Type: " + OCI_INDEX]))
put("basic", 8,
    resp(401, unauthorized, ['WWW-Authenticate: Basic realm="Registry Realm"'], "Unauthorized"),
    resp(200, man_raw, ["Content-Type: " + OCI_MANIFEST]))
put("config-redirect", 2,
    resp(307, b"", ["Location: http://127.0.0.1:5000/storage/config?sig=abc"], "Temporary Redirect"),
    resp(200, config_raw, ["Content-Type: application/octet-stream"]))
put("layer-retries", 3,
    resp(429, b"", ["Retry-After: 1"], "Too Many Requests"),
    resp(503, b"busy", [], "Service Unavailable"),
    b"!\x38",
    resp(200, layer2, ["Content-Type: application/octet-stream", digest_hdr(layer2)]))
put("remote-redirect-to-http", 4 | 3,
    resp(302, b"", ["Location: http://cdn.registry.example/blob"], "Found"),
    resp(200, layer2))
put("short-body-then-ok", 2,
    resp(200, config_raw[:10], ["Content-Length: %d" % len(config_raw)], length=False),
    resp(200, config_raw))
put("manifest-unknown", 0, resp(404, unknown, ["Content-Type: application/json"], "Not Found"))
put("connect-failures", 0, b"!\x07", b"!\x1c", resp(200, index_raw, ["Content-Type: " + OCI_INDEX]))

for name, body in (("index", index_raw), ("manifest", man_raw), ("config", config_raw)):
    with open(os.path.join(out_manifest, "seed-" + name), "wb") as f:
        f.write(body)
PY
