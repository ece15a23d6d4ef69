"""EX rules: what systemd does to `$`, `%` and quotes in Exec lines before the program runs
(docs/architecture.md facts 2–5; `$` substitution per src/basic/env-util.c, specifiers checked with
systemd 252's `systemd-analyze verify`)."""

from __future__ import annotations

import pytest

from linting.findings import Severity
from tests.linting.helpers import fixed, lint, spanned, where

HEAD = "[Service]\nExecStart=/bin/true\n"


# --- EX201 ------------------------------------------------------------------------------

EX201_TEXT = HEAD + ("ExecStartPre=/bin/bash -c 'free=$(nvidia-smi); [ \"${free}\" -lt 1000 ]'\n")


def test_ex201_braced_unset_variable_in_bash_script_becomes_empty():
    (f,) = lint(EX201_TEXT, "EX201")
    assert where(f) == (3, 51, 58)
    assert spanned(EX201_TEXT, f) == "${free}"
    assert f.severity == Severity.ERROR
    assert 'bash receives: `free=$(nvidia-smi); [ "" -lt 1000 ]`' in f.message
    assert "$${free}" in f.message


def test_ex201_fix_doubles_the_dollar_and_relint_is_clean():
    new = fixed(EX201_TEXT, lint(EX201_TEXT, "EX201"))
    assert new == HEAD + (
        "ExecStartPre=/bin/bash -c 'free=$(nvidia-smi); [ \"$${free}\" -lt 1000 ]'\n"
    )
    assert lint(new, "EX201") == []


def test_ex201_fix_on_a_continuation_line():
    text = HEAD + "ExecStartPre=/bin/bash -c 'x=1; \\\n  echo ${x}'\n"
    (f,) = lint(text, "EX201")
    assert where(f) == (4, 8, 12)
    new = fixed(text, [f])
    assert new.endswith("  echo $${x}'\n")
    assert lint(new, "EX201") == []


def test_ex201_variable_set_by_unit_and_script_is_a_warning():
    text = (
        "[Service]\nEnvironment=N=5\nExecStart=/bin/true\n"
        "ExecStartPre=/bin/bash -c 'N=1; echo ${N}'\n"
    )
    (f,) = lint(text, "EX201")
    assert where(f) == (4, 38, 42)
    assert f.severity == Severity.WARNING
    assert "'5'" in f.message


@pytest.mark.parametrize(
    "line",
    [
        "ExecStartPre=/bin/bash -c 'echo $${free}'",  # escaped
        "ExecStartPre=/bin/bash -c 'echo $free'",  # braceless: bash sees it
        "ExecStartPre=:/bin/bash -c 'echo ${free}'",  # `:` disables substitution
        "ExecStartPre=/bin/echo ${free}",  # not a shell (EX204's business)
    ],
)
def test_ex201_not_reported(line):
    assert lint(HEAD + line + "\n", "EX201") == []


def test_ex201_unknown_environment_file_suppresses_it():
    text = HEAD + "EnvironmentFile=/nonexistent/vllm.env\nExecStartPre=/bin/bash -c 'echo ${X}'\n"
    assert lint(text, "EX201") == []


# --- EX202 ------------------------------------------------------------------------------


def test_ex202_unset_value_of_an_option_is_an_error():
    text = "[Service]\nExecStart=/opt/vllm/bin/vllm serve --model $MODEL --port 8000\n"
    (f,) = lint(text, "EX202")
    assert where(f) == (2, 44, 50)
    assert spanned(text, f) == "$MODEL"
    assert f.severity == Severity.ERROR
    assert "`--model` then takes the next argument" in f.message
    assert "['/opt/vllm/bin/vllm', 'serve', '--model', '--port', '8000']" in f.message


def test_ex202_optional_hook_variable_is_a_warning():
    text = "[Service]\nExecStart=/opt/vllm/bin/vllm serve /m $OPTS\n"
    (f,) = lint(text, "EX202")
    assert where(f) == (2, 39, 44)
    assert f.severity == Severity.WARNING
    assert "removes this argument" in f.message


def test_ex202_invalid_name_is_always_an_error():
    text = "[Service]\nExecStart=/opt/vllm/bin/vllm serve $FOO/x\nEnvironment=FOO=/m\n"
    (f,) = lint(text, "EX202")
    assert where(f) == (2, 36, 42)
    assert f.severity == Severity.ERROR
    assert "not a valid variable name" in f.message


