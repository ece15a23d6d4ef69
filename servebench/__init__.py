"""servebench: a streaming benchmark client for OpenAI-compatible (vLLM) servers.

Pure Python (stdlib + aiohttp): it runs unchanged on a GPU machine that has none of
specadmin's dependencies, and specadmin's deploy pipeline imports it without Django.
Metrics follow `vllm bench serve` exactly (see servebench.metrics and servebench.client).
"""

from servebench.gate import GateResult, gate
from servebench.runner import BenchError, RunSettings, run, run_sync
from servebench.schema import BenchResult, LevelResult, RequestRecord

__all__ = [
    "BenchError",
    "BenchResult",
    "GateResult",
    "LevelResult",
    "RequestRecord",
    "RunSettings",
    "gate",
    "run",
    "run_sync",
]
