"""Checks of the shell scripts embedded in Exec lines (`bash -c SCRIPT`)."""

from linting.shell.shellcheck import (
    ShellCheckFailed,
    ShellCheckUnavailable,
    ShellFinding,
    ShellScript,
    check_scripts,
    dialect_for,
)

__all__ = [
    "ShellCheckFailed",
    "ShellCheckUnavailable",
    "ShellFinding",
    "ShellScript",
    "check_scripts",
    "dialect_for",
]
