#!/usr/bin/env bash
# Build a pristine Debian root with debootstrap, once: make-debian-root.sh SUITE ROOT [PACKAGES]
# (PACKAGES: comma-separated, added to the minbase variant). Idempotent: a finished root is
# kept (its marker file names the suite and packages; a different request rebuilds it).
# Takes a few minutes (downloads from Debian's mirrors; DEBIAN_MIRROR overrides the mirror).
set -euo pipefail
suite=$1
root=$2
packages=${3:-}
marker="$root/.specadmin-root"
want="$suite minbase $packages"
if [ -f "$marker" ] && [ "$(cat "$marker")" = "$want" ]; then
  echo "$root exists ($want)"
  exit 0
fi
command -v debootstrap >/dev/null || { apt-get update -qq && apt-get install -y -qq debootstrap; }
tmp="$root.partial"
rm -rf "$tmp" "$root"
debootstrap --variant=minbase ${packages:+--include="$packages"} \
  "$suite" "$tmp" ${DEBIAN_MIRROR:+"$DEBIAN_MIRROR"} >"$tmp.log" 2>&1 \
  || { tail -20 "$tmp.log" >&2; exit 1; }
rm -f "$tmp.log"
echo "$want" >"$tmp/.specadmin-root"
mv "$tmp" "$root"
echo "built $root ($want)"
