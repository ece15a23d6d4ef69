"""Every benchmark script with options starts: `--help` answers with its usage and exit 0,
without Django set up (the scripts set it up themselves, after their imports). A module a
benchmark imports that needs Django at import time fails here, not on the day someone
measures (benchmarks/rollout.py once imported tests/deploys/helpers.py that way)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPTS = sorted(
    p for p in (ROOT / "benchmarks").glob("*.py") if "argparse.ArgumentParser(" in p.read_text()
)


def test_the_benchmarks_with_options_are_found() -> None:
    names = {p.name for p in SCRIPTS}
    assert {"rollout.py", "watchdog_scale.py", "onhost_client.py"} <= names, names


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.name)
def test_a_benchmark_script_answers_help_without_django_set_up(script: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "DJANGO_SETTINGS_MODULE"}
    done = subprocess.run(
        [sys.executable, str(script), "--help"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "usage:" in done.stdout
