"""The `lintunits` command line: exit codes, formats, inputs, config, fixes."""

from __future__ import annotations

import gc
import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import linting.cli
from linting.cli import run
from linting.engine import _active
from linting.options import LintOptions

ROOT = Path(__file__).resolve().parents[2]

GOOD = """[Unit]
Description=ok
[Service]
Type=exec
Restart=on-failure
ExecStart=/opt/vllm/bin/vllm serve /models/m --port 8000
"""
BAD = """[Unit]
Description=bad
[Service]
Restart=on-failure
ExecStartPre=/bin/bash -c 'free=1; [ "${free}" -lt 1000 ]'
ExecStart=/opt/vllm/bin/vllm serve /models/m
"""
WARN_ONLY = """[Service]
ExecStart=/opt/vllm/bin/vllm serve /models/m
"""


def lint(*argv: str, stdin: str | None = None, cwd: Path | None = None) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    old_stdin = sys.stdin
    if stdin is not None:
        sys.stdin = io.StringIO(stdin)
    try:
        if cwd is not None:
            old = os.getcwd()
            os.chdir(cwd)
            try:
                code = run(list(argv), out, err)
            finally:
                os.chdir(old)
        else:
            code = run(list(argv), out, err)
    except SystemExit as exc:  # argparse usage errors
        code = int(exc.code or 0)
    finally:
        sys.stdin = old_stdin
    return code, out.getvalue(), err.getvalue()


@pytest.fixture
def units(tmp_path: Path) -> Path:
    (tmp_path / "good.service").write_text(GOOD)
    (tmp_path / "bad.service").write_text(BAD)
    (tmp_path / "warn.service").write_text(WARN_ONLY)
    return tmp_path


def test_clean_file_exits_zero(units: Path) -> None:
    code, out, _ = lint(str(units / "good.service"), "--no-shellcheck")
    assert code == 0, out
    assert "Found 0 errors" in out


def test_error_exits_one_and_names_position(units: Path) -> None:
    code, out, _ = lint(str(units / "bad.service"), "--no-shellcheck")
    assert code == 1
    assert f"{units / 'bad.service'}:5:" in out
    assert "EX201" in out


def test_warning_fails_only_with_fail_on_warning(units: Path) -> None:
    assert lint(str(units / "warn.service"), "--no-shellcheck")[0] == 0
    assert lint(str(units / "warn.service"), "--no-shellcheck", "--fail-on", "warning")[0] == 1


def test_missing_file_exits_two_with_message(units: Path) -> None:
    code, out, err = lint(str(units / "nope.service"))
    assert code == 2
    assert "no such file" in out + err


def test_binary_file_exits_two_without_traceback(units: Path) -> None:
    (units / "bin.service").write_bytes(b"\xff\xfe\x00\x01")
    code, out, err = lint(str(units / "bin.service"))
    assert code == 2
    assert "Traceback" not in out + err
    assert "UTF-8" in out + err


def test_a_directory_without_unit_files_is_an_input_error_like_a_glob_without_matches(
    tmp_path: Path,
) -> None:
    # A wrong directory in CI once passed: "Found 0 errors … in 0 files", exit 0.
    (tmp_path / "README.md").write_text("not a unit\n")
    code, out, err = lint(str(tmp_path))
    assert code == 2
    assert f"{tmp_path}: error: no unit files" in out + err


