"""Wording shared by the VL rules: when a mistake hits, and which vLLM says so.

When each kind of mistake hits: argparse errors exit with status 2 before anything is
loaded; the SpeculativeConfig / ModelConfig / ParallelConfig objects are built by
`EngineArgs.create_engine_config()` (vllm/engine/arg_utils.py) at engine start.
"""

from __future__ import annotations

import json
from typing import Any

from linting.vllm.catalog import VllmCatalog

AT_PARSE = "at argument parsing (exit status 2, before anything is loaded)"
AT_ENGINE = "when it builds the engine config (after argument parsing)"


def vllm_label(catalog: VllmCatalog) -> str:
    return f"vLLM {catalog.version}"


def shown(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value)
    return text if len(text) <= 80 else text[:79] + "…"
