# shellcheck shell=sh
# Every process as "pid ppid" from /proc (no `ps`: minimal GPU images lack procps); `read`
# is a shell builtin, so this forks nothing per process.
for d in /proc/[0-9]*; do
  read -r s < "$d/stat" 2>/dev/null || continue
  set -f
  # shellcheck disable=SC2086 # split into fields on purpose, globbing off
  set -- ${s##*) }
  set +f
  echo "${d#/proc/} $2"
done
