"""A unit-file reader faithful to systemd's `config_parse()` (src/shared/conf-parser.c).

What systemd does, and so what we do:
- a line whose unescaped trailing backslash continues it: the backslash becomes a space and
  the next line is appended (the parity of backslashes over the whole accumulated line
  decides, so `\\\\` at the end does not continue);
- while continuing, lines whose first non-blank character is `#` or `;` are skipped;
- each logical line is stripped of whitespace; empty lines and comment lines are ignored;
- `[Section]` headers; `Key=Value` split at the first `=`, both sides stripped;
- keys and values outside any section are ignored with a warning.

Every assignment keeps the file position of every character of its value (`Traced`), so
findings can point into the right physical line even across continuations.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

from linting.spans import LineOrigins, Pos, Span, Traced, joined_origins

WHITESPACE = " \t\n\r"
COMMENTS = "#;"
COMMENT_STARTS = tuple(COMMENTS)
_STDIN_NAME = "stdin.service"  # the name of a unit read from standard input (path "-")
_UNSAFE = re.compile(r"[\x00-\x1f\x7f\"'\\]")  # what string_is_safe() rejects
_DISABLE_RE = re.compile(r"lintunits:\s*disable=([A-Za-z0-9_,\s-]+)")


@dataclass(frozen=True)
class ParseProblem:
    """Something systemd itself logs while reading the file."""

    kind: str  # "section-header", "missing-equals", "missing-key", "outside-section"
    message: str
    span: Span
    path: str


@dataclass(frozen=True)
class SectionHeader:
    name: str
    span: Span
    path: str


@dataclass(frozen=True, slots=True, init=False)
class Assignment:
    section: str
    key: Traced
    value: Traced
    path: str
    line: int  # physical line where the assignment starts
    # key.text, stored: rules read it for every assignment they look at (a property's call
    # cost more than making the unit)
    name: str = field(init=False, repr=False, compare=False)

    def __init__(self, section: str, key: Traced, value: Traced, path: str, line: int) -> None:
        # Written out, as Traced's is: one is made for every assignment of every file, and
        # the slots' setters cost half of the generated object.__setattr__ calls.
        _set_section(self, section)
        _set_key(self, key)
        _set_value(self, value)
        _set_path(self, path)
        _set_line(self, line)
        _set_name(self, key.text)

    @property
    def span(self) -> Span:
        """The whole assignment, key to end of value."""
        end = self.value.span() if self.value.text else self.key.span()
        return self.key.span().union(end)


_set_section = Assignment.section.__set__  # type: ignore[attr-defined]
_set_key = Assignment.key.__set__  # type: ignore[attr-defined]
_set_value = Assignment.value.__set__  # type: ignore[attr-defined]
_set_path = Assignment.path.__set__  # type: ignore[attr-defined]
_set_line = Assignment.line.__set__  # type: ignore[attr-defined]
_set_name = Assignment.name.__set__  # type: ignore[attr-defined]


@dataclass
class SourceFile:
    """One file's text, with the lines kept for carets and fixes."""

    path: str
    text: str

    @cached_property
    def lines(self) -> list[str]:
        return self.text.split("\n")

    def line(self, number: int) -> str:
        lines = self.lines
        return lines[number - 1].rstrip("\r") if 0 < number <= len(lines) else ""


