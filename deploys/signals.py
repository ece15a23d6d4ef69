"""What deploys tells the apps above it, without importing them.

`deploys` may not import the apps that build on it (docs/architecture.md, "Apps and
imports"); those that want to act on a request or a job's end (notify) connect to these
signals in their `AppConfig.ready()`. Both are sent inside the transaction that made the
change, with `send_robust`: a receiver that raises is logged, never the caller's failure,
and a receiver that writes rows writes them in that same transaction (so they exist
exactly when the change does). A receiver that writes must use its own savepoint
(`transaction.atomic()`), so a failure there does not break the caller's transaction.
"""

from __future__ import annotations

import logging
from typing import Any

from django.dispatch import Signal

log = logging.getLogger(__name__)

# A deploy request was created (any kind). kwargs: request (DeployRequest).
request_created = Signal()
# A job reached its final status. kwargs: request (DeployRequest), status (str), reason (str).
job_ended = Signal()


def send(signal: Signal, sender: type, **kwargs: Any) -> None:
    """Send `signal`; a receiver's exception is logged and goes no further."""
    for receiver, result in signal.send_robust(sender, **kwargs):
        if isinstance(result, Exception):
            log.error("%s failed on %s: %r", receiver, sender.__name__, result, exc_info=result)


__all__ = ["job_ended", "request_created", "send"]
