"""One command systemd runs for an Exec line, with the argv it receives (the load-time
words behind it kept), and the helpers rules use to look into it."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

from linting.execline.command import ExecCommand, ExecLine, ExpandedArg
from linting.execline.env_substitution import Substitution, displayed
from linting.execline.extract_word import Word
from linting.shell.invocation import ShellInvocation, find_shell_script
from linting.unitfile import Assignment


@dataclass
class Command:
    """One command of an Exec line with its exec-time argv."""

    key: str
    assignment: Assignment
    line: ExecLine
    command: ExecCommand
    args: list[ExpandedArg]
    substitutions: list[tuple[int, Substitution]]

    @cached_property
    def argv(self) -> list[str]:
        """The arguments as people should read them (unknown values as written); `args`
        is not changed after the command is built, and rules read this often."""
        return [displayed(a.value.text) for a in self.args]

    @cached_property
    def shell(self) -> tuple[ShellInvocation, ExpandedArg] | None:
        """The `-c` script of a shell command (see `shell_script`); a dozen rules ask."""
        found = find_shell_script(self.argv)
        if found is None:
            return None
        return found, self.args[found.script_index]


def load_word(command: Command, word_index: int) -> Word:
    """The raw (unquoted, pre-specifier) word behind load-time argv[word_index]."""
    offset = 1 if "@" in command.command.prefixes else 0
    return command.command.words[word_index + offset]


def shell_script(command: Command) -> tuple[ShellInvocation, ExpandedArg] | None:
    """The `-c` script of a shell command, as the shell receives it."""
    return command.shell
