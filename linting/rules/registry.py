"""The rule catalog: one place that knows every code, drives --select/--ignore, the docs
and --explain (as sqlfluff's and ruff's rule catalogs do).

A rule lives in `linting/rules/<family>/<CODE>.py`: one check function, named after the
rule, whose docstring is the rule's documentation, registered with `@rule(CODE, SEVERITY)`.
Its code, module and status (stable / preview / removed) come from the code table
(`linting/rules/codes.py`). Importing `linting.rules` (which importing this module does
first) registers them all.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from linting.findings import Hit, Severity
from linting.rules.codes import CODES, REMOVED, STABLE, Status

if TYPE_CHECKING:
    from linting.context import RunContext, UnitContext

    UnitCheck = Callable[[UnitContext], Iterable[Hit]]
    RunCheck = Callable[[RunContext], Iterable[tuple[UnitContext, Hit]]]

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
    # A check of one unit, or (per-run rules) of all units of a run at once.
    check: UnitCheck | None = None
    check_run: RunCheck | None = None
    # Codes whose findings are knock-on effects of this rule's: one of theirs that overlaps
    # one of ours (same file) is dropped, so the cause is reported once.
    supersedes: tuple[str, ...] = ()
    status: Status = STABLE

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
    supersedes: tuple[str, ...] = (),
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Decorator: register a check function under a stable code (codes are never reused)."""

    def wrap(func: Callable[..., Any]) -> Callable[..., Any]:
        if code in RULES:
            raise ValueError(f"rule code {code} registered twice")
        row = CODES.get(code)
        if row is not None and row.status is REMOVED:
            raise ValueError(f"rule code {code} was removed and is never reused")
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
            supersedes=supersedes,
            status=row.status if row is not None else STABLE,
        )
        return func

    return wrap


def rule(
    code: str,
    severity: Severity,
    *,
    fix: str = "none",
    per_run: bool = False,
    supersedes: tuple[str, ...] = (),
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Decorator for the check in `linting/rules/<family>/<CODE>.py`. One name per rule: the
    rule's name is the check's (`unknown_section` → `unknown-section`), its documentation
    the check's docstring, and the module must be named after the code."""

    def wrap(func: Callable[..., Any]) -> Callable[..., Any]:
        row = CODES.get(code)
        if row is None:
            raise ValueError(f"rule {code} is not in the code table (linting/rules/codes.py)")
        if func.__module__ != row.import_path:
            raise ValueError(f"rule {code} must live in {row.import_path}, not {func.__module__}")
        if not func.__doc__:
            raise ValueError(f"rule {code} has no documentation")
        name = func.__name__.replace("_", "-")
        return register(
            code, name, severity, fix=fix, doc=func.__doc__, per_run=per_run, supersedes=supersedes
        )(func)

    return wrap


def all_rules() -> list[Rule]:
    return [RULES[c] for c in sorted(RULES, key=_code_key)]


def _code_key(code: str) -> tuple[str, int]:
    m = re.match(r"([A-Z]+)(\d+)", code)
    return (m.group(1), int(m.group(2))) if m else (code, 0)


def get_rule(code: str) -> Rule | None:
    return RULES.get(code.upper())


def removed_codes(patterns: Iterable[str]) -> list[str]:
    """The patterns that name a removed code exactly: selecting or ignoring one is a
    mistake worth saying (the rule is gone), never a silent no-op."""
    return [p for p in patterns if (row := CODES.get(p.strip().upper())) and row.status is REMOVED]


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
