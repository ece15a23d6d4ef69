"""EX: what systemd does to `$`, `%` and quotes in Exec lines before the program runs.

Importing this package registers its rules; one module per rule, named after its code.
"""

from linting.rules.ex import (
    EX201,
    EX202,
    EX203,
    EX204,
    EX205,
    EX206,
    EX207,
    EX208,
    EX209,
    EX210,
)

__all__ = [
    "EX201",
    "EX202",
    "EX203",
    "EX204",
    "EX205",
    "EX206",
    "EX207",
    "EX208",
    "EX209",
    "EX210",
]
