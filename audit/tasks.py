"""django-q2 entry point of the audit app (thin: the work is in `audit.checkpoints`)."""

from __future__ import annotations

from audit.checkpoints import write_checkpoint
from audit.services import keys_for_writing


def checkpoint_task() -> int:
    """Schedule (every 5 minutes): sign and export the chain's head; returns its event id."""
    written = write_checkpoint(keys_for_writing())
    if written.failures:
        raise RuntimeError("; ".join(written.failures))
    return int(written.document["head_id"])


__all__ = ["checkpoint_task"]
