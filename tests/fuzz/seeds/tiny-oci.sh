#!/usr/bin/env bash
# Builds the seeds' small OCI image layout into DIR/tiny with the fixture
# builder (tests/fixtures/images/build-oci.sh: gzip, zstd and plain tar
# layers; whiteouts, an opaque directory, ownership, links, a fifo) from a
# root filesystem of a few files.  Needs root and zstd, like the fixture.
set -euo pipefail
repo=$(cd "$(dirname "$0")/../../.." && pwd)
work=$1
mkdir -p "$work/tiny-root/bin" "$work/tiny-root/etc" "$work/tiny-root/usr/lib"
printf 'root:x:0:0:root:/root:/bin/sh\n' >"$work/tiny-root/etc/passwd"
printf '#!/bin/sh\necho hi\n' >"$work/tiny-root/bin/hello"
chmod 755 "$work/tiny-root/bin/hello"
ln -sfn hello "$work/tiny-root/bin/sh"
ln -sfn ../usr/lib "$work/tiny-root/lib"
touch -d @1000000000 "$work/tiny-root/etc/passwd" "$work/tiny-root"
"$repo/tests/fixtures/images/build-oci.sh" tiny "$work/tiny-root" "$work" >/dev/null
