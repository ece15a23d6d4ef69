"""Characters that make text read differently than it runs, and showing text as it is.

systemd ends a unit-file line at `\\n` only; U+2028/U+2029/U+0085 are ordinary bytes to it.
Python's `str.splitlines()`, browsers and editors break lines there too, so a description
holding `U+2028 ExecStartPre=…` showed an approver a fake line 4 that systemd never runs.
Bidi controls (U+202E…) reorder what is displayed (CVE-2021-42574, "Trojan Source"), and
zero-width characters hide. So:

- fields refuse them, naming the character (`invisible_problem`);
- every place that shows a unit (version page, diffs, request page, preview) splits lines
  at `\\n` only (`split_lines`, `split_lines_keepends`);
- whatever such character is still in a text (an old version, a unit found on a host) is
  shown as a visible marker (`visible_html`, template filter `visible`).

The characters: Unicode categories Cc (controls; tab and newline are what they look
like), Cf (format: bidi controls, zero-width, soft hyphen, BOM), Zl and Zp (line and
paragraph separators).
"""

from __future__ import annotations

import re
import unicodedata

from django.core.exceptions import ValidationError
from django.utils.html import escape, format_html
from django.utils.safestring import SafeString, mark_safe

HIDDEN_CATEGORIES = frozenset({"Cc", "Cf", "Zl", "Zp"})
_NAMES = {"\x85": "NEXT LINE (NEL)", "\r": "CARRIAGE RETURN", "\x00": "NULL"}
_BIDI = frozenset("\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")
_LINE_BREAKS = frozenset("\x85\u2028\u2029\x0b\x0c\x1c\x1d\x1e\r")
# Candidates only: anything outside printable ASCII, tab and newline (the category check
# decides), so ASCII-only unit text is scanned at regex speed.
_CANDIDATE = re.compile(r"[^\x20-\x7e\t\n]")


def is_hidden(char: str) -> bool:
    """True for a character whose display does not show what it is (see the module)."""
    return char not in "\t\n" and unicodedata.category(char) in HIDDEN_CATEGORIES


def char_label(char: str) -> str:
    """`U+202E RIGHT-TO-LEFT OVERRIDE`: how a message or a marker names a character."""
    name = _NAMES.get(char) or unicodedata.name(char, "") or "a control character"
    return f"U+{ord(char):04X} {name}"


def why_hidden(char: str) -> str:
    if char in _LINE_BREAKS:
        return "pages and editors break the line there but systemd does not"
    if char in _BIDI:
        return "it changes the order in which the text around it is displayed"
    if unicodedata.category(char) == "Cf":
        return "it is invisible"
    return "it is a control character"


def first_hidden(text: str, *, allowed: str = "", ascii_controls: bool = True) -> str | None:
    """The first hidden character of `text` not in `allowed` (`ascii_controls=False`:
    leave U+0000–U+001F and U+007F to a caller that names them itself)."""
    for match in _CANDIDATE.finditer(text):
        char = match.group()
        if char in allowed or not is_hidden(char):
            continue
        if not ascii_controls and (ord(char) < 0x20 or char == "\x7f"):
            continue
        return char
    return None


def invisible_problem(text: str, *, allowed: str = "", ascii_controls: bool = True) -> str | None:
    """A message naming the first hidden character of `text`, or None."""
    char = first_hidden(text, allowed=allowed, ascii_controls=ascii_controls)
    if char is None:
        return None
    return f"Remove the {char_label(char)} character: {why_hidden(char)}."


def validate_visible(value: str) -> None:
    """Django validator for free-text fields shown to other people (comments)."""
    problem = invisible_problem(value, allowed="\r\n\t")
    if problem:
        raise ValidationError(problem, code="hidden_character")


def split_lines(text: str) -> list[str]:
    """Lines as systemd reads a unit file: ended by `\\n` only (no line after a final one)."""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return lines


def split_lines_keepends(text: str) -> list[str]:
    """`split_lines`, each line keeping its `\\n` (for difflib)."""
    return [line + "\n" for line in text.split("\n")[:-1]] + (
        [text.rsplit("\n", 1)[-1]] if not text.endswith("\n") and text else []
    )


def visible_html(text: str) -> SafeString:
    """`text` HTML-escaped, each hidden character replaced by a marker naming it."""
    parts: list[str] = []
    last = 0
    for match in _CANDIDATE.finditer(text):
        char = match.group()
        if not is_hidden(char):
            continue
        parts.append(escape(text[last : match.start()]))
        parts.append(
            format_html(
                '<span class="hidden-char" title="{}">\u27e8{}\u27e9</span>',
                char_label(char),
                f"U+{ord(char):04X}",
            )
        )
        last = match.end()
    parts.append(escape(text[last:]))
    return mark_safe("".join(parts))


__all__ = [
    "char_label",
    "first_hidden",
    "invisible_problem",
    "is_hidden",
    "split_lines",
    "split_lines_keepends",
    "validate_visible",
    "visible_html",
]