@dataclass
class UnitFile:
    """A unit with its drop-ins applied in order (main file first)."""

    path: str
    name: str
    sources: dict[str, SourceFile] = field(default_factory=dict)
    headers: list[SectionHeader] = field(default_factory=list)
    assignments: list[Assignment] = field(default_factory=list)
    problems: list[ParseProblem] = field(default_factory=list)
    # (path, line) -> codes disabled by a `# lintunits: disable=...` comment on the line above
    disabled: dict[tuple[str, int], set[str]] = field(default_factory=dict)
    # (section, key) -> assignments in order; rebuilt after parse_text() appends more
    _by_key: dict[tuple[str, str], list[Assignment]] | None = field(
        default=None, repr=False, compare=False
    )

    @property
    def is_dropin_only(self) -> bool:
        """A lone drop-in (`NAME.service.d/x.conf`) linted without its unit."""
        return self.name.endswith(".conf")

    @property
    def unit_type(self) -> str:
        """`service`, `socket`, ... from the file name (`vllm.service` → `service`); a lone
        drop-in takes the type of its directory (`vllm.service.d/x.conf`)."""
        name = self.name
        if self.is_dropin_only:
            name = Path(self.path).parent.name.removesuffix(".d")
        suffix = name.rsplit(".", 1)[-1] if "." in name else ""
        return suffix or "service"

    def get_all(self, section: str, key: str) -> list[Assignment]:
        return list(self._matching(section, key))

    def _matching(self, section: str, key: str) -> Sequence[Assignment]:
        """The assignments to `key` in `section`, in order: the index's own list, not a copy
        (rules ask for keys tens of times per unit)."""
        by_key = self._by_key
        if by_key is None:
            by_key = self._by_key = {}
            for a in self.assignments:
                by_key.setdefault((a.section, a.key.text), []).append(a)
        return by_key.get((section, key), ())

    def effective_list(self, section: str, key: str) -> list[Assignment]:
        """List-valued keys: an empty assignment resets everything before it."""
        result: list[Assignment] = []
        for a in self._matching(section, key):
            if a.value.text == "":
                result = []
            else:
                result.append(a)
        return result

    def last(self, section: str, key: str) -> Assignment | None:
        """Single-valued keys: the last assignment wins (an empty one means the default)."""
        found = self._matching(section, key)
        return found[-1] if found else None

    def last_value(self, section: str, key: str) -> str | None:
        found = self._matching(section, key)
        return (found[-1].value.text if found else "") or None

    def anchor(self, section: str) -> tuple[Span, str]:
        """Where a finding about a whole section points, and in which file: the section's
        first header, else the first header of all, else line 1 of the unit."""
        header = next((h for h in self.headers if h.name == section), None)
        if header is None and self.headers:
            header = self.headers[0]
        if header is None:
            return Span(Pos(1, 1), Pos(1, 2)), self.path
        return header.span, header.path

    def text_at(self, path: str, span: Span) -> str | None:
        """What file `path` holds under a single-line `span` (None for a span over several
        lines or a file that is not part of this unit)."""
        source = self.sources.get(path)
        if source is None or span.start.line != span.end.line:
            return None
        return source.line(span.start.line)[span.start.column - 1 : span.end.column - 1]

    def is_disabled(self, code: str, span: Span, path: str) -> bool:
        codes = self.disabled.get((path, span.start.line))
        return bool(codes) and (code in codes or "all" in codes)


_SEGMENT = re.compile(r"([^\n\r\0]*)([\n\r\0]*)")


def _physical_lines(text: str) -> list[tuple[str, Sequence[Pos], int]]:
    """Split like `read_line()` (src/basic/fileio.c): LF, CR and NUL each end a line, and
    one line end is a run of them in which no kind repeats (CR LF, LF CR), so a lone CR
    ends a line too. Positions count lines by LF only, as editors and our carets do; a
    leading BOM is dropped. Returns (text, positions, line number of its start)."""
    column = 1
    if text.startswith("\ufeff"):
        text, column = text[1:], 2
    if "\r" in text or "\0" in text:
        return _physical_lines_any_end(text, column)
    # The common case, LF alone ends lines: each LF ends one line, and a last line
    # without an LF counts too.
    lines = text.split("\n")
    if not lines[-1]:
        lines.pop()
    result: list[tuple[str, Sequence[Pos], int]] = [
        (line, LineOrigins(number, 1, len(line)), number)
        for number, line in enumerate(lines, start=1)
    ]
    if column != 1 and result:
        result[0] = (lines[0], LineOrigins(1, column, len(lines[0])), 1)
    return result


