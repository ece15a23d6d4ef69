"""One claimed check, from the claim to its end: the task wrapper calls `run_check`.

The connection gets short timeouts of its own (`WATCHDOG_CONNECT_TIMEOUT_S`,
`WATCHDOG_COMMAND_TIMEOUT_S`): a host that is down or slow costs its own check at most
that, and every other host has its own task. A check whose host a job took meanwhile
is skipped, before it reads the host or after (`services.JobTookHost`): the job reads the
host itself, and `job_finished` asks for a check after it.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

from django.conf import settings

from deploys.connect import transport_for
from deploys.models import Host
from hostops.channel import Transport
from watchdog import claims
from watchdog.evaluate import evaluate
from watchdog.reader import SSH, HostRead
from watchdog.services import JobTookHost, apply_verdicts, check_host, windows

log = logging.getLogger(__name__)

TAKEN = "skipped: a job took the host during the check"


def connect(host: Host) -> Transport:
    return transport_for(
        host,
        connect_timeout=float(getattr(settings, "WATCHDOG_CONNECT_TIMEOUT_S", 5.0)),
        command_timeout=float(getattr(settings, "WATCHDOG_COMMAND_TIMEOUT_S", 15.0)),
    )


def _unreachable(host: Host, history: dict[str, Any], reason: str) -> dict[str, Any]:
    """No connection at all: the reach verdict alone (nothing else judged, nothing closes)."""
    evaluation = evaluate(HostRead(at=time.time(), errors={SSH: reason}), history, windows())
    apply_verdicts(host=host, verdicts=evaluation.verdicts, units=None)
    return {"history": history, "now": evaluation.now}


def run_check(watch_id: int, token: str, *, connect: Callable[[Host], Transport] = connect) -> str:
    """Check the host of a watch we claimed with `token`; what happened, in words."""
    claimed = claims.claimed_watch(watch_id, token)  # one query: the watch, host, lease
    if claimed is None:
        return "not ours: the claim ended or was taken over"
    watch, lease_held, since = claimed
    host = watch.host
    history = watch.readings.get("history", {}) if isinstance(watch.readings, dict) else {}
    if lease_held:
        claims.finish(
            watch_id,
            token,
            period_s=watch.period_s,
            readings=None,
            seconds=None,
            error="skipped: a job holds the host",
        )
        return "skipped: a job holds the host"
    started = time.monotonic()
    error = ""
    recheck_in: float | None = None
    try:
        transport = connect(host)
    except Exception as exc:  # a host row that cannot be reached (key not pinned, …)
        error = f"{type(exc).__name__}: {exc}"
        readings = _unreachable(host, history, error)
    else:
        try:
            with transport:
                evaluation, _, _ = check_host(
                    host=host, transport=transport, history=history, since=since
                )
            readings = {"history": evaluation.history, "now": evaluation.now}
            if evaluation.recheck_at is not None:  # on the samples' clock, this one's
                recheck_in = evaluation.recheck_at - time.time()
            error = "; ".join(f"{k}: {v}" for k, v in evaluation.now["errors"].items())
        except JobTookHost:
            claims.finish(
                watch_id, token, period_s=watch.period_s, readings=None, seconds=None, error=TAKEN
            )
            return TAKEN
        except Exception as exc:  # a bug: recorded, and the host is not called healthy
            log.exception("watchdog check of %s failed", host.name)
            error = f"check failed: {type(exc).__name__}: {exc}"
            readings = _unreachable(host, history, error)
    seconds = time.monotonic() - started
    if not claims.finish(
        watch_id,
        token,
        period_s=watch.period_s,
        readings=readings,
        seconds=seconds,
        error=error,
        recheck_in=recheck_in,
    ):
        log.warning("watchdog check of %s outlived its claim (%.1f s)", host.name, seconds)
        return f"checked in {seconds:.2f} s, but the claim had expired"
    return f"checked in {seconds:.2f} s" + (f" ({error[:200]})" if error else "")


__all__ = ["connect", "run_check"]
