"""Fixtures: the vLLM double's API in its own process (so it does not share the client's GIL)."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
StartDouble = Callable[..., str]


def start_double_process(*args: str) -> tuple[subprocess.Popen[str], str]:
    """Run tests.doubles.vllm_double_http on a free port; returns the process and base URL."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.doubles.vllm_double_http", "--port", "0", "--quiet", *args],
        cwd=REPO,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    line = proc.stdout.readline().strip()
    if not line.startswith("serving "):
        proc.kill()
        raise RuntimeError(f"the double did not start: {line!r}")
    return proc, line.removeprefix("serving ")


@pytest.fixture
def vllm_double() -> Iterator[StartDouble]:
    """`vllm_double("--tokens-per-s", "74")` → base URL; every process is stopped after."""
    procs: list[subprocess.Popen[str]] = []

    def start(*args: str) -> str:
        proc, url = start_double_process(*args)
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
