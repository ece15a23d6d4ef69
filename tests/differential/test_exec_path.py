"""The executable path systemd keeps for a command (`path_simplify()`, src/basic/path-util.c)
against the model's, read back from real systemd: `systemctl show -p ExecStart` prints
`path=` as systemd stored it (argv[0] stays as written, so the argv dumper cannot see it).
The spellings are those of src/test/test-path-util.c `TEST(path_simplify)`."""

from __future__ import annotations

import re

import pytest

from linting.context import UnitContext
from linting.options import LintOptions
from linting.unitfile import parse_text
from tests.testhost.host import TestHost

pytestmark = pytest.mark.testhost

EXE = "/usr/bin/true"
SPELLINGS = [
    EXE,
    "//usr/bin/./true",
    "/usr/bin/../bin/true",
    "/../usr/bin/true",
    "/./.././../usr/bin/true",
    "////.././///../usr/bin/true",
    "/../usr//bin/../bin/true",
    "/.../usr/bin/true",
]


def _model_path(text: str, name: str, version: int) -> str | None:
    ctx = UnitContext(
        parse_text(text, name), LintOptions(systemd_version=version, shellcheck=False)
    )
    return ctx.commands[0].command.path if ctx.commands else None


def test_the_executable_path_systemd_keeps_is_the_models(testhost: TestHost) -> None:
    version = int(testhost.nsenter(["systemctl", "--version"], check=True).stdout.split()[1])
    names = []
    for index, spelling in enumerate(SPELLINGS):
        name = f"diff-path-{index}.service"
        text = f"[Service]\nType=oneshot\nExecStart={spelling} a\n"
        (testhost.root / "etc/systemd/system" / name).write_text(text, encoding="utf-8")
        names.append((name, spelling, text))
    testhost.systemctl("daemon-reload", check=True)
    wrong = []
    for name, spelling, text in names:
        shown = testhost.nsenter(["systemctl", "show", "-p", "ExecStart", "--value", name]).stdout
        match = re.search(r"path=(\S+) ;", shown)
        real = match.group(1) if match else None
        model = _model_path(text, name, version)
        if real != model:
            wrong.append(f"{spelling}: systemd {version} keeps {real}, the model {model}")
    for name, _spelling, _text in names:
        (testhost.root / "etc/systemd/system" / name).unlink()
    testhost.systemctl("daemon-reload")
    assert not wrong, "\n".join(wrong)
