"""`manage.py importunit FILE… [--host NAME]`: create a profile from each unit file and
say, per file, the profile and version created and whether every Exec command keeps its
argv and environment (docs/unit-import.md). Exit 1 when any did not or could not be
imported; `manage.py renderunit NAME` prints the unit back."""

from __future__ import annotations

from pathlib import Path

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError, CommandParser

from units.importing.service import import_unit


class Command(BaseCommand):
    help = "Import systemd unit files as profiles; exit 1 when an import is not exact."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("files", nargs="+", help="unit files (NAME.service)")
        parser.add_argument("--host", default="", help="the host the files were read from")

    def handle(self, *args: object, files: list[str], host: str, **options: object) -> None:
        failed = 0
        for name in files:
            failed += not self._one(Path(name), host)
        if failed:
            raise CommandError(
                f"{failed} of {len(files)} file(s) not imported exactly", returncode=1
            )

    def _one(self, path: Path, host: str) -> bool:
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            self.stdout.write(f"{path}: not read: {exc}")
            return False
        try:
            result = import_unit(text=text, filename=path.name, actor=None, host=host)
        except ValidationError as exc:
            self.stdout.write(f"{path}: not imported: {' '.join(exc.messages)}")
            return False
        same = result.sameness
        what = "created" if result.created else "imported before as"
        verdict = (
            "argv equal, environment equal"
            if same.equal
            else "; ".join(same.argv_differences + same.environment_differences)
        )
        self.stdout.write(
            f"{path}: {what} profile {result.profile.name} v{result.version.number}: {verdict}"
        )
        return same.equal
