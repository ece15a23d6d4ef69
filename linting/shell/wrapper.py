"""Wrapper scripts: `ExecStart=/opt/llm/start.sh` whose script ends in `exec vllm serve …`,
and the scripts of `bash -c '…'` Exec commands.

When the linter can read the script (linting/local_files.py), the vLLM command inside is
found and its words are produced the way bash would produce them, as far as a linter can:
quotes removed, `\\`-newline continuations joined, `$NAME`/`${NAME}` replaced by values the
script assigned earlier (plainly, at the top level) or the unit's `Environment=`, `"$@"` by
the arguments `ExecStart=` gives the script, `${NAME:-default}` by its default when NAME is
not known, `"${ARGS[@]}"` by the words of an array `ARGS=(…)` (`+=` appends) assigned
before; anything else (command substitution, a variable assigned elsewhere) becomes an
unknown word. Redirections (`2>&1`, `>> "$LOG"`, `&>/dev/null`) are no words of the
command, and a pipeline or list (`| tee`, `&&`, `;`) ends it (bash(1), "SHELL GRAMMAR",
"REDIRECTION"). Every character keeps its position in the script file (or the unit).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from linting.execline.env_substitution import UNKNOWN
from linting.spans import Pos, Traced
from linting.vllm.detect import find_vllm

SHELLS = ("bash", "sh", "dash", "ksh", "zsh")
_ASSIGNMENT = re.compile(r"^(?:export\s+|readonly\s+|declare\s+(?:-\w+\s+)*)?([A-Za-z_]\w*)=(.*)$")
_PREFIX_WORDS = ("exec", "nohup", "command", "time", "then", "do", "else", "{", "!")
_REFERENCE = re.compile(
    r"\$(?:\{([A-Za-z_]\w*)(?::?-([^}]*))?\}|([A-Za-z_]\w*)|([@*])|\{([A-Za-z_]\w*)\[[@*]\]\})"
)
_ARRAY_START = re.compile(r"^(?:(?:declare|local|typeset)\s+-a\s+)?([A-Za-z_]\w*)(\+?)=\(")
_FD = re.compile(r"\d+\Z")


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
    text: str | Traced,
    env: Mapping[str, str],
    script_args: list[Traced],
    is_server: Callable[[list[str]], bool] | None = None,
) -> list[ScriptCommand]:
    """The vLLM servers a shell script starts (usually one, after `exec`): the commands
    `is_server` accepts (by default a `vllm serve` / api_server command), their words
    with the prefix words (`exec`, `nohup`, `NAME=value`) left out."""
    accepts = is_server or (lambda words: find_vllm(words) is not None)
    variables = dict(env)
    arrays: dict[str, list[Traced]] = {}
    found = []
    lines = _logical_lines(text)
    index = 0
    while index < len(lines):
        line, number = lines[index]
        index += 1
        stripped = line.text.strip()
        if not stripped or stripped.startswith("#"):
            continue
        array = _ARRAY_START.match(stripped)
        if array:
            index = _read_array(lines, index - 1, array, variables, arrays, script_args)
            continue
        assignment = _ASSIGNMENT.match(stripped)
        if assignment and " " not in assignment.group(2).strip("'\""):
            variables[assignment.group(1)] = _literal(assignment.group(2), variables)
            continue
        for segment in _segments(line):
            words = _Splitter(segment, variables, script_args, arrays).run()
            while words and (words[0].text in _PREFIX_WORDS or "=" in words[0].text.split("/")[0]):
                words = words[1:]
            if words and accepts([w.text for w in words]):
                found.append(ScriptCommand(words, number))
    return found


def _segments(line: Traced) -> list[Traced]:
    """The simple commands of one line: split at `;`, `&&`, `||`, `|` and `&` outside
    quotes (not the `&` of `2>&1`, `&>` or `>&`), up to a comment."""
    s = line.text
    if not any(c in s for c in ";&|"):
        return [line]
    parts: list[Traced] = []
    start, i, quote = 0, 0, ""
    while i < len(s):
        c = s[i]
        if c == "\\" and quote != "'":
            i += 2
            continue
        if c in "'\"" and (not quote or quote == c):
            quote = "" if quote else c
        elif not quote and c == "#" and (i == 0 or s[i - 1] in " \t"):
            break
        elif not quote and c in ";|&" and not _redirection_amp(s, i):
            parts.append(line[start:i])
            i += 2 if s.startswith(("&&", "||"), i) else 1
            start = i
            continue
        i += 1
    parts.append(line[start:])
    return [p for p in parts if p.text.strip()]


def _redirection_amp(s: str, i: int) -> bool:
    """Is the `&` at i part of a redirection (`2>&1`, `>&2`, `&>file`, `|&`)?"""
    if s[i] != "&":
        return False
    return (i > 0 and s[i - 1] in "<>") or s.startswith("&>", i)


def _read_array(
    lines: list[tuple[Traced, int]],
    index: int,
    start: re.Match[str],
    variables: Mapping[str, str],
    arrays: dict[str, list[Traced]],
    script_args: list[Traced],
) -> int:
    """`NAME=(word …)` over one or more lines (a `+=` appends): its words into `arrays`;
    returns the index of the line after it."""
    name, append = start.group(1), start.group(2) == "+"
    words = [] if not append else list(arrays.get(name, []))
    line = lines[index][0]
    offset = len(line.text) - len(line.text.lstrip()) + start.end()
    body = line[offset:]
    while True:
        text = body.text
        close = _closing_paren(text)
        part = body[:close] if close is not None else body
        words += _Splitter(part, variables, script_args, arrays).run() if part.text else []
        index += 1
        if close is not None or index >= len(lines):
            arrays[name] = words
            return index
        body = lines[index][0]


def _closing_paren(text: str) -> int | None:
    """Where an array's `)` is in one line of its words (outside quotes), if there."""
    quote = ""
    for i, c in enumerate(text):
        if c in "'\"" and (not quote or quote == c):
            quote = "" if quote else c
        elif c == "#" and not quote and (i == 0 or text[i - 1] in " \t"):
            return None  # a comment: the rest of the line is no word
        elif c == ")" and not quote:
            return i
    return None


