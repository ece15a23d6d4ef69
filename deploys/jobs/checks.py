"""System checks for the job settings (`manage.py check`, and at worker start-up).

django-q2 hands a task that has not been acknowledged after `retry` seconds to another
worker; if a job may legally run longer (`timeout`), the same deploy is started twice.
The runner's claim makes that harmless, but it is still a misconfiguration. A job also
waits for the host lock: that wait must fit inside `timeout`, or the worker is killed
while waiting.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.checks import CheckMessage, Error, Warning, register

from deploys.jobs.lease import lease_seconds, wait_seconds


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
    return messages
