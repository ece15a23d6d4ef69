"""`python -m servebench URL …` (see servebench.cli)."""

import sys

from servebench.cli import main

sys.exit(main())
