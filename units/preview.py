"""What the edit page shows beside the form: the rendered unit with line numbers, its lint
findings, and every message grouped by form field (`build_preview()`).

Nothing here saves: the preview only validates, renders and lints the data it is given.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from django import forms

from linting.findings import Severity
from units.field_texts import LABELS
from units.linting import ProfileLint, lint_profile
from units.models import PROFILE_FIELDS
from units.profile_data import normalize_profile_data
from units.unicode_text import split_lines
from units.validation import field_errors

GENERAL = "__all__"  # issues no single field causes


@dataclass(frozen=True)
class Issue:
    """One message next to a field: a validation error or a lint finding."""

    severity: str  # "error" | "warning" | "info"
    message: str
    code: str = ""
    line: int | None = None


@dataclass(frozen=True)
class FieldRow:
    field: forms.BoundField
    issues: list[Issue]
    hidden: bool = False


@dataclass(frozen=True)
class Section:
    anchor: str
    title: str
    rows: list[FieldRow]


@dataclass(frozen=True)
class UnitLine:
    number: int
    text: str
    severity: str = ""
    codes: tuple[str, ...] = ()


@dataclass
class Preview:
    """The rendered unit (None when the data cannot be rendered yet), its findings, and
    every message per form field (GENERAL for the rest)."""

    lines: list[UnitLine] | None
    findings: list[tuple[str, Issue]]  # (field label, issue), in line order
    issues: dict[str, list[Issue]] = field(default_factory=dict)

    @property
    def counts(self) -> dict[str, int]:
        counts = {"error": 0, "warning": 0, "info": 0}
        for _, issue in self.findings:
            counts[issue.severity] += 1
        return counts

    @property
    def invalid_fields(self) -> int:
        """Fields with an error (what blocks a save); warnings alone need no fix."""
        return sum(
            1
            for name, items in self.issues.items()
            if name != GENERAL and any(issue.severity == "error" for issue in items)
        )

    def field_issues(self) -> list[tuple[str, list[Issue]]]:
        """Every field (and GENERAL) with its issues, empty ones included, so an
        out-of-band swap also clears messages that were fixed."""
        return [(name, self.issues.get(name, [])) for name in (*PROFILE_FIELDS, GENERAL)]


def build_preview(
    data: dict[str, Any], extra_errors: dict[str, list[str]] | None = None
) -> Preview:
    """Validate, render and lint `data` without saving anything.

    Validation messages come first at each field; lint findings follow with their rule
    code and unit line. The unit is rendered and linted once: the blocking findings are
    the same ones the save's lint stage reports, so they are shown once, as findings."""
    data = normalize_profile_data(data)
    errors = field_errors(data)
    for name, messages in (extra_errors or {}).items():
        errors.setdefault(name, []).extend(messages)
    lint: ProfileLint | None
    try:
        lint = lint_profile(data)
    except (ValueError, TypeError, KeyError, ArithmeticError):
        # Values the unit cannot hold yet (validation names them at their fields).
        lint = None
    issues: dict[str, list[Issue]] = {
        name: [Issue("error", m) for m in messages] for name, messages in errors.items()
    }
    findings: list[tuple[str, Issue]] = []
    severity_by_line: dict[int, Severity] = {}
    codes_by_line: dict[int, list[str]] = {}
    for finding in lint.report.findings if lint else ():
        name = lint.field_of(finding)
        issue = Issue(
            severity=str(finding.severity),
            message=lint.describe(finding),
            code=finding.code,
            line=finding.span.start.line,
        )
        issues.setdefault(name, []).append(issue)
        findings.append((LABELS.get(name, "Unit"), issue))
        for number in range(finding.span.start.line, finding.span.end.line + 1):
            severity_by_line[number] = max(
                severity_by_line.get(number, Severity.INFO), finding.severity
            )
            codes_by_line.setdefault(number, []).append(finding.code)
    findings.sort(key=lambda item: (item[1].line or 0, item[1].code))
    lines = None
    if lint is not None:
        lines = [
            UnitLine(
                number,
                line,
                str(severity_by_line[number]) if number in severity_by_line else "",
                tuple(dict.fromkeys(codes_by_line.get(number, ()))),
            )
            for number, line in enumerate(split_lines(lint.text), start=1)
        ]
    return Preview(lines=lines, findings=findings, issues=issues)
