# shellcheck shell=sh
# `kill -s $1` each further PID; prints the PIDs the signal was delivered to.
sig=$1; shift
for p do kill -s "$sig" "$p" 2>/dev/null && echo "$p"; done
exit 0
