"""GitHub Actions workflow commands (`::error file=…::message`): a CI step running
`lintunits --format github` annotates the pull request's diff without any upload step."""

from __future__ import annotations

from linting.findings import Finding, Severity
from linting.report import Report

COMMANDS = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFO: "notice"}


def render_github(report: Report) -> str:
    lines = [
        workflow_command("error", e.message, file=e.path, title="lintunits: input error")
        for e in report.input_errors
    ]
    lines.extend(finding_command(f) for f in report.findings)
    return "".join(line + "\n" for line in lines)


def finding_command(finding: Finding) -> str:
    start, end = finding.span.start, finding.span.end
    return workflow_command(
        COMMANDS[finding.severity],
        finding.message,
        file=finding.path,
        line=start.line,
        col=start.column,
        endLine=end.line,
        endColumn=end.column,
        title=f"{finding.code} {finding.name}",
    )


def workflow_command(command: str, message: str, **properties: object) -> str:
    props = ",".join(f"{k}={escape_property(str(v))}" for k, v in properties.items())
    return f"::{command} {props}::{escape_data(message)}"


def escape_data(text: str) -> str:
    """As `escapeData` in @actions/core (command.ts): the runner splits commands on newlines."""
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    """As `escapeProperty` in @actions/core: `,` separates properties, `:` ends them."""
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")
