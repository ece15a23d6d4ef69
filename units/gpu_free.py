"""What "the GPUs are free" means, in one place.

Two checks judge it and must agree: the unit's own optional wait before vLLM starts
(`ExecStartPre=`, rendered by `units.rendering.gpu_wait_script`) and the deploy job's
GPU-clean step (`deploys.jobs.gpu_clean.dirty_gpus`). A GPU is free when no compute
process is listed on it and its used memory is **at or below** the profile's threshold
(`ServiceProfile.gpu_free_threshold_mib`): a threshold of 0 then means "nothing at all
used", and the default leaves room for the driver's own few hundred MiB per GPU.

The default is issue 10's "below a threshold (default 1,000 MiB, per profile)". A stored
profile version keeps the value it was saved with; only new profiles get this default.

Plain Python: the GPU-clean code imports it, and runs without Django
(benchmarks/gpu_clean_real.py).
"""

from __future__ import annotations

DEFAULT_THRESHOLD_MIB = 1000

# The same comparison in bash, for the unit's wait: `$mib` is one GPU's memory.used as
# nvidia-smi prints it with --format=csv,noheader,nounits.
BASH_MEMORY_FREE = '[ "$mib" -le {threshold} ]'


def gpu_is_free(memory_used_mib: int, compute_processes: int, threshold_mib: int) -> bool:
    """True when a GPU counts as free (see the module docstring)."""
    return compute_processes == 0 and memory_used_mib <= threshold_mib


__all__ = ["BASH_MEMORY_FREE", "DEFAULT_THRESHOLD_MIB", "gpu_is_free"]
