"""Which functions a django-q2 worker may run: the list is here, in code, never in the database.

django-q2 runs whatever a task package names: its worker imports the dotted path in `func`
(`django_q/worker.py`: `pydoc.locate`), its monitor imports and calls `hook`
(`django_q/signals.py`: `call_hook`), a `chain` enqueues further functions, and the
package itself is a pickle (`django_q/signing.py`), which can run code while it is read.
Schedules (`django_q_schedule`) and queued tasks (`django_q_ormq`, the Redis list) are
rows anyone who can write the database (or Redis) can add. So every package is decoded
here as plain data (deploys.jobs.plain_pickle), and is refused unless it names one of
`ALLOWED_TASKS` with no hook and no chain. `deploys.jobs.brokers` applies this where
packages enter and leave the queue (docs/security.md, "Background tasks").
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django_q import core_signing
from django_q.conf import Conf

from audit import tasks as audit_tasks
from deploys.jobs import tasks as deploy_tasks
from deploys.jobs.plain_pickle import UnsafePickle, plain_loads


def _dotted(function: Callable[..., Any]) -> str:
    return f"{function.__module__}.{function.__qualname__}"


# The task wrappers (thin, stable names; docs/architecture.md "Jobs and steps"). Named
# through the functions themselves, so an entry cannot name something that does not exist.
ALLOWED_TASKS: frozenset[str] = frozenset(
    _dotted(function)
    for function in (
        deploy_tasks.deploy_task,  # deploys.jobs.queue.enqueue_deploy
        deploy_tasks.probe_task,  # deploys.jobs.queue.enqueue_probe
        deploy_tasks.expire_stale_requests_task,  # schedule, migration deploys 0003/0004
        deploy_tasks.fail_abandoned_deploys_task,  # schedule, migration deploys 0003/0004
        audit_tasks.checkpoint_task,  # schedule, migration audit 0005
    )
)


# Task wrappers of apps above `deploys` (the watchdog), added by their AppConfig.ready:
# code, never the database, decides what runs; `deploys` cannot import them itself.
_REGISTERED: set[str] = set()


def register(*functions: Callable[..., Any]) -> None:
    """Allow these task wrappers too (called once, when the app that owns them loads)."""
    _REGISTERED.update(_dotted(function) for function in functions)


def allowed_tasks() -> frozenset[str]:
    """Every function a worker may run: `ALLOWED_TASKS` and the registered wrappers."""
    return ALLOWED_TASKS | _REGISTERED


class PackageRefused(Exception):
    """A task package that must not reach a worker; the message says why."""


class _PlainDataSerializer:
    """django-q2's serializer interface (`django_q/signing.py` PickleSerializer), reading
    plain data only (deploys.jobs.plain_pickle)."""

    def loads(self, data: bytes) -> Any:
        try:
            return plain_loads(data)
        except UnsafePickle as exc:
            raise PackageRefused(str(exc)) from None


def decode_package(signed: str | bytes) -> dict[str, Any]:
    """The task package in `signed`, checked the way django-q2's pusher reads it (its
    signature with SECRET_KEY and the cluster's name as salt: django_q/signing.py) but
    unpickled as plain data. Raises PackageRefused."""
    try:
        package = core_signing.loads(
            signed, key=Conf.SECRET_KEY, salt=Conf.PREFIX, serializer=_PlainDataSerializer
        )
    except core_signing.BadSignature:
        raise PackageRefused("it is not signed with this server's SECRET_KEY") from None
    if not isinstance(package, dict):
        raise PackageRefused(f"it is a {type(package).__name__}, not a task package")
    return package


def refusal(package: dict[str, Any]) -> str:
    """Why `package` (a decoded task) must not run, or "" when it may."""
    func = package.get("func")
    if not isinstance(func, str):
        return f"its function is a {type(func).__name__}, not the dotted path of a task"
    if func not in allowed_tasks():
        return f"{func} is not one of specadmin's tasks"
    if package.get("hook"):
        return f"it names a result hook ({package['hook']!s:.100}), which specadmin never uses"
    if package.get("chain"):
        return "it carries a chain of further tasks, which specadmin never uses"
    return ""


__all__ = [
    "ALLOWED_TASKS",
    "PackageRefused",
    "allowed_tasks",
    "decode_package",
    "refusal",
    "register",
]
