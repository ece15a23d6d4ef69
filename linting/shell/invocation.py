"""Recognise `bash|sh|dash|zsh|ksh … -c SCRIPT` in an argv and find the script."""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass

SHELLS = {"bash", "sh", "dash", "zsh", "ksh", "mksh"}
# Options that take an argument (bash(1): -o option, -O shopt_option; also with +).
_OPTIONS_WITH_ARGUMENT = {"-o", "+o", "-O", "+O"}
_ENV_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=")


@dataclass(frozen=True)
class ShellInvocation:
    dialect: str  # basename of the shell
    shell_index: int  # index in argv of the shell executable
    script_index: int  # index in argv of the script (the -c argument)


def shell_name(arg: str) -> str | None:
    name = posixpath.basename(arg)
    return name if name in SHELLS else None


def find_shell_script(argv: list[str]) -> ShellInvocation | None:
    """`bash -c S`, `bash -ec S`, `bash -o pipefail -c S`, `/usr/bin/env bash -c S`,
    `env VAR=1 sh -c S`. The script is the first non-option argument after `-c`."""
    shell_index = _after_env(argv)
    if shell_index >= len(argv):
        return None
    dialect = shell_name(argv[shell_index])
    if dialect is None:
        return None
    seen_c, i = _shell_options(argv, shell_index + 1)
    if not seen_c or i >= len(argv):
        return None
    return ShellInvocation(dialect, shell_index, i)


def _after_env(argv: list[str]) -> int:
    """The index of the program `env [-OPTION…] [NAME=VALUE…]` runs (0 without `env`)."""
    if not argv or posixpath.basename(argv[0]) != "env":
        return 0
    i = 1
    while i < len(argv) and (argv[i].startswith("-") or _ENV_ASSIGNMENT.match(argv[i])):
        i += 1
    return i


def _shell_options(argv: list[str], i: int) -> tuple[bool, int]:
    """Walk the shell's options from `i`: (whether `-c` was among them, the index of the
    first argument that is not an option)."""
    seen_c = False
    while i < len(argv):
        arg = argv[i]
        if arg == "--":
            return seen_c, i + 1
        if arg in _OPTIONS_WITH_ARGUMENT:
            i += 2
            continue
        if len(arg) > 1 and arg[0] in "-+" and not arg.startswith("--"):
            seen_c = seen_c or (arg[0] == "-" and "c" in arg[1:])
        elif not arg.startswith("--"):  # long options such as --norc, --login are skipped
            break
        i += 1
    return seen_c, i