@pytest.mark.parametrize(
    "text",
    [
        "[Service]\nEnvironment=MODEL=/m\nExecStart=/bin/x --model $MODEL\n",
        "[Service]\nExecStart=/bin/x --model $$MODEL\n",
        "[Service]\nExecStart=:/bin/x --model $MODEL\n",
        "[Service]\nPassEnvironment=MODEL\nExecStart=/bin/x --model $MODEL\n",
        "[Service]\nExecStart=/bin/x --model=$MODEL\n",
    ],
)
def test_ex202_not_reported(text):
    assert lint(text, "EX202") == []


# --- EX203 ------------------------------------------------------------------------------

EX203_TEXT = (
    '[Service]\nEnvironment="EXTRA=--max-num-seqs 8 --enforce-eager"\n'
    "ExecStart=/opt/vllm/bin/vllm serve /m ${EXTRA}\n"
)


def test_ex203_braced_variable_with_blanks_stays_one_argument():
    (f,) = lint(EX203_TEXT, "EX203")
    assert where(f) == (3, 39, 47)
    assert spanned(EX203_TEXT, f) == "${EXTRA}"
    assert "'--max-num-seqs 8 --enforce-eager'" in f.message
    assert "3 arguments" in f.message


def test_ex203_fix_removes_the_braces_and_relint_is_clean():
    new = fixed(EX203_TEXT, lint(EX203_TEXT, "EX203"))
    assert new.endswith("ExecStart=/opt/vllm/bin/vllm serve /m $EXTRA\n")
    assert lint(new, "EX203") == []


@pytest.mark.parametrize(
    "arg",
    ["$EXTRA", "--x=${EXTRA}", "${ONE}"],
)
def test_ex203_not_reported(arg):
    text = '[Service]\nEnvironment="EXTRA=--a 1" ONE=x\nExecStart=/bin/x ' + arg + "\n"
    assert lint(text, "EX203") == []


# --- EX204 ------------------------------------------------------------------------------


def test_ex204_unset_braced_variable_becomes_empty():
    text = "[Service]\nExecStart=/opt/vllm/bin/vllm serve /m --served-model-name=${SERVED_NAME}\n"
    (f,) = lint(text, "EX204")
    assert where(f) == (2, 59, 73)
    assert spanned(text, f) == "${SERVED_NAME}"
    assert "'--served-model-name='" in f.message


def test_ex204_impossible_name_becomes_empty_even_with_unknown_environment():
    text = "[Service]\nPassEnvironment=X\nExecStart=/bin/echo n=${#a[@]}\n"
    (f,) = lint(text, "EX204")
    assert where(f) == (3, 23, 31)
    assert "'n='" in f.message


@pytest.mark.parametrize(
    "text",
    [
        "[Service]\nEnvironment=N=x\nExecStart=/bin/echo ${N}\n",
        "[Service]\nExecStart=/bin/echo $${N}\n",
        "[Service]\nExecStart=/bin/echo ${N:-default}\n",
        "[Service]\nExecStart=/bin/bash -c 'echo ${N}'\n",  # EX201's business
    ],
)
def test_ex204_not_reported(text):
    assert lint(text, "EX204") == []


# --- EX205 ------------------------------------------------------------------------------

EX205_TEXT = HEAD + "ExecStartPre=/bin/bash -c 'echo \"start $$(date +%s)\" >> /tmp/l'\n"


def test_ex205_specifier_in_shell_script():
    (f,) = lint(EX205_TEXT, "EX205")
    assert where(f) == (3, 49, 51)
    assert spanned(EX205_TEXT, f) == "%s"
    assert "'/bin/bash'" in f.message
    assert "date +/bin/bash" in f.message


def test_ex205_fix_doubles_the_percent_and_relint_is_clean():
    new = fixed(EX205_TEXT, lint(EX205_TEXT, "EX205"))
    assert new == HEAD + "ExecStartPre=/bin/bash -c 'echo \"start $$(date +%%s)\" >> /tmp/l'\n"
    assert lint(new, "EX205") == []


def test_ex205_date_format_argument_and_fix_of_two_specifiers():
    text = "[Service]\nExecStart=/bin/date +%H:%M\n"
    findings = lint(text, "EX205")
    assert [where(f) for f in findings] == [(2, 22, 24), (2, 25, 27)]
    new = fixed(text, findings)
    assert new == "[Service]\nExecStart=/bin/date +%%H:%%M\n"
    assert lint(new, "EX205") == []


