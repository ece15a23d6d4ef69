"""Human output, as docs/architecture.md's conventions ask: `path:line:col: CODE message`,
the source line and a caret line under the exact span, so a reader sees which characters
are meant."""

from __future__ import annotations

import unicodedata

from linting.findings import Finding
from linting.report import CommandInfo, FileReport, Report


def render_text(report: Report, *, show_argv: bool = False) -> str:
    blocks: list[list[str]] = [
        [f"{error.path}: error: {error.message}"] for error in report.input_errors
    ]
    for file_report in report.files:
        blocks.extend(finding_block(file_report, f) for f in file_report.findings)
        if show_argv:
            blocks.extend(argv_block(c) for c in file_report.commands)
    blocks.append([summary_line(report), *(f"Note: {note}" for note in report.notes())])
    return "\n\n".join("\n".join(block) for block in blocks) + "\n"


def finding_block(file_report: FileReport, finding: Finding) -> list[str]:
    start, end = finding.span.start, finding.span.end
    header = f"{finding.path}:{start.line}:{start.column}: {finding.code} {finding.message}"
    if finding.fix is not None:
        header += " (fix available)"
    source = file_report.source_line(finding.path, start.line)
    if not source.strip():
        return [header]
    # A multi-line span is underlined to the end of its first line.
    end_column = end.column if end.line == start.line else len(source) + 1
    number = str(start.line)
    gutter = " " * len(number)
    return [
        header,
        f" {number} | {source}",
        f" {gutter} | {caret_line(source, start.column, end_column)}",
    ]


def caret_line(source: str, start_column: int, end_column: int) -> str:
    """Blanks up to the span and carets under it (1-based code-point columns, end exclusive).

    Tabs before the span are copied and wide characters count twice, so the carets land under
    the right characters whatever the terminal's tab stops; there is always at least one caret.
    """
    before = source[: start_column - 1]
    pad = "".join("\t" if ch == "\t" else " " * _width(ch) for ch in before)
    pad += " " * max(0, start_column - 1 - len(source))  # span just past the end of the line
    under = sum(max(_width(ch), 1) for ch in source[start_column - 1 : end_column - 1])
    return pad + "^" * max(under, 1)


def _width(ch: str) -> int:
    if unicodedata.combining(ch):
        return 0
    return 2 if unicodedata.east_asian_width(ch) in ("W", "F") else 1


def argv_block(command: CommandInfo) -> list[str]:
    """`--show-argv`: the argv systemd passes, one quoted element per line, so spaces, empty
    strings and raw bytes are visible."""
    label = f"{command.file}:{command.line}: {command.key}"
    if command.prefixes:
        label += f" (prefixes {command.prefixes})"
    lines = [f"{label} argv:"]
    if command.argv and command.path != command.argv[0]:
        lines.append(f"  executable {quote(command.path)}")
    lines.extend(f"  [{i}] {quote(arg)}" for i, arg in enumerate(command.argv))
    if not command.argv:
        lines.append("  (no arguments: every word was removed)")
    return lines


def quote(arg: str) -> str:
    """Python-repr-like quoting, except that raw non-UTF-8 bytes (kept as surrogate escapes)
    show as `\\xHH`, the byte the program receives, rather than as `\\udcHH`."""
    q = '"' if "'" in arg and '"' not in arg else "'"
    out = []
    for ch in arg:
        code = ord(ch)
        if ch in (q, "\\"):
            out.append("\\" + ch)
        elif 0xDC80 <= code <= 0xDCFF:
            out.append(f"\\x{code - 0xDC00:02x}")
        elif ch.isprintable():
            out.append(ch)
        else:
            out.append(repr(ch)[1:-1])
    return q + "".join(out) + q


def summary_line(report: Report) -> str:
    counts = report.counts()
    files = len(report.files)
    line = (
        f"Found {_plural(counts['error'], 'error')}, {_plural(counts['warning'], 'warning')}, "
        f"{counts['info']} info in {_plural(files, 'file')}."
    )
    if report.input_errors:
        n = len(report.input_errors)
        line += f" {n} input{'s' if n != 1 else ''} could not be read."
    return line


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"
