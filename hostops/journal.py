"""Reading a starting vLLM service's journal: what is fatal, what shows progress.

Classes of fatal lines, each with what produces it:
- systemd load/exec errors: "Failed to execute …", "Failed at step EXEC", "status=203/EXEC",
  "Failed to locate executable" (src/core/exec-invoke.c, src/core/service.c);
- "Referenced but unset environment variable evaluates to an empty string" and "Invalid
  environment variable name evaluates to an empty string" (systemd ≥ 254, env-util.c
  `replace_env_full`): the command that ran is not the one written;
- a Python traceback ("Traceback (most recent call last):"), kept with the lines after it;
- vLLM argument errors: argparse's "vllm serve: error: …" / "vllm: error: unrecognized
  arguments" (Lib/argparse.py `ArgumentParser.error`);
- speculative-config errors: pydantic's "validation error(s) for SpeculativeConfig",
  "SpeculativeConfig.__init__() got an unexpected keyword argument" (0.8.x), "Unsupported
  speculative method" (vllm/config/speculative.py);
- CUDA out of memory ("CUDA out of memory", torch.OutOfMemoryError, vLLM's "Free memory on
  device … is less than desired GPU memory utilization" from vllm/v1/worker/gpu_worker.py);
- the engine dying ("EngineDeadError", "Engine core initialization failed").
The unit entering `failed`, or leaving `activating/active` for systemd's auto-restart, is
read from the unit's state (`unit_verdict`), not from lines.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from hostops.channel.base import JournalEntry

FATAL: tuple[tuple[str, re.Pattern[str]], ...] = (
    (
        "systemd exec error",
        re.compile(
            r"Failed to execute|Failed at step \w+|status=20\d/[A-Z]+|Failed to locate "
            r"executable|Failed to spawn|Unit .* has a bad unit file setting"
        ),
    ),
    (
        "unset environment variable",
        re.compile(
            r"Referenced but unset environment variable|Invalid environment variable name "
            r"evaluates"
        ),
    ),
    ("Python traceback", re.compile(r"^Traceback \(most recent call last\)")),
    (
        "vLLM argument error",
        re.compile(r"^(usage: )?vllm( serve)?: error: |api_server\.py: error: |: error: unrecog"),
    ),
    (
        "speculative-config error",
        re.compile(
            r"validation errors? for SpeculativeConfig|SpeculativeConfig\.__init__\(\) got|"
            r"Unsupported speculative method|speculative config key"
        ),
    ),
    (
        "CUDA out of memory",
        re.compile(r"CUDA out of memory|OutOfMemoryError|Free memory on device .* is less than"),
    ),
    ("engine failure", re.compile(r"EngineDeadError|Engine core initialization failed")),
)
# Lines worth showing as "where the load is" (vllm/model_executor/model_loader,
# vllm/v1/worker/gpu_model_runner.py, the API server's start-up).
PROGRESS = re.compile(
    r"Loading (model|weights)|Loading weights took|Model loading took|Capturing CUDA graph|"
    r"Graph capturing finished|KV cache|Memory profiling|init engine|Starting vLLM API server|"
    r"Application startup complete|Available routes|Uvicorn running",
    re.IGNORECASE,
)
CONTEXT_LINES = 40  # offending lines attached to a failure


@dataclass(frozen=True)
class Fatal:
    kind: str
    lines: tuple[str, ...]  # the offending line and what follows it (a traceback's tail)
    headline: str = ""  # the line that says what went wrong

    @property
    def summary(self) -> str:
        return f"{self.kind}: {self.headline[:300]}"


def entry_lines(entries: Sequence[JournalEntry]) -> list[str]:
    """Journal entries as text lines (an entry may hold several)."""
    lines: list[str] = []
    for entry in entries:
        lines.extend(entry.message.splitlines() or [""])
    return lines


@dataclass(frozen=True)
class _Match:
    index: int
    kind: str
    line: str


def _matches(lines: Sequence[str]) -> list[_Match]:
    found = []
    for i, line in enumerate(lines):
        for kind, pattern in FATAL:
            if pattern.search(line):
                found.append(_Match(i, kind, line))
                break
    return found


def classify(lines: Sequence[str]) -> Fatal | None:
    """The fatal class of what was read, with the offending lines from the first fatal
    line to the end (a traceback's last line is the exception; at most CONTEXT_LINES,
    keeping its tail). A traceback is named by what it raised when that is a known
    class (a speculative-config error, CUDA out of memory), else by its last line."""
    found = _matches(lines)
    if not found:
        return None
    first = found[0]
    specific = next((m for m in found if m.kind != "Python traceback"), None)
    tail = list(lines[first.index :])
    if len(tail) > CONTEXT_LINES:
        tail = [*tail[:5], "…", *tail[-(CONTEXT_LINES - 6) :]]
    if specific is not None:
        return Fatal(specific.kind, tuple(tail), specific.line.strip())
    last = next((line for line in reversed(tail) if line.strip()), first.line)
    return Fatal(first.kind, tuple(tail), last.strip())


def last_progress(lines: Sequence[str]) -> str:
    """The last line that says where the start-up is ("" when none has yet)."""
    for line in reversed(lines):
        if PROGRESS.search(line):
            return line.strip()[:300]
    return ""


def unit_verdict(props: dict[str, str], restarts_at_start: int) -> str:
    """Why the unit's state means the start failed ("" while it may still succeed)."""
    active, sub = props.get("ActiveState", ""), props.get("SubState", "")
    status = props.get("ExecMainStatus", "")
    if active == "failed":
        return f"the unit entered failed (Result={props.get('Result', '?')}, exit status {status})"
    if sub == "auto-restart" or _int(props.get("NRestarts")) > restarts_at_start:
        return (
            f"the service exited (exit status {status}, Result={props.get('Result', '?')}) and "
            "systemd is restarting it"
        )
    if active in ("inactive", "deactivating"):
        return f"the service stopped ({active}/{sub}, exit status {status})"
    return ""


def _int(value: str | None) -> int:
    try:
        return int(value or 0)
    except ValueError:
        return 0


__all__ = ["FATAL", "PROGRESS", "Fatal", "classify", "entry_lines", "last_progress", "unit_verdict"]
