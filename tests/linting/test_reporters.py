"""The four report formats on one fixed, hand-built report (golden files), plus the details
each format's consumer depends on: caret alignment, SARIF schema validity, Actions escaping."""

from __future__ import annotations

import json
import os
from pathlib import Path

import jsonschema
import pytest

from linting.engine import lint_text
from linting.findings import Edit, Finding, Fix, Severity
from linting.options import LintOptions
from linting.report import CommandInfo, FileReport, InputError, Report
from linting.reporters import FORMATS, render
from linting.reporters.github import escape_data, escape_property
from linting.reporters.text import caret_line, quote
from linting.rules.registry import Rule
from linting.spans import Pos, Span
from linting.unitfile import SourceFile

GOLDEN = Path(__file__).parent / "golden"
SARIF_SCHEMA = Path(__file__).parent / "schemas" / "sarif-schema-2.1.0.json"

MAIN = "deploy/vllm.service"
DROPIN = "deploy/vllm.service.d/10-gpu.conf"
OTHER = "deploy/other unit.service"

MAIN_TEXT = """\
[Unit]
Description=vLLM 🚀 server

[Service]
Environment=MODEL=/models/qwen
ExecStartPre=-/bin/bash -c 'test -d ${MODEL_DIR} && ls $DIR'
\tExecStart=/usr/bin/vllm serve $MODEL --gpu-memory-utilization=1.5
"""
DROPIN_TEXT = """\
[Service]
KillMode=process
"""
OTHER_TEXT = """\
[Service]
ExecStart=/usr/bin/vllm serve \\
  --model x
"""


def span(line: int, column: int, end_line: int, end_column: int) -> Span:
    return Span(Pos(line, column), Pos(end_line, end_column))


def rule(code: str, name: str, severity: Severity, fix: str = "none") -> Rule:
    return Rule(
        code=code,
        name=name,
        severity=severity,
        summary=f"Summary of {name}.",
        doc={
            "What it does": f"Checks {name}.",
            "Why is this bad?": "Because systemd does something else.",
            "Example": "```ini\nExecStart=/bin/bash -c 'echo ${X}'\n```",
            "Use instead": "```ini\nExecStart=/bin/bash -c 'echo $${X}'\n```",
        },
        fix=fix,
    )


CATALOG = [
    rule("SD901", "non-ascii-description", Severity.INFO),
    rule("EX101", "braced-unset-variable", Severity.ERROR, fix="safe"),
    rule("VL201", "gpu-memory-utilization-range", Severity.ERROR),
    rule("OP101", "killmode-leaves-gpu-workers", Severity.ERROR),
    rule("OP201", "multi-line-exec", Severity.WARNING),
    rule("OP999", "never-reported", Severity.WARNING),
]


def sample_report() -> Report:
    """Two units (one with a drop-in), every severity, a fix, a ShellCheck code, a tab, a
    wide character, a multi-line span, a path with a space and an unreadable input."""
    main = FileReport(
        MAIN,
        findings=[
            Finding(
                "SD901",
                "non-ascii-description",
                Severity.INFO,
                span(2, 20, 2, 26),
                "Description contains non-ASCII text after `🚀`",
                MAIN,
            ),
            Finding(
                "EX101",
                "braced-unset-variable",
                Severity.ERROR,
                span(6, 37, 6, 49),
                "`${MODEL_DIR}` is not set: systemd replaces it with an empty string, "
                "so bash receives `test -d  && ls $DIR`",
                MAIN,
                fix=Fix(
                    "Escape as `$${MODEL_DIR}` so bash expands it",
                    (Edit(span(6, 37, 6, 38), "$$"),),
                ),
                data={"variable": "MODEL_DIR"},
            ),
            Finding(
                "SC2086",
                "quote-to-prevent-splitting",
                Severity.WARNING,
                span(6, 56, 6, 60),
                "Double quote to prevent globbing and word splitting.",
                MAIN,
            ),
            Finding(
                "VL201",
                "gpu-memory-utilization-range",
                Severity.ERROR,
                span(7, 41, 7, 69),
                "--gpu-memory-utilization must be in (0, 1]: 1.5 is 150%, vLLM exits at start",
                MAIN,
            ),
            Finding(
                "OP101",
                "killmode-leaves-gpu-workers",
                Severity.ERROR,
                span(2, 1, 2, 17),
                "KillMode=process lets EngineCore survive a stop, holding GPU memory",
                DROPIN,
            ),
        ],
        commands=[
            CommandInfo(
                "Service",
                "ExecStartPre",
                6,
                "-",
                "/bin/bash",
                ("/bin/bash", "-c", "test -d  && ls $DIR"),
                MAIN,
            ),
            CommandInfo(
                "Service",
                "ExecStart",
                7,
                "",
                "/usr/bin/vllm",
                ("/usr/bin/vllm", "serve", "/models/qwen", "", "it's", "raw\udcff"),
                MAIN,
            ),
        ],
        sources={MAIN: SourceFile(MAIN, MAIN_TEXT), DROPIN: SourceFile(DROPIN, DROPIN_TEXT)},
    )
    other = FileReport(
        OTHER,
        findings=[
            Finding(
                "OP201",
                "multi-line-exec",
                Severity.WARNING,
                span(2, 11, 3, 12),
                "ExecStart= spans two lines",
                OTHER,
            )
        ],
        commands=[],
        sources={OTHER: SourceFile(OTHER, OTHER_TEXT)},
    )
    return Report(files=[main, other], input_errors=[InputError("missing.service", "no such file")])


