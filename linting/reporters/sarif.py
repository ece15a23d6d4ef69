"""SARIF 2.1.0 (`--format sarif`), the format GitHub code scanning and other dashboards
import. One run; the rules array describes the catalog, so a viewer can show each rule's
documentation beside its results.

ShellCheck's own codes (`SC2086`) are not in our catalog, yet every result must point at a
rule (`ruleIndex`), so a descriptor is made for each one that occurs, linking to its wiki page.
"""

from __future__ import annotations

import json
from pathlib import PurePath, PurePosixPath
from typing import Any
from urllib.parse import quote

from linting.findings import Finding, Fix, Severity
from linting.report import Report
from linting.rules.docs import SHELLCHECK_WIKI, is_shellcheck_code, sections_markdown, sections_text
from linting.rules.registry import Rule, all_rules
from linting.spans import Span

SCHEMA_URI = "https://json.schemastore.org/sarif-2.1.0.json"
TOOL_NAME = "lintunits"
# The project's public page (SARIF requires an absolute URI); set to the real address.
INFORMATION_URI = "https://github.com/specadmin/specadmin/tree/main/docs/rules"
LEVELS = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFO: "note"}


def render_sarif(report: Report, rules: list[Rule] | None = None) -> str:
    if rules is None:
        rules = all_rules()
    descriptors = [rule_descriptor(rule) for rule in rules]
    index = {rule.code: i for i, rule in enumerate(rules)}
    for finding in report.findings:
        if finding.code not in index:
            index[finding.code] = len(descriptors)
            descriptors.append(external_descriptor(finding))
    run: dict[str, Any] = {
        "tool": {
            "driver": {"name": TOOL_NAME, "informationUri": INFORMATION_URI, "rules": descriptors}
        },
        "invocations": [invocation(report)],
        "columnKind": "unicodeCodePoints",
        "results": [result(f, index[f.code]) for f in report.findings],
    }
    document = {"$schema": SCHEMA_URI, "version": "2.1.0", "runs": [run]}
    return json.dumps(document, ensure_ascii=False, indent=2) + "\n"


def rule_descriptor(rule: Rule) -> dict[str, Any]:
    return {
        "id": rule.code,
        "name": rule.name,
        "shortDescription": {"text": rule.summary},
        "fullDescription": {"text": rule.doc.get("What it does", rule.summary)},
        "help": {"text": sections_text(rule), "markdown": sections_markdown(rule)},
        "defaultConfiguration": {"level": LEVELS[rule.severity]},
        "properties": {"tags": [rule.family]},
    }


def external_descriptor(finding: Finding) -> dict[str, Any]:
    """A code reported by another tool (ShellCheck) or missing from the catalog given."""
    descriptor: dict[str, Any] = {
        "id": finding.code,
        "name": finding.name,
        "shortDescription": {"text": finding.name},
        "defaultConfiguration": {"level": LEVELS[finding.severity]},
    }
    if is_shellcheck_code(finding.code):
        descriptor["shortDescription"] = {"text": f"ShellCheck {finding.code}: {finding.name}"}
        descriptor["helpUri"] = SHELLCHECK_WIKI + finding.code
        descriptor["properties"] = {"tags": ["SC"]}
    return descriptor


def result(finding: Finding, rule_index: int) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "ruleId": finding.code,
        "ruleIndex": rule_index,
        "level": LEVELS[finding.severity],
        "message": {"text": finding.message},
        "locations": [
            {
                "physicalLocation": {
                    "artifactLocation": {"uri": artifact_uri(finding.path)},
                    "region": region(finding.span),
                }
            }
        ],
    }
    if finding.fix is not None:
        entry["fixes"] = [fix(finding.fix, finding.path)]
    if finding.related:  # the other places one finding is about (SD117's placeholders)
        entry["relatedLocations"] = [
            {
                "id": index,
                "physicalLocation": {
                    "artifactLocation": {"uri": artifact_uri(path)},
                    "region": region(span),
                },
            }
            for index, (path, span) in enumerate(finding.related, start=1)
        ]
    return entry


def region(span: Span) -> dict[str, int]:
    """SARIF regions are 1-based with an exclusive end column, like our spans."""
    return {
        "startLine": span.start.line,
        "startColumn": span.start.column,
        "endLine": span.end.line,
        "endColumn": span.end.column,
    }


def fix(fix: Fix, path: str) -> dict[str, Any]:
    return {
        "description": {"text": fix.description},
        "artifactChanges": [
            {
                "artifactLocation": {"uri": artifact_uri(path)},
                "replacements": [
                    {"deletedRegion": region(e.span), "insertedContent": {"text": e.replacement}}
                    for e in fix.edits
                ],
            }
        ],
    }


def invocation(report: Report) -> dict[str, Any]:
    """Unreadable inputs become tool notifications: they are not findings about a file."""
    entry: dict[str, Any] = {"executionSuccessful": not report.input_errors}
    if report.input_errors:
        entry["toolExecutionNotifications"] = [
            {
                "level": "error",
                "message": {"text": e.message},
                "locations": [
                    {"physicalLocation": {"artifactLocation": {"uri": artifact_uri(e.path)}}}
                ],
            }
            for e in report.input_errors
        ]
    return entry


def artifact_uri(path: str) -> str:
    """The path as given (relative paths stay relative, so code scanning maps them onto the
    repository), written as a URI reference: `/` separators, special characters escaped."""
    if PurePath(path).is_absolute():
        return PurePosixPath(path).as_uri()
    return quote(PurePath(path).as_posix(), safe="/")
