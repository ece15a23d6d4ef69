"""Helpers shared by the rule tests: lint a text for one code, and read a finding's span."""

from __future__ import annotations

from typing import Any

from linting.engine import lint_text
from linting.findings import Finding
from linting.fixes import apply_edits
from linting.options import LintOptions


def lint(text: str, code: str, name: str = "vllm.service", **options: Any) -> list[Finding]:
    """The findings of one rule code (ShellCheck off unless asked for)."""
    options.setdefault("shellcheck", False)
    report = lint_text(text, name, LintOptions(**options))
    return [f for f in report.files[0].findings if f.code == code]


def spanned(text: str, finding: Finding) -> str:
    """The file text a single-line finding points at."""
    s = finding.span
    assert s.start.line == s.end.line
    return text.split("\n")[s.start.line - 1][s.start.column - 1 : s.end.column - 1]


def where(finding: Finding) -> tuple[int, int, int]:
    """(line, start column, end column) of a finding."""
    return finding.span.start.line, finding.span.start.column, finding.span.end.column


def fixed(text: str, findings: list[Finding]) -> str:
    """The text after applying every fix of `findings`."""
    return apply_edits(text, [e for f in findings if f.fix for e in f.fix.edits])
