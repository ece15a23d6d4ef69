"""SD rules: what systemd itself rejects or ignores while loading a unit.

Each positive case was loaded with systemd 252's `systemd-analyze verify` to confirm the
consequence named in the message (fatal vs. ignored); e.g. `ExecStartPre=/bin/echo 'x`
gives "Unbalanced quoting, ignoring" + "Unit configuration has fatal error",
`NetClass=1` gives "Support for option NetClass= has been removed and it is ignored".
"""

from __future__ import annotations

from pathlib import Path

import pytest

from linting.engine import lint_paths, lint_text
from linting.findings import Severity
from linting.options import LintOptions
from tests.linting.helpers import lint, spanned, where

OK = "[Unit]\nDescription=vLLM\n[Service]\nExecStart=/bin/true\n"


@pytest.mark.parametrize(
    "code",
    [
        "SD101", "SD102", "SD103", "SD104", "SD105", "SD106", "SD107", "SD108",
        "SD109", "SD110", "SD111", "SD112", "SD113", "SD114", "SD115",
    ],
)  # fmt: skip
def test_clean_unit_has_no_sd_findings(code):
    assert lint(OK, code) == []
    assert lint(OK, code, systemd_version=257) == []


def test_sd101_unknown_section_with_suggestion():
    text = "[Unit]\nDescription=x\n[Sevice]\nExecStart=/bin/true\n"
    (f,) = lint(text, "SD101")
    assert where(f) == (3, 1, 9)
    assert spanned(text, f) == "[Sevice]"
    assert "unknown section [Sevice]" in f.message
    assert "did you mean [Service]?" in f.message
    assert f.severity == Severity.ERROR


def test_sd101_private_x_sections_are_fine():
    assert lint(OK + "[X-Specadmin]\nProfile=1\n", "SD101") == []


def test_sd101_section_of_another_unit_type():
    (f,) = lint("[Socket]\nListenStream=1\n" + OK, "SD101")
    assert where(f) == (1, 1, 9)


def test_sd102_unknown_key_with_suggestion():
    text = OK + "Enviroment=A=1\n"
    (f,) = lint(text, "SD102")
    assert where(f) == (5, 1, 11)
    assert "unknown key Enviroment=" in f.message
    assert "did you mean Environment=?" in f.message


def test_sd102_key_in_wrong_section():
    text = "[Unit]\nRestart=always\n[Service]\nExecStart=/bin/true\n"
    (f,) = lint(text, "SD102")
    assert where(f) == (2, 1, 8)
    assert "belongs in the [Service] section, not [Unit]" in f.message


def test_sd102_private_x_keys_are_fine():
    assert lint(OK + "X-Owner=ml\n", "SD102") == []


def test_sd103_line_without_equals():
    text = OK + "Restart always\n"
    (f,) = lint(text, "SD103")
    assert where(f) == (5, 1, 15)
    assert "Missing '='" in f.message


def test_sd103_invalid_section_header_is_fatal_in_the_unit_file():
    text = OK + "[Install\nWantedBy=multi-user.target\n"
    (f,) = lint(text, "SD103")
    assert where(f) == (5, 1, 9)
    assert "Invalid section header '[Install'" in f.message
    assert "refuses to load" in f.message


def test_sd103_missing_key_name():
    (f,) = lint(OK + "=1\n", "SD103")
    assert where(f) == (5, 1, 3)
    assert "Missing key name" in f.message


def test_sd104_invalid_enum_value_points_at_the_value():
    text = OK + "Restart=on-failur\n"
    (f,) = lint(text, "SD104")
    assert where(f) == (5, 9, 18)
    assert "on-failure" in f.message
    assert "systemd ignores the setting" in f.message


def test_sd104_valid_values():
    assert lint(OK + "Restart=on-failure\nTimeoutStartSec=30min\n", "SD104") == []


