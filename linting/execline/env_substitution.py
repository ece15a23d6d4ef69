"""Environment substitution in Exec lines at exec time (src/basic/env-util.c
`replace_env_argv()` and `replace_env_full()`, v252…v257 behave the same).

- A whole word `$NAME` (not `${`, not `$$`) is replaced by the value split on whitespace
  (with quotes honoured: `strv_split_full(EXTRACT_RELAX|EXTRACT_UNQUOTE)`) into 0..n
  arguments; unset or an invalid name (`$1`, `$FOO/x`, `$(seq`) → the word is removed.
- `${NAME}` anywhere in a word → the exact value, one argument even with spaces; unset →
  empty. `${X:-d}` and `${X:+a}` are left literally (the `:` turns the parser back to plain
  text); `${#a[@]}`, `${a[0]}`, `${1}` look up names that cannot exist → empty.
- `$$` → `$`; a braceless `$name` inside a longer word is left alone.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from linting.spans import Pos, Traced, joined_origins

_VALID_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
# What ends the name of a `${`: its `}`, or a `:` that turns the parser back to plain text.
_BRACE_END = re.compile(r"[}:]")
_BLANK_SEPARATED = re.compile(r"[^ \t\n\r]+")


def is_valid_name(name: str) -> bool:
    return bool(_VALID_NAME.match(name))


@dataclass(frozen=True)
class Substitution:
    """One `$NAME` / `${NAME}` that systemd replaced."""

    name: str
    braced: bool
    start: int  # offsets in the word (of `$` … end of the reference)
    end: int
    value: str | None  # None: unset (or invalid name) → empty / removed
    # The linter cannot know the value: it may come from an EnvironmentFile= it could not
    # read (or PassEnvironment=). The text then stays in argv between UNKNOWN marks.
    unknown: bool = False

    @property
    def valid_name(self) -> bool:
        return is_valid_name(self.name)


# Marks argv text the linter cannot know (a NUL can never be in a real argument): the
# rules treat such a value as "whatever the variable holds" and report nothing about it.
UNKNOWN = "\x00"


def has_unknown(text: str) -> bool:
    return UNKNOWN in text


def displayed(text: str) -> str:
    """Text for people: unknown parts show as the reference written in the unit."""
    return text.replace(UNKNOWN, "")


def without_marks(text: Traced) -> Traced:
    """`text` as people (and ShellCheck) should see it: the UNKNOWN marks removed."""
    if UNKNOWN not in text.text:
        return text
    keep = [i for i, c in enumerate(text.text) if c != UNKNOWN]
    return Traced(
        "".join(text.text[i] for i in keep), tuple(text.origins[i] for i in keep), text.anchor
    )


def _unknown(word: Traced, start: int, end: int) -> tuple[str, Sequence[Pos]]:
    """The reference `word[start:end]` between UNKNOWN marks (the marks sit on its ends)."""
    origins = word.origins[start:end]
    return UNKNOWN + word.text[start:end] + UNKNOWN, (origins[0], *origins, origins[-1])


def split_value(value: str) -> list[str]:
    """`strv_split_full(value, WHITESPACE, EXTRACT_RELAX|EXTRACT_UNQUOTE)`: quotes group,
    unbalanced quotes are tolerated (RELAX), backslashes escape the next character."""
    if "'" not in value and '"' not in value and "\\" not in value:
        return _BLANK_SEPARATED.findall(value)  # nothing to unquote: the runs of non-blanks
    words: list[str] = []
    i, n = 0, len(value)
    while True:
        while i < n and value[i] in " \t\n\r":
            i += 1
        if i >= n:
            return words
        word, i = _relaxed_word(value, i)
        words.append(word)


def _relaxed_word(value: str, i: int) -> tuple[str, int]:
    """One word of `split_value` starting at `i`; returns it and the index after it."""
    out: list[str] = []
    quote = ""
    n = len(value)
    while i < n:
        c = value[i]
        if c == "\\":
            if i + 1 < n:
                out.append(value[i + 1])
            i += 2
        elif quote:
            if c != quote:
                out.append(c)
            else:
                quote = ""
            i += 1
        elif c in "'\"":
            quote = c
            i += 1
        elif c in " \t\n\r":
            break
        else:
            out.append(c)
            i += 1
    return "".join(out), i


def replace_braced(
    word: Traced, env: dict[str, str], open_env: bool = False
) -> tuple[Traced, list[Substitution]]:
    """`replace_env()` without ALLOW_EXTENDED/ALLOW_BRACELESS, as used for Exec argv.
    With `open_env`, a valid name that is not in `env` is unknown, not unset."""
    s = word.text
    if "$" not in s:
        return word, []
    out: list[str] = []
    pieces: list[Sequence[Pos]] = []
    subs: list[Substitution] = []
    start = 0  # the text from `start` on is kept as written, up to the next change
    dollar = s.find("$")
    while dollar >= 0:
        nxt = s[dollar + 1 : dollar + 2]
        if nxt == "{":
            _keep(word, start, dollar, out, pieces)
            start = _braced(word, dollar, env, open_env, out, pieces, subs)
            dollar = s.find("$", start)
        elif nxt == "$":  # `$$` → `$`: the first one is kept, the second dropped
            _keep(word, start, dollar + 1, out, pieces)
            start = dollar + 2
            dollar = s.find("$", start)
        else:  # a `$` not followed by `{` or `$` stays as it is
            dollar = s.find("$", dollar + 1)
    _keep(word, start, len(s), out, pieces)
    anchor = word.origins[0] if word.origins else word.anchor
    return Traced("".join(out), joined_origins(pieces), anchor), subs


def _keep(word: Traced, start: int, end: int, out: list[str], pieces: list[Sequence[Pos]]) -> None:
    """Copy `word[start:end]` (text and positions) as one slice."""
    if end > start:
        out.append(word.text[start:end])
        pieces.append(word.origins[start:end])


def _braced(
    word: Traced,
    i: int,
    env: dict[str, str],
    open_env: bool,
    out: list[str],
    pieces: list[Sequence[Pos]],
    subs: list[Substitution],
) -> int:
    """The `${` at `i`: its value (or the unknown reference), or, for `${X:-d}` (a `:`
    first) and an unterminated `${X`, the text kept literally. Returns where to go on."""
    s, n = word.text, len(word.text)
    end = _BRACE_END.search(s, i + 2)
    j = end.start() if end is not None else n
    if j >= n or s[j] != "}":
        out.append(s[i:j])
        pieces.append(word.origins[i:j])
        return j
    name = s[i + 2 : j]
    value = env.get(name)
    unknown = value is None and open_env and is_valid_name(name)
    subs.append(Substitution(name, True, i, j + 1, value, unknown))
    if unknown:
        text, origins = _unknown(word, i, j + 1)
        out.append(text)
        pieces.append(origins)
    elif value:
        out.append(value)
        pieces.append((word.origins[i],) * len(value))
    return j + 1


def is_whole_word_reference(word: str) -> bool:
    return word.startswith("$") and word[1:2] not in ("{", "$")


def expand_word(
    word: Traced, env: dict[str, str], open_env: bool = False
) -> tuple[list[Traced], list[Substitution]]:
    """One argv word at exec time → 0..n words, plus what was substituted. With
    `open_env`, a whole-word `$NAME` not in `env` stays as one unknown argument (it may
    hold any number of words)."""
    if is_whole_word_reference(word.text):
        name = word.text[1:]
        value = env.get(name)
        unknown = value is None and open_env and is_valid_name(name)
        sub = Substitution(name, False, 0, len(word.text), value, unknown)
        if unknown:
            text, origins = _unknown(word, 0, len(word.text))
            return [Traced(text, origins)], [sub]
        if value is None:
            return [], [sub]
        parts = split_value(value)
        origin = word.origins[0]
        return [Traced(p, (origin,) * len(p)) for p in parts], [sub]
    replaced, subs = replace_braced(word, env, open_env)
    return [replaced], subs