def _physical_lines_any_end(text: str, column: int) -> list[tuple[str, Sequence[Pos], int]]:
    """`_physical_lines()` for text with CR or NUL line ends (`column`: where it starts)."""
    result: list[tuple[str, Sequence[Pos], int]] = []
    line, pos, n = 1, 0, len(text)
    start = line
    while pos < n:
        match = _SEGMENT.match(text, pos)
        assert match is not None  # the pattern matches the empty string
        segment, ends = match.group(1), match.group(2)
        size = len(segment)
        origins = LineOrigins(line, column, size)
        column += size
        pos = match.end()
        if segment or ends:
            result.append((segment, origins, start))
        seen: set[str] = set()
        for ch in ends:
            if ch in seen:  # a second line end in the run: an empty line between
                result.append(("", [], line))
                seen = set()
            seen.add(ch)
            if ch == "\n":
                line, column = line + 1, 1
            else:
                column += 1
        start = line
    return result


def _ends_in_escape(line: str) -> bool:
    """conf-parser.c walks the line with `escaped = !escaped && *p == '\\'`: the line
    continues when it ends in an odd run of backslashes. (Earlier parts of a continued line
    end in the space that replaced their backslash, so only this part matters.)"""
    run = len(line) - len(line.rstrip("\\"))
    return run % 2 == 1


def _logical_lines(text: str) -> list[tuple[str, Sequence[Pos], int]]:
    """Join continuation lines exactly like conf-parser.c; returns (line, its positions,
    first line number)."""
    result: list[tuple[str, Sequence[Pos], int]] = []
    parts: list[str] = []  # the line being continued, empty when there is none
    parts_origins: list[Sequence[Pos]] = []
    start_line = 0
    for raw, origins, number in _physical_lines(text):
        if parts:
            if raw.lstrip(WHITESPACE).startswith(COMMENT_STARTS):
                continue
        elif not raw.endswith("\\"):  # the common case: a line that is whole by itself
            result.append((raw, origins, number))
            continue
        else:
            start_line = number
        if _ends_in_escape(raw):
            # The trailing backslash becomes a space and the line continues.
            parts.append(raw[:-1] + " ")
            parts_origins.append(origins)
            continue
        parts.append(raw)
        parts_origins.append(origins)
        result.append(_joined(parts, parts_origins, start_line))
        parts, parts_origins = [], []
    if parts:
        result.append(_joined(parts, parts_origins, start_line))
    return result


def _joined(
    parts: list[str], origins: list[Sequence[Pos]], start_line: int
) -> tuple[str, Sequence[Pos], int]:
    joined = origins[0] if len(origins) == 1 else joined_origins(origins)
    return "".join(parts), joined, start_line


def _collect_disables(source: SourceFile, into: dict[tuple[str, int], set[str]]) -> None:
    """`# lintunits: disable=CODE[,CODE]` applies to the next non-comment line."""
    if "lintunits:" not in source.text:  # most files: no line can match _DISABLE_RE
        return
    pending: set[str] = set()
    for number, line in enumerate(source.lines, start=1):
        stripped = line.strip()
        if stripped[:1] in ("#", ";"):
            match = _DISABLE_RE.search(stripped)
            if match:
                pending |= {c.strip() for c in match.group(1).split(",") if c.strip()}
            continue
        if pending and stripped:
            into.setdefault((source.path, number), set()).update(pending)
            pending = set()


def parse_text(text: str, path: str, unit: UnitFile | None = None) -> UnitFile:
    """Parse one file into `unit` (a new one if None), appending to what is there."""
    if unit is None:
        unit = UnitFile(path=path, name=Path(path).name if path != "-" else _STDIN_NAME)
    source = SourceFile(path, text)
    _collect_disables(source, unit.disabled)
    # A drop-in's errors only end that drop-in (load-dropin.c ignores config_parse()'s
    # result); in the unit file itself they make the unit fail to load.
    is_dropin = bool(unit.sources) or path.endswith(".conf")
    unit.sources[path] = source
    section: str | None = None
    for raw, origins, first_line in _logical_lines(text):
        stripped = raw.strip(WHITESPACE)
        if not stripped or stripped[0] in COMMENTS:
            continue
        eq = stripped.find("=")
        if stripped[0] != "[" and section is not None and eq > 0:  # an assignment: most lines
            key, value = _key_and_value(raw, origins, raw.find("="))
            unit.assignments.append(Assignment(section, key, value, path, first_line))
            continue
        line = Traced(raw, origins).strip()
        if stripped[0] == "[":
            section = _section_header(line, path, is_dropin, unit)
            if section is None:
                # parse_line() returns -EBADMSG and config_parse() stops reading the file.
                break
        elif section is None:
            unit.problems.append(
                ParseProblem(
                    "outside-section", "Assignment outside of section, ignoring", line.span(), path
                )
            )
        elif eq < 0:
            unit.problems.append(
                ParseProblem("missing-equals", "Missing '=', ignoring line", line.span(), path)
            )
        else:
            unit.problems.append(
                ParseProblem(
                    "missing-key", "Missing key name before '=', ignoring line", line.span(), path
                )
            )
    unit._by_key = None
    return unit


