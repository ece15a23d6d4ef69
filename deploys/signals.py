"""What deploys tells the apps above it, without importing them.

`deploys` may not import the apps that build on it (docs/architecture.md, "Apps and
imports"); those that want to act on a request or a job's end (notify, fleet, watchdog)
connect to these signals in their `AppConfig.ready()`. `request_created` and `job_ended`
are sent inside the transaction that made the change, with `send_robust`: a receiver
that raises is logged, never the caller's failure, and a receiver that writes rows
writes them in that same transaction (so they exist exactly when the change does). A
receiver that writes must use its own savepoint (`transaction.atomic()`), so a failure
there does not break the caller's transaction.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from django.dispatch import Signal

if TYPE_CHECKING:
    from deploys.models import DeployRequest

log = logging.getLogger(__name__)

# A deploy request was created (any kind). kwargs: request (DeployRequest).
request_created = Signal()
# A job reached its final status. kwargs: request (DeployRequest), status (str), reason (str).
job_ended = Signal()
# Sent once a job has ended and freed the host (outside its transaction). kwargs: request
# (DeployRequest, refreshed), status (str). The watchdog checks the host again then.
job_finished = Signal()


def send(signal: Signal, sender: type, **kwargs: Any) -> None:
    """Send `signal`; a receiver's exception is logged and goes no further."""
    for receiver, result in signal.send_robust(sender, **kwargs):
        if isinstance(result, Exception):
            log.error("%s failed on %s: %r", receiver, sender.__name__, result, exc_info=result)


def send_job_ended(request: DeployRequest, status: str, reason: str) -> None:
    """Tell the apps above deploys that a request's job ended, or will never run (it was
    withdrawn or cancelled while queued): notify queues its messages, a rollout's
    coordinator is queued once the transaction commits."""
    send(job_ended, type(request), request=request, status=status, reason=reason)


__all__ = ["job_ended", "job_finished", "request_created", "send", "send_job_ended"]
