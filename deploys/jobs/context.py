"""What every step of one job may read and none may change: the job's context.

The runner builds it once the request is claimed (`JobContext.open`), adds the host's
lease once the host_lock step holds it, and runs the rollback under a copy with phase
`rollback` and no cancel (`dataclasses.replace`): the context of a step is fixed for the
whole step. What a step finds out goes elsewhere: its evidence (log lines, host reads,
progress) to its `deploys.jobs.recorder.Recorder`, what later steps need as a typed result
(`deploys.jobs.results`), which the runner passes on (`deploys.jobs.flow`).
"""

from __future__ import annotations

import dataclasses
import posixpath
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from functools import cached_property
from typing import Any

from django.utils import timezone

from deploys.jobs.lease import HostLease
from deploys.jobs.policy import PipelinePolicy
from deploys.models import DeployRequest, Host, JobStep
from hostops.channel import Transport
from hostops.channel.push import DEFAULT_UNIT_DIR


class Connection:
    """The job's one connection to its host: opened on first use (so a host that cannot be
    reached fails a step, with a JobStep saying why), then reused by every step."""

    def __init__(self, host: Host, connect: Callable[[Host], Transport]) -> None:
        self._host = host
        self._connect = connect
        self._transport: Transport | None = None

    @property
    def transport(self) -> Transport:
        if self._transport is None:
            self._transport = self._connect(self._host)
        return self._transport

    @property
    def existing(self) -> Transport | None:
        """The transport if a step has connected, without connecting."""
        return self._transport

    def close(self) -> None:
        if self._transport is not None:
            self._transport.close()


def never_cancelled() -> bool:
    return False


@dataclass(frozen=True)
class JobContext:
    """The request, the host and its connection, the lease, the clock, the cancel check,
    the unit directory and the phase: the same for every step of a phase."""

    request: DeployRequest
    host: Host
    connection: Connection
    lease: HostLease | None = None
    now: Callable[[], datetime] = timezone.now
    # Has someone cancelled the job? Long waits ask it and return early.
    cancel_requested: Callable[[], bool] = never_cancelled
    unit_dir: str = DEFAULT_UNIT_DIR
    phase: str = JobStep.Phase.MAIN
    # A trial's steps: the unit they act on (0: production, i: candidate i; None: the
    # trial as a whole, or no trial). `request` is then that unit's view of the trial
    # (deploys.jobs.trial.candidate_context): its name, text and profile version.
    trial_position: int | None = None

    @classmethod
    def open(
        cls, request: DeployRequest, connect: Callable[[Host], Transport], **fields: Any
    ) -> JobContext:
        """The context of a job for `request`, connecting with `connect` on first use."""
        base = cls(request=request, host=request.host, connection=Connection(request.host, connect))
        return dataclasses.replace(base, **fields)

    @property
    def transport(self) -> Transport:
        return self.connection.transport

    @property
    def existing_transport(self) -> Transport | None:
        return self.connection.existing

    def close(self) -> None:
        self.connection.close()

    @property
    def unit(self) -> str:
        return f"{self.request.unit_name}.service"

    @property
    def kind(self) -> str:
        return self.request.kind

    @property
    def path(self) -> str:
        return posixpath.join(self.unit_dir, self.unit)

    @cached_property
    def policy(self) -> PipelinePolicy:
        """The profile's deploy-job settings (defaults where the version predates them);
        read on first use, so a version whose settings cannot be read fails the job there."""
        return PipelinePolicy.from_profile_data(self.request.profile_version.data)


__all__ = ["Connection", "JobContext", "never_cancelled"]
