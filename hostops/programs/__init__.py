"""The programs specadmin runs on a host, as files: `sh -c PROGRAM sh ARGS…` for the shell
ones, `python -c PROGRAM ARGS…` for the Python ones.

Kept as files (package resources, read with importlib.resources) so that they are checked
like code: ShellCheck for `*.sh` (tests/hostops/test_host_programs.py), ruff for `*.py`
(their target is the oldest Python a vLLM host may run: pyproject.toml). Each file's first
comment says who runs it, with which arguments, and what it prints.
"""

from __future__ import annotations

from functools import cache
from importlib.resources import files


@cache
def program(name: str) -> str:
    """The text of the program `name` (e.g. "proc_info.sh"); a missing one raises at once."""
    return files(__name__).joinpath(name).read_text(encoding="utf-8")


def names() -> list[str]:
    """Every program in the package, sorted (for the checks)."""
    return sorted(
        entry.name
        for entry in files(__name__).iterdir()
        if entry.name.endswith((".sh", ".py")) and entry.name != "__init__.py"
    )


__all__ = ["names", "program"]
