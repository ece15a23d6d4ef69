"""What the edit page shows beside the form: the rendered unit with line numbers, its lint
findings, and every message grouped by form field (`build_preview()`).

Nothing here saves: the preview only validates, renders and lints the data it is given.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from django import forms

from linting.findings import Finding, Severity
from units.field_texts import LABELS, SECTIONS
from units.linting import ProfileLint, lint_profile
from units.models import PROFILE_FIELDS
from units.profile_data import normalize_profile_data
from units.unicode_text import split_lines
from units.validation import field_errors

GENERAL = "__all__"  # issues no single field causes
_ON_FORM = {name for _, _, names in SECTIONS for name in names}
FORM_FIELDS = tuple(name for name in PROFILE_FIELDS if name in _ON_FORM)  # the model's order


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
    key: str = ""  # the flag, JSON key or unit setting the field writes


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


@dataclass(frozen=True)
class FindingRow:
    """One lint finding in the list under the unit: the field it belongs to (GENERAL for
    the unit as a whole), that field's label, and the finding."""

    field: str
    label: str
    issue: Issue


# A unit is worth judging as a whole once these are filled in (a blank form is not).
REQUIRED_FIELDS = ("name", "vllm_executable", "model")
_FORM_ORDER = [name for _, _, names in SECTIONS for name in names]


def error_count(issues: dict[str, list[Issue]]) -> int:
    return sum(1 for items in issues.values() for issue in items if issue.severity == "error")


def first_problem(issues: dict[str, list[Issue]]) -> FindingRow | None:
    """The first error in the order of the form (the unit's own problems last)."""
    for name in (*_FORM_ORDER, GENERAL):
        for issue in issues.get(name, ()):
            if issue.severity == "error":
                return FindingRow(name, LABELS.get(name, "Unit"), issue)
    return None


@dataclass
class Preview:
    """The rendered unit (None when the data cannot be rendered yet), its findings, and
    every message per form field (GENERAL for the rest)."""

    lines: list[UnitLine] | None
    findings: list[FindingRow]  # in line order
    issues: dict[str, list[Issue]] = field(default_factory=dict)

    @property
    def counts(self) -> dict[str, int]:
        """Every message shown at a field (or for the whole unit), by severity: the badges
        count what the page shows, each problem once."""
        counts = {"error": 0, "warning": 0, "info": 0}
        for items in self.issues.values():
            for issue in items:
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
        return [(name, self.issues.get(name, [])) for name in (*FORM_FIELDS, GENERAL)]


def _only_shown(
    data: dict[str, Any],
    issues: dict[str, list[Issue]],
    found: list[tuple[FindingRow, Finding]],
    shown: set[str],
) -> tuple[dict[str, list[Issue]], list[tuple[FindingRow, Finding]]]:
    """A new profile's messages: validation speaks only at the fields typed in; once the
    unit can be judged as a whole, every lint finding shows (an untouched default, such as
    no User= with --host 0.0.0.0, can be its cause, and the saved page would show it)."""
    whole_unit = all(data.get(name) for name in REQUIRED_FIELDS)
    visible = shown | ({GENERAL} if whole_unit else set())
    kept = {
        name: [i for i in items if name in visible or (whole_unit and i.code)]
        for name, items in issues.items()
    }
    kept = {name: items for name, items in kept.items() if items}
    if not whole_unit:
        found = [(row, finding) for row, finding in found if row.field in visible]
    return kept, found


def build_preview(
    data: dict[str, Any],
    extra_errors: dict[str, list[str]] | None = None,
    *,
    shown: set[str] | None = None,
) -> Preview:
    """Validate, render and lint `data` without saving anything.

    Each problem is shown once at its field: validation's message (in the operator's
    terms) where there is one, else the lint findings of the field's unit lines. Every
    finding also stays in the list under the unit, linked to its field. `shown` limits
    the messages to the fields a person has touched (a new, blank form); None shows all.
    """
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
    found: list[tuple[FindingRow, Finding]] = []
    for finding in lint.report.findings if lint else ():
        name = lint.field_of(finding)
        issue = Issue(
            severity=str(finding.severity),
            message=lint.describe(finding),
            code=finding.code,
            line=finding.span.start.line,
        )
        if name not in errors:  # validation already said it at the field
            issues.setdefault(name, []).append(issue)
        found.append((FindingRow(name, LABELS.get(name, "Unit"), issue), finding))
    if shown is not None:
        issues, found = _only_shown(data, issues, found, set(shown))
    severity_by_line: dict[int, Severity] = {}
    codes_by_line: dict[int, list[str]] = {}
    for _, finding in found:
        for number in range(finding.span.start.line, finding.span.end.line + 1):
            severity_by_line[number] = max(
                severity_by_line.get(number, Severity.INFO), finding.severity
            )
            codes_by_line.setdefault(number, []).append(finding.code)
    findings = sorted((row for row, _ in found), key=lambda r: (r.issue.line or 0, r.issue.code))
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
