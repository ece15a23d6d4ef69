"""One access check for every app's pages (`specadmin.access.requires`)."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
APPS = ("units", "deploys", "audit", "specadmin")


def _python_files() -> list[Path]:
    return [p for app in APPS for p in (ROOT / app).rglob("*.py") if "migrations" not in p.parts]


def test_only_specadmin_access_defines_a_requires_decorator() -> None:
    defined = [
        str(path.relative_to(ROOT))
        for path in _python_files()
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.FunctionDef) and node.name == "requires"
    ]
    assert defined == ["specadmin/access.py"]


def test_no_view_checks_permissions_with_its_own_decorator_chain() -> None:
    users = [
        str(path.relative_to(ROOT))
        for path in _python_files()
        if "permission_required" in path.read_text()
    ]
    assert users == ["specadmin/access.py"]
