"""OP: how a GPU service behaves when systemd starts, stops and restarts it.

Importing this package registers its rules; one module per rule, named after its code.
"""

from linting.rules.op import (
    OP401,
    OP402,
    OP403,
    OP404,
    OP405,
    OP406,
    OP407,
    OP408,
    OP409,
    OP410,
    OP411,
)

__all__ = [
    "OP401",
    "OP402",
    "OP403",
    "OP404",
    "OP405",
    "OP406",
    "OP407",
    "OP408",
    "OP409",
    "OP410",
    "OP411",
]
