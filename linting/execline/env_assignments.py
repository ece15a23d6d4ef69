"""`Environment=` assignments (config_parse_environ() in src/core/load-fragment.c): the
variables a unit sets itself. (`EnvironmentFile=` is env_files.py; `$` in argv is
env_substitution.py.)

`Environment=` words are split and unquoted like Exec words, specifiers are resolved, and
each must be a valid `NAME=VALUE` assignment ("Invalid environment assignment, ignoring").
Later assignments override earlier ones; an empty `Environment=` resets the list.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from linting.execline.cunescape import to_bytes
from linting.execline.env_substitution import is_valid_name
from linting.execline.extract_word import ExtractError, extract_first_word
from linting.execline.specifiers import SpecifierError, resolve
from linting.spans import Span
from linting.unitfile import Assignment


@dataclass(frozen=True)
class EnvVar:
    name: str
    value: str
    span: Span  # where it is assigned (the Environment= word, or the EnvironmentFile= path)
    source: str  # "Environment" or "EnvironmentFile:<path>"


class EnvProblemKind(enum.StrEnum):
    """What systemd logs about `Environment=` / `EnvironmentFile=` settings."""

    INVALID_SYNTAX = "invalid-syntax"  # "Invalid syntax, ignoring"
    UNKNOWN_SPECIFIER = "unknown-specifier"
    INVALID_ASSIGNMENT = "invalid-assignment"  # "Invalid environment assignment, ignoring"
    RELATIVE_PATH = "relative-path"  # EnvironmentFile=: "Path '…' is not absolute, ignoring"


@dataclass(frozen=True)
class EnvProblem:
    kind: EnvProblemKind
    message: str
    span: Span
    path: str = ""  # the file of the assignment (a drop-in, maybe)


def parse_environment(
    assignments: list[Assignment], version: int, specifier_values: dict[str, str]
) -> tuple[dict[str, EnvVar], list[EnvProblem]]:
    env: dict[str, EnvVar] = {}
    problems: list[EnvProblem] = []
    for a in assignments:
        if a.value.text == "":
            env.clear()
            continue
        pos = 0
        while True:
            try:
                # config_parse_environ() calls extract_first_word() without the relaxed
                # retry: an unknown escape fails like unbalanced quoting ("Invalid syntax,
                # ignoring") and ends the line; the words before it stay set.
                word, pos = extract_first_word(a.value, pos, relax_escapes=False)
            except ExtractError as exc:
                width = 2 if exc.args[0] == "Unknown escape sequence" else 1
                problems.append(
                    EnvProblem(
                        EnvProblemKind.INVALID_SYNTAX,
                        f"{exc.args[0]}: systemd ignores this and every later assignment "
                        'on the line ("Invalid syntax, ignoring")',
                        a.value.span(exc.offset, exc.offset + width),
                        a.path,
                    )
                )
                break
            if word is None:
                break
            span = a.value.span(word.start, word.end)
            try:
                text = resolve(word.value, version, specifier_values).text
            except SpecifierError as exc:
                problems.append(
                    EnvProblem(
                        EnvProblemKind.UNKNOWN_SPECIFIER,
                        f"unknown specifier '%{exc.use.letter}'",
                        span,
                        a.path,
                    )
                )
                continue
            name, eq, value = text.partition("=")
            # env_assignment_is_valid(): the value must be valid UTF-8 (`\xff` is refused;
            # measured on 252/257 by tests/differential)
            if not eq or not is_valid_name(name) or not _utf8(text):
                problems.append(
                    EnvProblem(
                        EnvProblemKind.INVALID_ASSIGNMENT,
                        f"Invalid environment assignment, ignoring: {text}",
                        span,
                        a.path,
                    )
                )
                continue
            env[name] = EnvVar(name, value, span, "Environment")
    return env, problems


def _utf8(text: str) -> bool:
    if text.isascii():  # most assignments
        return True
    try:
        to_bytes(text).decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True
