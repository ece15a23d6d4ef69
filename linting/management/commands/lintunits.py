"""`python manage.py lintunits`: a thin shell around linting.cli (same options, same exit
codes), so CI users without Django get the identical tool as `lintunits`.

`--profiles [NAME…]` lints stored service profiles as rendered (all active ones when no
name is given) with the same report formats and exit codes; that part needs the database.
Only Django loads this module, so it may import the project's apps; the `linting` package
itself never imports it.
"""

from __future__ import annotations

import sys

from django.core.management.base import BaseCommand

from linting.cli import run
from units.linting import lint_profiles


class Command(BaseCommand):
    help = "Lint systemd units that run vLLM; --profiles lints stored profiles (see --help)."

    def run_from_argv(self, argv: list[str]) -> None:
        args = argv[2:]
        prog = f"{argv[0]} {argv[1]}"
        if "--profiles" in args:
            args = [a for a in args if a != "--profiles"]
            code = run(
                args,
                sys.stdout,
                sys.stderr,
                prog=prog,
                source=lambda names, options: lint_profiles(names or None, options),
                source_name="stored profiles",
            )
        else:
            code = run(args, sys.stdout, sys.stderr, prog=prog)
        sys.stdout.flush()
        sys.exit(code)

    def handle(self, *args: object, **options: object) -> None:  # pragma: no cover
        raise NotImplementedError("lintunits is run through run_from_argv")
