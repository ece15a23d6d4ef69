#!/usr/bin/env bash
# Build the Debian 13 (systemd 257) root that the slow test set boots as a second test host
# (tests/testhost, lower=/var/tmp/specadmin-trixie). Idempotent: does nothing if it exists.
set -euo pipefail
root=${1:-/var/tmp/specadmin-trixie}
if [ -x "$root/usr/sbin/sshd" ] && [ -x "$root/lib/systemd/systemd" ]; then
  echo "$root exists"
  exit 0
fi
"$(dirname "$0")/make-debian-root.sh" trixie "$root" systemd,systemd-sysv,openssh-server,dbus,procps
echo "$(chroot "$root" /lib/systemd/systemd --version | head -1)"
