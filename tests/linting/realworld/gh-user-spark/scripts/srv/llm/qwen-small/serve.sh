#!/usr/bin/env bash
# Start vLLM from the project's virtualenv with arguments collected in an array.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
VLLM=/srv/llm/qwen-small/.venv/bin/vllm
MODEL_PATH=/srv/llm/models/qwen-small-awq
PORT="${PORT:-8000}"
HOST="${HOST:-127.0.0.1}"

ARGS=(
  "${MODEL_PATH}"
  --host "${HOST}"
  --port "${PORT}"
  --max-model-len "${MAX_MODEL_LEN:-32768}"
  --gpu-memory-utilization "${GPU_MEM_UTIL:-0.5}"
  --enable-auto-tool-choice
  --tool-call-parser hermes
)

if (( NUM_SPEC_TOKENS > 0 )); then
  ARGS+=(--speculative-config '{"method":"mtp","num_speculative_tokens":2}')
fi

exec "${VLLM}" serve "${ARGS[@]}" 2>&1 | tee -a "${HERE}/vllm.log"
