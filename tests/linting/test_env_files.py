"""EnvironmentFile=: systemd's own env-file rules (src/basic/env-file.c), where the linter
finds the file, and what an unreadable one means for the rules."""

from __future__ import annotations

from pathlib import Path

from linting.engine import lint_paths, lint_text
from linting.execline.env_files import parse_env_file, parse_env_file_text
from linting.local_files import FileFinder
from linting.options import LintOptions
from linting.spans import Pos

# Measured on systemd 252 (tests/differential/test_systemd_behaviour.py checks it again).
TRICKY = """\
export EXPORTED=1
PLAIN=plain value   \n# comment \\
CONT=after-comment-continuation
Q1="double \\"q\\" \\$x \\n"
Q2='single $x'
CAT="a"b'c' d
FOO BAR=spaced-key
 LEAD=leading
1BAD=x
ESC=a\\
b
"""


def test_env_file_values_follow_systemd_252() -> None:
    assert parse_env_file_text(TRICKY, 252) == {
        "PLAIN": "plain value",
        "Q1": 'double "q" $x \\n',
        "Q2": "single $x",
        "CAT": "ab'c' d",
        "LEAD": "leading",
        "ESC": "ab",
    }


def test_a_line_after_a_comment_ending_in_backslash_is_read_again_from_254() -> None:
    assert "CONT" not in parse_env_file_text(TRICKY, 252)
    assert parse_env_file_text(TRICKY, 257)["CONT"] == "after-comment-continuation"


def test_export_prefix_and_invalid_names_are_kept_as_entries_for_findings() -> None:
    entries = {e.key: e for e in parse_env_file(TRICKY, 252)}
    assert entries["export EXPORTED"].at == Pos(1, 1)
    assert entries["FOO BAR"].value == "spaced-key"
    assert entries["LEAD"].at == Pos(9, 2)


def test_value_at_end_of_file_without_newline_is_kept_and_chomped() -> None:
    assert parse_env_file_text("A=1  ", 252) == {"A": "1"}
    assert parse_env_file_text('B="x  "', 252) == {"B": "x  "}
    assert parse_env_file_text("C=", 252) == {"C": ""}


def test_file_finder_looks_in_the_tree_from_the_unit_upwards(tmp_path: Path) -> None:
    (tmp_path / "deploy" / "systemd").mkdir(parents=True)
    unit = tmp_path / "deploy" / "systemd" / "vllm.service"
    unit.write_text("[Service]\n")
    (tmp_path / "deploy" / "vllm.env").write_text("A=1\n")
    finder = FileFinder({}, (), (str(tmp_path),))
    assert finder.find("/etc/vllm/vllm.env", str(unit)) == str(tmp_path / "deploy" / "vllm.env")
    assert finder.find("/etc/vllm/other.env", str(unit)) is None
    # outside the linted tree nothing is searched
    assert FileFinder({}, (), (str(tmp_path / "elsewhere"),)).find("/x/vllm.env", str(unit)) is None


def test_mapping_and_script_roots_come_first(tmp_path: Path) -> None:
    (tmp_path / "root" / "etc").mkdir(parents=True)
    (tmp_path / "root" / "etc" / "a.env").write_text("A=1\n")
    (tmp_path / "mine.env").write_text("A=2\n")
    finder = FileFinder({"/etc/a.env": str(tmp_path / "mine.env")}, (str(tmp_path / "root"),))
    assert finder.find("/etc/a.env", "x.service") == str(tmp_path / "mine.env")
    finder = FileFinder({}, (str(tmp_path / "root"),))
    assert finder.find("/etc/a.env", "x.service") == str(tmp_path / "root" / "etc" / "a.env")


def test_a_file_only_on_the_host_makes_every_unset_variable_unknown() -> None:
    text = (
        "[Service]\nUser=vllm\nEnvironmentFile=-/etc/vllm/optional.env\n"
        "ExecStart=/opt/vllm/bin/vllm serve /models/m --port $PORT --served-model-name ${NAME}\n"
    )
    report = lint_text(text, "vllm.service", LintOptions(shellcheck=False, select=("EX", "VL")))
    assert [f.code for f in report.findings] == []


def test_the_env_file_in_the_tree_gives_its_values(tmp_path: Path) -> None:
    (tmp_path / "vllm.env").write_text("PORT=80x\n")
    (tmp_path / "vllm.service").write_text(
        "[Service]\nUser=vllm\nEnvironmentFile=/etc/vllm/vllm.env\n"
        "ExecStart=/opt/vllm/bin/vllm serve /models/m --port ${PORT}\n"
    )
    report = lint_paths([str(tmp_path)], LintOptions(shellcheck=False, select=("VL",)))
    [finding] = report.findings
    assert finding.code == "VL323" and "'80x'" in finding.message
    assert (finding.span.start.line, finding.span.start.column) == (4, 53)


def test_env_file_mapping_option_reads_the_local_copy(tmp_path: Path) -> None:
    (tmp_path / "local.env").write_text("PORT=80x\n")
    text = "[Service]\nEnvironmentFile=/srv/x.env\nExecStart=/opt/v/bin/vllm serve m --port $PORT\n"
    options = LintOptions(
        shellcheck=False,
        select=("VL323",),
        env_files=(("/srv/x.env", str(tmp_path / "local.env")),),
    )
    assert [f.code for f in lint_text(text, "v.service", options).findings] == ["VL323"]


def test_specifiers_are_resolved_before_the_absolute_path_check() -> None:
    text = "[Service]\nEnvironmentFile=-%h/app/.env\nExecStart=/bin/true\n"
    assert lint_text(text, "x.service", LintOptions(shellcheck=False)).findings == []
    relative = "[Service]\nEnvironmentFile=-app/.env\nExecStart=/bin/true\n"
    [finding] = lint_text(relative, "x.service", LintOptions(shellcheck=False)).findings
    assert finding.code == "SD113" and "not absolute" in finding.message


def test_invalid_line_in_an_env_file_is_reported_in_that_file(tmp_path: Path) -> None:
    (tmp_path / "app.env").write_text("A=1\nexport B=2\n")
    (tmp_path / "app.service").write_text(
        "[Service]\nEnvironmentFile=/etc/app.env\nExecStart=/bin/true\n"
    )
    report = lint_paths([str(tmp_path)], LintOptions(shellcheck=False))
    [finding] = report.findings
    assert finding.code == "SD113" and finding.path == str(tmp_path / "app.env")
    assert (finding.span.start.line, finding.span.start.column) == (2, 1)
    assert "export B=2" in finding.message
