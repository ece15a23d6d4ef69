"""Fixtures: the vLLM double's API in its own process (so it does not share the client's GIL)."""

from __future__ import annotations

import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.doubles.vllm_double_http import spawn_api_process

REPO = Path(__file__).resolve().parents[2]
StartDouble = Callable[..., str]


@pytest.fixture
def vllm_double() -> Iterator[StartDouble]:
    """`vllm_double("--tokens-per-s", "74")` → base URL; every process is stopped after."""
    procs: list[subprocess.Popen[str]] = []

    def start(*args: str) -> str:
        proc, url = spawn_api_process(*args)
        procs.append(proc)
        return url

    yield start
    for proc in procs:
        proc.terminate()
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
