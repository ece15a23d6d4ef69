#!/usr/bin/env bash
# Fresh-machine check: follow the README's set-up on a pristine Debian 12 root and fail if
# any step does. Catches what a developer's warm machine hides (a Debian package the set-up
# forgets, installed in the wrong order, a Python package that only builds because the
# machine happens to have a compiler).
#
#   scripts/fresh-machine-check.sh            # the committed HEAD of this repository
#
# What it does:
# 1. Builds (once, cached in $FRESH_CACHE) a Debian 12 root with debootstrap: the minbase
#    variant plus what the README presupposes (python3, make, git, ca-certificates).
# 2. Starts every run on a throwaway overlay of that root, copies the machine's own apt and
#    pip configuration in (sources, keyrings, apt.conf.d, pip.conf files, PIP_* variables)
#    and bind-mounts the local wheel/index directories the pip configuration names,
#    read-only. Downloaded .deb files and pip's cache persist in $FRESH_CACHE (warm runs
#    still install everything, they only skip downloads).
# 3. Clones the repository's committed HEAD into it and runs scripts/fresh-machine-inside.sh
#    there with systemd-nspawn (no boot: the steps need no init): make deps, lintunits on
#    the README example, migrate, loaddemo, `make run` serving a page and stopping with exit
#    0 on SIGTERM, and `.ci/run` on a subset (see that script for which and why).
# Needs root (debootstrap, overlay mounts, systemd-nspawn). The machine's network is shared
# (apt and pip reach their mirrors). PostgreSQL and Redis for the `.ci/run` step are
# throwaway servers inside the root, or $FRESH_PG_URL / $FRESH_REDIS_URL when given.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
cache=${FRESH_CACHE:-/var/tmp/specadmin-fresh-cache}
base=$cache/bookworm
packages=python3,make,git,ca-certificates
pg_url=${FRESH_PG_URL:-}
redis_url=${FRESH_REDIS_URL:-}

if [ "$(id -u)" -ne 0 ]; then
  echo "fresh-machine check: needs root (debootstrap, overlay mounts, systemd-nspawn)" >&2
  exit 2
fi
started=$(date +%s)
mkdir -p "$cache/apt-archives/partial" "$cache/pip" "$cache/vendor"
# The front-end packages' tarballs, fetched here with this machine's npm: the root has no
# npm, and `make deps` inside takes them from this cache (scripts/vendor-static.sh).
SPECADMIN_VENDOR_CACHE="$cache/vendor" "$repo/scripts/vendor-static.sh" --fetch
"$repo/scripts/make-debian-root.sh" bookworm "$base" "$packages"