@pytest.mark.parametrize(
    "line",
    [
        "ExecStartPre=/bin/bash -c 'date +%%s'",
        "ExecStartPre=/bin/echo %n",  # not a shell, date or printf
        "ExecStartPre=/bin/bash -c 'echo %o'",  # %o is not a printf/date letter
    ],
)
def test_ex205_not_reported(line):
    assert lint(HEAD + line + "\n", "EX205") == []


# --- EX206 ------------------------------------------------------------------------------


def test_ex206_nested_double_quotes_close_the_outer_quote():
    text = HEAD + 'ExecStartPre=/bin/bash -c "test -z "$(pgrep -f \'vllm serve\')""\n'
    (f,) = lint(text, "EX206")
    assert where(f) == (3, 27, 44)
    assert spanned(text, f) == '"test -z "$(pgrep'
    assert "['test -z $(pgrep', '-f', 'vllm serve)']" in f.message


@pytest.mark.parametrize(
    "line",
    [
        "ExecStartPre=/bin/bash -c 'test -z \"$(pgrep -f vllm)\"'",
        'ExecStartPre=/bin/echo --format="csv,noheader"',
        'ExecStartPre=/bin/echo "a"b',
    ],
)
def test_ex206_not_reported(line):
    assert lint(HEAD + line + "\n", "EX206") == []


# -- EX207..EX210 -------------------------------------------------------------


def test_ex207_home_specifier_as_a_host_address():
    text = "[Service]\nExecStart=/opt/ray/bin/ray start --head --node-ip-address=%h\n"
    (f,) = lint(text, "EX207")
    assert spanned(text, f) == "%h" and "/root" in f.message and "%H" in f.message
    assert lint("[Service]\nExecStart=/bin/ls %h\n", "EX207") == []


@pytest.mark.parametrize("escaped", ["\\x25h", "\\045h", '"\\x25h"'])
def test_a_home_specifier_written_as_an_escaped_percent_is_still_found(escaped: str) -> None:
    # systemd unescapes the word before it resolves specifiers: `\x25h` is `%h`.
    (f,) = lint(f"[Service]\nExecStart=/bin/x --ip={escaped}\n", "EX207")
    assert f.message.startswith("`%h` is a home directory")


def test_ex207_user_specifier_with_dynamic_user_runs_as_root():
    (f,) = lint("[Service]\nDynamicUser=yes\nUser=%u\nExecStart=/bin/id\n", "EX207")
    assert f.severity == Severity.ERROR and "runs as root" in f.message
    (g,) = lint("[Service]\nUser=%u\nExecStart=/bin/id\n", "EX207")
    assert g.severity == Severity.WARNING


def test_ex208_variable_in_environment_value_stays_literal():
    text = (
        '[Service]\nEnvironment=PATH=/opt/cuda/bin:$PATH "LD=${LD_LIBRARY_PATH}:/x" A=$$B\n'
        "ExecStart=/bin/env\n"
    )
    found = lint(text, "EX208")
    assert [spanned(text, f) for f in found] == ["$PATH", "${LD_LIBRARY_PATH}"]
    assert "'/opt/cuda/bin:$PATH'" in found[0].message
    assert [f.severity for f in found] == [Severity.ERROR, Severity.WARNING]  # PATH=…$PATH


def test_ex209_shell_default_is_passed_literally_and_reported_once():
    text = "[Service]\nUser=vllm\nExecStart=/opt/vllm/bin/vllm serve m --port ${PORT:-8000}\n"
    (f,) = lint(text, "EX209")
    assert spanned(text, f) == "${PORT:-8000}" and "literally" in f.message
    assert lint(text, "VL323") == []  # vLLM's complaint about the value is the knock-on
    (g,) = lint("[Service]\nExecStart=/bin/echo ${PORT-8000}\n", "EX209")
    assert "empty string" in g.message


def test_ex209_not_in_shell_scripts():
    assert lint("[Service]\nExecStart=/bin/sh -c 'echo ${PORT:-8000}'\n", "EX209") == []


def test_ex210_braceless_variable_inside_a_word():
    text = "[Service]\nExecStart=/bin/true\nExecReload=/bin/kill -s HUP -$MAINPID\n"
    (f,) = lint(text, "EX210")
    assert spanned(text, f) == "$MAINPID" and "${MAINPID}" in f.message
    for fine in ("$MAINPID", "-${MAINPID}", "-$$MAINPID", "a$1"):
        assert lint(f"[Service]\nExecStart=/bin/echo {fine}\n", "EX210") == [], fine
    assert lint("[Service]\nExecStart=/bin/sh -c 'kill -$MAINPID'\n", "EX210") == []