def test_sd105_second_exec_start_without_oneshot():
    text = OK + "ExecStart=/bin/false\n"
    (f,) = lint(text, "SD105")
    assert where(f) == (5, 1, 10)
    assert "refuses to load" in f.message


@pytest.mark.parametrize(
    "extra",
    ["Type=oneshot\nExecStart=/bin/false\n", "ExecStart=\nExecStart=/bin/false\n"],
)
def test_sd105_oneshot_or_reset_is_fine(extra):
    assert lint(OK + extra, "SD105") == []


def test_sd105_dropin_without_reset(tmp_path: Path):
    unit = tmp_path / "vllm.service"
    unit.write_text(OK)
    (tmp_path / "vllm.service.d").mkdir()
    dropin = tmp_path / "vllm.service.d" / "override.conf"
    dropin.write_text("[Service]\nExecStart=/bin/false\n")
    report = lint_paths([str(unit)], LintOptions(shellcheck=False))
    (f,) = [f for f in report.files[0].findings if f.code == "SD105"]
    assert f.path == str(dropin)
    assert where(f) == (2, 1, 10)
    dropin.write_text("[Service]\nExecStart=\nExecStart=/bin/false\n")
    report = lint_paths([str(unit)], LintOptions(shellcheck=False))
    assert [f for f in report.files[0].findings if f.code == "SD105"] == []


def test_sd106_relative_executable_is_fatal():
    text = "[Service]\nExecStart=venv/bin/vllm serve /m\n"
    (f,) = lint(text, "SD106")
    assert where(f) == (2, 11, 24)
    assert spanned(text, f) == "venv/bin/vllm"
    assert "Neither a valid executable name nor an absolute path" in f.message
    assert "refuses to load the unit" in f.message


def test_sd106_with_dash_prefix_only_drops_the_command():
    (f,) = lint(OK + "ExecStartPre=-bin/x\n", "SD106")
    assert "systemd ignores this command" in f.message


def test_sd107_bare_vllm_is_a_warning_other_tools_info():
    text = "[Service]\nExecStart=vllm serve /m\nExecStartPre=nvidia-smi -L\n"
    f1, f2 = lint(text, "SD107")
    assert where(f1) == (2, 11, 15)
    assert f1.severity == Severity.WARNING
    assert "not $PATH" in f1.message
    assert where(f2) == (3, 14, 24)
    assert f2.severity == Severity.INFO


def test_sd108_unbalanced_quote_in_argument_is_fatal():
    text = OK + "ExecStartPre=/bin/echo 'x\n"
    (f,) = lint(text, "SD108")
    assert where(f) == (5, 24, 25)
    assert spanned(text, f) == "'"
    assert "Unbalanced quoting" in f.message
    assert "refuses to load" in f.message


def test_sd108_unbalanced_quote_in_first_word_drops_the_command():
    (f,) = lint(OK + 'ExecStartPre="/bin/echo x\n', "SD108")
    assert where(f) == (5, 14, 15)
    assert "systemd ignores this command" in f.message


def test_sd108_balanced_quotes_across_a_continuation():
    text = OK + "ExecStartPre=/bin/echo 'a \\\n  b'\n"
    assert lint(text, "SD108") == []


def test_sd109_unknown_escape():
    text = OK + "ExecStartPre=/bin/grep -q '\\d' /f\n"
    (f,) = lint(text, "SD109")
    assert where(f) == (5, 28, 30)
    assert spanned(text, f) == "\\d"
    assert "keeps the backslash" in f.message
    assert f.severity == Severity.WARNING


def test_sd109_known_escapes_are_fine():
    assert lint(OK + "ExecStartPre=/bin/grep -q '\\\\d\\t\\x41' /f\n", "SD109") == []


def test_sd110_unknown_specifier_is_fatal():
    text = OK + "ExecStartPre=/bin/printf %5.1f 1\n"
    (f,) = lint(text, "SD110")
    assert where(f) == (5, 26, 28)
    assert spanned(text, f) == "%5"
    assert "Invalid slot" in f.message
    assert "refuses to load" in f.message


