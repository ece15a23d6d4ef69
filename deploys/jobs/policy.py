"""A profile's deploy-job settings (units.models.ServiceProfile `deploy_*` fields and the
GPU-free threshold), read from the version snapshot the request runs.

Versions saved before these fields existed lack them: the model's defaults apply, so an
old version behaves as a new blank profile would.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.db.models import Field

from hostops.gpu_clean import CleanPolicy
from units.models import ServiceProfile

# systemd waits TimeoutStopSec= for SIGTERM to work, then as long again after SIGKILL
# (the "final-sigkill" state, src/core/service.c); our bound on `systemctl stop` covers
# both plus this margin.
STOP_MARGIN_S = 30.0
START_COMMAND_S = 60.0  # `systemctl start --no-block` only queues the job


def _default(name: str) -> Any:
    field = ServiceProfile._meta.get_field(name)
    assert isinstance(field, Field)  # a concrete field of the profile, not a relation
    return field.get_default()


@dataclass(frozen=True)
class PipelinePolicy:
    clean: CleanPolicy
    journal_check_s: float
    ready_timeout_s: float
    rollback: bool
    stop_timeout_s: float

    @classmethod
    def from_profile_data(cls, data: dict[str, Any]) -> PipelinePolicy:
        def get(name: str) -> Any:
            value = data.get(name)
            return _default(name) if value is None else value

        return cls(
            clean=CleanPolicy(
                threshold_mib=int(get("gpu_free_threshold_mib")),
                timeout_s=float(get("deploy_gpu_clean_sec")),
                grace_s=float(get("deploy_kill_grace_sec")),
                kill_foreign=bool(get("deploy_kill_foreign")),
            ),
            journal_check_s=float(get("deploy_journal_check_sec")),
            ready_timeout_s=float(get("deploy_ready_timeout_sec")),
            rollback=bool(get("deploy_rollback")),
            stop_timeout_s=2 * float(get("timeout_stop_sec")) + STOP_MARGIN_S,
        )

    def worst_case_s(self) -> float:
        """One pass of stop → clean → start → journal → readiness, every wait at its bound
        (a failure's rollback runs a second pass)."""
        return (
            self.stop_timeout_s
            + self.clean.timeout_s
            + START_COMMAND_S
            + self.journal_check_s
            + self.ready_timeout_s
        )

    def as_json(self) -> dict[str, Any]:
        return {
            "gpu_threshold_mib": self.clean.threshold_mib,
            "gpu_clean_s": self.clean.timeout_s,
            "kill_grace_s": self.clean.grace_s,
            "kill_foreign": self.clean.kill_foreign,
            "journal_check_s": self.journal_check_s,
            "ready_timeout_s": self.ready_timeout_s,
            "rollback": self.rollback,
            "stop_timeout_s": self.stop_timeout_s,
        }


__all__ = ["START_COMMAND_S", "STOP_MARGIN_S", "PipelinePolicy"]
