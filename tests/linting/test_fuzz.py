"""Property tests: no input crashes the linter, and every finding points inside its file."""

from __future__ import annotations

from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from linting.engine import lint_paths, lint_text
from linting.options import LintOptions
from linting.report import Report

OPTIONS = LintOptions(shellcheck=False)
SETTINGS = settings(
    max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


def assert_spans_inside(report: Report) -> None:
    for fr in report.files:
        for f in fr.findings:
            source = fr.sources.get(f.path)
            assert source is not None, f
            n_lines = max(len(source.text.split("\n")), 1)
            for pos in (f.span.start, f.span.end):
                assert 1 <= pos.line <= n_lines, (f, n_lines)
                assert pos.column >= 1, f
            assert f.span.start <= f.span.end, f


@SETTINGS
@given(st.text())
def test_arbitrary_text_never_crashes(text):
    report = lint_text(text, "fuzz.service", OPTIONS)
    assert isinstance(report, Report)
    assert_spans_inside(report)


@SETTINGS
@given(st.text(alphabet=st.sampled_from(list("[]=\\ \t\n\r#;'\"$%{}ServiceExc/ab-@:+!"))))
def test_unit_like_text_never_crashes(text):
    assert_spans_inside(lint_text(text, "fuzz.service", OPTIONS))


@SETTINGS
@given(data=st.binary(max_size=400))
def test_arbitrary_bytes_in_a_file_give_a_report_or_an_input_error(tmp_path: Path, data):
    path = tmp_path / "fuzz.service"
    path.write_bytes(data)
    report = lint_paths([str(path)], OPTIONS)
    assert isinstance(report, Report)
    assert len(report.files) + len(report.input_errors) == 1
    assert_spans_inside(report)


PIECES = st.sampled_from(
    [
        "a", "--x", "=", "/bin/bash", "-c", "/opt/vllm/bin/vllm", "serve",
        "'", '"', "'a b'", '"c d"', "\\", "\\n", "\\t", "\\\\", "\\\"", "\\'", "\\s", "\\x41",
        "\\x00", "\\101", "\\u00e9", "\\q", "$X", "$UNSET", "${X}", "${UNSET}", "${X:-d}",
        "${#a[@]}", "$$", "$$X", "%s", "%%", "%n", "%e", "%", ";", "\\;", " ; ", " ", "  ",
        "\t", "\\\n", "\\\n# c\n", "date +%s", "sleep 5", "for i in $$(seq 1 60); do", "done",
    ]
)  # fmt: skip
PREFIXES = st.sampled_from(["", "-", "@", ":", "+", "!", "!!", "-:", "@-", "|", "+!"])
KEYS = st.sampled_from(["ExecStart", "ExecStartPre", "ExecStop", "ExecStopPost"])


@st.composite
def exec_units(draw) -> str:
    lines = ["[Service]", "Environment=X=1 'Y=a b'"]
    for _ in range(draw(st.integers(1, 4))):
        key = draw(KEYS)
        prefix = draw(PREFIXES)
        words = draw(st.lists(PIECES, min_size=1, max_size=12))
        lines.append(f"{key}={prefix}{''.join(words)}")
    return "\n".join(lines) + draw(st.sampled_from(["", "\n", "\r\n"]))


@SETTINGS
@given(exec_units())
def test_generated_exec_lines_never_crash_and_spans_stay_in_the_file(text):
    report = lint_text(text, "vllm.service", OPTIONS)
    assert_spans_inside(report)
    for fr in report.files:
        for command in fr.commands:
            assert command.key.startswith("Exec")
