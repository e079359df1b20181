#!/usr/bin/env bash
# Seeds for fuzz_image_layer, written into DIR (default
# tests/fuzz/corpus/fuzz_image_layer): the three layers of a small image
# built by the fixture builder (tiny-oci.sh), pairs of them joined by the
# target's layer separator, and hostile layers (escapes through "..",
# symlinks and hard links, long and sparse entries, device nodes, xattrs).
# Needs root and zstd, like the fixture.
set -euo pipefail
repo=$(cd "$(dirname "$0")/../../.." && pwd)
out=${1:-$repo/tests/fuzz/corpus/fuzz_image_layer}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$out"

"$(dirname "$0")/tiny-oci.sh" "$work"

python3 - "$work/tiny" "$out" <<'PY'
import io, json, os, sys, tarfile

src, out = sys.argv[1], sys.argv[2]
SEP = b"SBXLAYER"
blob = lambda d: open(os.path.join(src, "blobs/sha256", d[7:]), "rb").read()
idx = json.load(open(os.path.join(src, "index.json")))
man = json.loads(blob(idx["manifests"][0]["digest"]))
layers = [blob(l["digest"]) for l in man["layers"]]

def put(name, data):
    with open(os.path.join(out, "seed-" + name), "wb") as f:
        f.write(data)

for i, l in enumerate(layers):
    put("oci-layer%d" % (i + 1), l)
put("oci-layers-1-2", layers[0] + SEP + layers[1])
put("oci-layers-2-3", layers[1] + SEP + layers[2])

def tar(entries, fmt=tarfile.PAX_FORMAT):
    """entries: (name, type, extra dict) -> tar bytes"""
    b = io.BytesIO()
    with tarfile.open(fileobj=b, mode="w", format=fmt) as t:
        for name, typ, kw in entries:
            ti = tarfile.TarInfo(name)
            ti.type = typ
            data = kw.pop("data", b"")
            for k, v in kw.items():
                setattr(ti, k, v)
            if typ == tarfile.REGTYPE:
                ti.size = len(data)
                t.addfile(ti, io.BytesIO(data))
            else:
                t.addfile(ti)
    # Keep the two end blocks, not tarfile's padding to 10 KiB.
    data = b.getvalue().rstrip(b"\0")
    return data + b"\0" * (-len(data) % 512 + 1024)

F, D, L, H = tarfile.REGTYPE, tarfile.DIRTYPE, tarfile.SYMTYPE, tarfile.LNKTYPE
put("dotdot", tar([("../escape", F, {"data": b"x"}), ("a/../../escape2", F, {})]))
put("absolute", tar([("/etc/abs", F, {"data": b"abs"}), ("./", D, {"mode": 0o700})]))
put("symlink-out", tar([("out", L, {"linkname": "../sentinel"}), ("out/new", F, {"data": b"x"})]))
put("symlink-abs", tar([("out", L, {"linkname": "/"}), ("out/new", F, {"data": b"x"}),
                        ("up", L, {"linkname": "../../../.."}), ("up/sentinel/keep", F, {"data": b"y"})]))
put("hardlink-out", tar([("h", H, {"linkname": "../sentinel/keep"}),
                         ("s", L, {"linkname": ".."}), ("h2", H, {"linkname": "s/sentinel/keep"})]))
put("replace", tar([("d", D, {}), ("d/f", F, {"data": b"1"}), ("d", F, {"data": b"file now"}),
                    ("f", F, {}), ("f", D, {}), ("f/g", L, {"linkname": "d"})]))
put("whiteouts", tar([("a/b/c", F, {"data": b"c"}), ("a/.wh.b", F, {}), ("a/.wh..wh..opq", F, {}),
                      (".wh..wh.plnk", F, {}), (".wh...", F, {}), ("x/.wh.missing", F, {})]) + SEP +
     tar([("a/.wh..wh..opq", F, {}), ("a/new", F, {}), (".wh.a", F, {})]))
put("long-names", tar([("d" * 100 + "/" + "e" * 200, F, {"data": b"long"}),
                       ("l", L, {"linkname": "t" * 300})]) + SEP +
     tar([("n" * 90 + "/" + "m" * 120, F, {})], fmt=tarfile.GNU_FORMAT))
put("devices", tar([("null", tarfile.CHRTYPE, {"devmajor": 1, "devminor": 3}),
                    ("blk", tarfile.BLKTYPE, {"devmajor": 7, "devminor": 0}), ("fifo", tarfile.FIFOTYPE, {})]))
put("xattrs", tar([("x", F, {"data": b"x", "pax_headers": {"SCHILY.xattr.user.k": "v",
                                                            "SCHILY.xattr.trusted.overlay.opaque": "y",
                                                            "SCHILY.xattr.security.capability": "\x01"}})]))
put("modes", tar([("s", F, {"mode": 0o6755, "uid": 1000, "gid": 1000}), ("z", D, {"mode": 0}),
                  ("z/in", F, {"mode": 0})]))
# A sparse-looking huge entry: declared size far beyond the data.
big = bytearray(tar([("huge", F, {"data": b"h" * 512})]))
size_field = ("%011o" % (1 << 32)).encode() + b"\0"
hdr = big.find(b"huge\0")
if hdr >= 0:
    big[hdr + 124:hdr + 136] = size_field
    big[hdr + 148:hdr + 156] = b"        "
    big[hdr + 148:hdr + 155] = ("%06o\0" % sum(big[hdr:hdr + 512])).encode()
put("huge-size", bytes(big))
PY
