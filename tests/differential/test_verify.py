"""The linter's load failures against `systemd-analyze verify` of this machine (no host).

verify never expands `$` (fact 7) and exits non-zero for mere warnings, so it is an oracle
for load failures only: "Unit configuration has fatal error", "bad unit file setting",
"Refusing". The dumper exists at its path here, so "is not executable" does not interfere.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from linting.engine import lint_paths
from linting.findings import Severity
from linting.options import LintOptions
from tests.differential.corpus import all_cases
from tests.differential.dumper import build_dumper

SYSTEM_UNITS = Path("/lib/systemd/system")
_REJECTED = re.compile(
    r"^(?:Unit (?P<a>\S+) has a bad unit file setting\.|"
    r"(?P<b>\S+): (?:Unit configuration has fatal error|.*Refusing\.))"
)

pytestmark = pytest.mark.skipif(
    shutil.which("systemd-analyze") is None, reason="systemd-analyze not installed"
)


def _version() -> int:
    out = subprocess.run(["systemd-analyze", "--version"], capture_output=True, text=True)
    return int(out.stdout.split()[1])


def verify_rejected(paths: list[Path]) -> tuple[set[str], str]:
    """Names of the units verify refuses to load (one run for all: a few tenths of a second)."""
    res = subprocess.run(
        ["systemd-analyze", "verify", "--man=no", "--recursive-errors=no", *map(str, paths)],
        capture_output=True,
        text=True,
        errors="replace",
        timeout=120,
    )
    rejected = set()
    for line in (res.stdout + res.stderr).splitlines():
        match = _REJECTED.match(line)
        if match:
            rejected.add(match["a"] or match["b"])
    return rejected, res.stdout + res.stderr


def linter_rejected(paths: list[Path], version: int) -> set[str]:
    report = lint_paths(map(str, paths), LintOptions(systemd_version=version, shellcheck=False))
    assert not report.input_errors
    return {
        Path(fr.path).name
        for fr in report.files
        if any(f.severity == Severity.ERROR and "refuses to load" in f.message for f in fr.findings)
    }


def test_corpus_load_failures_match_verify(tmp_path: Path) -> None:
    build_dumper()
    paths = []
    for index, case in enumerate(all_cases()):
        path = tmp_path / case.unit(index)  # instances as files: verify resolves %i from them
        path.write_text(case.text(), encoding="utf-8")
        paths.append(path)
    version = _version()
    rejected, output = verify_rejected(paths)
    predicted = linter_rejected(paths, version)
    assert rejected, f"verify rejected nothing: the parsing of its output is stale?\n{output}"
    assert rejected - predicted == set(), f"verify rejects, linter loads:\n{output}"
    assert predicted - rejected == set(), "linter rejects, verify loads"


def test_system_units_load_failures_match_verify() -> None:
    paths = sorted(p for p in SYSTEM_UNITS.glob("*.*") if p.is_file() and not p.is_symlink())
    if not paths:
        pytest.skip(f"no units in {SYSTEM_UNITS}")
    rejected, output = verify_rejected(paths)
    predicted = linter_rejected(paths, _version())
    assert rejected - predicted == set(), f"verify rejects, linter loads:\n{output}"
    # No false alarms on the distribution's own units either.
    assert predicted - rejected == set(), "linter rejects units that systemd loads"
