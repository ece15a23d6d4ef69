"""Is decoding with the `gpu` model GPU-bound? Prints one JSON line.

Measured the way the test server decodes (`model.generate`, greedy, batch 1), per output
token: the difference between a long and a short generation from the same prompt, divided
by the difference in tokens, so the prompt's prefill cancels out.
`wall_ms`: timed **without** the profiler (its own CPU work per operator inflates wall
time several-fold). `busy_ms`: kernel time from torch.profiler over CUDA activity only.
Decoding is GPU-bound when the kernels keep the GPU busy for most of the wall time.

Run as a child process (`python -m tests.gpu_test_server.gpu_bound`): the model's ~15 GB and
the CUDA context then leave with the process, so a test run after it in the same pytest
session (the GPU clean-up's, which counts every compute process on the GPU) sees a clean GPU.
"""

from __future__ import annotations

import json
import statistics
import time
from collections.abc import Callable

import torch

from tests.gpu_test_server.model import build_model

CONTEXT = 512
SHORT, LONG = 8, 72
REPEATS = 3


def generate_ms(model: torch.nn.Module, ids: torch.Tensor, new_tokens: int) -> float:
    """Wall time of one greedy generation of exactly `new_tokens` tokens, in ms."""
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    model.generate(
        input_ids=ids,
        attention_mask=torch.ones_like(ids),
        max_new_tokens=new_tokens,
        do_sample=False,
    )
    torch.cuda.synchronize()
    return (time.perf_counter() - t0) * 1000


def kernel_ms(model: torch.nn.Module, ids: torch.Tensor, new_tokens: int) -> float:
    """Kernel time of the same generation, in ms, from the profiler's CUDA events."""
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        generate_ms(model, ids, new_tokens)
    busy_us = sum(
        getattr(e, "self_device_time_total", None) or getattr(e, "self_cuda_time_total", 0)
        for e in prof.key_averages()
    )
    return busy_us / 1000


def per_token(measure: Callable[[int], float]) -> float:
    """Median over REPEATS of (long − short) / (LONG − SHORT): one decode step's share."""
    return statistics.median(
        (measure(LONG) - measure(SHORT)) / (LONG - SHORT) for _ in range(REPEATS)
    )


def measure() -> dict[str, float]:
    model = build_model("gpu", "cuda")
    ids = torch.randint(1, 32000, (1, CONTEXT), device="cuda")
    with torch.inference_mode():
        generate_ms(model, ids, SHORT)  # warm-up
        wall_ms = per_token(lambda n: generate_ms(model, ids, n))
        busy_ms = per_token(lambda n: kernel_ms(model, ids, n))
    return {"wall_ms": round(wall_ms, 3), "busy_ms": round(busy_ms, 3), "context": CONTEXT}


if __name__ == "__main__":
    print(json.dumps(measure()))
