"""The simple commands of a unit's commands, as words: an Exec command itself, and each
command of its `bash -c` script (split on `;`, `&&`, `||`, `|`, `&`, newlines and `$(`),
for the OP rules that look for a program wherever it runs (pkill, curl, nvidia-smi)."""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterator
from dataclasses import dataclass

from linting.commands import Command, shell_script
from linting.execline.env_substitution import displayed

_SEPARATORS = re.compile(r"\$\(|`|&&|\|\||[;|&\n()]")


@dataclass(frozen=True)
class SimpleCommand:
    command: Command  # the Exec command it is, or is part of
    words: list[str]
    in_script: bool


def simple_commands(cmd: Command) -> Iterator[SimpleCommand]:
    found = shell_script(cmd)
    if found is None:
        yield SimpleCommand(cmd, list(cmd.argv), False)
        return
    script = displayed(found[1].value.text)
    for part in _SEPARATORS.split(script):
        try:
            words = shlex.split(part, comments=True)
        except ValueError:
            continue
        if words:
            yield SimpleCommand(cmd, words, True)


def program_index(words: list[str]) -> int:
    """Where the program a simple command runs is (past `exec`, `nohup`, `env X=1`, …)."""
    i = 0
    while i < len(words) and (
        words[i] in ("exec", "command", "nohup", "sudo", "env", "timeout") or "=" in words[i]
    ):
        i += 1
    return i


def program(words: list[str]) -> str:
    """The base name of the program a simple command runs."""
    i = program_index(words)
    return words[i].rsplit("/", 1)[-1] if i < len(words) else ""
