"""System checks for the job settings (`manage.py check`, and at worker start-up).

django-q2 hands a task that has not been acknowledged after `retry` seconds to another
worker; if a job may legally run longer (`timeout`), the same deploy is started twice.
The runner's claim makes that harmless, but it is still a misconfiguration. A job also
waits for the host lock: that wait must fit inside `timeout`, or the worker is killed
while waiting. And the longest job — a model load of up to the profile's readiness wait,
then the same again for its rollback — must fit too: the runner refuses a job whose waits
could exceed `timeout` (`deploys.jobs.runner._budget_problem`); W002 says when the
defaults already would.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.checks import CheckMessage, Error, Warning, register

from deploys.jobs.lease import lease_seconds, wait_seconds
from deploys.jobs.policy import PipelinePolicy


@register()
def check_q_cluster(app_configs: Any = None, **kwargs: Any) -> list[CheckMessage]:
    conf = getattr(settings, "Q_CLUSTER", {}) or {}
    timeout, retry = conf.get("timeout"), conf.get("retry", 60)
    messages: list[CheckMessage] = []
    if timeout is None:
        messages.append(
            Error(
                "Q_CLUSTER has no 'timeout': a hung deploy job would hold its worker forever",
                id="deploys.E001",
            )
        )
    elif retry is None or retry <= timeout:
        messages.append(
            Error(
                f"Q_CLUSTER 'retry' ({retry}) must exceed 'timeout' ({timeout}): otherwise "
                "django-q2 hands a running job to a second worker",
                hint="Set Q_RETRY above Q_TIMEOUT.",
                id="deploys.E002",
            )
        )
    elif wait_seconds() + lease_seconds() >= timeout:
        messages.append(
            Warning(
                f"DEPLOY_LOCK_WAIT_S ({wait_seconds():g}) + DEPLOY_LOCK_LEASE_S "
                f"({lease_seconds():g}) leave no time for the job within Q_CLUSTER "
                f"'timeout' ({timeout})",
                id="deploys.W001",
            )
        )
    else:
        longest = default_job_seconds()
        if longest > timeout:
            messages.append(
                Warning(
                    f"a deploy of a profile with the default waits may take {longest:,.0f} s "
                    f"(lock wait, stop, GPU-clean, start, journal check, a "
                    f"{_default_policy().ready_timeout_s:,.0f} s readiness wait, and the "
                    f"same again for a rollback), more than Q_CLUSTER 'timeout' ({timeout}): "
                    "such jobs are refused before they touch a host",
                    hint="Raise Q_TIMEOUT (and Q_RETRY above it), or lower the profiles' "
                    "deploy-job waits.",
                    id="deploys.W002",
                )
            )
    return messages


def _default_policy() -> PipelinePolicy:
    return PipelinePolicy.from_profile_data({})


def default_job_seconds() -> float:
    """The longest a job of a profile with the default waits can take: the lock wait and
    two passes (the job, then its rollback) with every wait at its bound."""
    return wait_seconds() + 2 * _default_policy().worst_case_s()
