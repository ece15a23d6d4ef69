"""ShellCheck results persist across runs in LINTUNITS_CACHE_DIR."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from linting.shell import shellcheck
from linting.shell.diskcache import DATABASE
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
    assert (tmp_path / DATABASE).is_file()
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
    assert not list(tmp_path.rglob("*"))


def test_corrupt_cache_entry_is_ignored(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LINTUNITS_CACHE_DIR", str(tmp_path))
    script = ShellScript(traced("echo $baz"), "bash")
    clear_cache()
    expected = check_scripts([script])
    with sqlite3.connect(tmp_path / DATABASE) as db:
        assert db.execute("UPDATE results SET value = '{not json'").rowcount == 1
    clear_cache()
    assert check_scripts([script]) == expected


def test_damaged_cache_database_is_ignored(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LINTUNITS_CACHE_DIR", str(tmp_path))
    (tmp_path / DATABASE).write_bytes(b"not a database\n" * 100)
    clear_cache()
    (found,) = check_scripts([ShellScript(traced("echo $qux"), "bash")])
    assert "SC2086" in {f.code for f in found}


def test_a_cache_directory_that_cannot_be_created_only_costs_the_speed_up(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "file").write_text("")
    monkeypatch.setenv("LINTUNITS_CACHE_DIR", str(tmp_path / "file" / "cache"))
    clear_cache()
    (found,) = check_scripts([ShellScript(traced("echo $quux"), "bash")])
    assert "SC2086" in {f.code for f in found}
