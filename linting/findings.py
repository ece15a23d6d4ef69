"""What a lint run produces: findings with exact spans, optional safe fixes."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field

from linting.spans import Span


class Severity(enum.IntEnum):
    """`error`: systemd or vLLM will fail or do something other than written;
    `warning`: works but fragile or slow; `info`: style."""

    INFO = 1
    WARNING = 2
    ERROR = 3

    def __str__(self) -> str:
        return self.name.lower()

    @classmethod
    def parse(cls, text: str) -> Severity:
        try:
            return cls[text.strip().upper()]
        except KeyError:
            raise ValueError(f"unknown severity {text!r} (use error, warning or info)") from None


@dataclass(frozen=True)
class Edit:
    """Replace the text in `span` (a single-line range of the file) with `replacement`."""

    span: Span
    replacement: str


@dataclass(frozen=True)
class Fix:
    description: str
    edits: tuple[Edit, ...]


@dataclass(frozen=True)
class Finding:
    code: str
    name: str
    severity: Severity
    span: Span
    message: str
    path: str
    fix: Fix | None = None
    # Extra machine-readable facts (e.g. the argv a program receives) for JSON consumers.
    data: dict = field(default_factory=dict, compare=False, hash=False)
    # Other places the finding is about, (path, span): one finding for several spots (all
    # the placeholders of a template); a knock-on finding at any of them is dropped too.
    related: tuple[tuple[str, Span], ...] = field(default=(), compare=False, hash=False)

    @property
    def sort_key(self) -> tuple:
        return (self.path, self.span.start, self.code, self.message)


@dataclass(frozen=True)
class Hit:
    """What a check yields: where, what, and facts for machine readers. The engine makes it
    a `Finding` with the rule's code, name and severity, so a check never repeats them.

    `path` names the file when it is not the unit's main file (a drop-in); `severity` is
    only for a finding milder than its rule (an optional hook is a warning, not an error);
    `code` and `name` only for a rule that reports another tool's codes (ShellCheck)."""

    span: Span
    message: str
    data: dict | None = None
    path: str | None = None
    fix: Fix | None = None
    severity: Severity | None = None
    code: str | None = None
    name: str | None = None
    related: tuple[tuple[str, Span], ...] = ()