def test_sd110_escaped_percent_is_fine():
    assert lint(OK + "ExecStartPre=/bin/printf %%5.1f 1\n", "SD110") == []


def test_sd110_letter_known_only_in_257():
    text = OK + "ExecStartPre=/bin/ls %D\n"
    assert len(lint(text, "SD110", systemd_version=252)) == 1
    assert lint(text, "SD110", systemd_version=257) == []


def test_sd111_deprecated_specifier():
    text = OK + "ExecStartPre=/bin/echo %r\n"
    (f,) = lint(text, "SD111")
    assert where(f) == (5, 24, 26)
    assert "deprecated" in f.message


def test_sd111_escaped_is_fine():
    assert lint(OK + "ExecStartPre=/bin/echo %%r\n", "SD111") == []


def test_sd112_service_without_exec_start():
    text = "[Unit]\nDescription=x\n[Service]\nType=exec\n"
    (f,) = lint(text, "SD112")
    assert where(f) == (3, 1, 10)
    assert "Service has no ExecStart=" in f.message


def test_a_dropped_only_exec_start_is_reported_once_with_its_consequence():
    text = '[Service]\nExecStart="/bin/true\n'
    assert lint(text, "SD112") == []
    (f,) = lint(text, "SD108")
    assert "no ExecStart= left it refuses to load the service" in f.message


def test_an_invalid_executable_path_is_not_also_reported_as_missing_exec_start():
    text = "[Service]\nExecStart=venv/bin/vllm serve /models/m\n"
    assert lint(text, "SD112") == [] and len(lint(text, "SD106")) == 1


def test_sd112_not_for_lone_dropins_or_other_unit_types():
    assert lint("[Service]\nType=exec\n", "SD112", name="override.conf") == []
    assert lint("[Unit]\nDescription=t\n", "SD112", name="x.target") == []


def test_sd113_invalid_environment_assignment():
    text = OK + "Environment=CUDA-VISIBLE=0 OK=1\n"
    (f,) = lint(text, "SD113")
    assert where(f) == (5, 13, 27)
    assert spanned(text, f) == "CUDA-VISIBLE=0"
    assert "Invalid environment assignment" in f.message


def test_sd113_unknown_escape_drops_rest_of_environment_line():
    text = OK + "Environment=A=1 B=\\d C=3\n"
    (f,) = lint(text, "SD113")
    assert where(f) == (5, 19, 21)
    assert "Invalid syntax" in f.message


def test_sd113_points_into_the_dropin(tmp_path: Path):
    unit = tmp_path / "vllm.service"
    unit.write_text(OK)
    (tmp_path / "vllm.service.d").mkdir()
    dropin = tmp_path / "vllm.service.d" / "env.conf"
    dropin.write_text("[Service]\nEnvironment=BAD-NAME=1\n")
    report = lint_paths([str(unit)], LintOptions(shellcheck=False))
    (f,) = [f for f in report.files[0].findings if f.code == "SD113"]
    assert f.path == str(dropin)
    assert where(f) == (2, 13, 23)


def test_sd113_valid_environment():
    assert lint(OK + 'Environment="A=a b" B=%n\n', "SD113") == []


def test_sd114_semicolon_separator_in_257():
    text = OK + "ExecStartPre=/bin/true ; /bin/true\n"
    (f,) = lint(text, "SD114", systemd_version=257)
    assert where(f) == (5, 24, 25)
    assert "deprecated" in f.message
    assert lint(text, "SD114", systemd_version=252) == []


def test_sd114_escaped_semicolon_is_an_argument():
    assert lint(OK + "ExecStartPre=/bin/find / -exec x \\;\n", "SD114", systemd_version=257) == []


def test_sd115_removed_key():
    (f,) = lint(OK + "NetClass=1\n", "SD115")
    assert where(f) == (5, 1, 9)
    assert "no longer supported" in f.message


# -- SD116 / SD117 / SD118 --------------------------------------------------


