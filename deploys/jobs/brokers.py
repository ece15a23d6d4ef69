"""django-q2 brokers that let only specadmin's tasks through (`Q_CLUSTER["broker_class"]`).

Every package a worker could run passes a broker (django_q/pusher.py takes them from
`dequeue`; django_q/tasks.py `async_task` hands them to `enqueue`, the scheduler included),
so the check sits in both directions:
- `dequeue`: whatever is in the queue, however it got there (a row inserted into
  `django_q_ormq`, an entry pushed onto the Redis list), is decoded as plain data and held
  to `deploys.jobs.allowlist` before the pusher sees it; refused ones are removed;
- `enqueue`: a schedule (`django_q_schedule`, read by the scheduler) that names anything
  else is refused before it is queued; its next run is still set, so one hostile row
  never stops the other schedules (the checkpoints among them).
`async_task` can also run a package at once, in the calling process, without a broker
(`sync`, which a schedule's kwargs may ask for): the `pre_enqueue` receiver below turns
that off for a package that would be refused, so it goes to `enqueue` and is refused there.

Each refusal is logged and recorded as a `task.refused` audit event.
"""

from __future__ import annotations

import hashlib
import logging
from typing import Any

from django_q.brokers.orm import ORM
from django_q.brokers.redis_broker import Redis
from django_q.signals import pre_enqueue

from audit.models import AuditKind
from audit.services import record
from deploys.jobs.allowlist import PackageRefused, decode_package, refusal

log = logging.getLogger(__name__)


def _text(value: Any, limit: int) -> str:
    """A value of the package as audit text: truncated, "" when absent."""
    text = "" if value is None else value if isinstance(value, str) else repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def record_refusal(
    signed: str | bytes, where: str, reason: str, package: dict[str, Any] | None
) -> None:
    """Log and audit one refused package; never raises (the pusher must keep running)."""
    raw = signed.encode() if isinstance(signed, str) else bytes(signed)
    func = _text(package.get("func"), 200) if package else ""
    log.error("refused a task package (%s): %s", where, reason)
    details: dict[str, Any] = {
        "where": where,
        "reason": _text(reason, 500),
        "package_sha256": hashlib.sha256(raw).hexdigest(),
        "package_bytes": len(raw),
    }
    if package:
        details.update(
            func=func,
            task_name=_text(package.get("name"), 200),
            group=_text(package.get("group"), 200),
            args=_text(package.get("args"), 500),
            kwargs=_text(package.get("kwargs"), 500),
        )
    attempts = [details, {k: details[k] for k in ("where", "reason", "package_sha256")}]
    for payload in attempts:  # the second without the package's own text, which may be refused
        try:
            record(
                kind=AuditKind.TASK_REFUSED,
                actor=None,
                object_type="django_q.task",
                object_id=_text(package.get("id"), 64) if package else "",
                object_repr=func or "(unreadable task package)",
                payload=payload,
            )
            return
        except ValueError:
            continue
        except Exception:
            log.exception("the refusal of a task package could not be audited")
            return


def vet(signed: str | bytes, where: str) -> bool:
    """True when the package may go on; otherwise it is logged and audited."""
    package: dict[str, Any] | None = None
    try:
        package = decode_package(signed)
        reason = refusal(package)
    except PackageRefused as exc:
        reason = str(exc)
    if reason:
        record_refusal(signed, where, reason, package)
        return False
    return True


class _AllowListed:
    """The two broker methods packages pass; the rest is django-q2's broker."""

    def enqueue(self, task: str) -> Any:
        if not vet(task, "enqueue"):
            return None
        return super().enqueue(task)  # type: ignore[misc]

    def dequeue(self) -> list[tuple[Any, Any]] | None:
        delivered: list[tuple[Any, Any]] | None = super().dequeue()  # type: ignore[misc]
        if not delivered:
            return delivered
        kept = []
        for ack_id, signed in delivered:
            if vet(signed, "queue"):
                kept.append((ack_id, signed))
            else:
                # ORM: deletes the row; Redis: the package was already popped.
                self.fail(ack_id)  # type: ignore[attr-defined]
        return kept


# django-q2 ships no types: its broker classes are Any to mypy.
class AllowListedORM(_AllowListed, ORM):  # type: ignore[misc]
    """django-q2's ORM broker (the `django_q_ormq` table), allow-listed."""


# django-q2 ships no types: its broker classes are Any to mypy.
class AllowListedRedis(_AllowListed, Redis):  # type: ignore[misc]
    """django-q2's Redis broker, allow-listed."""


def _no_inline_run_when_refused(sender: Any, task: dict[str, Any], **kwargs: Any) -> None:
    """A package that would be refused is never run in the enqueuing process (`sync`)."""
    if task.get("sync") and refusal(task):
        task["sync"] = False


# Connected on import: `async_task` builds its broker (importing this module through
# Q_CLUSTER["broker_class"]) before it sends `pre_enqueue` (django_q/tasks.py).
pre_enqueue.connect(_no_inline_run_when_refused, dispatch_uid="specadmin-allow-listed-tasks")

__all__ = ["AllowListedORM", "AllowListedRedis", "record_refusal", "vet"]
