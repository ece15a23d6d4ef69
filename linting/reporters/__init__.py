"""Reporters: turn a `Report` into text for people, JSON for scripts, SARIF for code-scanning
services and GitHub workflow commands for pull-request annotations.

A reporter only formats; it never decides what is a finding, so every format shows the same
findings with the same spans.
"""

from __future__ import annotations

from linting.report import Report
from linting.reporters.github import render_github
from linting.reporters.json_report import render_json
from linting.reporters.sarif import render_sarif
from linting.reporters.text import render_text
from linting.rules.registry import Rule

FORMATS = ("text", "json", "sarif", "github")


def render(
    report: Report,
    fmt: str,
    *,
    show_argv: bool = False,
    rules: list[Rule] | None = None,
) -> str:
    """The report in format `fmt` (one of FORMATS), ending with a newline when not empty.

    `show_argv` only affects text (JSON always carries the commands); `rules` is the catalog
    SARIF describes (default: every registered rule).
    """
    if fmt == "text":
        return render_text(report, show_argv=show_argv)
    if fmt == "json":
        return render_json(report)
    if fmt == "sarif":
        return render_sarif(report, rules)
    if fmt == "github":
        return render_github(report)
    raise ValueError(f"unknown format {fmt!r} (use {', '.join(FORMATS)})")
