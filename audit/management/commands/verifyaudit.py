"""`manage.py verifyaudit`: check the audit chain against its key and its checkpoints;
exit 1 and name the first missing or altered event."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from audit.keys import load_keys
from audit.verify import verify_chain


class Command(BaseCommand):
    help = (
        "Recompute every audit event's hash (HMAC with the audit key), follow the prev_hash "
        "links in id order, and hold the chain to every signed checkpoint."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--chunk-size", type=int, default=2000, help="events fetched per database round trip"
        )
        parser.add_argument(
            "--checkpoints",
            type=Path,
            default=None,
            help="checkpoint file to check against (default: AUDIT_CHECKPOINT_FILE), e.g. a "
            "copy fetched from the log host",
        )
        parser.add_argument(
            "--public-key",
            action="store_true",
            help="print the checkpoints' Ed25519 public key (hex) and exit",
        )

    def handle(
        self,
        *args: Any,
        chunk_size: int,
        checkpoints: Path | None,
        public_key: bool,
        **options: Any,
    ) -> None:
        if public_key:
            keys = load_keys()
            if keys is None:
                raise CommandError("no audit key file yet", returncode=1)
            self.stdout.write(keys.public_key_hex)
            return
        if checkpoints is not None and not checkpoints.exists():
            raise CommandError(f"no checkpoint file {checkpoints}", returncode=2)
        report = verify_chain(chunk_size=chunk_size, checkpoints_path=checkpoints)
        if not report.ok:
            raise CommandError(f"audit chain broken: {report.problem}", returncode=1)
        self.stdout.write(str(report))
