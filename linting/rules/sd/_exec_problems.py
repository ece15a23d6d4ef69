"""The problems `config_parse_exec()` (src/core/load-fragment.c) logs while loading Exec
lines; SD106, SD108, SD109, SD110 and SD114 each report their own kinds."""

from __future__ import annotations

from collections.abc import Iterator

from linting.context import UnitContext
from linting.execline.command import ExecProblem, ExecProblemKind
from linting.unitfile import Assignment

# Kinds that never drop the command: systemd warns and carries on.
_HARMLESS = (ExecProblemKind.UNKNOWN_ESCAPE, ExecProblemKind.SEMICOLON)


def exec_problems(
    ctx: UnitContext, *kinds: ExecProblemKind
) -> Iterator[tuple[Assignment, ExecProblem, str]]:
    """Each problem of `kinds` with its assignment and what systemd then does ("" when it
    only warns)."""
    survivors = any(c.key == "ExecStart" for c in ctx.commands)
    for key, assignment, line in ctx.exec_lines:
        for problem in line.problems:
            if problem.kind not in kinds:
                continue
            dropped = line.dropped and not problem.fatal and problem.kind not in _HARMLESS
            text = consequence(problem.fatal, dropped)
            if dropped and key == "ExecStart" and not survivors:
                text += (
                    ', and with no ExecStart= left it refuses to load the service ("Service '
                    'has no ExecStart=, ExecStop=, or SuccessAction=")'
                )
            yield assignment, problem, text


def consequence(fatal: bool, dropped: bool) -> str:
    if fatal:
        return 'systemd refuses to load the unit ("Unit configuration has fatal error")'
    if dropped:
        return "systemd ignores this command"
    return ""


def with_consequence(message: str, consequence: str) -> str:
    return f"{message}: {consequence}" if consequence else message
