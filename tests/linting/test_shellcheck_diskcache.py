"""ShellCheck results persist across runs in LINTUNITS_CACHE_DIR."""

from __future__ import annotations

from pathlib import Path

import pytest

from linting.shell import shellcheck
from linting.shell.shellcheck import ShellScript, check_scripts, clear_cache
from linting.spans import Pos, Traced


def traced(text: str) -> Traced:
    return Traced(text, tuple(Pos(3, 20 + i) for i in range(len(text))))


def test_second_run_reads_results_from_disk_without_shellcheck(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LINTUNITS_CACHE_DIR", str(tmp_path))
    script = ShellScript(traced("echo $foo"), "bash")
    clear_cache()
    first = check_scripts([script])
    assert "SC2086" in {f.code for f in first[0]}
    assert list(tmp_path.rglob("*.json"))
    clear_cache()
    calls: list[list[str]] = []
    monkeypatch.setattr(shellcheck, "run_process", lambda *a, **k: calls.append(a[0]))
    second = check_scripts([script])
    assert calls == []
    assert second == first


def test_cache_off_writes_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LINTUNITS_CACHE_DIR", "off")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    clear_cache()
    check_scripts([ShellScript(traced("echo $bar"), "bash")])
    assert not list(tmp_path.rglob("*.json"))


def test_corrupt_cache_entry_is_ignored(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LINTUNITS_CACHE_DIR", str(tmp_path))
    script = ShellScript(traced("echo $baz"), "bash")
    clear_cache()
    expected = check_scripts([script])
    for path in tmp_path.rglob("*.json"):
        path.write_text("{not json")
    clear_cache()
    assert check_scripts([script]) == expected
