"""Wrapper scripts: `ExecStart=/opt/llm/start.sh` whose script ends in `exec vllm serve …`.

When the linter can read the script (linting/local_files.py), the vLLM command inside is
found and its words are produced the way bash would produce them, as far as a linter can:
quotes removed, `\\`-newline continuations joined, `$NAME`/`${NAME}` replaced by values the
script assigned earlier (plainly, at the top level) or the unit's `Environment=`, `"$@"` by
the arguments `ExecStart=` gives the script, `${NAME:-default}` by its default when NAME is
not known; anything else (command substitution, a variable assigned elsewhere) becomes an
unknown word. Every character keeps its position in the script file.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from linting.execline.env_substitution import UNKNOWN
from linting.spans import Pos, Traced
from linting.vllm.detect import find_vllm

SHELLS = ("bash", "sh", "dash", "ksh", "zsh")
_ASSIGNMENT = re.compile(r"^(?:export\s+|readonly\s+|declare\s+(?:-\w+\s+)*)?([A-Za-z_]\w*)=(.*)$")
_PREFIX_WORDS = ("exec", "nohup", "command", "time")
_REFERENCE = re.compile(r"\$(?:\{([A-Za-z_]\w*)(?::?-([^}]*))?\}|([A-Za-z_]\w*)|([@*]))")


@dataclass(frozen=True)
class ScriptCommand:
    """A vLLM command found in a script: its words (positions in the script file)."""

    argv: list[Traced]
    line: int


def script_dialect(text: str, path: str) -> str | None:
    """The shell a script runs with: its `#!` line, else `sh` for a `.sh` file."""
    first = text.split("\n", 1)[0]
    if first.startswith("#!"):
        words = first[2:].split()
        if words and words[0].endswith("/env") and len(words) > 1:
            words = words[1:]
        name = words[0].rsplit("/", 1)[-1] if words else ""
        return name if name in SHELLS else None
    return "sh" if path.endswith(".sh") else None


def vllm_commands_in_script(
    text: str, env: Mapping[str, str], script_args: list[Traced]
) -> list[ScriptCommand]:
    """The vLLM servers a shell script starts (usually one, after `exec`)."""
    variables = dict(env)
    found = []
    for line, number in _logical_lines(text):
        stripped = line.text.strip()
        if not stripped or stripped.startswith("#"):
            continue
        assignment = _ASSIGNMENT.match(stripped)
        if assignment and " " not in assignment.group(2).strip("'\""):
            variables[assignment.group(1)] = _literal(assignment.group(2), variables)
            continue
        words = _words(line, variables, script_args)
        while words and (words[0].text in _PREFIX_WORDS or "=" in words[0].text.split("/")[0]):
            words = words[1:]
        if words and find_vllm([w.text for w in words]) is not None:
            found.append(ScriptCommand(words, number))
    return found


def _logical_lines(text: str) -> list[tuple[Traced, int]]:
    """Lines with `\\`-newline continuations joined (positions kept), and the number of
    their first line."""
    result: list[tuple[Traced, int]] = []
    chars: list[str] = []
    origins: list[Pos] = []
    start = 1
    lines = text.split("\n")
    for number, raw in enumerate(lines, start=1):
        if not chars:
            start = number
        continued = raw.endswith("\\") and not raw.endswith("\\\\")
        body = raw[:-1] if continued else raw
        chars.extend(body)
        origins.extend(Pos(number, column) for column in range(1, len(body) + 1))
        if continued:
            chars.append(" ")
            origins.append(Pos(number, len(raw)))
            continue
        result.append((Traced("".join(chars), tuple(origins)), start))
        chars, origins = [], []
    return result


def _literal(value: str, variables: Mapping[str, str]) -> str:
    """The value of a plain assignment (`A="x"`, `A=$B/x`), unknown parts as UNKNOWN."""
    value = value.strip()
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
        quote, value = value[0], value[1:-1]
        if quote == "'":
            return value
    return _REFERENCE.sub(lambda m: variables.get(m.group(1) or m.group(3) or "", UNKNOWN), value)


def _words(line: Traced, variables: Mapping[str, str], script_args: list[Traced]) -> list[Traced]:
    """bash's word splitting of one command line, simplified: quotes, backslashes, `$`
    references; stops at `;`, `&&`, `||`, `|`, `&` and `#` comments."""
    splitter = _Splitter(line, variables, script_args)
    return splitter.run()


class _Splitter:
    def __init__(
        self, line: Traced, variables: Mapping[str, str], script_args: list[Traced]
    ) -> None:
        self.line, self.variables, self.script_args = line, variables, script_args
        self.words: list[Traced] = []
        self.chars: list[str] = []
        self.origins: list[Pos] = []
        self.started = False
        self.spliced = False  # "$@" was just put in: its quotes make no word of their own

    def run(self) -> list[Traced]:
        s = self.line.text
        i = 0
        quote = ""
        while i < len(s):
            c = s[i]
            if not quote and c in " \t":
                self._end()
            elif not quote and (c in ";|&" or (c == "#" and not self.started)):
                break
            elif c in "'\"" and (not quote or quote == c):
                quote = "" if quote else c
                self.started = self.started or not self.spliced
            elif c == "\\" and quote != "'" and i + 1 < len(s):
                self._add(s[i + 1], i + 1)
                i += 1
            elif c == "$" and quote != "'":
                i = self._reference(i, in_quotes=quote == '"')
                continue
            else:
                self._add(c, i)
            i += 1
        self._end()
        return self.words

    def _reference(self, i: int, in_quotes: bool) -> int:
        match = _REFERENCE.match(self.line.text, i)
        if match is None:
            self._add("$", i)
            return i + 1
        name, default, plain, special = match.groups()
        if special:  # "$@" / $@ / $*: the arguments ExecStart= gives the script
            if not self.chars:
                self.started = False  # only the opening quote so far: no word of its own
            self._end()
            # Their characters are in the unit file; findings about them point at "$@".
            origin = self.line.origins[i]
            self.words.extend(Traced(a.text, (origin,) * len(a.text)) for a in self.script_args)
            self.spliced = True
            return match.end()
        value = self.variables.get(name or plain)
        if value is None and default is not None:
            value = default
        text = value if value is not None else UNKNOWN + match.group(0) + UNKNOWN
        origin = self.line.origins[i]
        if value is not None and not in_quotes:  # unquoted: split on blanks
            for k, part in enumerate(text.split()):
                if k:
                    self._end()
                self.chars.extend(part)
                self.origins.extend([origin] * len(part))
                self.started = True
        else:
            self.chars.extend(text)
            self.origins.extend([origin] * len(text))
            self.started = True
        return match.end()

    def _add(self, c: str, i: int) -> None:
        self.spliced = False
        self.chars.append(c)
        self.origins.append(self.line.origins[i])
        self.started = True

    def _end(self) -> None:
        self.spliced = self.spliced and not self.started
        if self.started:
            self.words.append(Traced("".join(self.chars), tuple(self.origins)))
        self.chars, self.origins, self.started = [], [], False
