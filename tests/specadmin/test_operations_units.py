"""The systemd units docs/operations.md shows for running specadmin itself are clean for
specadmin's own linter (every finding at `info` or above fails)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# "`/etc/systemd/system/NAME`:" followed by an ```ini block.
UNIT_BLOCK = re.compile(r"^`/etc/systemd/system/([\w@.-]+)`.*?```ini\n(.*?)```", re.S | re.M)


def units_in_operations_doc() -> dict[str, str]:
    return dict(UNIT_BLOCK.findall((ROOT / "docs" / "operations.md").read_text()))


def test_operations_doc_shows_the_web_and_worker_units() -> None:
    assert set(units_in_operations_doc()) == {
        "specadmin-web.service",
        "specadmin-worker@.service",
    }


def test_the_documented_units_have_no_lint_findings(tmp_path: Path) -> None:
    paths = []
    for name, text in units_in_operations_doc().items():
        path = tmp_path / name
        path.write_text(text)
        paths.append(str(path))
    result = subprocess.run(
        [sys.executable, "-m", "linting", "--fail-on", "info", *paths],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stdout + result.stderr
