"""Port of systemd's `extract_first_word()` with `EXTRACT_UNQUOTE|EXTRACT_CUNESCAPE`
(src/basic/extract-word.c) and of `extract_first_word_and_warn()`'s retry in relaxed mode.

Quotes may open and close anywhere inside a word; C escapes work in both quote kinds; an
unknown escape fails strict mode, and the relaxed retry keeps backslash and character
verbatim with a warning; an unbalanced quote (or a backslash at the very end inside quotes)
fails the word. Each output character keeps the file position it came from.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from linting.execline.cunescape import cunescape_one
from linting.spans import Pos, Traced, joined_origins

WHITESPACE = " \t\n\r"


class ExtractError(Exception):
    """The word cannot be decoded (systemd: "Unbalanced quoting")."""

    def __init__(self, message: str, offset: int) -> None:
        super().__init__(message)
        self.offset = offset  # where the problem is, in the input


@dataclass(frozen=True)
class QuoteRegion:
    """A quoted stretch of the input: [open, close] offsets of the quote characters."""

    quote: str
    open: int
    close: int


@dataclass(frozen=True)
class Word:
    value: Traced
    start: int  # offset of the raw word in the input
    end: int
    unknown_escapes: tuple[int, ...]  # input offsets of backslashes kept verbatim
    quotes: tuple[QuoteRegion, ...]


_SIMPLE_WORD = re.compile(r"[^ \t\n\r'\"\\]+")
# Inside quotes: everything up to the closing quote or a backslash.
_QUOTED_RUN = {"'": re.compile(r"[^'\\]+"), '"': re.compile(r'[^"\\]+')}


class _Strict(Exception):
    def __init__(self, offset: int) -> None:
        super().__init__("Unknown escape sequence")
        self.offset = offset  # the backslash


def _extract(text: Traced, pos: int, relax: bool) -> tuple[Word | None, int]:
    s = text.text
    n = len(s)
    while pos < n and s[pos] in WHITESPACE:
        pos += 1
    if pos >= n:
        return None, n
    start = pos
    simple = _SIMPLE_WORD.match(s, pos)
    end = simple.end() if simple else pos
    if end > pos and (end == n or s[end] in WHITESPACE):
        # No quotes, no backslashes: the word is the input itself (no per-character work).
        after = end
        while after < n and s[after] in WHITESPACE:
            after += 1
        return Word(text[pos:end], start, end, (), ()), after
    return _extract_quoted(text, start, relax)


def _extract_quoted(text: Traced, start: int, relax: bool) -> tuple[Word, int]:
    """A word with quotes or backslashes: character runs between them are copied as
    slices (text and positions), only quotes and escapes are looked at one by one."""
    s, origins = text.text, text.origins
    n = len(s)
    pos = start
    out: list[str] = []
    pieces: list[Sequence[Pos]] = []
    unknown: list[int] = []
    quotes: list[QuoteRegion] = []
    quote = ""
    quote_open = -1
    while True:
        if pos >= n:
            if quote:
                raise ExtractError("Unbalanced quoting", quote_open)
            word = Traced("".join(out), joined_origins(pieces))
            return Word(word, start, pos, tuple(unknown), tuple(quotes)), pos
        c = s[pos]
        if c == "\\":
            if pos + 1 >= n:
                # A trailing backslash: kept verbatim only in relaxed mode outside quotes.
                if relax and not quote:
                    out.append("\\")
                    pieces.append(origins[pos : pos + 1])
                    unknown.append(pos)
                    pos += 1
                    continue
                if quote:
                    raise ExtractError("Unbalanced quoting", quote_open)
                raise _Strict(pos)
            decoded = cunescape_one(s, pos + 1)
            if decoded is None:
                if not relax:
                    raise _Strict(pos)
                out.extend(("\\", s[pos + 1]))
                pieces.append(origins[pos : pos + 2])
                unknown.append(pos)
                pos += 2
                continue
            chars, consumed = decoded
            out.append(chars)
            pieces.append(origins[pos : pos + 1])
            pos += 1 + consumed
            continue
        if quote:
            if c == quote:
                quotes.append(QuoteRegion(quote, quote_open, pos))
                quote = ""
                pos += 1
                continue
            run = _QUOTED_RUN[quote].match(s, pos)
        elif c in "'\"":
            quote = c
            quote_open = pos
            pos += 1
            continue
        elif c in WHITESPACE:
            end = pos
            while pos < n and s[pos] in WHITESPACE:
                pos += 1
            word = Traced("".join(out), joined_origins(pieces))
            return Word(word, start, end, tuple(unknown), tuple(quotes)), pos
        else:
            run = _SIMPLE_WORD.match(s, pos)
        assert run is not None  # c is an ordinary character here
        out.append(run.group())
        pieces.append(origins[pos : run.end()])
        pos = run.end()


def extract_first_word(
    text: Traced, pos: int, *, relax_escapes: bool = True
) -> tuple[Word | None, int]:
    """Extract one word starting at `pos`; returns (word or None at end, next position).

    Raises ExtractError for unbalanced quoting (systemd logs it and drops the command).
    With `relax_escapes` (extract_first_word_and_warn(), used for Exec lines) an unknown
    escape is retried in relaxed mode; without it (plain extract_first_word(), used e.g.
    by config_parse_environ()) it raises ExtractError too.
    """
    try:
        return _extract(text, pos, relax=False)
    except _Strict as exc:
        if not relax_escapes:
            raise ExtractError("Unknown escape sequence", exc.offset) from None
        return _extract(text, pos, relax=True)
