"""What CUDA makes of `CUDA_VISIBLE_DEVICES` (the VL and OP rules count GPUs with it)."""

from __future__ import annotations


def visible_gpu_count(value: str) -> int:
    """How many GPUs CUDA exposes for a CUDA_VISIBLE_DEVICES value: entries are indices
    or `GPU-…`/`MIG-…` UUIDs; CUDA stops at the first entry it cannot parse, and `-1`
    (any negative index) hides everything after it."""
    count = 0
    for raw in value.split(","):
        item = raw.strip()
        if item.isdigit() or item.startswith(("GPU-", "MIG-")):
            count += 1
            continue
        break
    return count
