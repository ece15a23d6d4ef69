"""What "the GPUs are free" means, in one place.

Two checks judge it and must agree: the unit's own optional wait before vLLM starts
(`ExecStartPre=`, rendered by `units.rendering.gpu_wait_script`) and the deploy job's
GPU-clean step (`hostops.gpu_clean.dirty_gpus`). A GPU is free when no compute
process is listed on it and its used memory is **at or below** the profile's threshold
(`ServiceProfile.gpu_free_threshold_mib`): a threshold of 0 then means "nothing at all
used", and the default leaves room for the driver's own few hundred MiB per GPU.

The default is "below a threshold (default 1,000 MiB, per profile)". A stored
profile version keeps the value it was saved with; only new profiles get this default.

The wait checks only the unit's GPUs (`wait_gpus`: `nvidia-smi -i`, read from
CUDA_VISIBLE_DEVICES the way CUDA reads it), GPU-clean the same GPUs (`linting.cuda`).

Plain Python: the GPU-clean code imports it, and runs without Django
(benchmarks/gpu_clean_real.py).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from linting.cuda import nvidia_smi_ids, read_visible_devices

DEFAULT_THRESHOLD_MIB = 1000
_PLAIN = re.compile(r"[^A-Za-z0-9 ,.:/_-]")  # what goes into the echo "…" (ShellCheck SC1111)

# The same comparison in bash, for the unit's wait: `$mib` is one GPU's memory.used as
# nvidia-smi prints it with --format=csv,noheader,nounits.
BASH_MEMORY_FREE = '[ "$mib" -le {threshold} ]'


def gpu_is_free(memory_used_mib: int, compute_processes: int, threshold_mib: int) -> bool:
    """True when a GPU counts as free (see the module docstring)."""
    return compute_processes == 0 and memory_used_mib <= threshold_mib


@dataclass(frozen=True)
class WaitGpus:
    """The GPUs the unit's wait checks: `-i IDS` for nvidia-smi ("" for every GPU), and
    the words its message uses for them."""

    option: str
    words: str


def wait_gpus(gpu_devices: str) -> WaitGpus:
    """Only the unit's GPUs (CUDA_VISIBLE_DEVICES as CUDA reads it, `linting.cuda`), so a
    service on other GPUs of the host does not hold this one back; every GPU where the
    list is empty (unset: CUDA uses every GPU) or cannot be named to `nvidia-smi -i`."""
    if not gpu_devices:
        return WaitGpus("", "GPUs")
    selection = nvidia_smi_ids(read_visible_devices(gpu_devices))
    if selection.ids is None:
        why = _PLAIN.sub("", selection.why)
        return WaitGpus("", f"GPUs (every GPU is checked: {why})")
    plural = "GPUs" if "," in selection.ids else "GPU"
    return WaitGpus(f"-i {selection.ids} ", f"{plural} {selection.ids}")


__all__ = ["BASH_MEMORY_FREE", "DEFAULT_THRESHOLD_MIB", "WaitGpus", "gpu_is_free", "wait_gpus"]