@pytest.mark.parametrize(
    ("value", "needle"),
    [
        ("${HOME}/vllm", "expands no variables"),
        ("opt/app", "not an absolute"),
        ("__SRC__", "placeholder"),
    ],
)
def test_sd116_working_directory_that_is_not_absolute_refuses_to_load(value, needle):
    text = OK + f"WorkingDirectory={value}\n"
    (f,) = lint(text, "SD116")
    assert f.severity == Severity.ERROR and needle in f.message
    assert "refuses to load" in f.message and spanned(text, f) == value


def test_sd116_optional_working_directory_is_ignored_not_fatal():
    (f,) = lint(OK + "WorkingDirectory=-opt/app\n", "SD116")
    assert f.severity == Severity.WARNING and "runs in /" in f.message


def test_sd116_home_and_absolute_paths_are_fine():
    for value in ("~", "/opt/vllm", "%h/vllm", "-/srv/missing-ok"):
        assert lint(OK + f"WorkingDirectory={value}\n", "SD116") == [], value


def test_sd116_placeholder_directory_fails_at_chdir_and_is_not_also_sd117():
    text = OK + "WorkingDirectory=/opt/__VLLM_SRC__\n"
    (f,) = lint(text, "SD116")
    assert "200/CHDIR" in f.message
    assert lint(text, "SD117") == []


def test_sd117_placeholders_of_a_unit_are_one_finding_naming_all():
    text = (
        "[Unit]\nDescription=vLLM {{ name }}\n[Service]\nUser={{ user }}\n"
        "ExecStart=/bin/echo @PORT@\n"
    )
    (f,) = lint(text, "SD117")
    assert spanned(text, f) == "{{ name }}"
    assert f.severity == Severity.ERROR  # User= makes it fatal
    assert "3 placeholders" in f.message
    assert "`{{ user }}` (User=, line 4)" in f.message and "`@PORT@`" in f.message
    assert [span.start.line for _path, span in f.related] == [4, 5]


def test_sd117_fill_in_words_and_an_envsubst_template_are_placeholders_once():
    text = (
        "[Service]\nUser=${VLLM_USER}\nWorkingDirectory=${VLLM_HOME}\n"
        "Environment=HF_TOKEN=hf_your_token_here\n"
        "ExecStart=${VLLM_HOME}/venv/bin/vllm serve ${MODEL} --port 8000\n"
    )
    report = lint_text(text, "vllm.service", LintOptions(shellcheck=False))
    codes = [f.code for f in report.findings]
    assert codes.count("SD117") == 1
    assert not {"SD106", "SD116", "EX204", "EX202"} & set(codes), codes
    (f,) = [f for f in report.findings if f.code == "SD117"]
    assert "5 placeholders" in f.message and "`hf_your_token_here`" in f.message
    one = "[Service]\nUser=vllm\nWorkingDirectory=${HOME}/vllm\nExecStart=/bin/true\n"
    assert lint(one, "SD117") == []  # one ${HOME}: SD116's mistake, not a template


def test_sd117_replaces_the_vllm_findings_about_the_placeholder_words():
    text = "[Service]\nUser=vllm\nExecStart=/opt/vllm/bin/vllm serve {{ model }} --port 8000\n"
    report = lint_text(text, "vllm.service", LintOptions(shellcheck=False, select=("SD", "VL")))
    assert [f.code for f in report.findings] == ["SD117"]


def test_sd118_instance_specifier_outside_a_template():
    text = OK + "User=%i\nEnvironmentFile=-/home/%i/.env\n"
    user, env = lint(text, "SD118", name="vllm-x.service")
    assert user.severity == Severity.ERROR and "refuses to load" in user.message
    assert env.severity == Severity.WARNING and "/home//.env" in env.message
    assert "vllm-x@.service" in env.message
    assert lint(text, "SD118", name="vllm-x@.service") == []
    assert lint(text, "SD118", name="vllm-x@alice.service") == []
