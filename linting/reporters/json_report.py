"""Machine-readable output (`--format json`), version 1: a stable shape for scripts and the
web UI. Key order is fixed so diffs of saved reports stay readable."""

from __future__ import annotations

import json
from typing import Any

from linting.findings import Finding, Fix
from linting.report import FileReport, Report
from linting.spans import Span

VERSION = 1


def render_json(report: Report) -> str:
    document = {
        "version": VERSION,
        "files": [file_json(fr) for fr in report.files],
        "summary": report.counts(),
        "notes": report.notes(),
        "input_errors": [{"path": e.path, "message": e.message} for e in report.input_errors],
    }
    return json.dumps(document, ensure_ascii=False, indent=2, default=_fallback) + "\n"


def file_json(file_report: FileReport) -> dict[str, Any]:
    return {
        "path": file_report.path,
        "findings": [finding_json(f, file_report.path) for f in file_report.findings],
        "commands": [c.to_json() for c in file_report.commands],
        "vllm": [v.to_json() for v in file_report.vllm],
    }


def finding_json(finding: Finding, file_path: str) -> dict[str, Any]:
    """One finding; `path` appears only when it lies in another file than the unit (a
    drop-in), `data` only when the rule attached machine-readable facts."""
    result: dict[str, Any] = {
        "code": finding.code,
        "name": finding.name,
        "severity": str(finding.severity),
        **span_json(finding.span),
        "message": finding.message,
    }
    if finding.path != file_path:
        result["path"] = finding.path
    if finding.fix is not None:
        result["fix"] = fix_json(finding.fix)
    if finding.data:
        result["data"] = finding.data
    if finding.related:
        result["related"] = [{"path": path, **span_json(span)} for path, span in finding.related]
    return result


def span_json(span: Span) -> dict[str, int]:
    return {
        "line": span.start.line,
        "column": span.start.column,
        "end_line": span.end.line,
        "end_column": span.end.column,
    }


def fix_json(fix: Fix) -> dict[str, Any]:
    return {
        "description": fix.description,
        "edits": [{**span_json(e.span), "replacement": e.replacement} for e in fix.edits],
    }


def _fallback(value: object) -> object:
    """Rule `data` may hold sets or other plain values json cannot write directly."""
    if isinstance(value, set | frozenset):
        return sorted(value, key=str)
    return str(value)