GOLDEN_CASES = {
    "report.txt": {"fmt": "text"},
    "report-show-argv.txt": {"fmt": "text", "show_argv": True},
    "report.json": {"fmt": "json"},
    "report.sarif": {"fmt": "sarif", "rules": CATALOG},
    "report.github.txt": {"fmt": "github"},
}


@pytest.mark.parametrize("name", sorted(GOLDEN_CASES))
def test_output_matches_golden_file(name: str) -> None:
    """Run with UPDATE_GOLDEN=1 to rewrite the files after an intended change; review the diff."""
    case = GOLDEN_CASES[name]
    output = render(sample_report(), **case)  # type: ignore[arg-type]
    path = GOLDEN / name
    if os.environ.get("UPDATE_GOLDEN") == "1":
        path.write_text(output, encoding="utf-8")
    assert output == path.read_text(encoding="utf-8")


def test_every_format_is_rendered() -> None:
    assert FORMATS == ("text", "json", "sarif", "github")
    for fmt in FORMATS:
        assert render(sample_report(), fmt, rules=CATALOG).endswith("\n")


def test_unknown_format_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown format"):
        render(Report(), "xml")


# --- text -------------------------------------------------------------------------------


def test_caret_line_copies_tabs_so_carets_line_up_under_tabbed_source() -> None:
    source = "\tExecStart=/usr/bin/vllm"
    assert caret_line(source, 12, 25) == "\t" + " " * 10 + "^" * 13


def test_caret_line_counts_wide_characters_twice() -> None:
    source = "Description=vLLM 🚀 server"
    assert caret_line(source, 20, 26) == " " * 20 + "^" * 6
    assert caret_line(source, 18, 19) == " " * 17 + "^^"


def test_caret_line_marks_at_least_one_character() -> None:
    assert caret_line("Key=", 5, 5) == "    ^"
    assert caret_line("Key=", 7, 8) == "      ^"


def test_multi_line_span_is_underlined_to_the_end_of_its_first_line() -> None:
    lines = render(sample_report(), "text").splitlines()
    header = lines.index("deploy/other unit.service:2:11: OP201 ExecStart= spans two lines")
    assert lines[header + 1] == " 2 | ExecStart=/usr/bin/vllm serve \\"
    assert lines[header + 2] == "   |           " + "^" * 21


def test_fix_available_is_mentioned() -> None:
    text = render(sample_report(), "text")
    assert "EX101 `${MODEL_DIR}` is not set" in text
    assert "bash receives `test -d  && ls $DIR` (fix available)\n" in text


def test_show_argv_quotes_spaces_empty_strings_and_raw_bytes() -> None:
    text = render(sample_report(), "text", show_argv=True)
    assert "deploy/vllm.service:7: ExecStart argv:\n  [0] '/usr/bin/vllm'\n" in text
    assert "  [3] ''\n  [4] \"it's\"\n  [5] 'raw\\xff'\n" in text
    assert "deploy/vllm.service:6: ExecStartPre (prefixes -) argv:" in text
    assert "argv:" not in render(sample_report(), "text")


def test_quote_is_python_repr_like() -> None:
    for arg in ("a b", "", "it's", 'say "hi"', "both ' \"", "tab\there", "back\\slash", "é"):
        assert quote(arg) == repr(arg)
    assert quote("\udc80") == "'\\x80'"


