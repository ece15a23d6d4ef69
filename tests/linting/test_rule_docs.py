"""Rule documentation: `--explain`, `--list-rules`, the generated docs/rules/ pages, and the
check that the committed pages match the catalog."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

from linting.findings import Severity
from linting.rules import docs, registry
from linting.rules.docs import (
    GENERATED_MARKER,
    docs_index_markdown,
    explain,
    list_rules_json,
    list_rules_text,
    rule_markdown,
)
from linting.rules.registry import DOC_SECTIONS, Rule

ROOT = Path(__file__).resolve().parents[2]
GENERATOR = ROOT / "tools" / "gen_rule_docs.py"

EX_DOC = """\
Braced variable that is not set becomes an empty string.

## What it does
Finds `${NAME}` in an Exec line when NAME is set by no `Environment=`.

## Why is this bad?
systemd replaces it with an empty string, so bash receives `[ "" -lt 1000 ]`.

## Example
```ini
ExecStart=/bin/bash -c 'echo ${UNSET}'
```

## Use instead
```ini
ExecStart=/bin/bash -c 'echo $${UNSET}'
```

## References
systemd.service(5), "Command lines".
"""

VL_DOC = """\
--gpu-memory-utilization outside (0, 1].

What it does:
Checks the value of `--gpu-memory-utilization`.

Why is this bad?
vLLM refuses to start | after loading the model.

Example:
    --gpu-memory-utilization=1.5

Use instead:
    --gpu-memory-utilization=0.9
