"""`python -m linting` runs the lintunits command line."""

from linting.cli import run_and_exit

run_and_exit()
