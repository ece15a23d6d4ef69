# shellcheck shell=sh
# Exit 0 once none of the PIDs given is alive (gone or a zombie); polls every 50 ms. The
# caller bounds it (`timeout`, which SSH also enforces on the host with timeout(1)).
while :; do
  alive=0
  for p do
    s=$(cat "/proc/$p/stat" 2>/dev/null) || continue
    case "${s##*) }" in Z*|X*) ;; *) alive=1 ;; esac
  done
  [ "$alive" = 0 ] && exit 0
  sleep 0.05
done
