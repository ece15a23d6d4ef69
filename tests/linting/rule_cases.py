"""Rule cases as sqlfluff keeps them (test/fixtures/rules/std_rule_cases/*.yml): one data
file per rule, `tests/linting/rule_cases/<CODE>.toml`, with `[[fail]]` and `[[pass]]` cases,
each the files of one lint run and, for a failing case, every finding of the rule's code
(line, column, code, message) and optionally the text `--fix` leaves.

A case is written to a directory of its own and linted as one run, the way `lintunits DIR`
would; `unit` is the file `path` (default `vllm.service`), `files` names several. A rule's
documentation examples become runs the same way (`doc_runs`)."""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from linting.context import UnitContext
from linting.engine import lint_paths
from linting.findings import Finding
from linting.fixes import fixed_texts
from linting.options import LintOptions
from linting.rules.registry import Rule
from linting.unitfile import parse_text

CASES = Path(__file__).with_name("rule_cases")
DEFAULT_PATH = "vllm.service"
# `# vllm-b.service` (or `# vllm.service.d/override.conf, …`) starts a new file in a doc
# example; any other comment is part of the unit.
_FILE_HEADER = re.compile(r"#\s*([\w@.-]+(?:\.d/[\w.-]+)?\.(?:service|conf|env|sh))(?:[,\s].*)?")
_FENCE = re.compile(r"```ini\n(.*?)```", re.S)


@dataclass(frozen=True)
class Case:
    code: str
    kind: str  # "fail" | "pass"
    name: str
    files: dict[str, str]
    options: dict[str, Any] = field(default_factory=dict)
    findings: tuple[dict[str, Any], ...] = ()
    fixed: dict[str, str] | None = None
    # The argv of every command of the fixed unit: what the finding says the author meant.
    argv: tuple[tuple[str, ...], ...] | None = None

    @property
    def id(self) -> str:
        return f"{self.code}-{self.kind}-{self.name}"


def load_cases(code: str) -> tuple[dict[str, Any], list[Case]]:
    """The `[doc]` table (options for the doc examples) and the cases of one rule."""
    data = tomllib.loads((CASES / f"{code}.toml").read_text(encoding="utf-8"))
    cases = []
    for kind in ("fail", "pass"):
        for raw in data.get(kind, []):
            files = raw.get("files") or {raw.get("path", DEFAULT_PATH): raw["unit"]}
            fixed = raw.get("fixed")
            if isinstance(fixed, str):
                fixed = {raw.get("path", DEFAULT_PATH): fixed}
            cases.append(
                Case(
                    code,
                    kind,
                    raw["name"],
                    files,
                    raw.get("options", {}),
                    tuple(raw.get("findings", ())),
                    fixed,
                    tuple(tuple(a) for a in raw["argv"]) if "argv" in raw else None,
                )
            )
    return data.get("doc", {}), cases


def options_for(code: str, given: dict[str, Any]) -> LintOptions:
    """ShellCheck runs only for the SC rule (the others do not need it, and it is slow)."""
    values = dict(given)
    values.setdefault("shellcheck", code == "SC")
    for key in ("same_host", "env_files"):
        if key in values:
            values[key] = tuple(tuple(item) for item in values[key])
    return LintOptions(**values)


def lint_files(
    root: Path, files: dict[str, str], options: LintOptions
) -> tuple[list[Finding], dict[str, str]]:
    """Write the files under root and lint root as one run; findings, and file texts by
    the path the report uses."""
    texts: dict[str, str] = {}
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        texts[str(path)] = text
    report = lint_paths([str(root)], options)
    assert not report.input_errors, report.input_errors
    return [f for fr in report.files for f in fr.findings], texts


def of_rule(code: str, findings: list[Finding]) -> list[Finding]:
    """The findings a rule reports: its code; ShellCheck's own SC#### for the SC rule."""
    if code == "SC":
        return [f for f in findings if re.fullmatch(r"SC\d+", f.code)]
    return [f for f in findings if f.code == code]


def shown(root: Path, finding: Finding) -> dict[str, Any]:
    """A finding as a case file writes it."""
    return {
        "path": str(Path(finding.path).relative_to(root)),
        "line": finding.span.start.line,
        "column": finding.span.start.column,
        "code": finding.code,
        "message": finding.message,
    }


def expected_findings(case: Case) -> list[dict[str, Any]]:
    only = next(iter(case.files)) if len(case.files) == 1 else None
    result = []
    for item in case.findings:
        entry = dict(item)
        entry.setdefault("path", only)
        entry.setdefault("code", case.code)
        result.append(entry)
    return result


def fixed_files(root: Path, findings: list[Finding], texts: dict[str, str]) -> dict[str, str]:
    return {str(Path(p).relative_to(root)): t for p, t in fixed_texts(findings, texts).items()}


def commands_and_environment(
    text: str, path: str, options: LintOptions
) -> tuple[list[tuple[str, ...]], dict[str, str]]:
    """The Exec model of one unit text: every command's argv, and what ExecStart= sees."""
    ctx = UnitContext(parse_text(text, path), options)
    return [tuple(c.argv) for c in ctx.commands], ctx.exec_environment("ExecStart")


def doc_runs(rule: Rule, section: str) -> list[dict[str, str]]:
    """The unit files of each ```ini block of a doc section. A block without a `[Section]`
    line is a fragment of `[Service]`."""
    runs = []
    for block in _FENCE.findall(rule.doc[section]):
        files: dict[str, list[str]] = {}
        current = DEFAULT_PATH
        for line in block.splitlines():
            header = _FILE_HEADER.fullmatch(line.strip())
            if header:
                current = header.group(1)
                files.setdefault(current, [])
                continue
            files.setdefault(current, []).append(line)
        runs.append({name: _as_unit(name, lines) for name, lines in files.items() if lines})
    return runs


def _as_unit(name: str, lines: list[str]) -> str:
    if name.endswith((".env", ".sh")) or any(re.match(r"\s*\[", line) for line in lines):
        return "\n".join(lines) + "\n"
    return "\n".join(["[Service]", *lines]) + "\n"
