"""Settings come from the environment with an embedded default."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command

ROOT = Path(__file__).resolve().parents[2]
PROBE = (
    "import json, django; django.setup(); from django.conf import settings; "
    "print(json.dumps({'db': settings.DATABASES['default'], 'q': settings.Q_CLUSTER}, default=str))"
)


def settings_with(**env: str) -> dict:
    clean = {k: v for k, v in os.environ.items() if k not in {"DATABASE_URL", "REDIS_URL"}}
    clean.update(env, DJANGO_SETTINGS_MODULE="specadmin.settings")
    out = subprocess.run(
        [sys.executable, "-c", PROBE],
        cwd=ROOT,
        env=clean,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return json.loads(out)


def test_default_is_embedded_sqlite_with_orm_broker() -> None:
    got = settings_with()
    # Django's SQLite backend with a private database file (specadmin/backends/sqlite3).
    assert got["db"]["ENGINE"] == "specadmin.backends.sqlite3"
    assert got["db"]["OPTIONS"]["transaction_mode"] == "IMMEDIATE"
    assert "journal_mode=WAL" in got["db"]["OPTIONS"]["init_command"]
    assert got["q"]["orm"] == "default" and "redis" not in got["q"]
    assert got["q"]["retry"] > got["q"]["timeout"]


def test_database_url_selects_postgresql_and_redis_url_the_redis_broker() -> None:
    got = settings_with(
        DATABASE_URL="postgres://postgres@127.0.0.1:5432/specadmin",
        REDIS_URL="redis://127.0.0.1:6379/0",
    )
    assert got["db"]["ENGINE"] == "django.db.backends.postgresql"
    assert got["db"]["NAME"] == "specadmin" and got["db"]["HOST"] == "127.0.0.1"
    assert got["q"]["redis"] == "redis://127.0.0.1:6379/0" and "orm" not in got["q"]


def test_sqlite_url_with_absolute_path(tmp_path: Path) -> None:
    got = settings_with(DATABASE_URL=f"sqlite:///{tmp_path}/x.db")
    assert got["db"]["NAME"] == f"{tmp_path}/x.db"


def test_bad_boolean_environment_is_a_clear_error() -> None:
    clean = dict(os.environ, DEBUG="maybe", DJANGO_SETTINGS_MODULE="specadmin.settings")
    proc = subprocess.run(
        [sys.executable, "-c", PROBE],
        cwd=ROOT,
        env=clean,
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode != 0
    assert "DEBUG='maybe' is not a boolean" in proc.stderr


@pytest.mark.django_db
def test_loaddemo_creates_the_readme_account_once() -> None:
    call_command("loaddemo")
    call_command("loaddemo")
    users = get_user_model().objects.filter(username="admin")
    assert users.count() == 1
    assert users.get().check_password("specadmin-demo")


@pytest.mark.django_db
def test_login_required_for_home(client) -> None:  # type: ignore[no-untyped-def]
    response = client.get("/")
    assert response.status_code == 302 and "/accounts/login/" in response["Location"]
    call_command("loaddemo")
    # Through the login page (django-axes checks logins there; client.login() has no request).
    response = client.post("/accounts/login/", {"username": "admin", "password": "specadmin-demo"})
    assert response.status_code == 302
    assert client.get("/").status_code == 200
