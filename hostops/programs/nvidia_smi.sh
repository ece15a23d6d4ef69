# shellcheck shell=sh
# The two nvidia-smi queries of `Transport.gpu_status` ($1 nvidia-smi, $2 and $3 the
# fields), each followed by "@@specadmin-exit N".
"$1" --query-gpu="$2" --format=csv,noheader,nounits; rc=$?
printf '\n@@specadmin-exit %s\n' "$rc"
[ "$rc" = 0 ] || exit 0
"$1" --query-compute-apps="$3" --format=csv,noheader,nounits; rc=$?
printf '\n@@specadmin-exit %s\n' "$rc"
