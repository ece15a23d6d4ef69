"""Checks of a profile's verbatim parts (units.schema: `extra_args_verbatim`,
`command_layout`, `unit_extra`): what an imported unit had that no field describes is
written as given, so each part must stay what it was, one word, one token, one line."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from linting.execline.extract_word import ExtractError, extract_first_word
from linting.spans import LineOrigins, Traced
from units.layout import parse_token
from units.schema import OPTION_ORDER

Add = Callable[[str, str], None]

_SECTION = re.compile(r"[A-Za-z][A-Za-z0-9-]*\Z")
_KEY = re.compile(r"[A-Za-z][A-Za-z0-9]*\Z")
LAYOUT_FIELDS = frozenset({"model", "spec_method", *OPTION_ORDER})
# Written by the profile itself: a second one would add a command or undo a field.
_OWN_KEYS = frozenset({("Service", "ExecStart")})


def _plain(text: str) -> Traced:
    return Traced(text, LineOrigins(1, 1, len(text)))


def one_word_problem(word: str) -> str | None:
    """Why `word` is not exactly one ExecStart= word in unit syntax, or None."""
    if not word:
        return "an empty word vanishes (write '' for an empty argument)"
    if any(ord(c) < 0x20 or c == "\x7f" for c in word):
        return "it holds a control character (a line break, a tab)"
    if word == ";":
        return "a lone “;” separates two commands"
    try:
        found, _ = extract_first_word(_plain(word), 0)
    except ExtractError as exc:
        return str(exc)
    if found is None or found.end != len(word):
        return "it is more than one word (quote the spaces)"
    return None


def check_verbatim_words(words: list[str], add: Add) -> None:
    for word in words:
        problem = one_word_problem(word)
        if problem:
            add("extra_args_verbatim", f"“{word}” is not one command-line word: {problem}.")


def check_layout(tokens: list[Any], add: Add) -> None:
    for text in tokens:
        token = parse_token(text)
        if token is None or (not token.count and token.field not in LAYOUT_FIELDS):
            # shown at the verbatim words: the order itself is not on the form
            add("extra_args_verbatim", f"“{text}” is not a command-line order entry.")


def check_unit_extra(pairs: Any, add: Add) -> None:
    if not isinstance(pairs, list):
        add("unit_extra", "Give unit lines as [section, line] pairs.")
        return
    for pair in pairs:
        problem = _line_problem(pair)
        if problem:
            add("unit_extra", problem)


def _line_problem(pair: Any) -> str | None:
    if not (isinstance(pair, list) and len(pair) == 2 and all(isinstance(p, str) for p in pair)):
        return "Give unit lines as [section, line] pairs."
    section, line = pair
    key, eq, _ = line.partition("=")
    key = key.strip()
    if not _SECTION.match(section):
        return f"“[{section}]” is not a unit section name."
    if any(ord(c) < 0x20 or c == "\x7f" for c in line):
        return f"“{line[:60]}” holds a control character (a line break, a tab)."
    if not eq or not _KEY.match(key):
        return f"“{line[:60]}” is not a Key=value line."
    if line.rstrip().endswith("\\"):
        return f"“{line[:60]}” ends in “\\”: systemd would join the next line to it."
    if (section, key) in _OWN_KEYS:
        return f"{key}= is written from the profile's fields; it cannot be added here."
    return None
