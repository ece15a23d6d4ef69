"""Positions in unit files.

Every finding must point at the exact characters in the *file*, even when the text it
talks about went through continuation lines, unquoting, unescaping and substitution. So
every derived string carries an `origins` list: for each character, where it came from.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from itertools import accumulate, chain, repeat
from typing import NamedTuple, overload


class Pos(NamedTuple):
    """A 1-based line and column (columns count Unicode code points, as SARIF's
    `unicodeCodePoints` column kind does). A tuple: one exists per character of every
    unit file, so it must be cheap to create."""

    line: int
    column: int

    def next(self) -> Pos:
        return Pos(self.line, self.column + 1)


@dataclass(frozen=True, slots=True, init=False)
class Span:
    """A half-open range [start, end) of file positions."""

    start: Pos
    end: Pos

    def __init__(self, start: Pos, end: Pos) -> None:
        # Written out, as Traced's is: the slots' setters cost half of the generated
        # object.__setattr__ calls, and every finding and assignment makes spans.
        _set_start(self, start)
        _set_end(self, end)

    @classmethod
    def at(cls, pos: Pos, length: int = 1) -> Span:
        return cls(pos, Pos(pos.line, pos.column + max(length, 1)))

    def union(self, other: Span) -> Span:
        return Span(min(self.start, other.start), max(self.end, other.end))


_set_start = Span.start.__set__  # type: ignore[attr-defined]
_set_end = Span.end.__set__  # type: ignore[attr-defined]


class LineOrigins(Sequence[Pos]):
    """The positions of `size` consecutive characters on one line, computed on demand.

    Most characters of a unit file are never looked at individually; creating a `Pos` for
    each of them was most of the linter's time. Behaves like the tuple it stands for."""

    __slots__ = ("line", "size", "start")

    def __init__(self, line: int, start: int, size: int) -> None:
        self.line, self.start, self.size = line, start, size if size > 0 else 0

    def __len__(self) -> int:
        return self.size

    @overload
    def __getitem__(self, index: int) -> Pos: ...
    @overload
    def __getitem__(self, index: slice) -> Sequence[Pos]: ...
    def __getitem__(self, index: int | slice) -> Pos | Sequence[Pos]:
        if not isinstance(index, slice):  # the common case first: one character
            if index < 0:
                index += self.size
            if not 0 <= index < self.size:
                raise IndexError("LineOrigins index out of range")
            return Pos(self.line, self.start + index)
        first, stop, step = index.indices(self.size)
        if step != 1:
            return tuple(self)[index]
        return self._slice(first, stop)

    def _slice(self, first: int, stop: int) -> LineOrigins:
        """Positions [first, stop) (0 <= first, stop <= size)."""
        return LineOrigins(self.line, self.start + first, stop - first)

    def __iter__(self) -> Iterator[Pos]:
        return map(Pos, repeat(self.line, self.size), range(self.start, self.start + self.size))

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Sequence) and not isinstance(other, str):
            return tuple(self) == tuple(other)
        return NotImplemented

    def __hash__(self) -> int:
        return hash(tuple(self))

    def __repr__(self) -> str:
        return f"LineOrigins(line={self.line}, start={self.start}, size={self.size})"


class RunOrigins(Sequence[Pos]):
    """Several `LineOrigins` runs one after the other: a value joined from continuation
    lines, or a quoted word whose quotes and escapes were removed. Behaves like the tuple
    it stands for, without creating a `Pos` per character."""

    __slots__ = ("ends", "runs", "size")

    def __init__(self, runs: Sequence[LineOrigins]) -> None:
        self.runs = tuple(runs)
        self.ends = tuple(accumulate([r.size for r in self.runs]))
        self.size = self.ends[-1] if self.ends else 0

    def __len__(self) -> int:
        return self.size

    @overload
    def __getitem__(self, index: int) -> Pos: ...
    @overload
    def __getitem__(self, index: slice) -> Sequence[Pos]: ...
    def __getitem__(self, index: int | slice) -> Pos | Sequence[Pos]:
        size = self.size
        if isinstance(index, slice):
            first, stop, step = index.indices(size)
            if step != 1:
                return tuple(self)[index]
            return self._slice(first, stop)
        if index < 0:
            index += size
        if not 0 <= index < size:
            raise IndexError("RunOrigins index out of range")
        run = bisect_right(self.ends, index)
        return self.runs[run][index - (self.ends[run - 1] if run else 0)]

    def _slice(self, first: int, stop: int) -> Sequence[Pos]:
        """Positions [first, stop) (0 <= first, stop <= len(self))."""
        if first >= stop:
            return ()
        i = bisect_right(self.ends, first)  # the run holding `first`
        j = bisect_right(self.ends, stop - 1)  # the run holding the last character
        offset = self.ends[i - 1] if i else 0
        if i == j:  # within one run (one physical line): the common case
            return self.runs[i]._slice(first - offset, stop - offset)
        last = self.runs[j][: stop - self.ends[j - 1]]
        return RunOrigins([self.runs[i][first - offset :], *self.runs[i + 1 : j], last])

    def __iter__(self) -> Iterator[Pos]:
        return chain.from_iterable(self.runs)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Sequence) and not isinstance(other, str):
            return tuple(self) == tuple(other)
        return NotImplemented

    def __hash__(self) -> int:
        return hash(tuple(self))

    def bounds(self) -> tuple[Pos, Pos]:
        """The smallest and the largest position."""
        low = min((r.line, r.start) for r in self.runs)
        high = max((r.line, r.start + r.size - 1) for r in self.runs)
        return Pos(*low), Pos(*high)

    def __repr__(self) -> str:
        return f"RunOrigins({list(self.runs)!r})"


