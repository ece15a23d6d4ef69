"""`EnvironmentFile=` (load_env_file() in src/basic/env-file.c): variables read from files,
overriding `Environment=`."""

from __future__ import annotations

from pathlib import Path

from linting.execline.env_assignments import EnvProblem, EnvProblemKind, EnvVar
from linting.execline.env_substitution import is_valid_name
from linting.spans import Traced
from linting.unitfile import Assignment


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
                    EnvProblemKind.RELATIVE_PATH,
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
