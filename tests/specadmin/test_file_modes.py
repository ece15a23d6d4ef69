"""Private files: the SQLite database (with its -wal and -shm files) and every secret
(SECRET_KEY_FILE, the audit key) are created 0600 and refused when others may read them;
`manage.py check` says so, and so does it for a weak secret key (specadmin/checks.py,
specadmin/backends/sqlite3)."""

from __future__ import annotations

import os
import secrets
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from specadmin.checks import secret_key_weakness

ROOT = Path(__file__).resolve().parents[2]
# Opens the database (the WAL files exist while a connection writes), reports the modes.
WRITE_AND_STAT = """
import os, stat, django
django.setup()
from django.db import connection
with connection.cursor() as cursor:
    cursor.execute("CREATE TABLE t (x INTEGER)")
    cursor.execute("INSERT INTO t VALUES (1)")
    name = connection.settings_dict["NAME"]
    for path in (name, name + "-wal", name + "-shm"):
        print(path, oct(stat.S_IMODE(os.stat(path).st_mode)))
"""


def environment(var_dir: Path, **env: str) -> dict[str, str]:
    unset = {"SECRET_KEY", "SECRET_KEY_FILE", "DATABASE_URL", "REDIS_URL", "DEBUG"}
    clean = {k: v for k, v in os.environ.items() if k not in unset}
    clean.update(env, DJANGO_SETTINGS_MODULE="specadmin.settings", SPECADMIN_VAR_DIR=str(var_dir))
    return clean


def python(code: str, var_dir: Path, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        env=environment(var_dir, **env),
        capture_output=True,
        text=True,
        # The usual umask: SQLite alone would create the files 0644.
        preexec_fn=lambda: os.umask(0o022),
    )


def manage_check(var_dir: Path, *args: str, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "manage.py", "check", *args],
        cwd=ROOT,
        env=environment(var_dir, **env),
        capture_output=True,
        text=True,
    )


def key_file(path: Path, value: str, mode: int) -> Path:
    path.write_text(value + "\n")
    path.chmod(mode)
    return path


def test_a_new_database_and_its_wal_and_shm_files_are_created_0600(tmp_path: Path) -> None:
    result = python(WRITE_AND_STAT, tmp_path)
    assert result.returncode == 0, result.stderr
    modes = dict(line.split() for line in result.stdout.splitlines())
    database = str(tmp_path / "specadmin.sqlite3")
    assert modes == {database: "0o600", database + "-wal": "0o600", database + "-shm": "0o600"}


def test_a_database_file_others_can_read_is_refused_when_opened(tmp_path: Path) -> None:
    database = tmp_path / "specadmin.sqlite3"
    database.touch()
    database.chmod(0o644)
    result = python(WRITE_AND_STAT, tmp_path)
    assert result.returncode != 0
    assert (
        f"{database} (the SQLite database) is readable or writable by others (mode 0644): "
        f"run `chmod 600 {database}`" in result.stderr
    )


def test_check_errors_on_a_world_readable_database_file(tmp_path: Path) -> None:
    database = tmp_path / "specadmin.sqlite3"
    database.touch()
    database.chmod(0o644)
    (tmp_path / "specadmin.sqlite3-wal").touch(mode=0o666)
    result = manage_check(tmp_path)
    assert result.returncode != 0
    assert "specadmin.E003" in result.stderr
    assert f"{database} (the SQLite database) is readable" in result.stderr
    assert f"{database}-wal (the SQLite database) is readable" in result.stderr


def test_check_errors_on_a_secret_key_file_with_mode_0644(tmp_path: Path) -> None:
    path = key_file(tmp_path / "secret_key_file", secrets.token_urlsafe(50), 0o644)
    result = manage_check(tmp_path, SECRET_KEY_FILE=str(path))
    assert result.returncode != 0
    assert "specadmin.E001" in result.stderr
    assert f"{path} (SECRET_KEY_FILE) is readable or writable by others (mode 0644)" in (
        result.stderr
    )


@pytest.mark.parametrize("value", ["abc", "abcde" * 10, "django-insecure-" + "x" * 60])
def test_check_errors_on_a_weak_secret_key(tmp_path: Path, value: str) -> None:
    path = key_file(tmp_path / "secret_key_file", value, 0o600)
    result = manage_check(tmp_path, SECRET_KEY_FILE=str(path))
    assert result.returncode != 0
    assert "specadmin.E002" in result.stderr
    assert f"The secret key (SECRET_KEY_FILE {path}) is weak" in result.stderr


def test_check_errors_on_an_audit_key_others_can_read(tmp_path: Path) -> None:
    audit_key = key_file(tmp_path / "audit.key", secrets.token_hex(32), 0o640)
    result = manage_check(tmp_path)
    assert result.returncode != 0
    assert "specadmin.E004" in result.stderr and str(audit_key) in result.stderr


def test_check_is_clean_with_private_files_and_a_strong_key(tmp_path: Path) -> None:
    path = key_file(tmp_path / "secret_key_file", secrets.token_urlsafe(50), 0o600)
    assert python(WRITE_AND_STAT, tmp_path, SECRET_KEY_FILE=str(path)).returncode == 0
    result = manage_check(tmp_path, SECRET_KEY_FILE=str(path))
    assert result.returncode == 0, result.stderr
    assert stat.S_IMODE((tmp_path / "specadmin.sqlite3").stat().st_mode) == 0o600


# Fixed values (not drawn per run): pytest-xdist workers must collect the same test ids.
@pytest.mark.parametrize(
    ("key", "weak"),
    [
        ("r3Kq8vXn2LwT9bYc5HfJ0sMdA7gUe4ZpQ1oVi6NtRyWxCzB_lE-kS", False),  # token_urlsafe(40)
        ("9f2c4e81a7b03d65f1e8c2a49b7d0e3f5a6c8b1d2e4f7a9c03", False),  # 50 hex digits
        ("abc", True),
        ("ab" * 40, True),
        ("abcdefgh" * 7, True),
    ],
)
def test_secret_key_strength(key: str, weak: bool) -> None:
    assert (secret_key_weakness(key) is not None) == weak


def test_the_web_server_refuses_to_start_on_a_database_others_can_read(tmp_path: Path) -> None:
    database = tmp_path / "specadmin.sqlite3"
    database.touch()
    database.chmod(0o604)
    result = python("import specadmin.wsgi", tmp_path)
    assert result.returncode != 0
    assert "specadmin.E003" in result.stderr and "(mode 0604)" in result.stderr
