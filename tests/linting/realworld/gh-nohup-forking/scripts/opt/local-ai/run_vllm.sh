#!/bin/bash
set -euo pipefail
cd /opt/local-ai
source /opt/local-ai/.venv/bin/activate

export HF_HUB_ENABLE_HF_TRANSFER=1

# Start detached; systemd follows the PID file
nohup /opt/local-ai/.venv/bin/vllm serve "${MODEL_ID:-Qwen/Qwen2.5-14B-Instruct-GPTQ-Int4}" \
  --host 127.0.0.1 \
  --port 8000 \
  --download-dir /opt/local-ai/models \
  --max-model-len "${CONTEXT_LEN:-32768}" \
  --gpu-memory-utilization "${GPU_MEM_UTIL:-0.90}" \
  --quantization gptq \
  --dtype auto \
  > /opt/local-ai/logs/vllm.log 2>&1 &
echo $! > /opt/local-ai/logs/vllm.pid
