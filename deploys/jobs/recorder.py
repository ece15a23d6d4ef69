"""The one thing a step writes to: its log lines, what it read on the host, its live
progress, and the typed result it hands to later steps.

The runner gives every step a fresh recorder and stores what it holds on the step's
`JobStep` (`deploys.jobs.recording`): `log` → `JobStep.log`, `read` → `JobStep.reads`,
`progress` → `JobStep.progress` (the live job page), `provide` → the job's results
(`deploys.jobs.flow.Results`), for the steps that need it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")


def _ignore(message: str) -> None:
    return None


class Recorder:
    def __init__(self, on_progress: Callable[[str], None] = _ignore) -> None:
        self.lines: list[str] = []
        self.reads: dict[str, Any] = {}
        self.provided: object | None = None
        self._on_progress = on_progress

    def log(self, line: str) -> None:
        """A line for the step's JobStep.log."""
        self.lines.append(line)

    def read(self, name: str, value: T) -> T:
        """Keep what the step read on the host (JSON) in its JobStep.reads; returns it."""
        self.reads[name] = value
        return value

    def progress(self, message: str) -> None:
        """Tell the live job page where a long step is ("loading weights, 12 min")."""
        self._on_progress(message)

    def provide(self, result: T) -> T:
        """Hand this step's typed result to the later steps, as soon as it is known: a step
        that raises afterwards has still provided it (stop provides the service's identity
        before `systemctl stop`, so a connection lost during the stop still asks for the
        previous unit back). One result per step; returns it."""
        if self.provided is not None:
            raise RuntimeError(
                f"a step provides one result: {type(self.provided).__name__} already, "
                f"then {type(result).__name__}"
            )
        self.provided = result
        return result


__all__ = ["Recorder"]
