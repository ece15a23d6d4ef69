"""Positions in unit files.

Every finding must point at the exact characters in the *file*, even when the text it
talks about went through continuation lines, unquoting, unescaping and substitution. So
every derived string carries an `origins` list: for each character, where it came from.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple


class Pos(NamedTuple):
    """A 1-based line and column (columns count Unicode code points, as SARIF's
    `unicodeCodePoints` column kind does). A tuple: one exists per character of every
    unit file, so it must be cheap to create."""

    line: int
    column: int

    def next(self) -> Pos:
        return Pos(self.line, self.column + 1)


@dataclass(frozen=True)
class Span:
    """A half-open range [start, end) of file positions."""

    start: Pos
    end: Pos

    @classmethod
    def at(cls, pos: Pos, length: int = 1) -> Span:
        return cls(pos, Pos(pos.line, pos.column + max(length, 1)))

    def union(self, other: Span) -> Span:
        return Span(min(self.start, other.start), max(self.end, other.end))


@dataclass(frozen=True)
class Traced:
    """A string plus the file position of each of its characters."""

    text: str
    origins: tuple[Pos, ...]

    def __post_init__(self) -> None:
        if len(self.text) != len(self.origins):
            raise ValueError("Traced text and origins differ in length")

    def __len__(self) -> int:
        return len(self.text)

    def __getitem__(self, item: slice) -> Traced:
        return Traced(self.text[item], self.origins[item])

    def span(self, start: int = 0, end: int | None = None, *, fallback: Span | None = None) -> Span:
        """The file span covering characters [start, end) of this string."""
        end = len(self.text) if end is None else end
        if start >= end or not self.origins:
            if fallback is not None:
                return fallback
            if self.origins:
                return Span.at(self.origins[min(start, len(self.origins) - 1)])
            return Span(Pos(1, 1), Pos(1, 2))
        points = self.origins[start:end]
        return Span(min(points), max(points).next())

    def strip(self, chars: str = " \t\n\r") -> Traced:
        text = self.text
        left = len(text) - len(text.lstrip(chars))
        right = len(text.rstrip(chars))
        return self[left:right] if left < right else Traced("", ())


def join(parts: list[Traced]) -> Traced:
    return Traced("".join(p.text for p in parts), tuple(o for p in parts for o in p.origins))
