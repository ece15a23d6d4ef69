"""`manage.py verifyaudit`: check the audit hash chain; exit 1 and name the first break."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from audit.verify import verify_chain


class Command(BaseCommand):
    help = "Recompute every audit event's hash and follow the prev_hash links in id order."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--chunk-size", type=int, default=2000, help="events fetched per database round trip"
        )

    def handle(self, *args: Any, chunk_size: int, **options: Any) -> None:
        report = verify_chain(chunk_size=chunk_size)
        if not report.ok:
            raise CommandError(f"audit chain broken: {report.problem}", returncode=1)
        self.stdout.write(str(report))
