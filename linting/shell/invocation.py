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
    i = 0
    if argv and posixpath.basename(argv[0]) == "env":
        i = 1
        while i < len(argv) and (argv[i].startswith("-") or _ENV_ASSIGNMENT.match(argv[i])):
            i += 1
    if i >= len(argv):
        return None
    dialect = shell_name(argv[i])
    if dialect is None:
        return None
    shell_index = i
    i += 1
    seen_c = False
    while i < len(argv):
        arg = argv[i]
        if arg == "--":
            i += 1
            break
        if arg in _OPTIONS_WITH_ARGUMENT:
            i += 2
            continue
        if len(arg) > 1 and arg[0] in "-+" and not arg.startswith("--"):
            if arg[0] == "-" and "c" in arg[1:]:
                seen_c = True
            i += 1
            continue
        if arg.startswith("--"):  # long options such as --norc, --login
            i += 1
            continue
        break
    if not seen_c or i >= len(argv):
        return None
    return ShellInvocation(dialect, shell_index, i)