def test_unknown_option_exits_two(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, _ = lint("--bogus")
    assert code == 2
    assert "unrecognized arguments" in capsys.readouterr().err


@pytest.mark.parametrize("option", ["--select", "--ignore"])
def test_a_mistyped_rule_code_is_a_usage_error_not_a_silently_empty_selection(
    units: Path, option: str
) -> None:
    # `--select OP47` once selected nothing at all: "Found 0 errors", exit 0.
    code, _, err = lint(str(units / "warn.service"), option, "OP402,OP47")
    assert code == 2 and "OP47" in err and "--list-rules" in err
    assert "OP402" not in err


def test_a_mistyped_rule_code_in_pyproject_names_the_setting(units: Path) -> None:
    (units / "pyproject.toml").write_text('[tool.lintunits]\nignore = ["OP405", "VL3O1"]\n')
    code, _, err = lint(str(units / "warn.service"), "--config", str(units / "pyproject.toml"))
    assert code == 2 and "VL3O1" in err and "ignore" in err


@pytest.mark.parametrize("codes", ["ALL", "OP", "op402", "SC", "SC2086", "S", "VL3"])
def test_rule_codes_families_prefixes_and_shellcheck_codes_are_accepted(
    units: Path, codes: str
) -> None:
    assert lint(str(units / "warn.service"), "--no-shellcheck", "--select", codes)[0] in (0, 1)


def test_unknown_versions_exit_two(units: Path) -> None:
    code, _, err = lint(str(units / "good.service"), "--vllm-version", "latest")
    assert code == 2 and "latest" in err
    code, _, err = lint(str(units / "good.service"), "--systemd-version", "100")
    assert code == 2 and "100" in err


def test_a_vllm_release_without_a_catalog_is_linted_with_the_nearest_older_one(
    units: Path,
) -> None:
    code, out, err = lint(str(units / "good.service"), "--vllm-version", "0.13.5")
    assert code == 0, err
    assert "0.13.5 has no catalog of its own; linted with 0.13.0's" in out


def test_no_input_is_a_usage_error() -> None:
    code, _, err = lint()
    assert code == 2 and "no input" in err


def test_directory_and_glob_inputs(units: Path) -> None:
    _, out, _ = lint(str(units), "--format", "json", "--no-shellcheck")
    paths = sorted(Path(f["path"]).name for f in json.loads(out)["files"])
    assert paths == ["bad.service", "good.service", "warn.service"]
    _, out, _ = lint(str(units / "g*.service"), "--format", "json", "--no-shellcheck")
    assert [Path(f["path"]).name for f in json.loads(out)["files"]] == ["good.service"]


def test_stdin_input() -> None:
    code, out, _ = lint("-", "--format", "json", "--no-shellcheck", stdin=BAD)
    assert code == 1
    report = json.loads(out)
    assert report["files"][0]["path"] == "-"
    assert any(f["code"] == "EX201" for f in report["files"][0]["findings"])


def test_json_report_has_findings_and_argv(units: Path) -> None:
    _, out, _ = lint(str(units / "bad.service"), "--format", "json", "--no-shellcheck")
    file = json.loads(out)["files"][0]
    finding = next(f for f in file["findings"] if f["code"] == "EX201")
    assert {
        "code",
        "name",
        "severity",
        "line",
        "column",
        "end_line",
        "end_column",
        "message",
    } <= set(finding)
    assert finding["fix"]["edits"][0]["replacement"] == "$"
    pre = next(c for c in file["commands"] if c["key"] == "ExecStartPre")
    assert pre["argv"] == ["/bin/bash", "-c", 'free=1; [ "" -lt 1000 ]']
    assert pre["section"] == "Service" and pre["line"] == 5 and pre["prefixes"] == ""


def test_show_argv_prints_exact_arguments(units: Path) -> None:
    _, out, _ = lint(str(units / "bad.service"), "--show-argv", "--no-shellcheck")
    assert "ExecStartPre argv:" in out
    assert "'free=1; [ \"\" -lt 1000 ]'" in out


def test_select_and_ignore(units: Path) -> None:
    _, out, _ = lint(str(units / "warn.service"), "--format", "json", "--select", "OP")
    codes = {f["code"] for f in json.loads(out)["files"][0]["findings"]}
    assert codes and all(c.startswith("OP") for c in codes)
    _, out, _ = lint(str(units / "bad.service"), "--format", "json", "--ignore", "EX201,SC")
    codes = {f["code"] for f in json.loads(out)["files"][0]["findings"]}
    assert "EX201" not in codes and not any(c.startswith("SC") for c in codes)


@pytest.mark.parametrize(
    ("select", "ignore", "shellcheck_runs"),
    [
        ((), (), True),
        (("S",), (), True),  # a prefix of SD and SC: both families
        (("SC2086",), ("SC",), True),  # the longer pattern wins, as in ruff
        (("VL",), (), False),
        ((), ("SC",), False),
        ((), ("S",), False),
        ((), ("SC2086",), True),
    ],
)
def test_shellcheck_runs_when_some_sc_code_is_selected(select, ignore, shellcheck_runs) -> None:
    assert _active("SC", LintOptions(select=select, ignore=ignore)) is shellcheck_runs


def test_diff_previews_and_fix_applies(units: Path) -> None:
    path = units / "bad.service"
    code, out, _ = lint(str(path), "--diff", "--no-shellcheck")
    assert code == 1
    assert "-ExecStartPre=/bin/bash -c 'free=1; [ \"${free}\" -lt 1000 ]'" in out
    assert "+ExecStartPre=/bin/bash -c 'free=1; [ \"$${free}\" -lt 1000 ]'" in out
    assert path.read_text() == BAD  # --diff changes nothing
    code, out, _ = lint(str(path), "--fix", "--no-shellcheck", "--format", "json")
    assert "$${free}" in path.read_text()
    codes = {f["code"] for f in json.loads(out)["files"][0]["findings"]}
    assert "EX201" not in codes


def test_pyproject_config_is_read(units: Path) -> None:
    (units / "pyproject.toml").write_text(
        '[tool.lintunits]\nignore = ["EX201"]\nfail-on = "error"\n'
    )
    _, out, _ = lint("bad.service", "--format", "json", "--no-shellcheck", cwd=units)
    codes = {f["code"] for f in json.loads(out)["files"][0]["findings"]}
    assert "EX201" not in codes


def test_bad_pyproject_config_is_a_usage_error(units: Path) -> None:
    (units / "pyproject.toml").write_text("[tool.lintunits]\nfail_on = 3\n")
    code, _, err = lint("bad.service", cwd=units)
    assert code == 2 and "unknown key" in err


def test_inline_disable_comment(units: Path) -> None:
    text = BAD.replace("ExecStartPre=", "# lintunits: disable=EX201\nExecStartPre=")
    (units / "bad.service").write_text(text)
    _, out, _ = lint(str(units / "bad.service"), "--format", "json", "--no-shellcheck")
    codes = {f["code"] for f in json.loads(out)["files"][0]["findings"]}
    assert "EX201" not in codes


def test_list_rules_and_explain() -> None:
    code, out, _ = lint("--list-rules", "--format", "json")
    rules = json.loads(out)
    codes = {r["code"] for r in rules}
    assert code == 0 and {"SD102", "EX201", "OP403"} <= codes
    code, out, _ = lint("--explain", "ex201")
    assert code == 0 and "Why is this bad?" in out and "$$" in out
    assert lint("--explain", "ZZ999")[0] == 2


def test_manage_py_lintunits_is_the_same_tool(units: Path) -> None:
    proc = subprocess.run(
        [
            sys.executable,
            "manage.py",
            "lintunits",
            str(units / "bad.service"),
            "--format",
            "json",
            "--no-shellcheck",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 1, proc.stderr
    assert any(f["code"] == "EX201" for f in json.loads(proc.stdout)["files"][0]["findings"])


def test_python_m_linting_runs_without_django(units: Path) -> None:
    code = (
        "import sys, runpy; sys.modules['django'] = None; "
        f"sys.argv = ['lintunits', {str(units / 'good.service')!r}, '--no-shellcheck']; "
        "runpy.run_module('linting', run_name='__main__')"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=False
    )
    assert proc.returncode == 0, proc.stderr


def test_internal_error_exits_two_with_one_line_not_a_traceback(
    units: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(*args: object, **kwargs: object) -> None:
        raise RuntimeError("boom")

    monkeypatch.setattr(linting.cli, "lint_paths", broken)
    code, out, err = lint(str(units / "good.service"))
    assert code == 2
    assert "internal error: RuntimeError: boom" in err and "Traceback" not in out + err
    monkeypatch.setenv("LINTUNITS_DEBUG", "1")
    with pytest.raises(RuntimeError):
        lint(str(units / "good.service"))


def test_a_run_pauses_the_garbage_collector_and_restores_it(
    units: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    during: list[bool] = []
    real = linting.cli.lint_paths

    def noting(paths: list[str], options: LintOptions) -> object:
        during.append(gc.isenabled())
        return real(paths, options)

    monkeypatch.setattr(linting.cli, "lint_paths", noting)
    assert gc.isenabled()
    code, _, _ = lint(str(units / "good.service"))
    assert code == 0
    assert during == [False]
    assert gc.isenabled()


def test_the_garbage_collector_comes_back_after_a_failed_run(
    units: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def failing(paths: list[str], options: LintOptions) -> object:
        raise RuntimeError("boom")

    monkeypatch.setattr(linting.cli, "lint_paths", failing)
    monkeypatch.setenv("LINTUNITS_DEBUG", "1")
    with pytest.raises(RuntimeError):
        lint(str(units / "good.service"))
    assert gc.isenabled()


# -- leaving the process ------------------------------------------------------------


def command(*argv: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """`python -m linting ARGV`, as CI runs it."""
    return subprocess.run(
        [sys.executable, "-m", "linting", *argv],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, **(env or {})},
        check=False,
    )


def test_the_command_leaves_without_tearing_the_interpreter_down() -> None:
    """After the report is written the process ends at once (os._exit, as mypy does): an
    atexit handler, which a normal interpreter exit would run, never runs."""
    script = (
        "import atexit, sys; atexit.register(print, 'torn down'); "
        "sys.argv = ['lintunits', '--list-rules']; "
        "from linting.cli import run_and_exit; run_and_exit()"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    assert "EX201" in done.stdout
    assert "torn down" not in done.stdout


def test_a_large_report_is_written_whole_with_its_exit_code_and_nothing_left_behind(
    tmp_path: Path,
) -> None:
    units = tmp_path / "units"
    units.mkdir()
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    for i in range(120):
        (units / f"u{i:03d}.service").write_text(
            f"[Service]\nExecStart=/bin/bash -c 'echo $$foo{i}'\n", encoding="utf-8"
        )
    done = command(
        "--format", "json", "--fail-on", "warning", str(units),
        env={"TMPDIR": str(scratch), "LINTUNITS_CACHE_DIR": "off"},
    )  # fmt: skip
    assert done.returncode == 1, done.stderr
    report = json.loads(done.stdout)  # the whole document: every byte was flushed
    assert len(report["files"]) == 120
    assert sum(f["code"] == "SC2086" for fr in report["files"] for f in fr["findings"]) == 120
    assert list(scratch.iterdir()) == []  # ShellCheck's temp files are gone


def test_usage_errors_still_exit_two_from_the_command() -> None:
    done = command("--no-such-option")
    assert done.returncode == 2
    assert "unrecognized arguments" in done.stderr


def test_the_command_leaves_only_the_cache_database_behind(tmp_path: Path) -> None:
    """Leaving with os._exit must not leave SQLite's write-ahead log beside the cache: the
    connection is closed (and the log folded in) before the process ends."""
    unit = tmp_path / "u.service"
    unit.write_text("[Service]\nExecStart=/bin/bash -c 'echo $$foo'\n", encoding="utf-8")
    cache = tmp_path / "cache"
    done = command("--format", "json", str(unit), env={"LINTUNITS_CACHE_DIR": str(cache)})
    assert done.returncode == 0, done.stderr
    assert sorted(p.name for p in cache.iterdir()) == ["shellcheck.sqlite3"]
