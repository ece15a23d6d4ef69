#!/bin/bash
docker run -d --runtime nvidia --gpus all \
    -v /srv/hf-cache:/root/.cache/huggingface \
    -p 9898:8000 \
    --ipc=host \
    vllm/vllm-openai:v0.11.0 \
    --model Qwen/Qwen2.5-7B-Instruct --max_model_len 1024 --api-key "$NLP_API_KEY" --gpu_memory_utilization 0.7 --kv-cache-dtype fp8-e5m2x
