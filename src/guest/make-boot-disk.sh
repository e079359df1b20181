#!/bin/sh
# Builds the boot disk: <mkfs.erofs> <init binary> <output image>.
# Mount points: dev proc sys (early mounts), lower scratch newroot (the
# overlay root is assembled there before pivot_root).
set -eu
mkfs=$1 init=$2 out=$3
stage=$(mktemp -d "${out}.stage.XXXXXX")
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/dev" "$stage/proc" "$stage/sys" "$stage/lower" "$stage/scratch" "$stage/newroot"
cp "$init" "$stage/init"
chmod 0755 "$stage/init"
rm -f "$out"
"$mkfs" --quiet -T0 --all-root "$out" "$stage"