run=$(mktemp -d /var/tmp/specadmin-fresh.XXXXXX)
root=$run/root
nspawn_pid=""
cleanup() {
  if [ -d "$root/root/fresh-logs" ]; then
    rm -rf "$cache/logs" && cp -a "$root/root/fresh-logs" "$cache/logs" || true
  fi
  if [ -n "$nspawn_pid" ] && kill -0 "$nspawn_pid" 2>/dev/null; then
    kill -TERM "$nspawn_pid" 2>/dev/null || true
    for _ in $(seq 1 50); do kill -0 "$nspawn_pid" 2>/dev/null || break; sleep 0.2; done
    kill -KILL "$nspawn_pid" 2>/dev/null || true
  fi
  umount "$root" 2>/dev/null || umount -l "$root" 2>/dev/null || true
  umount "$run/changes" 2>/dev/null || umount -l "$run/changes" 2>/dev/null || true
  rm -rf "$run"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
# Everything a run changes lives in a tmpfs (about 1.5 GB: packages, venv, clone): thrown
# away by one umount, instead of minutes of deleting files on a busy disk.
mkdir -p "$run/changes" "$root"
mount -t tmpfs -o size=6g,mode=0755 tmpfs "$run/changes"
mkdir -p "$run/changes/upper" "$run/changes/work"
mount -t overlay overlay \
  -o "lowerdir=$base,upperdir=$run/changes/upper,workdir=$run/changes/work" "$root"

# -- the machine's apt configuration -----------------------------------------------------
# The machine's files replace the root's (debootstrap's sources.list included, so a machine
# that lists its mirrors only in sources.list.d does not get them twice).
for item in sources.list sources.list.d preferences.d auth.conf.d apt.conf.d trusted.gpg \
  trusted.gpg.d keyrings; do
  rm -rf "${root:?}/etc/apt/$item"
  if [ -e "/etc/apt/$item" ]; then
    cp -a "/etc/apt/$item" "$root/etc/apt/$item"
  fi
done
# Keyrings the sources name (Signed-By: / signed-by=), wherever they live.
{ grep -rhoE '(Signed-By:|signed-by=)\s*/[^] ]+' /etc/apt/sources.list /etc/apt/sources.list.d \
    2>/dev/null || true; } | sed -E 's/^(Signed-By:|signed-by=)\s*//' | sort -u |
  while read -r keyring; do
    [ -f "$keyring" ] && install -D -m 0644 "$keyring" "$root$keyring"
  done
# Keep what apt downloads (the cache is bind-mounted from $cache between runs).
echo 'Binary::apt::APT::Keep-Downloaded-Packages "true";' \
  >"$root/etc/apt/apt.conf.d/99zz-specadmin-fresh-check-keep-debs"

# -- the machine's pip configuration ------------------------------------------------------
pip_files=(/etc/pip.conf /etc/xdg/pip "$HOME/.config/pip" "$HOME/.pip/pip.conf")
for item in "${pip_files[@]}"; do
  [ -e "$item" ] || continue
  target=$item
  case $item in "$HOME"/*) target=/root${item#"$HOME"} ;; esac
  mkdir -p "$(dirname "$root$target")"
  cp -a "$item" "$root$target"
done
setenv=()
while IFS='=' read -r name value; do
  setenv+=("--setenv=$name=$value")
done < <(env | grep -E '^PIP_[A-Z_]+=' || true)
# What the pip configuration names by path: local directories (find-links, file://
# indexes) are bound read-only at the same path; files outside the copied configuration
# (`cert`, the CA bundle the machine's TLS proxy needs) are copied over the root's.
pip_config_paths() {
  local item
  for item in "${pip_files[@]}"; do
    if [ -f "$item" ]; then cat "$item"; elif [ -d "$item" ]; then find "$item" -type f -exec cat {} +; fi
  done
  env | grep -E '^PIP_' || true
}
binds=()
while read -r path; do
  if [ -d "$path" ]; then
    binds+=("--bind-ro=$path")
  elif [ -f "$path" ]; then
    install -D -m 0644 "$path" "$root$path"
  fi
done < <(pip_config_paths | grep -oE '(file://)?/[^ ,;"'\'']+' |
  sed -E 's#^file://##; s#/simple/?$##; s#/+$##' | sort -u)
# The machine's own certificate authorities (the source of that CA bundle): a package that
# runs update-ca-certificates inside the root then keeps them.
if [ -d /usr/local/share/ca-certificates ]; then
  mkdir -p "$root/usr/local/share/ca-certificates"
  cp -a /usr/local/share/ca-certificates/. "$root/usr/local/share/ca-certificates/"
fi

# -- the repository, as committed --------------------------------------------------------
sha=$(git -C "$repo" rev-parse HEAD)
if [ -n "$(git -C "$repo" status --porcelain --untracked-files=no)" ]; then
  echo "fresh-machine check: uncommitted changes are not part of the check (HEAD $sha)" >&2
fi
git clone -q --no-checkout "$repo" "$root/root/specadmin"
git -C "$root/root/specadmin" checkout -q "$sha"
install -m 0755 "$repo/scripts/fresh-machine-inside.sh" "$root/root/fresh-machine-inside.sh"

echo "fresh-machine check: Debian $(cat "$base/etc/debian_version") root, HEAD ${sha:0:12}" \
  "(set-up took $(($(date +%s) - started)) s)"
systemd-nspawn --quiet --register=no --keep-unit --as-pid2 --console=pipe \
  --machine="$(basename "$run" | tr -c 'a-zA-Z0-9\n' -)" --directory="$root" --chdir=/root/specadmin \
  --bind="$cache/apt-archives:/var/cache/apt/archives" --bind="$cache/pip:/root/.cache/pip" \
  --bind="$cache/vendor:/root/.cache/specadmin-vendor" \
  "${binds[@]}" "${setenv[@]}" \
  --setenv=FRESH_PG_URL="$pg_url" --setenv=FRESH_REDIS_URL="$redis_url" \
  --setenv=FRESH_PORT="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')" \
  /root/fresh-machine-inside.sh </dev/null \
  2> >(grep -v --line-buffered 'Attempted to remove disk file system' >&2) &
nspawn_pid=$!
status=0
wait "$nspawn_pid" || status=$?
nspawn_pid=""
echo "fresh-machine check: $([ $status -eq 0 ] && echo passed || echo "FAILED (exit $status)")" \
  "in $(($(date +%s) - started)) s (the steps' output: $cache/logs)"
exit "$status"
