"""Which units of a run share a machine, for the cross-unit rules (VL325, VL332)."""

from __future__ import annotations

import fnmatch
import os

from linting.context import UnitContext


def machines(unit: UnitContext) -> tuple[str, ...]:
    """The machines a unit runs on, as far as the run says: its directory (units of one
    directory run together), and every `--same-host` group that names it."""
    return (os.path.dirname(os.path.abspath(unit.unit.path)), *same_host_groups(unit))


def same_host_groups(unit: UnitContext) -> tuple[str, ...]:
    """The `--same-host` groups that name this unit: machines the user said it runs on."""
    path = unit.unit.path
    return tuple(
        f"--same-host {index}"
        for index, group in enumerate(unit.options.same_host)
        if any(_names(pattern, path) for pattern in group)
    )


def _names(pattern: str, path: str) -> bool:
    """Does a `--same-host` entry (a unit file, a directory or a glob) name this unit?"""
    if fnmatch.fnmatch(path, pattern) or fnmatch.fnmatch(os.path.basename(path), pattern):
        return True
    full, base = os.path.abspath(path), os.path.abspath(pattern)
    return full == base or full.startswith(base.rstrip("/") + "/")
