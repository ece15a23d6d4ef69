"""TEST DOUBLE: the few `vllm` modules specadmin's preflight check imports, answering with
the vLLM double's catalog-driven parser and SpeculativeConfig rules (tests/doubles/
vllm_double*.py), so the check runs inside a test host as it would against a real vLLM.

Installed into test hosts only (tests/testhost/install.py puts this directory on the
host Python's path). Never imported by product code; the check itself is
hostops/vllm_check.py. Only what that check calls exists here.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

# The double's own modules live two levels up, as the package `doubles`.
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from doubles import gpu_state
from doubles.vllm_double import DoubleConfig, load_catalog


def _double() -> tuple[dict[str, Any], str]:
    """(flag catalog, version) as `vllm serve` of the double would use them."""
    cfg = DoubleConfig.load(gpu_state.load_config())
    return load_catalog(cfg.version, cfg.catalog_dirs), cfg.version


__version__ = DoubleConfig.load(gpu_state.load_config()).version
