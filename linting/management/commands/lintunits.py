"""`python manage.py lintunits`: a thin shell around linting.cli (same options, same exit
codes), so CI users without Django get the identical tool as `lintunits`."""

from __future__ import annotations

import sys

from django.core.management.base import BaseCommand

from linting.cli import run


class Command(BaseCommand):
    help = "Lint systemd units that run vLLM (see --help)."

    def run_from_argv(self, argv: list[str]) -> None:
        code = run(argv[2:], sys.stdout, sys.stderr, prog=f"{argv[0]} {argv[1]}")
        sys.stdout.flush()
        sys.exit(code)

    def handle(self, *args: object, **options: object) -> None:  # pragma: no cover
        raise NotImplementedError("lintunits is run through run_from_argv")
