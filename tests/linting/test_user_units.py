"""Units for `systemctl --user` (linting/user_units.py): `%h` is that user's home, `%u` their
name, nothing runs as root, and EX205's fix never breaks a specifier the author wants."""

from __future__ import annotations

import io
from pathlib import Path

from linting.cli import run
from linting.context import UnitContext
from linting.findings import Severity
from linting.options import LintOptions
from linting.unitfile import parse_text
from tests.linting.helpers import fixed, lint

USER_DIR = "/home/alice/.config/systemd/user"
SERVE = "ExecStart=/opt/vllm/bin/vllm serve /models/m --host 0.0.0.0 --port 8000\n"
CD_HOME = "ExecStartPre=/bin/bash -c 'mkdir -p %h/.cache/vllm && test -w %h/.cache/vllm'\n"


def _context(text: str, path: str, **options: object) -> UnitContext:
    return UnitContext(parse_text(text, path), LintOptions(shellcheck=False, **options))  # type: ignore[arg-type]


def test_a_unit_in_a_user_directory_gets_its_users_home_for_percent_h() -> None:
    ctx = _context("[Service]\n" + CD_HOME + SERVE, f"{USER_DIR}/vllm.service")
    assert ctx.user_manager is not None and ctx.user_manager.name == "alice"
    script = ctx.commands[0].argv[2]
    assert script == "mkdir -p /home/alice/.cache/vllm && test -w /home/alice/.cache/vllm"
    assert ctx.exec_environment("ExecStart")["HOME"] == "/home/alice"
    assert ctx.exec_environment("ExecStart")["USER"] == "alice"


def test_a_system_unit_still_gets_roots_home() -> None:
    ctx = _context("[Service]\n" + CD_HOME + SERVE, "/etc/systemd/system/vllm.service")
    assert ctx.user_manager is None
    assert "/root/.cache/vllm" in ctx.commands[0].argv[2]


def test_home_in_a_user_units_script_is_not_reported_and_not_fixed() -> None:
    text = "[Service]\n" + CD_HOME + SERVE
    assert lint(text, "EX205", name=f"{USER_DIR}/vllm.service") == []


def test_home_in_a_system_units_script_is_a_warning_without_a_fix() -> None:
    text = "[Service]\n" + CD_HOME + SERVE
    findings = lint(text, "EX205", name="/etc/systemd/system/vllm.service")
    assert [f.severity for f in findings] == [Severity.WARNING, Severity.WARNING]
    assert all(f.fix is None for f in findings)
    assert "it becomes '/root'" in findings[0].message


def test_a_date_format_in_a_user_unit_is_still_reported_and_fixed() -> None:
    text = "[Service]\nExecStartPre=/bin/bash -c 'echo $(date +%h) >> /tmp/start'\n" + SERVE
    (finding,) = lint(text, "EX205", name=f"{USER_DIR}/vllm.service")
    assert finding.severity == Severity.ERROR
    assert "date +%%h" in fixed(text, [finding])


def test_the_instance_in_a_template_units_script_is_not_reported() -> None:
    text = "[Service]\nExecStartPre=/bin/sh -c 'test -d /models/%i'\n" + SERVE
    assert lint(text, "EX205", name="vllm@.service") == []
    assert lint(text, "EX205", name="vllm.service") != []


def test_wanted_by_default_target_without_user_is_a_user_unit() -> None:
    text = "[Service]\n" + SERVE + "\n[Install]\nWantedBy=default.target\n"
    assert _context(text, "deploy/vllm.service").user_manager is not None
    assert lint(text, "OP410", name="deploy/vllm.service") == []
    system = text.replace("default.target", "multi-user.target")
    assert lint(system, "OP410", name="deploy/vllm.service") != []


def test_a_comment_saying_systemctl_user_makes_a_user_unit() -> None:
    text = "# install: systemctl --user enable --now vllm\n[Service]\n" + SERVE
    ctx = _context(text, "deploy/vllm.service")
    assert ctx.user_manager is not None
    assert ctx.user_manager.name == "user"
    assert ctx.specifiers["h"] == "/home/user"
    assert ctx.specifiers["t"] == "/run/user/1000"


def test_host_option_with_percent_h_in_a_user_unit_names_the_users_home() -> None:
    text = "[Service]\nExecStart=/opt/ray/bin/ray start --head --node-ip-address=%h --block\n"
    (finding,) = lint(text, "EX207", name=f"{USER_DIR}/ray.service")
    assert "/home/alice" in finding.message and "/root" not in finding.message


def test_user_root_written_out_on_every_interface_is_reported_like_no_user() -> None:
    text = "[Service]\nUser=root\n" + SERVE
    (finding,) = lint(text, "OP410", name="vllm.service")
    assert "runs as root (User=root)" in finding.message


def test_user_unit_option_and_config_mark_units(tmp_path: Path) -> None:
    unit = tmp_path / "deploy" / "vllm.service"
    unit.parent.mkdir()
    unit.write_text("[Service]\n" + SERVE, encoding="utf-8")
    out, err = io.StringIO(), io.StringIO()
    assert run(["--no-shellcheck", "--select", "OP410", str(unit)], out, err) == 0
    assert "OP410" in out.getvalue()
    for extra in (["--user-unit"], ["--user-unit", str(unit.parent)]):
        out = io.StringIO()
        run(["--no-shellcheck", "--select", "OP410", *extra, str(unit)], out, err)
        assert "OP410" not in out.getvalue(), extra
    config = tmp_path / "pyproject.toml"
    config.write_text('[tool.lintunits]\nuser-units = ["deploy/*.service"]\n', encoding="utf-8")
    out = io.StringIO()
    run(["--no-shellcheck", "--select", "OP410", "--config", str(config), str(unit)], out, err)
    assert "OP410" not in out.getvalue()
