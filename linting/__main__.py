"""`python -m linting` runs the lintunits command line."""

import sys

from linting.cli import main

sys.exit(main())
