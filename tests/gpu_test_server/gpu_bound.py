"""Is batch-1 decoding of the `gpu` model GPU-bound? Prints one JSON line.

`wall_ms`: a decode step's wall time, timed **without** the profiler (the profiler's own
CPU work per operator would inflate it: 49.6 ms against ~8 ms, seen on an H200).
`busy_ms`: the step's kernel time, summed from torch.profiler over CUDA activity only.
Decoding is GPU-bound when the kernels keep the GPU busy for most of the wall time.

Run as a child process (`python -m tests.gpu_test_server.gpu_bound`): the model's ~15 GB and
the CUDA context then leave with the process, so a test run after it in the same pytest
session (the GPU clean-up's, which counts every compute process on the GPU) sees a clean GPU.
"""

from __future__ import annotations

import json
import time

import torch

from tests.gpu_test_server.model import build_model

STEPS = 16
CONTEXT = 512


def decode_steps(model: torch.nn.Module, cache: object, token: torch.Tensor, steps: int) -> float:
    """Mean wall time of `steps` batch-1 decode steps in ms, synchronised at the end."""
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(steps):
        model(input_ids=token, past_key_values=cache, use_cache=True)
    torch.cuda.synchronize()
    return (time.perf_counter() - t0) * 1000 / steps


def kernel_busy_ms(model: torch.nn.Module, cache: object, token: torch.Tensor, steps: int) -> float:
    """Mean kernel time per decode step in ms, from the profiler's CUDA events."""
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        decode_steps(model, cache, token, steps)
    busy_us = sum(
        getattr(e, "self_device_time_total", None) or getattr(e, "self_cuda_time_total", 0)
        for e in prof.key_averages()
    )
    return busy_us / 1000 / steps


def measure() -> dict[str, float]:
    model = build_model("gpu", "cuda")
    ids = torch.randint(1, 32000, (1, CONTEXT), device="cuda")
    with torch.inference_mode():
        out = model(input_ids=ids, use_cache=True)
        cache, token = out.past_key_values, out.logits[:, -1:].argmax(-1)
        decode_steps(model, cache, token, 3)  # warm-up
        wall_ms = decode_steps(model, cache, token, STEPS)
        busy_ms = kernel_busy_ms(model, cache, token, STEPS)
    return {"wall_ms": round(wall_ms, 3), "busy_ms": round(busy_ms, 3), "context": CONTEXT}


if __name__ == "__main__":
    print(json.dumps(measure()))
