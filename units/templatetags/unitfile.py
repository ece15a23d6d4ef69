"""Escaping for unit files: the only place where profile values become unit-file text.

Each filter inverts one of systemd's parsing steps, applied in reverse order of how
systemd reads a value (docs/architecture.md facts 2, 4, 5):

1. `extract_first_word(EXTRACT_UNQUOTE|EXTRACT_CUNESCAPE)` splits and unquotes words,
   C escapes work inside both quote kinds → we quote and escape `\\`, the quote, controls;
2. `%` specifiers are resolved per word after unquoting → `%` becomes `%%`;
3. for Exec lines only, `$` substitution at exec time → `$` becomes `$$` (`$$` → `$`).

Templates must load this library and run with autoescape off: HTML escaping would be
wrong here, and escaping by hand in a template is how the seed's units broke.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from django import template

register = template.Library()

# systemd's WHITESPACE (src/basic/string-util.h).
_WHITESPACE = " \t\n\r"
_C_ESCAPES = {
    "\\": "\\\\",
    "\n": "\\n",
    "\t": "\\t",
    "\r": "\\r",
    "\a": "\\a",
    "\b": "\\b",
    "\f": "\\f",
    "\v": "\\v",
}


def _needs_quotes(word: str) -> bool:
    if not word or word[0] in "#;":
        # An empty word vanishes unquoted; a continuation line starting with `#`/`;` is a
        # comment (fact 1), and a lone `;` separates commands (fact 2).
        return True
    return any(c in _WHITESPACE or c in "\"'\\" or ord(c) < 0x20 or c == "\x7f" for c in word)


def quote_word(word: str) -> str:
    """Quote one already `%`/`$`-escaped word so that systemd's unquoting gives it back.

    Single quotes when the word holds `"` but no `'` (JSON reads naturally), else double
    quotes; inside, `\\`, the quote character and control characters are C-escaped."""
    if "\x00" in word:
        raise ValueError("a NUL character cannot be passed in a command line")
    if not _needs_quotes(word):
        return word
    quote = "'" if '"' in word and "'" not in word else '"'
    out = []
    for c in word:
        if c == quote:
            out.append("\\" + c)
        elif c in _C_ESCAPES:
            out.append(_C_ESCAPES[c])
        elif ord(c) < 0x20 or c == "\x7f":
            out.append(f"\\x{ord(c):02x}")
        else:
            out.append(c)
    return quote + "".join(out) + quote


@register.filter(is_safe=False)
def exec_word(value: Any) -> str:
    """One Exec word that systemd hands to the program as exactly `value`."""
    text = str(value)
    return quote_word(text.replace("%", "%%").replace("$", "$$"))


@register.filter(is_safe=False)
def exec_words(values: Iterable[Any]) -> str:
    """Several Exec words separated by single spaces."""
    return " ".join(exec_word(v) for v in values)


@register.filter(is_safe=False)
def env_assignment(name: Any, value: Any) -> str:
    """One `Environment=` word `NAME=VALUE` (quoted and unescaped like Exec words,
    specifiers resolved, but no `$` substitution: `$` stays as written)."""
    word = f"{name}={value}"
    if any(c in "\n\r\x00" for c in word):
        raise ValueError("an environment assignment cannot contain newlines or NUL")
    return quote_word(word.replace("%", "%%"))


@register.filter(is_safe=False)
def unit_value(value: Any) -> str:
    """A plain setting value (`Description=`, `User=`, `WorkingDirectory=`): these are not
    unquoted, only specifier-expanded; a newline or trailing `\\` would change the file's
    structure, so they are refused (validation rejects them earlier)."""
    text = str(value)
    if any(c in "\n\r\x00" for c in text) or text.endswith("\\"):
        raise ValueError(f"cannot write {text!r} as a unit-file value")
    return text.replace("%", "%%")


@register.filter(is_safe=False)
def spec_json(value: dict[str, Any]) -> str:
    """The `--speculative-config` JSON text vLLM parses with `json.loads` (key order kept,
    non-ASCII kept readable)."""
    return json.dumps(value, ensure_ascii=False)
