"""The environment a unit's commands see: `Environment=` (config_parse_environ() in
src/core/load-fragment.c) and `EnvironmentFile=` (load_env_file() in src/basic/env-file.c).

`Environment=` words are split and unquoted like Exec words, specifiers are resolved, and
each must be a valid `NAME=VALUE` assignment ("Invalid environment assignment, ignoring").
Files override `Environment=`; later assignments override earlier ones; an empty
`Environment=` resets the list.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from linting.execline.cunescape import to_bytes
from linting.execline.environment import is_valid_name
from linting.execline.extract_word import ExtractError, extract_first_word
from linting.execline.specifiers import SpecifierError, resolve
from linting.spans import Span, Traced
from linting.unitfile import Assignment


@dataclass(frozen=True)
class EnvVar:
    name: str
    value: str
    span: Span  # where it is assigned (the Environment= word, or the EnvironmentFile= path)
    source: str  # "Environment" or "EnvironmentFile:<path>"


@dataclass(frozen=True)
class EnvProblem:
    kind: str
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
                        "invalid-syntax",
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
                        "unknown-specifier", f"unknown specifier '%{exc.use.letter}'", span, a.path
                    )
                )
                continue
            name, eq, value = text.partition("=")
            # env_assignment_is_valid(): the value must be valid UTF-8 (`\xff` is refused;
            # measured on 252/257 by tests/differential)
            if not eq or not is_valid_name(name) or not _utf8(text):
                problems.append(
                    EnvProblem(
                        "invalid-assignment",
                        f"Invalid environment assignment, ignoring: {text}",
                        span,
                        a.path,
                    )
                )
                continue
            env[name] = EnvVar(name, value, span, "Environment")
    return env, problems


def _utf8(text: str) -> bool:
    try:
        to_bytes(text).decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def parse_env_file_text(text: str) -> dict[str, str]:
    """A faithful-enough port of systemd's env-file parser: `KEY=VALUE` lines, `#`/`;`
    comments, optional `export `, single quotes literal, double quotes with `\\` escapes for
    `"\\`$`, unquoted values with backslash escapes and trailing blanks stripped, and
    backslash-newline continuations."""
    result: dict[str, str] = {}
    i, n = 0, len(text)
    while i < n:
        while i < n and text[i] in " \t\r\n":
            i += 1
        if i >= n:
            break
        if text[i] in "#;":
            while i < n and text[i] != "\n":
                i += 1
            continue
        start = i
        while i < n and text[i] not in "=\n":
            i += 1
        key = text[start:i].strip()
        if key.startswith("export "):
            key = key[len("export ") :].strip()
        if i >= n or text[i] == "\n":
            continue
        i += 1  # skip '='
        while i < n and text[i] in " \t":
            i += 1
        value: list[str] = []
        trailing_blank = 0
        while i < n and text[i] != "\n":
            c = text[i]
            if c == "'":
                j = text.find("'", i + 1)
                j = n if j < 0 else j
                value.append(text[i + 1 : j])
                i = j + 1
                trailing_blank = 0
                continue
            if c == '"':
                i += 1
                while i < n and text[i] != '"':
                    if text[i] == "\\" and i + 1 < n:
                        if text[i + 1] == "\n":
                            i += 2
                            continue
                        if text[i + 1] in '"\\`$':
                            value.append(text[i + 1])
                            i += 2
                            continue
                    value.append(text[i])
                    i += 1
                i += 1
                trailing_blank = 0
                continue
            if c == "\\" and i + 1 < n:
                if text[i + 1] != "\n":
                    value.append(text[i + 1])
                i += 2
                trailing_blank = 0
                continue
            value.append(c)
            trailing_blank = trailing_blank + 1 if c in " \t" else 0
            i += 1
        joined = "".join(value)
        if trailing_blank:
            joined = joined[:-trailing_blank]
        if is_valid_name(key):
            result[key] = joined
    return result


def load_environment_files(
    assignments: list[Assignment], base_env: dict[str, EnvVar]
) -> tuple[dict[str, EnvVar], list[EnvProblem], list[str]]:
    """Merge readable EnvironmentFile= files over `base_env`.

    Returns (env, problems, unreadable paths). An unreadable file without `-` makes the
    service fail at start; on the linting machine that is usually just "not deployed here",
    so callers decide how loudly to report it.
    """
    env = dict(base_env)
    problems: list[EnvProblem] = []
    unreadable: list[str] = []
    for a in assignments:
        raw: Traced = a.value
        if raw.text == "":
            continue
        optional = raw.text.startswith("-")
        path_text = raw.text[1:] if optional else raw.text
        if not path_text.startswith("/"):
            problems.append(
                EnvProblem(
                    "relative-path",
                    f"Path '{path_text}' is not absolute, ignoring",
                    raw.span(),
                    a.path,
                )
            )
            continue
        try:
            content = Path(path_text).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            if not optional:
                unreadable.append(path_text)
            continue
        for name, value in parse_env_file_text(content).items():
            env[name] = EnvVar(name, value, raw.span(), f"EnvironmentFile:{path_text}")
    return env, problems, unreadable
