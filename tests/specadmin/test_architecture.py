"""The import rules of docs/architecture.md ("Apps and imports"), checked on the sources.

A rule broken here is a design change: change the table in the document first."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
FIRST_PARTY = (
    "linting",
    "servebench",
    "hostops",
    "audit",
    "units",
    "deploys",
    "perf",
    "fleet",
    "api",
    "notify",
    "watchdog",
    "specadmin",
    "tests",
)
# What each app may import of the first-party packages (its own modules always).
LEAVES = {"specadmin.access", "specadmin.env"}  # Django-only helpers every app may use
ALLOWED: dict[str, set[str]] = {
    "linting": set(),
    "servebench": set(),
    "hostops": {"linting"},
    "audit": LEAVES,
    "units": {"linting", "hostops", "audit"} | LEAVES,
    "deploys": {"linting", "hostops", "units", "audit"} | LEAVES,
    "perf": {"servebench", "hostops", "units", "deploys", "audit"} | LEAVES,
    "fleet": {"units", "deploys", "perf", "audit"} | LEAVES,
    "api": {"linting", "hostops", "units", "deploys", "perf", "audit"} | LEAVES,
    "notify": {"hostops", "units", "deploys", "audit"} | LEAVES,
    "watchdog": {"linting", "hostops", "units", "deploys", "perf", "notify", "audit"} | LEAVES,
    "specadmin": {
        "linting",
        "servebench",
        "hostops",
        "units",
        "audit",
        "deploys",
        "perf",
        "fleet",
        "api",
        "notify",
        "watchdog",
    },
}
# linting/management: the `--profiles` option of lintunits reads the database's profiles.
OPTIONAL = {("linting/management/commands/lintunits.py", "units.linting")}


def _imports(path: Path) -> list[str]:
    names: list[str] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.extend(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.append(node.module)
    return names


def _violations(app: str, root: Path = ROOT) -> list[str]:
    found = []
    for path in sorted((root / app).rglob("*.py")):
        relative = str(path.relative_to(root))
        for name in _imports(path):
            top = name.split(".")[0]
            if (relative, name) in OPTIONAL:
                continue
            if top == "django" and app == "servebench":
                found.append(f"{relative}: {name} (the benchmark runs without Django)")
            if top == "django" and app == "hostops":
                found.append(f"{relative}: {name} (host operations run without Django)")
            if top == "django" and app == "linting" and "management" not in path.parts:
                found.append(f"{relative}: {name} (the linter runs without Django)")
            if top not in FIRST_PARTY or top == app:
                continue
            allowed = ALLOWED[app]
            if top in allowed or any(
                name == leaf or name.startswith(leaf + ".") for leaf in allowed
            ):
                continue
            found.append(f"{relative}: {name}")
    return found


@pytest.mark.parametrize("app", sorted(ALLOWED))
def test_each_app_imports_only_what_the_architecture_allows(app: str) -> None:
    assert _violations(app) == []


@pytest.mark.parametrize("leaf", sorted(LEAVES))
def test_the_shared_specadmin_helpers_import_no_app(leaf: str) -> None:
    path = ROOT / (leaf.replace(".", "/") + ".py")
    first_party = [n for n in _imports(path) if n.split(".")[0] in FIRST_PARTY and n != leaf]
    assert first_party == [n for n in first_party if n in LEAVES]


def test_the_checker_sees_a_forbidden_import(tmp_path: Path) -> None:
    (tmp_path / "audit").mkdir()
    (tmp_path / "audit" / "views.py").write_text("from deploys.models import Host\n")
    (tmp_path / "linting").mkdir()
    (tmp_path / "linting" / "engine.py").write_text("import django\nfrom tests import x\n")
    assert _violations("audit", tmp_path) == ["audit/views.py: deploys.models"]
    (tmp_path / "hostops").mkdir()
    (tmp_path / "hostops" / "gpus.py").write_text("import django\nfrom deploys import jobs\n")
    assert _violations("hostops", tmp_path) == [
        "hostops/gpus.py: django (host operations run without Django)",
        "hostops/gpus.py: deploys",
    ]
    assert _violations("linting", tmp_path) == [
        "linting/engine.py: django (the linter runs without Django)",
        "linting/engine.py: tests",
    ]
