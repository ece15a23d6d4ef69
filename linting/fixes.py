"""Apply safe fixes to unit files (`--fix`) or show them as a diff (`--diff`)."""

from __future__ import annotations

import difflib
from collections.abc import Iterable

from linting.findings import Edit, Finding


def apply_edits(text: str, edits: Iterable[Edit]) -> str:
    """Apply single-line edits; overlapping edits after the first are skipped (a second
    run picks them up)."""
    lines = text.split("\n")
    chosen: list[Edit] = []
    for edit in sorted(edits, key=lambda e: (e.span.start, e.span.end)):
        if edit.span.start.line != edit.span.end.line:
            continue
        if (
            chosen
            and chosen[-1].span.start.line == edit.span.start.line
            and (edit.span.start.column < chosen[-1].span.end.column)
        ):
            continue
        chosen.append(edit)
    for edit in reversed(chosen):
        index = edit.span.start.line - 1
        if not 0 <= index < len(lines):
            continue
        line = lines[index]
        start = edit.span.start.column - 1
        end = edit.span.end.column - 1
        lines[index] = line[:start] + edit.replacement + line[end:]
    return "\n".join(lines)


def fixed_texts(findings: Iterable[Finding], texts: dict[str, str]) -> dict[str, str]:
    """path → new text, for every file whose text changes."""
    edits: dict[str, list[Edit]] = {}
    for f in findings:
        if f.fix is None:
            continue
        edits.setdefault(f.path, []).extend(f.fix.edits)
    result = {}
    for path, file_edits in edits.items():
        if path not in texts:
            continue
        new = apply_edits(texts[path], file_edits)
        if new != texts[path]:
            result[path] = new
    return result


def unified_diff(path: str, old: str, new: str) -> str:
    return "".join(
        difflib.unified_diff(
            old.splitlines(keepends=True),
            new.splitlines(keepends=True),
            fromfile=f"a/{path}",
            tofile=f"b/{path}",
        )
    )
