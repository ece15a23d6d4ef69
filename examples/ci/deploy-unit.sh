#!/bin/bash
# CI recipe (docs/api.md): lint the repository's units, push one unit as a new version of
# its profile, request its deploy, wait for a person's approval and for the job, and fail
# when the job fails or its benchmark regressed. Needs bash, curl and jq.
#
#   SPECADMIN_URL=https://specadmin.example.com SPECADMIN_TOKEN=sa_… \
#     examples/ci/deploy-unit.sh units/vllm-qwen.service gpu-a
#
# Environment: SPECADMIN_URL, SPECADMIN_TOKEN (a "request" token), UNITS_DIR (what to
# lint, default: the unit's directory), POLL_S (default 10), WAIT_S (default 86400: the
# approval may take a day), ACKNOWLEDGE_WARNINGS (1: request despite lint warnings).
set -euo pipefail

unit=${1:?usage: deploy-unit.sh UNIT_FILE HOST}
host=${2:?usage: deploy-unit.sh UNIT_FILE HOST}
base=${SPECADMIN_URL:?set SPECADMIN_URL}/api/v1
: "${SPECADMIN_TOKEN:?set SPECADMIN_TOKEN}"
poll=${POLL_S:-10}
wait_s=${WAIT_S:-86400}
profile=$(basename "$unit" .service)

# api METHOD PATH [JSON]: the answer's body; exits with its "detail" on an HTTP error.
# Too many calls (429): waits as Retry-After says, a few times.
api() {
  local out status tries=0
  out=$(mktemp)
  while :; do
    status=$(curl -sS -o "$out" -D "$out.h" -w '%{http_code}' -X "$1" \
      -H "Authorization: Bearer $SPECADMIN_TOKEN" -H 'Content-Type: application/json' \
      ${3:+--data-binary "$3"} "$base$2") || { rm -f "$out" "$out.h"; echo "cannot reach $base" >&2; exit 2; }
    [ "$status" = 429 ] && [ $((tries += 1)) -le 5 ] || break
    sleep "$(tr -d '\r' <"$out.h" | sed -n 's/^[Rr]etry-[Aa]fter: *//p' | head -n 1 | grep -E '^[0-9]+$' || echo 5)"
  done
  rm -f "$out.h"
  if [ "$status" -ge 400 ]; then
    echo "$1 $2: HTTP $status: $(jq -r '.detail // .' "$out" 2>/dev/null || cat "$out")" >&2
    jq -r '.errors // {} | to_entries[] | "  \(.key): \(.value | join(" "))"' "$out" >&2 2>/dev/null || true
    rm -f "$out"
    return 1
  fi
  cat "$out"
  rm -f "$out"
}

# 1. Lint every unit of the repository (the same linter as `lintunits`).
blocking=0
while IFS= read -r -d '' file; do
  body=$(jq -Rs --arg f "$(basename "$file")" '{filename: $f, text: .}' <"$file")
  report=$(api POST /lint/ "$body")
  echo "$report" | jq -r --arg f "$file" \
    '.file.findings[]? | "\($f):\(.line // "-"): \(.severity) \(.code) \(.message)"'
  if [ "$(echo "$report" | jq -r .blocking)" = true ]; then blocking=1; fi
done < <(find "${UNITS_DIR:-$(dirname "$unit")}" -name '*.service' -type f -print0)
[ "$blocking" = 0 ] || { echo "lint: blocking findings" >&2; exit 1; }

# 2. Push the unit: a new version of its profile (the profile is made on the first run).
text=$(jq -Rs . <"$unit")
if api GET "/profiles/$profile/" >/dev/null 2>&1; then
  version=$(api POST "/profiles/$profile/versions/" "{\"unit_text\": $text}" | jq -r .number)
else
  imported=$(api POST /imports/ "$(jq -n --arg f "$(basename "$unit")" --argjson t "$text" \
    '{filename: $f, text: $t}')")
  [ "$(echo "$imported" | jq -r '.argv_equal and .environment_equal')" = true ] || {
    echo "import: the profile would not run the same commands:" >&2
    echo "$imported" | jq -r '.differences[]' >&2
    exit 1
  }
  version=$(echo "$imported" | jq -r .version)
fi
echo "profile $profile version $version"

# 3. Request its deploy; a person approves it on the request's page.
ack=$([ "${ACKNOWLEDGE_WARNINGS:-0}" = 1 ] && echo true || echo false)
request=$(api POST /requests/ "$(jq -n --arg p "$profile" --argjson v "$version" \
  --arg h "$host" --argjson a "$ack" \
  '{profile: $p, version: $v, host: $h, acknowledge_warnings: $a}')")
id=$(echo "$request" | jq -r .id)
echo "request #$id waits for approval: $(echo "$request" | jq -r .web_url)"

# 4. Wait for the approval and the job, showing each step as it ends.
deadline=$((SECONDS + wait_s))
shown=""
while :; do
  job=$(api GET "/jobs/$id/")
  steps=$(echo "$job" | jq -r '.steps[] | select(.status != "running") | "  \(.phase) \(.name): \(.status)"')
  if [ "$steps" != "$shown" ]; then
    diff <(echo "$shown") <(echo "$steps") | sed -n 's/^> //p' || true
    shown=$steps
  fi
  [ "$(echo "$job" | jq -r .done)" = true ] && break
  [ "$SECONDS" -lt "$deadline" ] || { echo "request #$id: still $(echo "$job" | jq -r .status) after ${wait_s}s" >&2; exit 1; }
  sleep "$poll"
done

# 5. Fail when the job failed or the benchmark regressed.
status=$(echo "$job" | jq -r .status)
if [ "$(echo "$job" | jq -r .succeeded)" != true ]; then
  echo "request #$id: $(echo "$job" | jq -r .status_label): $(echo "$job" | jq -r .status_reason)" >&2
  echo "$job" | jq -r '.steps[] | select(.status == "failed") | "--- \(.name)\n\(.log)"' | tail -n 40 >&2
  exit 1
fi
if [ "$(echo "$job" | jq -r .regressed)" = true ]; then
  echo "request #$id: the benchmark regressed:" >&2
  echo "$job" | jq -r '.benchmarks[] | select(.verdict == "regressed") | "  \(.host): \(.output_tok_s) tok/s"' >&2
  exit 1
fi
echo "request #$id: $status"
