"""SD: what systemd itself rejects or ignores while loading the unit file.

Importing this package registers its rules; one module per rule, named after its code.
"""

from linting.rules.sd import (
    SD101,
    SD102,
    SD103,
    SD104,
    SD105,
    SD106,
    SD107,
    SD108,
    SD109,
    SD110,
    SD111,
    SD112,
    SD113,
    SD114,
    SD115,
    SD116,
    SD117,
    SD118,
)

__all__ = [
    "SD101",
    "SD102",
    "SD103",
    "SD104",
    "SD105",
    "SD106",
    "SD107",
    "SD108",
    "SD109",
    "SD110",
    "SD111",
    "SD112",
    "SD113",
    "SD114",
    "SD115",
    "SD116",
    "SD117",
    "SD118",
]
