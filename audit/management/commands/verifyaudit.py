"""`manage.py verifyaudit`: check the audit chain against its key and its checkpoints.

Exit status: 0 intact; 1 broken (the first missing or altered event named), or a
checkpoint file missing or empty (named); 3 intact, but with `--require-witness` and no
copy of the checkpoints outside this server (or one that is behind). Without
`--require-witness` that case is a WARNING line on stderr, exit 0 (docs/security.md)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from audit.keys import load_keys
from audit.verify import verify_chain
from audit.witnesses import witness_status

NO_WITNESS = 3


class Command(BaseCommand):
    help = (
        "Recompute every audit event's hash (HMAC with the audit key), follow the prev_hash "
        "links in id order, and hold the chain to every signed checkpoint: the server's "
        "checkpoint file and the witness file, or the copies given with --checkpoints."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--chunk-size", type=int, default=2000, help="events fetched per database round trip"
        )
        parser.add_argument(
            "--checkpoints",
            type=Path,
            action="append",
            default=None,
            metavar="FILE",
            help="a file of checkpoints kept elsewhere (a witness's copy: the log host's "
            "file, a webhook receiver's, the journal's) to check against instead of the "
            "configured ones; repeat it for several",
        )
        parser.add_argument(
            "--require-witness",
            action="store_true",
            help=f"exit {NO_WITNESS} when no copy of the checkpoints leaves this server, or "
            "one that does is behind (instead of only a WARNING)",
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
        checkpoints: list[Path] | None,
        require_witness: bool,
        public_key: bool,
        **options: Any,
    ) -> None:
        if public_key:
            keys = load_keys()
            if keys is None:
                raise CommandError("no audit key file yet", returncode=1)
            self.stdout.write(keys.public_key_hex)
            return
        witnesses = witness_status()
        for warning in witnesses.warnings:
            self.stderr.write(f"WARNING: {warning}")
        report = verify_chain(chunk_size=chunk_size, checkpoint_files=checkpoints)
        if not report.ok:
            raise CommandError(f"audit chain broken: {report.problem}", returncode=1)
        self.stdout.write(str(report))
        if require_witness and not witnesses.held:
            raise CommandError(
                "--require-witness: the checkpoints are not (all) kept outside this server",
                returncode=NO_WITNESS,
            )
