"""Recognise a vLLM server command in an argv: `vllm serve …`, `python -m
vllm.entrypoints.openai.api_server …`, `python -m vllm.entrypoints.api_server …` (the demo
server with its own small parser), `python3 /usr/local/bin/vllm serve …`, venv paths to
either, and any of them behind launchers (`env -i …`, `nohup`, `numactl … --`:
linting/vllm/launchers.py)."""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass

from linting.vllm.launchers import launched

_PYTHON = re.compile(r"python(\d+(\.\d+)?)?\Z")
OPENAI_SERVER_MODULE = "vllm.entrypoints.openai.api_server"
DEMO_SERVER_MODULE = "vllm.entrypoints.api_server"
API_SERVER_MODULES = (OPENAI_SERVER_MODULE, DEMO_SERVER_MODULE)
CLI_MODULES = ("vllm.entrypoints.cli.main", "vllm")
# Python's own options that take a separate value (python(1)): `-W error -m vllm …`.
_PYTHON_WITH_VALUE = frozenset({"-W", "-X", "-Q"})


@dataclass(frozen=True)
class VllmInvocation:
    """Where the vLLM arguments start in argv, and how vLLM was invoked."""

    style: str  # "serve" | "api_server" (OpenAI) | "demo_server" (vllm.entrypoints.api_server)
    args_start: int  # index of the first argument after `serve` / the module name
    program: int = 0  # index of the program (`vllm`, `python3`) past any launcher


def find_vllm(argv: list[str]) -> VllmInvocation | None:
    start = launched(argv)
    if start >= len(argv):
        return None
    exe = posixpath.basename(argv[start])
    if exe == "vllm":
        if len(argv) > start + 1 and argv[start + 1] == "serve":
            return VllmInvocation("serve", start + 2, start)
        return None
    if _PYTHON.match(exe):
        return _python(argv, start)
    return None


def _python(argv: list[str], start: int) -> VllmInvocation | None:
    """`python [OPTIONS] -m MODULE …` or `python [OPTIONS] /path/to/vllm serve …`."""
    i = start + 1
    while i < len(argv) and argv[i].startswith("-") and argv[i] != "-m":
        i += 2 if argv[i] in _PYTHON_WITH_VALUE else 1
    if i + 1 < len(argv) and argv[i] == "-m":
        module = argv[i + 1]
        if module == OPENAI_SERVER_MODULE:
            return VllmInvocation("api_server", i + 2, start)
        if module == DEMO_SERVER_MODULE:
            return VllmInvocation("demo_server", i + 2, start)
        if module in CLI_MODULES and i + 2 < len(argv) and argv[i + 2] == "serve":
            return VllmInvocation("serve", i + 3, start)
        return None
    # the console script run by an interpreter (an image's `--entrypoint python3`)
    if i + 1 < len(argv) and posixpath.basename(argv[i]) == "vllm" and argv[i + 1] == "serve":
        return VllmInvocation("serve", i + 2, start)
    return None
