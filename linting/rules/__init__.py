"""Every rule family; importing this package registers the whole catalog
(`linting.rules.registry` holds it)."""

from linting.rules import ex, op, sc, sd, vl

__all__ = ["ex", "op", "sc", "sd", "vl"]
