# shellcheck shell=sh
# One line per live PID given as an argument: pid, ppid, uid, user, start time, state,
# comm, cgroup, cmdline, tab-separated (cmdline last: its NULs become spaces). Missing
# PIDs print nothing. (hostops.processes.read_processes)
for p do
  stat=$(cat "/proc/$p/stat" 2>/dev/null) || continue
  rest=${stat##*) }
  set -f
  # shellcheck disable=SC2086 # split into fields on purpose, globbing off
  set -- $rest
  set +f
  state=$1; ppid=$2; start=${20}
  uid=$(sed -n 's/^Uid:[[:space:]]*\([0-9]*\).*/\1/p' "/proc/$p/status" 2>/dev/null)
  user=$(getent passwd "$uid" 2>/dev/null | cut -d: -f1)
  comm=$(cat "/proc/$p/comm" 2>/dev/null)
  cg=$(grep -m1 -E '^0::|name=systemd' "/proc/$p/cgroup" 2>/dev/null | cut -d: -f3-)
  args=$(tr '\0\t\n' '   ' < "/proc/$p/cmdline" 2>/dev/null)
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' \
    "$p" "$ppid" "$uid" "${user:-$uid}" "$start" "$state" "$comm" "$cg" "$args"
done
