#!/usr/bin/env bash
# Put the pinned front-end packages of static/vendor/packages.txt into static/vendor/
# (`make deps` runs this; docs/dependencies.md). For each package:
# 1. its files are already there → nothing to do (no network);
# 2. else its tarball is taken from the cache ($SPECADMIN_VENDOR_CACHE, default
#    ~/.cache/specadmin-vendor), or fetched into it with `npm pack` from the registry npm is
#    configured for (a machine without npm or network: copy the tarball into the cache);
# 3. the tarball's sha512 must be the pinned one (the registry's own "integrity"), then the
#    listed files are extracted. A tarball that does not match is refused and removed.
#   scripts/vendor-static.sh            # install what is missing
#   scripts/vendor-static.sh --fetch    # only fill the cache (e.g. before an offline build)
set -euo pipefail
cd "$(dirname "$0")/.."
cache=${SPECADMIN_VENDOR_CACHE:-$HOME/.cache/specadmin-vendor}
fetch_only=${1:-}
mkdir -p "$cache" static/vendor

tarball_for() { # name version sha512 → path of a checked tarball in the cache
  local name=$1 version=$2 sha512=$3 file
  file="$cache/${name//\//-}-$version.tgz"
  if [ ! -f "$file" ]; then
    if ! command -v npm >/dev/null; then
      echo "vendor-static: $name@$version is not in $cache and npm is not installed:" \
        "install npm, or copy the package's tarball (npm pack $name@$version) there" >&2
      return 1
    fi
    local tmp
    tmp=$(mktemp -d "$cache/.fetch.XXXXXX")
    (cd "$tmp" && npm pack --silent "$name@$version" >/dev/null)
    mv "$tmp"/*.tgz "$file"
    rmdir "$tmp"
  fi
  if [ "$(sha512sum <"$file" | cut -d' ' -f1)" != "$sha512" ]; then
    echo "vendor-static: $file is not the pinned $name@$version (sha512 differs): removed" >&2
    rm -f "$file"
    return 1
  fi
  echo "$file"
}

grep -v '^\s*#' static/vendor/packages.txt | while read -r name version sha512 files; do
  [ -n "$name" ] || continue
  missing=0
  for pair in $files; do [ -f "static/vendor/${pair#*=}" ] || missing=1; done
  [ "$missing" = 1 ] || [ "$fetch_only" = --fetch ] || continue
  file=$(tarball_for "$name" "$version" "$sha512")
  [ "$fetch_only" = --fetch ] && continue
  for pair in $files; do
    tar -xzf "$file" -O "${pair%%=*}" >"static/vendor/${pair#*=}.tmp"
    mv "static/vendor/${pair#*=}.tmp" "static/vendor/${pair#*=}"
  done
  echo "vendor-static: $name@$version → static/vendor/"
done
