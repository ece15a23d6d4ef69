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


@dataclass(slots=True)
class Word:
    """One decoded word. Not frozen: one is made per word of every Exec line, and a frozen
    dataclass takes three times as long to create. Nothing changes a Word once made."""

    value: Traced
    start: int  # offset of the raw word in the input
    end: int
    unknown_escapes: tuple[int, ...]  # input offsets of backslashes kept verbatim
    quotes: tuple[QuoteRegion, ...]


_SIMPLE_WORD = re.compile(r"[^ \t\n\r'\"\\]+")
_BLANKS = re.compile(r"[ \t\n\r]*")
# A whole word without quotes or backslashes (it ends at a blank or at the end of the input),
# and the blanks after it: such a word decodes to itself.
PLAIN_WORD = re.compile(r"([^ \t\n\r'\"\\]++)(?:[ \t\n\r]++|\Z)")
# Inside quotes: everything up to the closing quote or a backslash.
_QUOTED_RUN = {"'": re.compile(r"[^'\\]+"), '"': re.compile(r'[^"\\]+')}


class _Strict(Exception):
    def __init__(self, offset: int) -> None:
        super().__init__("Unknown escape sequence")
        self.offset = offset  # the backslash


def _extract(text: Traced, pos: int, relax: bool) -> tuple[Word | None, int]:
    s = text.text
    pos = _BLANKS.match(s, pos).end()
    if pos >= len(s):
        return None, len(s)
    plain = PLAIN_WORD.match(s, pos)
    if plain is not None:
        # No quotes, no backslashes: the word is the input itself (no per-character work).
        end = plain.end(1)
        return Word(text[pos:end], pos, end, (), ()), plain.end()
    return _extract_quoted(text, pos, relax)


def _extract_quoted(text: Traced, start: int, relax: bool) -> tuple[Word, int]:
    """A word with quotes or backslashes: character runs between them are copied as
    slices (text and positions), only quotes and escapes are looked at one by one."""
    word = _WordBuilder(text, start, relax)
    s, n = text.text, len(text.text)
    pos = start
    while pos < n:
        c = s[pos]
        if c == "\\":
            pos = word.escape(pos)
        elif word.quote:
            if c == word.quote:
                word.quotes.append(QuoteRegion(word.quote, word.quote_open, pos))
                word.quote = ""
                pos += 1
            else:
                pos = word.run(_QUOTED_RUN[word.quote], pos)
        elif c in "'\"":
            word.quote, word.quote_open = c, pos
            pos += 1
        elif c in WHITESPACE:
            return word.finish(pos), _BLANKS.match(s, pos).end()
        else:
            pos = word.run(_SIMPLE_WORD, pos)
    if word.quote:
        raise ExtractError("Unbalanced quoting", word.quote_open)
    return word.finish(pos), pos


class _WordBuilder:
    """The state of `_extract_quoted`: the decoded text so far, its file positions, the
    quote being read, the unknown escapes and quote regions seen."""

    def __init__(self, text: Traced, start: int, relax: bool) -> None:
        self.text, self.start, self.relax = text, start, relax
        self.out: list[str] = []
        self.pieces: list[Sequence[Pos]] = []
        self.unknown: list[int] = []
        self.quotes: list[QuoteRegion] = []
        self.quote = ""
        self.quote_open = -1

    def run(self, pattern: re.Pattern[str], pos: int) -> int:
        """Copy the ordinary characters at `pos` in one slice."""
        match = pattern.match(self.text.text, pos)
        assert match is not None  # the caller saw an ordinary character here
        self.add(match.group(), pos, match.end())
        return match.end()

    def add(self, chars: str, start: int, end: int) -> None:
        self.out.append(chars)
        self.pieces.append(self.text.origins[start:end])

    def escape(self, pos: int) -> int:
        """The backslash at `pos`: a C escape, or (relaxed) kept as written."""
        s = self.text.text
        if pos + 1 >= len(s):
            # A trailing backslash: kept verbatim only in relaxed mode outside quotes.
            if self.quote:
                raise ExtractError("Unbalanced quoting", self.quote_open)
            if not self.relax:
                raise _Strict(pos)
            self.add("\\", pos, pos + 1)
            self.unknown.append(pos)
            return pos + 1
        decoded = cunescape_one(s, pos + 1)
        if decoded is None:
            if not self.relax:
                raise _Strict(pos)
            self.add("\\" + s[pos + 1], pos, pos + 2)
            self.unknown.append(pos)
            return pos + 2
        chars, consumed = decoded
        self.add(chars, pos, pos + 1)
        return pos + 1 + consumed

    def finish(self, end: int) -> Word:
        decoded = Traced("".join(self.out), joined_origins(self.pieces))
        return Word(decoded, self.start, end, tuple(self.unknown), tuple(self.quotes))


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