def test_summary_counts_severities_and_files() -> None:
    text = render(sample_report(), "text")
    assert text.endswith(
        "Found 3 errors, 2 warnings, 1 info in 2 files. 1 input could not be read.\n"
    )
    one = Report(files=[FileReport("a.service")])
    assert render(one, "text") == "Found 0 errors, 0 warnings, 0 info in 1 file.\n"


def test_input_errors_are_printed_first() -> None:
    assert render(sample_report(), "text").startswith("missing.service: error: no such file\n")


# --- json -------------------------------------------------------------------------------


def test_json_has_the_documented_shape() -> None:
    document = json.loads(render(sample_report(), "json"))
    assert list(document) == ["version", "files", "summary", "notes", "input_errors"]
    assert document["version"] == 1
    assert document["summary"] == {"error": 3, "warning": 2, "info": 1}
    assert document["input_errors"] == [{"path": "missing.service", "message": "no such file"}]
    first = document["files"][0]
    assert list(first) == ["path", "findings", "commands", "vllm"]
    plain = first["findings"][0]
    assert list(plain) == [
        "code", "name", "severity", "line", "column", "end_line", "end_column", "message",
    ]  # fmt: skip
    fixed = first["findings"][1]
    assert fixed["fix"] == {
        "description": "Escape as `$${MODEL_DIR}` so bash expands it",
        "edits": [{"line": 6, "column": 37, "end_line": 6, "end_column": 38, "replacement": "$$"}],
    }
    assert first["commands"][1]["argv"][-1] == "raw\\xff"


def test_json_names_the_drop_in_a_finding_lies_in() -> None:
    findings = json.loads(render(sample_report(), "json"))["files"][0]["findings"]
    assert [f.get("path") for f in findings] == [None, None, None, None, DROPIN]


def test_json_keeps_non_ascii_text_readable() -> None:
    assert "🚀" in render(sample_report(), "json")


# --- sarif ------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def sarif_validator() -> jsonschema.Draft4Validator:
    schema = json.loads(SARIF_SCHEMA.read_text(encoding="utf-8"))
    jsonschema.Draft4Validator.check_schema(schema)
    return jsonschema.Draft4Validator(schema, format_checker=jsonschema.FormatChecker())


@pytest.mark.parametrize(
    "report",
    [sample_report(), Report(), Report(files=[FileReport("a.service")])],
    ids=["sample", "empty", "clean-file"],
)
def test_sarif_validates_against_the_official_schema(
    report: Report, sarif_validator: jsonschema.Draft4Validator
) -> None:
    document = json.loads(render(report, "sarif", rules=CATALOG))
    errors = [
        f"{list(e.absolute_path)}: {e.message}" for e in sarif_validator.iter_errors(document)
    ]
    assert errors == []


def test_sarif_without_a_catalog_still_validates(
    sarif_validator: jsonschema.Draft4Validator,
) -> None:
    document = json.loads(render(sample_report(), "sarif", rules=[]))
    assert list(sarif_validator.iter_errors(document)) == []
    ids = [r["id"] for r in document["runs"][0]["tool"]["driver"]["rules"]]
    assert ids == ["SD901", "EX101", "SC2086", "VL201", "OP101", "OP201"]


def test_sarif_adds_shellcheck_codes_with_their_wiki_page() -> None:
    run = json.loads(render(sample_report(), "sarif", rules=CATALOG))["runs"][0]
    rules = run["tool"]["driver"]["rules"]
    assert [r["id"] for r in rules] == [r.code for r in CATALOG] + ["SC2086"]
    assert rules[-1]["helpUri"] == "https://www.shellcheck.net/wiki/SC2086"
    assert rules[-1]["defaultConfiguration"] == {"level": "warning"}


def test_sarif_results_point_at_their_rule_and_region() -> None:
    run = json.loads(render(sample_report(), "sarif", rules=CATALOG))["runs"][0]
    assert run["columnKind"] == "unicodeCodePoints"
    rules = run["tool"]["driver"]["rules"]
    for res in run["results"]:
        assert rules[res["ruleIndex"]]["id"] == res["ruleId"]
    levels = {r["ruleId"]: r["level"] for r in run["results"]}
    assert levels == {
        "SD901": "note",
        "EX101": "error",
        "SC2086": "warning",
        "VL201": "error",
        "OP101": "error",
        "OP201": "warning",
    }
    other = run["results"][-1]["locations"][0]["physicalLocation"]
    assert other["artifactLocation"]["uri"] == "deploy/other%20unit.service"
    assert other["region"] == {"startLine": 2, "startColumn": 11, "endLine": 3, "endColumn": 12}


