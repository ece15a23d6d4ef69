"""One claimed check, from the claim to its end: the task wrapper calls `run_check`.

The connection gets short timeouts of its own (`WATCHDOG_CONNECT_TIMEOUT_S`,
`WATCHDOG_COMMAND_TIMEOUT_S`): a host that is down or slow costs its own check at most
that, and every other host has its own task. A check still waiting on its host after
`WATCHDOG_CHECK_WAIT_S` (1 s) goes on in a thread of the worker while the worker takes the
next task (`run_check_soon`): a host that is down or slow holds a thread, not one of the
few workers every other host's check waits for. A check whose host a job took meanwhile
is skipped, before it reads the host or after (`services.JobTookHost`): the job reads the
host itself, and `job_finished` asks for a check after it.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any

from django.conf import settings
from django.db import connections

from deploys.connect import transport_for
from deploys.models import Host
from hostops.channel import Transport
from watchdog import claims
from watchdog.evaluate import evaluate
from watchdog.models import HostWatch
from watchdog.reader import SSH, HostRead
from watchdog.services import JobTookHost, apply_verdicts, check_host, windows

log = logging.getLogger(__name__)

HELD = "skipped: a job holds the host"
TAKEN = "skipped: a job took the host during the check"
DEFAULT_WAIT_S = 1.0
DEFAULT_BACKGROUND_CHECKS = 32


class _Threads:
    """How many checks run in this worker's threads (`run_check_soon`)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.running = 0

    def take(self, most: int) -> bool:
        with self._lock:
            if self.running >= most:
                return False
            self.running += 1
            return True

    def give(self) -> None:
        with self._lock:
            self.running -= 1


BACKGROUND = _Threads()


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


def _skipped(watch: HostWatch, token: str, why: str) -> str:
    """End the claim of a check that read nothing it may keep: the last readings stay."""
    claims.finish(watch.pk, token, period_s=watch.period_s, readings=None, seconds=None, error=why)
    return why


def run_check(watch_id: int, token: str, *, connect: Callable[[Host], Transport] = connect) -> str:
    """Check the host of a watch we claimed with `token`; what happened, in words."""
    claimed = claims.claimed_watch(watch_id, token)  # one query: the watch, host, lease
    if claimed is None:
        return "not ours: the claim ended or was taken over"
    watch, lease_held, since = claimed
    host = watch.host
    history = watch.readings.get("history", {}) if isinstance(watch.readings, dict) else {}
    if lease_held:
        return _skipped(watch, token, HELD)
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
            return _skipped(watch, token, TAKEN)
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


def run_check_soon(
    watch_id: int,
    token: str,
    *,
    wait_s: float | None = None,
    connect: Callable[[Host], Transport] = connect,
) -> str:
    """`run_check` in a thread of this worker process, waited for up to `wait_s`
    (`WATCHDOG_CHECK_WAIT_S`). A check that takes longer (a host that is down costs its
    connection's timeout; a slow one its commands) finishes in that thread, its claim and
    its end as always; the worker meanwhile runs the next task, so a host that is down or
    slow does not delay the others' checks. At most `WATCHDOG_BACKGROUND_CHECKS` such
    threads per worker; beyond that the check runs in the task itself, as before. A worker
    that exits with a check still running leaves its claim to expire, and the host is
    claimed again then (`claims.check_timeout_s`)."""
    wait_s = (
        float(getattr(settings, "WATCHDOG_CHECK_WAIT_S", DEFAULT_WAIT_S))
        if wait_s is None
        else wait_s
    )
    most = int(getattr(settings, "WATCHDOG_BACKGROUND_CHECKS", DEFAULT_BACKGROUND_CHECKS))
    if not BACKGROUND.take(most):
        return run_check(watch_id, token, connect=connect)
    said: list[str] = []
    done = threading.Event()

    def check() -> None:
        try:
            said.append(run_check(watch_id, token, connect=connect))
        except Exception as exc:  # a bug outside run_check's own handling: the claim expires
            log.exception("watchdog check of watch #%s failed", watch_id)
            said.append(f"check failed: {type(exc).__name__}: {exc}")
        finally:
            connections.close_all()  # this thread's own connections
            BACKGROUND.give()
            done.set()

    threading.Thread(target=check, name=f"watchdog-check-{watch_id}", daemon=True).start()
    if done.wait(wait_s):
        return said[0]
    return f"still checking after {wait_s:g} s: it goes on in a thread of this worker"


__all__ = ["connect", "run_check", "run_check_soon"]
