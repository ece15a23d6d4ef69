#!/bin/bash
# Starts vLLM with the model of this host.
set -euo pipefail
MODEL=/models/mixtral
source /opt/llm/venv/bin/activate
exec vllm serve $MODEL \
    --tensor-parallel-size 2 \
    --gpu-memory-utilisation 0.92 \
    "$@"
