"""What steps learn that later steps need: one frozen result type per providing step.

A step provides at most one of these (`Recorder.provide`); a step that needs one names its
type (`deploys.jobs.flow.Step.needs`) and is given the latest result of that type (or of a
subclass: `Preflighted` and `Restored` are both a `Found`). Which step provides and needs
what, per pipeline: docs/architecture.md, "The restart pipeline".
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from hostops.channel.push import PushResult
from hostops.gpu_clean import ServiceIdentity
from hostops.service import VllmService


@dataclass(frozen=True)
class Found:
    """The vLLM server of the unit that is to run (None: the unit runs no vLLM server,
    and readiness is the unit's state)."""

    service: VllmService | None


@dataclass(frozen=True)
class Preflighted(Found):
    """What preflight found: the approved unit's server, its environment as the profile
    renders it (for vLLM's own check), and whether the service ran before this job."""

    environment: Mapping[str, str]
    was_active: bool


@dataclass(frozen=True)
class Pushed:
    """What push wrote and replaced (`previous` is None for a brand-new unit), and why
    systemd did not load it as written ("" when it did), for daemon_reload to report."""

    result: PushResult
    problems: str = ""


@dataclass(frozen=True)
class Stopped:
    """What stop learned about the service before it stopped it: who it is (its processes
    are what GPU-clean may kill). Provided before `systemctl stop` runs: its presence means
    the service may have been touched, so a later failure asks for a rollback."""

    identity: ServiceIdentity


@dataclass(frozen=True)
class Started:
    """The journal mark start took: the newest entry's cursor before the start ("" when
    the journal was empty), when it was queued (time.monotonic()), and the unit's
    NRestarts then (a rise means systemd restarted it)."""

    cursor: str
    started_at: float
    restarts: int


@dataclass(frozen=True)
class Watched:
    """What a watch of the start saw (journal_check, then readiness): the cursor to read
    on from, the journal's last lines, and whether the server answered as ready."""

    cursor: str
    journal_lines: tuple[str, ...]
    healthy: bool


@dataclass(frozen=True)
class Restored(Found):
    """Rollback's restore: whether the restored unit is started again (it ran before the
    job), or the job's brand-new unit was removed instead; `service` is the restored
    unit's server (its port or model may differ from the new one's)."""

    restart_previous: bool
    unit_gone: bool


__all__ = ["Found", "Preflighted", "Pushed", "Restored", "Started", "Stopped", "Watched"]