def test_sarif_carries_fixes_as_replacements() -> None:
    run = json.loads(render(sample_report(), "sarif", rules=CATALOG))["runs"][0]
    (fixed,) = [r for r in run["results"] if "fixes" in r]
    change = fixed["fixes"][0]["artifactChanges"][0]
    assert change["artifactLocation"]["uri"] == MAIN
    assert change["replacements"] == [
        {
            "deletedRegion": {"startLine": 6, "startColumn": 37, "endLine": 6, "endColumn": 38},
            "insertedContent": {"text": "$$"},
        }
    ]


def test_sarif_rule_help_comes_from_the_doc_sections() -> None:
    run = json.loads(render(sample_report(), "sarif", rules=CATALOG))["runs"][0]
    ex101 = run["tool"]["driver"]["rules"][1]
    assert ex101["shortDescription"] == {"text": "Summary of braced-unset-variable."}
    assert ex101["fullDescription"] == {"text": "Checks braced-unset-variable."}
    markdown = ex101["help"]["markdown"]
    headings = [line for line in markdown.splitlines() if line.startswith("## ")]
    assert headings == ["## What it does", "## Why is this bad?", "## Example", "## Use instead"]


def test_sarif_reports_unreadable_inputs_as_tool_notifications() -> None:
    run = json.loads(render(sample_report(), "sarif", rules=CATALOG))["runs"][0]
    invocation = run["invocations"][0]
    assert invocation["executionSuccessful"] is False
    assert invocation["toolExecutionNotifications"][0]["message"] == {"text": "no such file"}


def test_sarif_absolute_paths_become_file_uris() -> None:
    finding = Finding("EX101", "n", Severity.ERROR, span(1, 1, 1, 2), "m", "/etc/x y.service")
    report = Report(files=[FileReport("/etc/x y.service", [finding])])
    run = json.loads(render(report, "sarif", rules=CATALOG))["runs"][0]
    location = run["results"][0]["locations"][0]["physicalLocation"]
    assert location["artifactLocation"]["uri"] == "file:///etc/x%20y.service"


# --- github -----------------------------------------------------------------------------


def test_github_escapes_data_as_the_actions_toolkit_does() -> None:
    assert escape_data("100% done\r\nnext: a,b") == "100%25 done%0D%0Anext: a,b"


def test_github_escapes_properties_as_the_actions_toolkit_does() -> None:
    assert escape_property("a,b:c%d\ne") == "a%2Cb%3Ac%25d%0Ae"


def test_github_command_per_finding_with_severity_mapping() -> None:
    lines = render(sample_report(), "github").splitlines()
    assert lines[0] == "::error file=missing.service,title=lintunits%3A input error::no such file"
    assert lines[1] == (
        "::notice file=deploy/vllm.service,line=2,col=20,endLine=2,endColumn=26,"
        "title=SD901 non-ascii-description::Description contains non-ASCII text after `🚀`"
    )
    assert lines[3].startswith("::warning file=deploy/vllm.service,line=6,col=56,")
    assert "::--gpu-memory-utilization must be in (0, 1]: 1.5 is 150%25, vLLM" in lines[4]


def test_github_message_with_newlines_stays_on_one_line() -> None:
    finding = Finding("X1", "a,b", Severity.ERROR, span(1, 1, 1, 2), "one\ntwo", "p:q,r")
    output = render(Report(files=[FileReport("p:q,r", [finding])]), "github")
    assert output == (
        "::error file=p%3Aq%2Cr,line=1,col=1,endLine=1,endColumn=2,title=X1 a%2Cb::one%0Atwo\n"
    )


def test_a_finding_about_several_places_lists_them_in_json_and_sarif() -> None:
    text = (
        "[Service]\nUser={{ user }}\nWorkingDirectory=__SRC__\n"
        "ExecStart=/opt/vllm/bin/vllm serve {{ model }}\n"
    )
    report = lint_text(text, "vllm.service", LintOptions(shellcheck=False, select=("SD117",)))
    [entry] = json.loads(render(report, "json"))["files"][0]["findings"]
    assert [r["line"] for r in entry["related"]] == [3, 4]
    sarif = json.loads(render(report, "sarif"))
    jsonschema.validate(sarif, json.loads(SARIF_SCHEMA.read_text(encoding="utf-8")))
    [result] = sarif["runs"][0]["results"]
    regions = [r["physicalLocation"]["region"]["startLine"] for r in result["relatedLocations"]]
    assert regions == [3, 4]
