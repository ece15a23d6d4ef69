"""Every rule's cases (tests/linting/rule_cases/<CODE>.toml) and its documentation: each
`fail` case gets exactly the findings written (line, column, code, message), each `pass`
case none of the rule's code, a case's `fixed` text is what `--fix` leaves, the doc's
*Example* fires the rule and its *Use instead* does not."""

from __future__ import annotations

from pathlib import Path

import pytest

from linting.rules.codes import REMOVED, RULE_CODES
from linting.rules.registry import all_rules, get_rule
from tests.linting.rule_cases import (
    CASES,
    Case,
    commands_and_environment,
    doc_runs,
    expected_findings,
    fixed_files,
    lint_files,
    load_cases,
    of_rule,
    options_for,
    shown,
)

LIVE = [row.code for row in RULE_CODES if row.status is not REMOVED]
ALL_CASES = [
    case for code in LIVE if (CASES / f"{code}.toml").is_file() for case in load_cases(code)[1]
]


def test_every_live_rule_has_a_case_file_with_a_failing_and_a_passing_case() -> None:
    missing = [code for code in LIVE if not (CASES / f"{code}.toml").is_file()]
    assert not missing, f"no case file for {missing}"
    for code in LIVE:
        kinds = {case.kind for case in load_cases(code)[1]}
        assert kinds == {"fail", "pass"}, f"{code}: cases of kinds {sorted(kinds)} only"
    stray = sorted(p.stem for p in CASES.glob("*.toml") if p.stem not in LIVE)
    assert not stray, f"case files of no live rule: {stray}"


@pytest.mark.parametrize("case", ALL_CASES, ids=lambda case: case.id)
def test_rule_case(case: Case, tmp_path: Path) -> None:
    findings, texts = lint_files(tmp_path, case.files, options_for(case.code, case.options))
    got = [shown(tmp_path, f) for f in of_rule(case.code, findings)]
    if case.kind == "pass":
        assert got == []
    else:
        assert got == expected_findings(case)
    # no `fixed`: no fix may be offered (a fix is only where the meaning is shown)
    assert fixed_files(tmp_path, of_rule(case.code, findings), texts) == (case.fixed or {})
    if case.argv is not None:
        assert case.fixed is not None and len(case.fixed) == 1, "argv is for one fixed unit"
        ((name, text),) = case.fixed.items()
        options = options_for(case.code, case.options)
        path = str(tmp_path / name)
        argv, environment = commands_and_environment(text, path, options)
        assert tuple(argv) == case.argv, "the fixed unit runs something else than meant"
        before = commands_and_environment(case.files[name], path, options)[1]
        assert environment == before, "a fix must not change the environment"


def test_every_fixable_rule_has_a_fixed_case_with_the_argv_it_means() -> None:
    for code in LIVE:
        rule = get_rule(code)
        if rule is None or rule.fix == "none":
            continue
        cases = load_cases(code)[1]
        assert any(c.fixed and c.argv for c in cases), f"{code}: no case pins its fix's argv"


@pytest.mark.parametrize("code", LIVE)
def test_rule_doc_example_fires_and_use_instead_is_clean(code: str, tmp_path: Path) -> None:
    rule = get_rule(code)
    assert rule is not None
    doc, _ = load_cases(code)
    options = options_for(code, doc.get("options", {}))
    examples, instead = doc_runs(rule, "Example"), doc_runs(rule, "Use instead")
    assert examples and instead, f"{code}: no ```ini block in Example or Use instead"
    for index, files in enumerate(examples):
        findings, _ = lint_files(tmp_path / f"example-{index}", files, options)
        assert of_rule(code, findings), f"{code}: the doc's Example does not fire it: {files}"
    for index, files in enumerate(instead):
        findings, _ = lint_files(tmp_path / f"instead-{index}", files, options)
        left = [f"{f.code} {f.message}" for f in of_rule(code, findings)]
        assert not left, f"{code}: the doc's Use instead still fires it: {left}"


def test_the_catalog_is_the_live_part_of_the_code_table() -> None:
    assert [rule.code for rule in all_rules()] == sorted(LIVE, key=lambda c: (c[:2], c[2:]))
