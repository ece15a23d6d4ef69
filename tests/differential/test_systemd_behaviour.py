"""What the issue-13 rules claim about systemd, checked against a real systemd on a test
host: each unit is loaded (and started where the claim is about running it), and what
systemd did is compared with what the linter says. systemd 252 here; the 257 differences
(env-file comment lines, `/.` executables) in the slow set."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from linting.engine import lint_text
from linting.execline.env_files import parse_env_file, parse_env_file_text
from linting.findings import Severity
from linting.options import LintOptions
from tests.linting.test_env_files import TRICKY
from tests.testhost.host import TestHost

pytestmark = pytest.mark.testhost

TRIXIE = Path("/var/tmp/specadmin-trixie")
UNIT_DIR = "/etc/systemd/system"


def codes(text: str, name: str, version: int = 252, **options: object) -> dict[str, Severity]:
    """The linter's findings for a unit written to `name` (env files mapped to the host's
    copies the test wrote), code -> severity."""
    report = lint_text(
        text,
        name,
        LintOptions(shellcheck=False, systemd_version=version, **options),  # type: ignore[arg-type]
    )
    return {f.code: f.severity for f in report.findings}


def install(host: TestHost, units: dict[str, str]) -> None:
    for name, text in units.items():
        host.write_file(f"{UNIT_DIR}/{name}", text)
    host.systemctl("daemon-reload", check=True)


def show(host: TestHost, unit: str, *props: str) -> dict[str, str]:
    out = host.systemctl("show", unit, *(f"-p{p}" for p in props)).stdout
    return dict(line.split("=", 1) for line in out.splitlines() if "=" in line)


def run_oneshot(host: TestHost, unit: str) -> str:
    """Start a oneshot unit and return what it printed (its journal)."""
    host.systemctl("start", unit)
    for _ in range(50):
        text = host.journal(unit)
        if "Finished" in text or "Failed" in text or "Deactivated" in text:
            return text
        time.sleep(0.1)
    return host.journal(unit)


def oneshot(*lines: str, command: str = "/usr/bin/env") -> str:
    return "\n".join(["[Service]", "Type=oneshot", *lines, f"ExecStart={command}", ""])


def test_env_file_rules_and_invalid_lines_match_systemd(testhost: TestHost) -> None:
    testhost.write_file("/etc/lint13/tricky.env", TRICKY)
    unit = oneshot("EnvironmentFile=/etc/lint13/tricky.env")
    install(testhost, {"lint13-env.service": unit})
    journal = run_oneshot(testhost, "lint13-env.service")
    expected = parse_env_file_text(TRICKY, 252)
    for name, value in expected.items():
        assert f"\n{name}={value}\n" in journal, (name, journal)
    invalid = [e for e in parse_env_file(TRICKY, 252) if e.key not in expected]
    assert [e.key for e in invalid if e.key != "CONT"] == ["export EXPORTED", "FOO BAR", "1BAD"]
    for entry in invalid:
        if entry.key != "CONT":  # swallowed by the comment line before it (252)
            assert f"Ignoring invalid environment assignment '{entry.key}=" in journal
    assert "\nCONT=" not in journal


def test_working_directory_that_systemd_refuses(testhost: TestHost) -> None:
    cases = {
        "lint13-wd1.service": ("WorkingDirectory=${HOME}/vllm", "bad-setting"),
        "lint13-wd2.service": ("WorkingDirectory=opt/app", "bad-setting"),
        "lint13-wd3.service": ("WorkingDirectory=__VLLM_SRC__", "bad-setting"),
        "lint13-wd4.service": ("WorkingDirectory=-opt/app", "loaded"),
        "lint13-wd5.service": ("WorkingDirectory=~", "loaded"),
    }
    install(testhost, {name: oneshot(line) for name, (line, _) in cases.items()})
    for name, (line, state) in cases.items():
        assert show(testhost, name, "LoadState")["LoadState"] == state, line
        found = codes(oneshot(line), name)
        if state == "bad-setting":
            assert found.get("SD116") == Severity.ERROR, line
        else:
            assert found.get("SD116") in (None, Severity.WARNING), line


def test_a_placeholder_working_directory_fails_at_chdir(testhost: TestHost) -> None:
    install(testhost, {"lint13-wd6.service": oneshot("WorkingDirectory=/opt/__VLLM_SRC__")})
    testhost.systemctl("start", "lint13-wd6.service")
    status = show(testhost, "lint13-wd6.service", "ExecMainStatus")["ExecMainStatus"]
    assert status == "200"  # CHDIR
    assert "SD116" in codes(oneshot("WorkingDirectory=/opt/__VLLM_SRC__"), "x.service")


def test_instance_specifier_in_user_outside_a_template_refuses_to_load(
    testhost: TestHost,
) -> None:
    install(testhost, {"lint13-user-i.service": oneshot("User=%i")})
    assert show(testhost, "lint13-user-i.service", "LoadState")["LoadState"] == "bad-setting"
    assert codes(oneshot("User=%i"), "lint13-user-i.service")["SD118"] == Severity.ERROR


def test_user_specifier_with_dynamic_user_runs_as_root(testhost: TestHost) -> None:
    unit = oneshot("User=%u", "DynamicUser=yes", command="/usr/bin/id -u")
    install(testhost, {"lint13-user-u.service": unit})
    assert "\n0\n" in run_oneshot(testhost, "lint13-user-u.service")
    assert codes(unit, "lint13-user-u.service")["EX207"] == Severity.ERROR


def test_variables_in_environment_values_and_shell_forms_stay_literal(testhost: TestHost) -> None:
    unit = oneshot(
        "Environment=PATH=/opt/cuda/bin:$PATH",
        command="/usr/bin/echo X${PORT:-8000} -$MAINPID x$HOME",
    )
    install(testhost, {"lint13-literal.service": unit})
    journal = run_oneshot(testhost, "lint13-literal.service")
    assert "X${PORT:-8000} -$MAINPID x$HOME" in journal
    found = codes(unit, "lint13-literal.service")
    assert {"EX208", "EX209", "EX210"} <= set(found)
    unit = oneshot("Environment=PATH=/opt/cuda/bin:$PATH")
    install(testhost, {"lint13-path.service": unit})
    assert "PATH=/opt/cuda/bin:$PATH\n" in run_oneshot(testhost, "lint13-path.service")


def test_private_devices_hides_the_gpus(testhost: TestHost) -> None:
    testhost.nsenter(["mknod", "-m", "666", "/dev/nvidia0", "c", "195", "0"])
    try:
        probe = "/bin/sh -c 'test -e /dev/nvidia0 && echo SEEN || echo HIDDEN'"
        install(
            testhost,
            {
                "lint13-dev1.service": oneshot("PrivateDevices=yes", command=probe),
                "lint13-dev2.service": oneshot(command=probe),
            },
        )
        assert "HIDDEN" in run_oneshot(testhost, "lint13-dev1.service")
        assert "SEEN" in run_oneshot(testhost, "lint13-dev2.service")
    finally:
        testhost.nsenter(["rm", "-f", "/dev/nvidia0"])
    vllm = (
        "[Service]\nUser=v\nPrivateDevices=yes\n"
        "ExecStart=/opt/v/bin/vllm serve /m --host 127.0.0.1\n"
    )
    assert "OP408" in codes(vllm, "v.service")


def test_a_daemonizing_command_leaves_a_simple_service_dead(testhost: TestHost) -> None:
    unit = "[Service]\nType=simple\nExecStart=/bin/sh -c 'sleep 300 & exit 0'\n"
    install(testhost, {"lint13-daemon.service": unit})
    testhost.systemctl("start", "lint13-daemon.service")
    time.sleep(1.5)
    assert show(testhost, "lint13-daemon.service", "ActiveState")["ActiveState"] == "inactive"
    assert testhost.nsenter(["pgrep", "-f", "sleep 300"]).stdout.strip() == ""
    assert "OP409" in codes(unit, "lint13-daemon.service")


def test_executable_paths_as_systemd_simplifies_them(testhost: TestHost) -> None:
    unit = oneshot(command="//usr/bin/./env") + "ExecStart=/usr/bin/../bin/env\n"
    install(testhost, {"lint13-paths.service": unit})
    shown = testhost.systemctl("show", "lint13-paths.service", "-pExecStart").stdout
    report = lint_text(unit, "lint13-paths.service", LintOptions(shellcheck=False))
    paths = [c.path for c in report.files[0].commands]
    assert paths == ["/usr/bin/env", "/usr/bin/../bin/env"]
    assert "path=/usr/bin/env ;" in shown and "path=/usr/bin/../bin/env ;" in shown


def test_env_file_specifiers_are_resolved_before_the_path_check(testhost: TestHost) -> None:
    unit = oneshot("EnvironmentFile=-%h/app/.env")
    install(testhost, {"lint13-envspec.service": unit})
    files = show(testhost, "lint13-envspec.service", "EnvironmentFiles")["EnvironmentFiles"]
    assert files.startswith("/root/app/.env")
    assert "SD113" not in codes(unit, "lint13-envspec.service")


@pytest.mark.slow
def test_systemd_257_env_file_comments_and_directory_executables(testhost_factory) -> None:
    """v254 reads a line after a comment ending in `\\` again; v257 refuses `/x/.`."""
    if not (TRIXIE / "usr/lib/systemd/systemd").exists():
        pytest.skip(f"no Debian 13 root at {TRIXIE} (make testhost-257)")
    [host] = testhost_factory(1, lower=str(TRIXIE), install_doubles=False, name_prefix="trixie")
    host.write_file("/etc/lint13/tricky.env", TRICKY)
    env_unit = oneshot("EnvironmentFile=/etc/lint13/tricky.env")
    dir_unit = oneshot(command="/usr/bin/env/.")
    install(host, {"lint13-env.service": env_unit, "lint13-dir.service": dir_unit})
    journal = run_oneshot(host, "lint13-env.service")
    assert f"CONT={parse_env_file_text(TRICKY, 257)['CONT']}" in journal
    assert show(host, "lint13-dir.service", "LoadState")["LoadState"] == "bad-setting"
    assert codes(dir_unit, "lint13-dir.service", 257).get("SD106") == Severity.ERROR
    assert "SD106" not in codes(dir_unit, "lint13-dir.service", 252)
