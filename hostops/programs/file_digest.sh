# shellcheck shell=sh
# `Transport.stage_file` over a shell: the temp file $1 synced to disk (coreutils sync(1)
# on a file: fsync), then its size and sha256 as the host reads them back.
sync -- "$1" || exit 3
stat -c %s -- "$1" || exit 4
sha256sum < "$1" || exit 5