def _section_header(line: Traced, path: str, is_dropin: bool, unit: UnitFile) -> str | None:
    """Note the `[Section]` header `line` in `unit` and return its name; None for an invalid
    one (noted as a problem)."""
    name = line.text[1:-1]
    if line.text.endswith("]") and string_is_safe(name):
        unit.headers.append(SectionHeader(name, line.span(), path))
        return name
    what = "Invalid" if not line.text.endswith("]") else "Bad characters in"
    consequence = (
        "systemd reads no further in this drop-in"
        if is_dropin
        else 'systemd refuses to load the unit ("Bad message")'
    )
    unit.problems.append(
        ParseProblem(
            "section-header",
            f"{what} section header '{line.text}': {consequence}",
            line.span(),
            path,
        )
    )
    return None


def _key_and_value(raw: str, origins: Sequence[Pos], eq: int) -> tuple[Traced, Traced]:
    """The key and the value of the logical line `raw` split at its first `=` (`eq`), both
    stripped. A line from one physical line, the common case, is cut without slicing: this
    runs for every assignment."""
    start = len(raw) - len(raw.lstrip(WHITESPACE))
    key_stop = len(raw[:eq].rstrip(WHITESPACE))
    stop = len(raw.rstrip(WHITESPACE))
    value_start = stop - len(raw[eq + 1 : stop].lstrip(WHITESPACE))
    if type(origins) is not LineOrigins or value_start == stop:
        # Continuation lines, or an empty value (anchored at the `=`): slice the stripped line.
        line = Traced(raw, origins).strip()
        return line[: key_stop - start], line[value_start - start :]
    row, column = origins.line, origins.start
    key = Traced(raw[start:key_stop], LineOrigins(row, column + start, key_stop - start))
    size = stop - value_start
    return key, Traced(raw[value_start:stop], LineOrigins(row, column + value_start, size))


def string_is_safe(text: str) -> bool:
    """`string_is_safe()` (src/basic/string-util.c): no control characters, quotes or
    backslashes."""
    return _UNSAFE.search(text) is None


def dropin_paths(unit_path: Path) -> list[Path]:
    """`NAME.service.d/*.conf` beside the unit, in the order systemd applies them
    (lexicographic by file name)."""
    directory = unit_path.with_name(unit_path.name + ".d")
    if not directory.is_dir():
        return []
    return sorted((p for p in directory.iterdir() if p.suffix == ".conf"), key=lambda p: p.name)


def parse_file(path: Path, *, with_dropins: bool = True) -> UnitFile:
    """Read a unit and its drop-ins. Raises OSError/UnicodeDecodeError for unreadable input."""
    unit_path = str(path)
    name = _STDIN_NAME if unit_path == "-" else path.name  # the name parse_text() would give
    unit = parse_text(read_text(unit_path), unit_path, UnitFile(path=unit_path, name=name))
    # Most units have no drop-in directory: one os.path.isdir() says so without Paths.
    if with_dropins and os.path.isdir(unit_path + ".d"):
        for dropin in dropin_paths(path):
            parse_text(read_text(dropin), str(dropin), unit)
    return unit


def read_text(path: str | Path) -> str:
    with open(path, "rb") as file:
        data = file.read()
    if b"\x00" in data:
        raise UnicodeDecodeError(
            "utf-8", data, data.index(b"\x00"), data.index(b"\x00") + 1, "NUL byte in unit file"
        )
    return data.decode("utf-8")
