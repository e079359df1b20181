#!/usr/bin/env bash
# Prints the base URI of the Debian archive this machine's apt sources already
# use for the main suite (not security, not third-party repositories), so
# that nothing in the project names a host.  Usage: debian-mirror.sh
set -euo pipefail
codename=$(. /etc/os-release && echo "${VERSION_CODENAME:-bookworm}")
uri=""
# deb822 sources: a stanza whose Suites list the release codename itself.
for f in /etc/apt/sources.list.d/*.sources; do
	[ -e "$f" ] || continue
	uri=$(awk -v c="$codename" '
		/^[[:space:]]*$/ { if (u != "" && s ~ ("(^| )" c "( |$)")) { print u; exit } u=""; s="" }
		tolower($1) == "uris:" { u=$2 }
		tolower($1) == "suites:" { $1=""; s=$0 }
		END { if (u != "" && s ~ ("(^| )" c "( |$)")) print u }' "$f" | head -n 1)
	[ -n "$uri" ] && break
done
# One-line sources.
if [ -z "$uri" ]; then
	uri=$(cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null |
		awk -v c="$codename" '$1 == "deb" { for (i = 2; i <= NF; i++) if ($i !~ /^\[/) { if ($(i+1) == c) { print $i; exit } break } }')
fi
if [ -z "$uri" ]; then
	echo "debian-mirror.sh: no apt source for suite $codename found" >&2
	exit 1
fi
echo "${uri%/}"
