"""Recognise a vLLM server command in an argv: `vllm serve …`, `python -m
vllm.entrypoints.openai.api_server …`, and venv paths to either."""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass

_PYTHON = re.compile(r"python(\d+(\.\d+)?)?\Z")
API_SERVER_MODULES = ("vllm.entrypoints.openai.api_server", "vllm.entrypoints.api_server")
CLI_MODULES = ("vllm.entrypoints.cli.main", "vllm")


@dataclass(frozen=True)
class VllmInvocation:
    """Where the vLLM arguments start in argv, and how vLLM was invoked."""

    style: str  # "serve" | "api_server"
    args_start: int  # index of the first argument after `serve` / the module name


def find_vllm(argv: list[str]) -> VllmInvocation | None:
    if not argv:
        return None
    exe = posixpath.basename(argv[0])
    if exe == "vllm":
        if len(argv) > 1 and argv[1] == "serve":
            return VllmInvocation("serve", 2)
        return None
    if _PYTHON.match(exe):
        i = 1
        while i < len(argv) and argv[i].startswith("-") and argv[i] != "-m":
            i += 1
        if i + 1 < len(argv) and argv[i] == "-m":
            module = argv[i + 1]
            if module in API_SERVER_MODULES:
                return VllmInvocation("api_server", i + 2)
            if module in CLI_MODULES and i + 2 < len(argv) and argv[i + 2] == "serve":
                return VllmInvocation("serve", i + 3)
    return None
