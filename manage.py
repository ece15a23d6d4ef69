#!/usr/bin/env python
"""Django's command-line entry point for specadmin."""

import os
import sys


def main() -> None:
    argv = sys.argv
    if len(argv) > 1 and argv[1] == "lintunits" and "--profiles" not in argv:
        # Linting files needs no database and no Django: skip django.setup() (about a
        # quarter of a second) so one file lints well under half a second. The management
        # command (linting/management/commands/lintunits.py) runs the same code.
        from linting.cli import run  # noqa: PLC0415 (lintunits only: ~0.15 s of imports)

        code = run(argv[2:], sys.stdout, sys.stderr, prog=f"{os.path.basename(argv[0])} lintunits")
        sys.stdout.flush()
        sys.exit(code)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "specadmin.settings")
    # Each path imports only what it runs: Django's ~0.07 s is not the lint path's to pay.
    from django.core.management import execute_from_command_line  # noqa: PLC0415 (see above)

    execute_from_command_line(argv)


if __name__ == "__main__":
    main()