"""


@pytest.fixture
def catalog(monkeypatch: pytest.MonkeyPatch) -> list[Rule]:
    """Two test rules in a registry of their own; the real catalog is restored afterwards."""
    registry.all_rules()  # import the real rule modules first, so they register in the real dict
    monkeypatch.setattr(registry, "RULES", {})
    registry.register("VL201", "gpu-memory-utilization-range", Severity.ERROR, doc=VL_DOC)(
        lambda ctx: ()
    )
    registry.register("EX101", "braced-unset-variable", Severity.WARNING, doc=EX_DOC, fix="safe")(
        lambda ctx: ()
    )
    return registry.all_rules()


@pytest.fixture(scope="module")
def generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("gen_rule_docs", GENERATOR)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_catalog_fixture_holds_only_the_test_rules(catalog: list[Rule]) -> None:
    assert [r.code for r in catalog] == ["EX101", "VL201"]
    assert [r.code for r in registry.all_rules()] == ["EX101", "VL201"]


def test_explain_shows_code_name_severity_fix_and_sections_in_order(catalog: list[Rule]) -> None:
    text = explain("EX101")
    assert text.startswith(
        "EX101 (braced-unset-variable)\n\n"
        "Braced variable that is not set becomes an empty string.\n\n"
        "Severity: warning\n"
        "Fix: safe (`lintunits --fix` applies it)\n"
        "Family: EX: Exec lines: `$`, `%` and quoting traps\n"
        "Status: stable\n\n"
        "What it does\nFinds `${NAME}`"
    )
    positions = [text.index(f"\n{s}\n") for s in (*DOC_SECTIONS, "References")]
    assert positions == sorted(positions)
    assert not text.endswith("\n")


def test_explain_accepts_lower_case_codes(catalog: list[Rule]) -> None:
    assert explain("vl201").startswith("VL201 (gpu-memory-utilization-range)")
    assert "Fix: none" in explain("vl201")


def test_explain_points_shellcheck_codes_to_their_wiki(catalog: list[Rule]) -> None:
    assert explain("sc2086").endswith("https://www.shellcheck.net/wiki/SC2086")


def test_explain_refuses_unknown_codes(catalog: list[Rule]) -> None:
    with pytest.raises(LookupError, match="XX1"):
        explain("XX1")


def test_list_rules_text_is_an_aligned_table(catalog: list[Rule]) -> None:
    lines = list_rules_text(catalog).splitlines()
    assert lines[0].split() == ["CODE", "SEVERITY", "NAME", "SUMMARY"]
    assert lines[1].startswith("EX101  warning   braced-unset-variable         Braced variable")
    assert lines[2].startswith("VL201  error     gpu-memory-utilization-range  --gpu-memory")
    assert len({line.index(line.split()[3]) for line in lines}) == 1


def test_list_rules_json_carries_the_whole_catalog(catalog: list[Rule]) -> None:
    rules = json.loads(list_rules_json(catalog))
    assert [r["code"] for r in rules] == ["EX101", "VL201"]
    assert rules[0] == {
        "code": "EX101",
        "name": "braced-unset-variable",
        "severity": "warning",
        "family": "EX",
        "fix": "safe",
        "status": "stable",
        "summary": "Braced variable that is not set becomes an empty string.",
        "doc": dict(docs.ordered_sections(catalog[0])),
    }
    assert list(rules[0]["doc"]) == [*DOC_SECTIONS, "References"]


def test_rule_page_has_facts_and_every_section(catalog: list[Rule]) -> None:
    page = rule_markdown(catalog[1])
    assert page.startswith(GENERATED_MARKER + "\n\n# VL201: gpu-memory-utilization-range\n")
    assert "- Severity: **error**\n- Fix: none\n" in page
    assert "- Family: [VL](README.md#vl): vLLM arguments and --speculative-config" in page
    headings = [line for line in page.splitlines() if line.startswith("## ")]
    assert headings == [f"## {s}" for s in DOC_SECTIONS]
    assert page.endswith("`lintunits --explain VL201`.\n")


def test_index_groups_rules_by_family_in_catalog_order(catalog: list[Rule]) -> None:
    index = docs_index_markdown(catalog)
    headings = [line for line in index.splitlines() if line.startswith("## ")]
    assert [h.split(":")[0] for h in headings] == [f"## {f}" for f in registry.FAMILIES]
    assert "| [EX101](EX101.md) | braced-unset-variable | warning | safe | stable |" in index
    # a `|` in a summary must not break the table
    assert "2 rules." in index
    assert index.count("No rules yet.") == 2  # SD and OP; SC has its ShellCheck note


def test_table_cells_escape_pipes(catalog: list[Rule]) -> None:
    piped = Rule("OP1", "a|b", Severity.INFO, "x | y", {}, "none")
    assert "| [OP1](OP1.md) | a\\|b | info | none | stable | x \\| y |" in docs_index_markdown(
        [piped]
    )


def test_generator_writes_pages_and_check_then_passes(
    catalog: list[Rule], generator: ModuleType, tmp_path: Path
) -> None:
    out = tmp_path / "rules"
    assert generator.main(["--check", "--out", str(out)], rules=catalog) == 1
    assert generator.main(["--out", str(out)], rules=catalog) == 0
    assert sorted(p.name for p in out.iterdir()) == ["EX101.md", "README.md", "VL201.md"]
    assert (out / "EX101.md").read_text(encoding="utf-8") == rule_markdown(catalog[0])
    assert generator.main(["--check", "--out", str(out)], rules=catalog) == 0


def test_generator_check_fails_on_an_edited_page(
    catalog: list[Rule], generator: ModuleType, tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    generator.main(["--out", str(tmp_path)], rules=catalog)
    page = tmp_path / "VL201.md"
    page.write_text(page.read_text(encoding="utf-8") + "edited\n", encoding="utf-8")
    assert generator.main(["--check", "--out", str(tmp_path)], rules=catalog) == 1
    assert "VL201.md: out of date" in capsys.readouterr().err


def test_generator_removes_pages_of_retired_rules_but_not_hand_written_files(
    catalog: list[Rule], generator: ModuleType, tmp_path: Path
) -> None:
    generator.main(["--out", str(tmp_path)], rules=catalog)
    (tmp_path / "notes.md").write_text("hand-written\n", encoding="utf-8")
    assert generator.main(["--check", "--out", str(tmp_path)], rules=catalog[:1]) == 1
    generator.main(["--out", str(tmp_path)], rules=catalog[:1])
    assert sorted(p.name for p in tmp_path.iterdir()) == ["EX101.md", "README.md", "notes.md"]
    assert generator.main(["--check", "--out", str(tmp_path)], rules=catalog[:1]) == 0


def test_every_registered_rule_renders() -> None:
    for rule in registry.all_rules():
        assert explain(rule.code).startswith(f"{rule.code} ({rule.name})")
        assert rule_markdown(rule).startswith(GENERATED_MARKER)


def test_docs_are_up_to_date() -> None:
    """docs/rules/ must match the catalog; run `tools/gen_rule_docs.py` after changing a rule."""
    done = subprocess.run(
        [sys.executable, str(GENERATOR), "--check"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
