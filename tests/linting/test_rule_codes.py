"""The code table (linting/rules/codes.py): one row per code ever given, the catalog and the
rule modules follow it, a removed code is never reused or silently selected, a rule in
preview runs only when asked for."""

from __future__ import annotations

import ast
import dataclasses
import io
from pathlib import Path

import pytest

from linting.cli import run
from linting.engine import lint_text
from linting.findings import Severity
from linting.options import LintOptions
from linting.rules import codes, registry
from linting.rules.codes import PREVIEW, REMOVED, RULE_CODES, RuleCode

RULES_DIR = Path(registry.__file__).parent
OP402_UNIT = "[Service]\nKillMode=process\nExecStart=/opt/vllm/bin/vllm serve /models/m\n"


def test_every_rule_module_has_a_row_and_every_live_row_a_module() -> None:
    modules = {p.stem for p in RULES_DIR.glob("*/*.py") if not p.stem.startswith("_")}
    live = {row.code for row in RULE_CODES if row.status is not REMOVED}
    assert modules == live


def test_the_family_packages_list_no_rules_of_their_own() -> None:
    for init in RULES_DIR.glob("*/__init__.py"):
        tree = ast.parse(init.read_text(encoding="utf-8"))
        assert not [n for n in ast.walk(tree) if isinstance(n, ast.Import | ast.ImportFrom)], init


def test_a_code_given_twice_in_the_table_is_refused() -> None:
    row = RuleCode("OP402", "OP", "op.OP402", codes.STABLE)
    with pytest.raises(ValueError, match="appears twice"):
        codes._check((row, row))


def test_a_code_outside_its_family_is_refused() -> None:
    with pytest.raises(ValueError, match="not in family"):
        codes._check((RuleCode("OP402", "VL", "vl.OP402", codes.STABLE),))


def test_a_removed_code_cannot_be_registered_again(monkeypatch: pytest.MonkeyPatch) -> None:
    registry.all_rules()
    monkeypatch.setitem(codes.CODES, "OP499", RuleCode("OP499", "OP", "", REMOVED))
    monkeypatch.setattr(registry, "RULES", {})
    doc = "A rule.\n\nWhat it does:\nx\n\nWhy is this bad?\nx\n\nExample:\nx\n\nUse instead:\nx\n"
    with pytest.raises(ValueError, match="OP499 was removed and is never reused"):
        registry.register("OP499", "gone", Severity.ERROR, doc=doc)(lambda ctx: ())


def test_a_rule_outside_the_table_is_refused() -> None:
    def unlisted(ctx: object) -> list[object]:
        """A rule."""
        return []

    with pytest.raises(ValueError, match="OP498 is not in the code table"):
        registry.rule("OP498", Severity.ERROR)(unlisted)


def test_selecting_a_removed_code_is_a_usage_error_that_says_so(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setitem(codes.CODES, "OP499", RuleCode("OP499", "OP", "", REMOVED))
    unit = tmp_path / "vllm.service"
    unit.write_text(OP402_UNIT, encoding="utf-8")
    out, err = io.StringIO(), io.StringIO()
    assert run(["--select", "OP499", str(unit)], out, err) == 2
    assert "OP499 was removed" in err.getvalue()


@pytest.fixture
def op402_in_preview(monkeypatch: pytest.MonkeyPatch) -> None:
    rule = registry.RULES["OP402"]
    monkeypatch.setitem(registry.RULES, "OP402", dataclasses.replace(rule, status=PREVIEW))


def _op402(**options: object) -> list[str]:
    report = lint_text(OP402_UNIT, "vllm.service", LintOptions(shellcheck=False, **options))  # type: ignore[arg-type]
    return [f.code for f in report.files[0].findings if f.code == "OP402"]


@pytest.mark.usefixtures("op402_in_preview")
def test_a_rule_in_preview_is_off_by_default_and_on_with_preview_or_its_exact_code() -> None:
    assert _op402() == []
    assert _op402(select=("OP",)) == []
    assert _op402(preview=True) == ["OP402"]
    assert _op402(select=("OP402",)) == ["OP402"]
