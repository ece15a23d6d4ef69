#!/usr/bin/env bash
# Build the Debian 13 (systemd 257) root that the slow test set boots as a second test host
# (tests/testhost, lower=/var/tmp/specadmin-trixie). Idempotent: does nothing if it exists.
# Takes a few minutes (downloads from Debian's mirrors).
set -euo pipefail
root=${1:-/var/tmp/specadmin-trixie}
if [ -x "$root/usr/sbin/sshd" ] && [ -x "$root/lib/systemd/systemd" ]; then
  echo "$root exists"
  exit 0
fi
command -v debootstrap >/dev/null || { apt-get update -qq && apt-get install -y -qq debootstrap; }
tmp="$root.partial"
rm -rf "$tmp"
debootstrap --variant=minbase --include=systemd,systemd-sysv,openssh-server,dbus,procps \
  trixie "$tmp" >"$tmp.log" 2>&1 || { tail -20 "$tmp.log" >&2; exit 1; }
rm -f "$tmp.log"
mv "$tmp" "$root"
echo "built $root ($(chroot "$root" /lib/systemd/systemd --version | head -1))"
