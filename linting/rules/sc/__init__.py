"""SC: ShellCheck on the scripts of `bash|sh|dash|ksh -c SCRIPT` commands, as the shell
receives them, with positions mapped back into the unit file (hadolint's approach).

Importing this package registers its rules; one module per rule, named after its code.
"""

from linting.rules.sc import (
    SC,
)

__all__ = [
    "SC",
]
