"""The programs specadmin runs on hosts (hostops/programs/) are checked like code: every
shell one by ShellCheck here (the Python ones by `ruff check`, which `make test` runs), and
every file is one the code loads."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from hostops.programs import names, program
from linting.shell.shellcheck import find_shellcheck

ROOT = Path(__file__).resolve().parents[2]
PROGRAMS = ROOT / "hostops" / "programs"
SHELL = [name for name in names() if name.endswith(".sh")]


def _shellcheck(path: Path) -> subprocess.CompletedProcess[str]:
    # --norc: a developer's ~/.shellcheckrc must not decide what passes.
    return subprocess.run(
        [find_shellcheck(), "--norc", "--format=gcc", str(path)],
        capture_output=True,
        text=True,
        check=False,
    )


@pytest.mark.parametrize("name", SHELL)
def test_each_shell_program_passes_shellcheck(name: str) -> None:
    result = _shellcheck(PROGRAMS / name)
    assert result.returncode == 0, result.stdout + result.stderr


def test_shellcheck_here_sees_an_unquoted_expansion(tmp_path: Path) -> None:
    bad = tmp_path / "bad.sh"
    bad.write_text('# shellcheck shell=sh\nfor p do kill -s $1 "$p"; done\n')
    assert "SC2086" in _shellcheck(bad).stdout


def test_each_shell_program_names_its_shell() -> None:
    # Without the directive ShellCheck would refuse a file with no #! line; with bash's
    # rules it would pass what a host's /bin/sh (dash) cannot run.
    assert [n for n in SHELL if not program(n).startswith("# shellcheck shell=sh\n")] == []


def test_every_program_file_is_loaded_by_the_code() -> None:
    sources = "\n".join(
        path.read_text(encoding="utf-8")
        for package in ("hostops", "deploys", "perf")
        for path in (ROOT / package).rglob("*.py")
        if PROGRAMS not in path.parents
    )
    loaded = set(re.findall(r'\bprogram\("([^"]+)"\)', sources))
    assert sorted(set(names()) - loaded) == []
    assert sorted(loaded - set(names())) == []
