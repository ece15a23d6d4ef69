"""Tests for linting.unitfile: the reader that mirrors systemd's `config_parse()`.

Behaviour checked against systemd 252 (`systemd-analyze verify`, Debian 12): continuation
lines, comments inside continuations, an empty line ending a continuation, CR/LF/CRLF line
ends, invalid section headers (fatal in the unit file, only the rest of a drop-in is lost
in a drop-in), `=value` without a key, drop-in order.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from linting.engine import lint_paths, lint_text
from linting.options import LintOptions
from linting.spans import Pos, Span
from linting.unitfile import dropin_paths, parse_file, parse_text, string_is_safe


def values(text: str, key: str, section: str = "Service") -> list[str]:
    unit = parse_text(text, "x.service")
    return [a.value.text for a in unit.get_all(section, key)]


# --- sections and comments --------------------------------------------------------------


def test_assignments_belong_to_the_section_above_them():
    unit = parse_text("[Unit]\nDescription=d\n[Service]\nType=exec\n", "x.service")
    assert [(a.section, a.name, a.value.text) for a in unit.assignments] == [
        ("Unit", "Description", "d"),
        ("Service", "Type", "exec"),
    ]
    assert [h.name for h in unit.headers] == ["Unit", "Service"]


def test_key_and_value_are_stripped_and_split_at_first_equals():
    unit = parse_text("[Service]\n  Environment = A=1 B=2  \n", "x.service")
    (a,) = unit.assignments
    assert a.name == "Environment"
    assert a.value.text == "A=1 B=2"


def test_hash_and_semicolon_lines_are_comments():
    unit = parse_text("[Service]\n# Type=notify\n  ; Type=forking\nType=exec\n", "x.service")
    assert [a.value.text for a in unit.assignments] == ["exec"]


def test_comment_character_after_value_is_part_of_the_value():
    assert values("[Service]\nType=exec # not a comment\n", "Type") == ["exec # not a comment"]


def test_assignment_before_any_section_is_a_problem_and_ignored():
    unit = parse_text("Type=exec\n[Service]\n", "x.service")
    assert unit.assignments == []
    assert [p.kind for p in unit.problems] == ["outside-section"]
    assert unit.problems[0].span.start == Pos(1, 1)


def test_line_without_equals_is_a_problem():
    unit = parse_text("[Service]\nExecStart /bin/true\n", "x.service")
    assert [p.kind for p in unit.problems] == ["missing-equals"]
    assert unit.problems[0].span.start == Pos(2, 1)


def test_equals_without_key_is_missing_key_not_an_empty_key():
    # systemd 252: "Missing key name before '=', ignoring line."
    unit = parse_text("[Service]\n=1\n", "x.service")
    assert unit.assignments == []
    assert [p.kind for p in unit.problems] == ["missing-key"]
    assert unit.problems[0].span.start == Pos(2, 1)


def test_unterminated_section_header_stops_reading_the_unit_file():
    # systemd 252: "Invalid section header '[Foo'" → "Bad message", unit fails to load,
    # and nothing after the header is read (no "outside of section" noise).
    unit = parse_text("[Service]\nType=exec\n[Foo\nRestart=always\n", "x.service")
    assert [a.name for a in unit.assignments] == ["Type"]
    assert [p.kind for p in unit.problems] == ["section-header"]
    assert "refuses to load" in unit.problems[0].message
    assert unit.problems[0].span.start == Pos(3, 1)


def test_section_header_with_quote_is_bad_characters():
    unit = parse_text('[Se"x]\nType=exec\n', "x.service")
    assert [p.kind for p in unit.problems] == ["section-header"]
    assert "Bad characters" in unit.problems[0].message
    assert unit.assignments == []


def test_bad_section_header_in_dropin_only_ends_that_dropin(tmp_path: Path):
    unit_path = tmp_path / "a.service"
    unit_path.write_text("[Service]\nExecStart=/bin/true\n")
    dropins = tmp_path / "a.service.d"
    dropins.mkdir()
    (dropins / "10-x.conf").write_text("[Service]\nType=exec\n[Bad\nRestart=always\n")
    (dropins / "20-y.conf").write_text("[Service]\nKillMode=mixed\n")
    unit = parse_file(unit_path)
    assert [a.name for a in unit.assignments] == ["ExecStart", "Type", "KillMode"]
    (problem,) = unit.problems
    assert problem.path.endswith("10-x.conf")
    assert "no further in this drop-in" in problem.message


# --- continuation lines -----------------------------------------------------------------


def test_backslash_continues_line_and_becomes_a_space():
    assert values("[Service]\nExecStart=/bin/echo a\\\n  b\n", "ExecStart") == ["/bin/echo a   b"]


def test_comment_lines_inside_a_continuation_are_skipped():
    text = "[Service]\nExecStart=/bin/echo a \\\n# comment\n  ; other\n b\nType=exec\n"
    assert values(text, "ExecStart") == ["/bin/echo a   b"]
    assert values(text, "Type") == ["exec"]


def test_empty_line_ends_a_continuation():
    # systemd 252: `ExecStart=/bin/true \` + empty line + `FooBar=1` reports FooBar as a key.
    text = "[Service]\nExecStart=/bin/true \\\n\nType=exec\n"
    assert values(text, "ExecStart") == ["/bin/true"]
    assert values(text, "Type") == ["exec"]


def test_escaped_backslash_at_end_does_not_continue():
    text = "[Service]\nExecStart=/bin/echo a\\\\\nType=exec\n"
    assert values(text, "ExecStart") == ["/bin/echo a\\\\"]
    assert values(text, "Type") == ["exec"]


def test_three_backslashes_at_end_continue():
    text = "[Service]\nExecStart=/bin/echo a\\\\\\\nb\n"
    assert values(text, "ExecStart") == ["/bin/echo a\\\\ b"]


def test_continuation_at_end_of_file_is_still_parsed():
    assert values("[Service]\nExecStart=/bin/echo a \\", "ExecStart") == ["/bin/echo a"]
    assert values("[Service]\nExecStart=/bin/echo a \\\n", "ExecStart") == ["/bin/echo a"]


def test_assignment_line_is_the_first_physical_line():
    unit = parse_text("[Service]\nExecStart=/bin/echo \\\n  a \\\n  b\n", "x.service")
    assert unit.assignments[0].line == 2


# --- exact spans ------------------------------------------------------------------------


def test_key_and_value_spans_are_exact():
    unit = parse_text("[Service]\n  Type = exec\n", "x.service")
    (a,) = unit.assignments
    assert a.key.span().start == Pos(2, 3)
    assert a.key.span().end == Pos(2, 7)
    assert a.value.span().start == Pos(2, 10)
    assert a.value.span().end == Pos(2, 14)


def test_an_empty_value_points_at_its_equals_sign():
    cases = (("Type=", Pos(2, 5)), ("  Type =  ", Pos(2, 8)), ("Type \\\n =", Pos(3, 2)))
    for line, equals in cases:
        (a,) = parse_text(f"[Service]\n{line}\n", "x.service").assignments
        assert (a.key.text, a.value.text) == ("Type", "")
        assert a.value.span() == Span.at(equals), line
        assert a.key.span() == Span(Pos(2, line.index("T") + 1), Pos(2, line.index("T") + 5))


def test_value_characters_from_second_physical_line_keep_their_position():
    text = "[Service]\nExecStart=/bin/echo \\\n    --flag\n"
    (a,) = parse_text(text, "x.service").assignments
    offset = a.value.text.index("--flag")
    assert a.value.origins[offset] == Pos(3, 5)
    assert a.value.span(offset, offset + len("--flag")).end == Pos(3, 11)
    # the backslash-turned-space still points at the backslash on line 2
    assert a.value.origins[a.value.text.index(" ")] == Pos(2, 20)


def test_spans_skip_comment_lines_inside_continuation():
    text = "[Service]\nExecStart=/bin/echo \\\n# c\n  tail\n"
    (a,) = parse_text(text, "x.service").assignments
    assert a.value.origins[a.value.text.index("tail")] == Pos(4, 3)


# --- encodings and line ends ------------------------------------------------------------


def test_crlf_line_ends_are_not_part_of_values():
    text = "[Service]\r\nType=exec\r\nExecStart=/bin/echo a \\\r\n b\r\n"
    assert values(text, "Type") == ["exec"]
    assert values(text, "ExecStart") == ["/bin/echo a   b"]


def test_lone_carriage_return_ends_a_line_like_systemd():
    # systemd 252 read_line(): `ExecStart=/bin/true\rFooBar=1` is two lines.
    unit = parse_text("[Service]\nExecStart=/bin/true\rType=exec\n", "x.service")
    assert [(a.name, a.value.text) for a in unit.assignments] == [
        ("ExecStart", "/bin/true"),
        ("Type", "exec"),
    ]
    assert unit.assignments[1].key.span().start == Pos(2, 21)


def test_lf_cr_is_one_line_end():
    # systemd 252 reports `\n\r` as one line end; a backslash continues across it.
    text = "[Service]\nExecStart=/bin/echo a \\\n\rb\n"
    assert values(text, "ExecStart") == ["/bin/echo a  b"]


def test_byte_order_mark_is_skipped_and_columns_still_count_it():
    unit = parse_text("\ufeff[Service]\nType=exec\n", "x.service")
    assert [h.name for h in unit.headers] == ["Service"]
    assert unit.headers[0].span.start == Pos(1, 2)
    assert values("\ufeff[Service]\nType=exec\n", "Type") == ["exec"]


def test_lf_only_and_mixed_line_ends_give_the_same_positions():
    # LF-only text takes a faster path than text with CR: both must agree.
    lf = "[Service]\n\n\nType=exec\nExecStart=/bin/echo a \\\n  b\n\nUser=u"
    crlf = "[Service]\r\n\r\n\r\nType=exec\r\nExecStart=/bin/echo a \\\r\n  b\r\n\r\nUser=u"
    for text in (lf, crlf, "\ufeff" + lf, "\ufeff" + crlf):
        unit = parse_text(text, "x.service")
        bom = 1 if text.startswith("\ufeff") else 0
        assert [(a.name, a.value.text, a.line) for a in unit.assignments] == [
            ("Type", "exec", 4),
            ("ExecStart", "/bin/echo a    b", 5),
            ("User", "u", 8),  # the last line has no line end
        ]
        assert unit.headers[0].span.start == Pos(1, 1 + bom)
        assert [a.value.span() for a in unit.assignments][1:] == [
            Span(Pos(5, 11), Pos(6, 4)),
            Span(Pos(8, 6), Pos(8, 7)),
        ]


def test_non_utf8_file_is_an_input_error(tmp_path: Path):
    path = tmp_path / "bad.service"
    path.write_bytes(b"[Service]\nExecStart=/bin/echo \xff\n")
    report = lint_paths([str(path)], LintOptions(shellcheck=False))
    assert report.files == []
    assert len(report.input_errors) == 1
    assert "UTF-8" in report.input_errors[0].message


# --- repeated keys and list resets ------------------------------------------------------


def test_repeated_keys_are_all_kept_in_order_and_last_wins():
    unit = parse_text("[Service]\nType=simple\nType=exec\n", "x.service")
    assert [a.value.text for a in unit.get_all("Service", "Type")] == ["simple", "exec"]
    assert unit.last_value("Service", "Type") == "exec"
    unit.get_all("Service", "Type").clear()  # callers get a copy
    assert unit.last_value("Service", "Type") == "exec"


def test_empty_assignment_resets_a_list():
    text = "[Service]\nExecStartPre=/bin/a\nExecStartPre=\nExecStartPre=/bin/b\n"
    unit = parse_text(text, "x.service")
    assert [a.value.text for a in unit.effective_list("Service", "ExecStartPre")] == ["/bin/b"]
    unit.effective_list("Service", "ExecStartPre").clear()
    assert len(unit.get_all("Service", "ExecStartPre")) == 3


def test_empty_single_value_means_default():
    unit = parse_text("[Service]\nType=exec\nType=\n", "x.service")
    assert unit.last_value("Service", "Type") is None


# --- drop-ins ---------------------------------------------------------------------------


def test_dropins_apply_in_lexicographic_order_after_the_unit(tmp_path: Path):
    unit_path = tmp_path / "vllm.service"
    unit_path.write_text("[Service]\nExecStart=/bin/a\nType=simple\n")
    d = tmp_path / "vllm.service.d"
    d.mkdir()
    (d / "20-b.conf").write_text("[Service]\nType=exec\n")
    (d / "10-a.conf").write_text("[Service]\nExecStart=\nExecStart=/bin/b\nType=notify\n")
    (d / "30-c.txt").write_text("[Service]\nType=forking\n")  # not a .conf: ignored
    assert [p.name for p in dropin_paths(unit_path)] == ["10-a.conf", "20-b.conf"]
    unit = parse_file(unit_path)
    assert unit.last_value("Service", "Type") == "exec"
    assert [a.value.text for a in unit.effective_list("Service", "ExecStart")] == ["/bin/b"]
    assert set(unit.sources) == {str(unit_path), str(d / "10-a.conf"), str(d / "20-b.conf")}


def test_findings_in_dropins_point_into_the_dropin(tmp_path: Path):
    unit_path = tmp_path / "vllm.service"
    unit_path.write_text("[Service]\nExecStart=/bin/true\n")
    d = tmp_path / "vllm.service.d"
    d.mkdir()
    (d / "override.conf").write_text("[Service]\n\nEnviroment=A=1\n")
    report = lint_paths([str(unit_path)], LintOptions(shellcheck=False))
    (finding,) = [f for f in report.files[0].findings if f.code == "SD102"]
    assert finding.path == str(d / "override.conf")
    assert finding.span.start == Pos(3, 1)


# --- disable comments -------------------------------------------------------------------


def test_disable_comment_on_line_above_silences_that_code_only():
    text = "[Service]\n# lintunits: disable=SD102\nEnviroment=A=1\nEnviromint=B=1\n"
    report = lint_text(text, "x.service", LintOptions(shellcheck=False))
    lines = [f.span.start.line for f in report.files[0].findings if f.code == "SD102"]
    assert lines == [4]


def test_disable_comment_lists_several_codes_and_all():
    unit = parse_text(
        "[Service]\n; lintunits: disable=SD102, EX202\nA=1\n# lintunits: disable=all\nB=1\n",
        "x.service",
    )
    assert unit.disabled[("x.service", 3)] == {"SD102", "EX202"}
    assert unit.disabled[("x.service", 5)] == {"all"}


def test_disable_comment_does_not_reach_past_the_next_line():
    text = "[Service]\n# lintunits: disable=SD102\nType=exec\nEnviroment=A=1\n"
    report = lint_text(text, "x.service", LintOptions(shellcheck=False))
    assert [f.span.start.line for f in report.files[0].findings if f.code == "SD102"] == [4]


def test_string_is_safe_rejects_control_characters_quotes_and_backslashes() -> None:
    for code in range(0x200):
        ch = chr(code)
        expected = not (ch < " " or ch in "\x7f\"'\\")
        assert string_is_safe(f"a{ch}b") is expected, hex(code)
    assert string_is_safe("")


def test_parse_file_names_a_unit_as_parse_text_does(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    for name in ("vllm.service", "vllm@.service", "-", "x.service.d/10-a.conf"):
        path = tmp_path / name
        path.parent.mkdir(exist_ok=True)
        path.write_text("[Service]\nType=exec\n", encoding="utf-8")
        for given in (path, Path(name)):
            unit = parse_file(given)
            assert (unit.path, unit.name) == (str(given), parse_text("", str(given)).name)
