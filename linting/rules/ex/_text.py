"""Shared by the EX rules: how long text is shown in messages, and safe insertions."""

from __future__ import annotations

from linting.context import UnitContext
from linting.findings import Edit
from linting.spans import Pos, Span


def insert_at(ctx: UnitContext, pos: Pos, path: str, char: str, expect: str) -> Edit | None:
    """An insertion of `char` before file position `pos`, only if the file really has
    `expect` there (text from a specifier or an escape has no 1:1 position)."""
    if ctx.unit.text_at(path, Span.at(pos, len(expect))) != expect:
        return None
    return Edit(Span(pos, pos), char)


def shown(text: str, limit: int = 160) -> str:
    text = text.replace("\n", "\\n")
    return text if len(text) <= limit else text[: limit - 1] + "…"