def _logical_lines(text: str | Traced) -> list[tuple[Traced, int]]:
    """Lines with `\\`-newline continuations joined (positions kept), and the number of
    their first line (of the script: 1 for its first)."""
    if isinstance(text, str):
        return _logical_lines(_as_file(text))
    result: list[tuple[Traced, int]] = []
    pieces: list[Traced] = []
    start = 1
    offset = 0
    for number, raw in enumerate(text.text.split("\n"), start=1):
        line = text[offset : offset + len(raw)]
        offset += len(raw) + 1
        if not pieces:
            start = number
        continued = raw.endswith("\\") and not raw.endswith("\\\\")
        if continued:
            pieces.append(line[: len(raw) - 1])
            pieces.append(Traced(" ", (line.origins[len(raw) - 1],)))
            continue
        pieces.append(line)
        result.append((_concat(pieces), start))
        pieces = []
    return result


def _concat(pieces: list[Traced]) -> Traced:
    if len(pieces) == 1:
        return pieces[0]
    text = "".join(p.text for p in pieces)
    origins: list[Pos] = []
    for p in pieces:
        origins.extend(p.origins)
    return Traced(text, tuple(origins))


def _as_file(text: str) -> Traced:
    """A whole file as a Traced: each character at its line and column."""
    origins: list[Pos] = []
    lines = text.split("\n")
    for number, line in enumerate(lines, start=1):
        width = len(line) + (1 if number < len(lines) else 0)
        origins.extend(Pos(number, column) for column in range(1, width + 1))
    return Traced(text, tuple(origins))


def _literal(value: str, variables: Mapping[str, str]) -> str:
    """The value of a plain assignment (`A="x"`, `A=$B/x`), unknown parts as UNKNOWN."""
    value = value.strip()
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
        quote, value = value[0], value[1:-1]
        if quote == "'":
            return value
    return _REFERENCE.sub(lambda m: variables.get(m.group(1) or m.group(3) or "", UNKNOWN), value)


class _Splitter:
    """bash's word splitting of one command line, simplified: quotes, backslashes, `$`
    references, redirections left out; stops at `;`, `&&`, `||`, `|`, `&` and comments."""

    def __init__(
        self,
        line: Traced,
        variables: Mapping[str, str],
        script_args: list[Traced],
        arrays: Mapping[str, list[Traced]] | None = None,
    ) -> None:
        self.line, self.variables, self.script_args = line, variables, script_args
        self.arrays = arrays or {}
        self.redirect = False  # the next word is a redirection's target
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
            elif not quote and (c in "<>" or s.startswith("&>", i)):
                i = self._redirection(i)
                continue
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

    def _redirection(self, i: int) -> int:
        """Skip `[n]>`, `>>`, `<`, `&>`, `>&n`, `2>&1` and mark the next word as their
        target; returns the index after the operator."""
        s = self.line.text
        if self.started and _FD.match("".join(self.chars)):
            self.chars, self.origins, self.started = [], [], False  # `2` of `2>`
        self._end()
        j = i + 1 if s[i] == "&" else i
        j += 1
        while j < len(s) and s[j] in "<>":
            j += 1
        if j < len(s) and s[j] == "&":  # `>&1`, `2>&1`, `>&-`: the target is attached
            j += 1
            while j < len(s) and (s[j].isdigit() or s[j] == "-"):
                j += 1
            return j
        self.redirect = True
        return j

    def _reference(self, i: int, in_quotes: bool) -> int:
        match = _REFERENCE.match(self.line.text, i)
        if match is None:
            self._add("$", i)
            return i + 1
        name, default, plain, special, array = match.groups()
        if array is not None:  # "${ARGS[@]}": the array's words, each where it was written
            if not self.chars:
                self.started = False
            self._end()
            self.words.extend(self.arrays.get(array, []))
            self.spliced = True
            return match.end()
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
            if self.redirect:
                self.redirect = False  # a redirection's target is no argument
            else:
                self.words.append(Traced("".join(self.chars), tuple(self.origins)))
        self.chars, self.origins, self.started = [], [], False
