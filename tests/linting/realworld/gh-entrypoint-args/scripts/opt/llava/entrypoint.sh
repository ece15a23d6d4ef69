#!/usr/bin/env bash
set -euo pipefail
exec /opt/llava/.venv/bin/python3 -m vllm.entrypoints.openai.api_server \
  --host 0.0.0.0 \
  --port 8000 \
  "$@"
