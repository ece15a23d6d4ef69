"""The rule catalog: one place that knows every code, drives --select/--ignore, the docs
and --explain (as sqlfluff's and ruff's rule catalogs do)."""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from linting.findings import Finding, Severity

if TYPE_CHECKING:
    from linting.context import RunContext, UnitContext

DOC_SECTIONS = ("What it does", "Why is this bad?", "Example", "Use instead")

FAMILIES = {
    "SD": "systemd unit syntax",
    "EX": "Exec lines: `$`, `%` and quoting traps",
    "VL": "vLLM arguments and --speculative-config",
    "OP": "GPU service operations",
    "SC": "ShellCheck findings in embedded shell scripts",
}


@dataclass(frozen=True)
class Rule:
    code: str
    name: str
    severity: Severity
    summary: str
    doc: dict[str, str]
    fix: str  # "safe", "none"
    check: Callable[[UnitContext], Iterable[Finding]] | None = None
    check_run: Callable[[RunContext], Iterable[Finding]] | None = None

    @property
    def family(self) -> str:
        return re.match(r"[A-Z]+", self.code).group(0)  # type: ignore[union-attr]


RULES: dict[str, Rule] = {}


def _parse_doc(doc: str) -> tuple[str, dict[str, str]]:
    doc = inspect.cleandoc(doc)
    summary, _, body = doc.partition("\n")
    sections: dict[str, str] = {}
    current = None
    lines: list[str] = []
    for line in body.splitlines():
        heading = line.rstrip(":").strip()
        if line.startswith("## ") or heading in DOC_SECTIONS:
            if current:
                sections[current] = "\n".join(lines).strip("\n")
            current = (
                line.removeprefix("## ").strip().rstrip(":") if line.startswith("## ") else heading
            )
            lines = []
        else:
            lines.append(line)
    if current:
        sections[current] = "\n".join(lines).strip("\n")
    return summary.strip(), sections


def register(
    code: str,
    name: str,
    severity: Severity,
    *,
    fix: str = "none",
    doc: str,
    per_run: bool = False,
) -> Callable:
    """Decorator: register a check function under a stable code (codes are never reused)."""

    def wrap(func: Callable) -> Callable:
        if code in RULES:
            raise ValueError(f"rule code {code} registered twice")
        summary, sections = _parse_doc(doc)
        missing = [s for s in DOC_SECTIONS if s not in sections]
        if missing:
            raise ValueError(f"rule {code} documentation lacks {missing}")
        RULES[code] = Rule(
            code,
            name,
            severity,
            summary,
            sections,
            fix,
            check=None if per_run else func,
            check_run=func if per_run else None,
        )
        return func

    return wrap


def declare(code: str, name: str, severity: Severity, *, doc: str, fix: str = "none") -> None:
    """A rule whose findings are produced elsewhere (e.g. by the parser or ShellCheck)."""
    register(code, name, severity, doc=doc, fix=fix)(lambda ctx: ())


def all_rules() -> list[Rule]:
    import linting.rules  # noqa: F401  (registers every rule module)

    return [RULES[c] for c in sorted(RULES, key=_code_key)]


def _code_key(code: str) -> tuple[str, int]:
    m = re.match(r"([A-Z]+)(\d+)", code)
    return (m.group(1), int(m.group(2))) if m else (code, 0)


def get_rule(code: str) -> Rule | None:
    all_rules()
    return RULES.get(code.upper())


def selected(code: str, select: Iterable[str], ignore: Iterable[str]) -> bool:
    """Prefix matching as in ruff: `--select VL` enables all VL rules, `--ignore VL301` one."""

    def matches(patterns: Iterable[str]) -> int:
        found = [len(p) for p in patterns if p.upper() == "ALL" or code.startswith(p.upper())]
        return max(found, default=-1)

    chosen = matches(select) if select else 0
    if chosen < 0:
        return False
    dropped = matches(ignore)
    return dropped < 0 or chosen > dropped