def joined_origins(pieces: Iterable[Sequence[Pos]]) -> Sequence[Pos]:
    """The positions of several pieces one after the other. Runs of `LineOrigins` stay
    lazy (adjacent ones on one line merge into one); anything else becomes a tuple."""
    runs: list[LineOrigins] = []
    lazy = True
    parts = [p for p in pieces if len(p)]
    for piece in parts:
        if isinstance(piece, RunOrigins):
            candidates: Iterable[LineOrigins] = piece.runs
        elif isinstance(piece, LineOrigins):
            candidates = (piece,)
        else:
            lazy = False
            break
        for run in candidates:
            last = runs[-1] if runs else None
            if last is not None and last.line == run.line and last.start + last.size == run.start:
                runs[-1] = LineOrigins(last.line, last.start, last.size + run.size)
            else:
                runs.append(run)
    if not lazy:
        return tuple(chain.from_iterable(parts))
    if not runs:
        return ()
    return runs[0] if len(runs) == 1 else RunOrigins(runs)


@dataclass(frozen=True, slots=True, init=False)
class Traced:
    """A string plus the file position of each of its characters."""

    text: str
    origins: Sequence[Pos]
    # Where an empty text sits in the file (a `${VAR}` that became ""), for its span.
    anchor: Pos | None = field(default=None, compare=False)

    def __init__(self, text: str, origins: Sequence[Pos], anchor: Pos | None = None) -> None:
        # Written out because one runs for every derived string: a single line's size is
        # read without a call to its __len__, and the slots' own setters get past the
        # frozen __setattr__ at less cost than the generated object.__setattr__ calls.
        size = origins.size if type(origins) is LineOrigins else len(origins)
        if len(text) != size:
            raise ValueError("Traced text and origins differ in length")
        _set_text(self, text)
        _set_origins(self, origins)
        _set_anchor(self, anchor)

    def __len__(self) -> int:
        return len(self.text)

    def __getitem__(self, item: slice) -> Traced:
        origins = self.origins
        if isinstance(origins, (LineOrigins, RunOrigins)):  # the common case: lazy positions
            first, stop, step = item.indices(len(self.text))
            if step == 1 and first < stop:
                return Traced(self.text[first:stop], origins._slice(first, stop), self.anchor)
        origins = origins[item]
        if origins or not self.origins:
            return Traced(self.text[item], origins, self.anchor)
        # an empty slice of a non-empty text: anchored where the slice starts
        start = min(item.indices(len(self.text))[0], len(self.origins) - 1)
        return Traced(self.text[item], origins, self.origins[start])

    def span(self, start: int = 0, end: int | None = None, *, fallback: Span | None = None) -> Span:
        """The file span covering characters [start, end) of this string."""
        origins = self.origins
        end = len(self.text) if end is None else end
        if type(origins) is LineOrigins and 0 <= start < end <= origins.size:
            # the common case, characters of one physical line: no slice needed
            line, column = origins.line, origins.start
            return Span(Pos(line, column + start), Pos(line, column + end))
        if start >= end or not origins:
            if fallback is not None:
                return fallback
            if origins:
                return Span.at(origins[min(start, len(origins) - 1)])
            if self.anchor is not None:
                return Span.at(self.anchor)
            return Span(Pos(1, 1), Pos(1, 2))
        points = origins[start:end]
        if isinstance(points, LineOrigins):
            return Span(points[0], points[-1].next())
        if isinstance(points, RunOrigins):
            low, high = points.bounds()
            return Span(low, high.next())
        return Span(min(points), max(points).next())

    def strip(self, chars: str = " \t\n\r") -> Traced:
        text = self.text
        stripped = text.strip(chars)
        if len(stripped) == len(text):
            return self
        if not stripped:
            return Traced("", ())
        left = len(text) - len(text.lstrip(chars))
        return self[left : left + len(stripped)]


_set_text = Traced.text.__set__  # type: ignore[attr-defined]
_set_origins = Traced.origins.__set__  # type: ignore[attr-defined]
_set_anchor = Traced.anchor.__set__  # type: ignore[attr-defined]


def join(parts: list[Traced]) -> Traced:
    return Traced("".join(p.text for p in parts), joined_origins(p.origins for p in parts))
