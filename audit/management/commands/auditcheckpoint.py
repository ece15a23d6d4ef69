"""`manage.py auditcheckpoint`: sign the audit chain's head now, append it to the
checkpoint file and send it to every witness (`audit.checkpoints`, `audit.witnesses`),
with whatever still waits for a witness first. The worker does it every 5 minutes; run it
by hand right after an upgrade or before a backup."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError

from audit.checkpoints import CheckpointRefused, write_checkpoint
from audit.services import keys_for_writing


class Command(BaseCommand):
    help = "Sign the audit chain's head and write the checkpoint outside the database."

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            written = write_checkpoint(keys_for_writing())
        except CheckpointRefused as exc:
            raise CommandError(f"no checkpoint written: {exc}", returncode=1) from None
        document = written.document
        for sink in written.sinks:
            self.stdout.write(f"checkpoint of event #{document['head_id']} written to {sink}")
        if written.failures or not written.sinks:
            failures = "; ".join(written.failures) or "no place configured"
            raise CommandError(f"checkpoint not written everywhere: {failures}", returncode=1)
