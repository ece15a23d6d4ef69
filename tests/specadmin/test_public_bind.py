"""Serving directly on a public address (no buffering proxy in front) is warned about:
by `manage.py check --deploy` (specadmin.W001) and by gunicorn when it starts
(specadmin/gunicorn_conf.py `on_starting`; docs/operations.md, "Behind a reverse proxy")."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from specadmin.bind_address import is_public

ROOT = Path(__file__).resolve().parents[2]
GUNICORN = str(Path(sys.executable).parent / "gunicorn")
# Reserved for documentation (RFC 5737): no machine has it, so nothing is ever bound.
UNASSIGNED = "192.0.2.1:8000"


def environment(var_dir: Path, **env: str) -> dict[str, str]:
    unset = {"DATABASE_URL", "REDIS_URL", "DEBUG", "SPECADMIN_BIND", "SPECADMIN_TRUSTED_PROXIES"}
    clean = {k: v for k, v in os.environ.items() if k not in unset}
    clean.update(env, SPECADMIN_VAR_DIR=str(var_dir), ALLOWED_HOSTS="specadmin.example")
    return clean


def check_deploy(var_dir: Path, **env: str) -> str:
    result = subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy", "--tag", "security"],
        cwd=ROOT,
        env=environment(var_dir, SPECADMIN_TLS="1", **env),
        capture_output=True,
        text=True,
    )
    return result.stdout + result.stderr


@pytest.mark.parametrize("bind", ["0.0.0.0:8000", "[::]:8000", "specadmin.example:80"])
def test_check_deploy_warns_when_served_directly_on_a_public_address(
    tmp_path: Path, bind: str
) -> None:
    out = check_deploy(tmp_path, SPECADMIN_BIND=bind)
    assert "specadmin.W001" in out
    assert f"specadmin is served directly on {bind}: slow clients can hold every" in out


@pytest.mark.parametrize(
    "env",
    [
        {},
        {"SPECADMIN_BIND": "127.0.0.1:8000"},
        {"SPECADMIN_BIND": "unix:/run/specadmin.sock"},
        {"SPECADMIN_BIND": "0.0.0.0:8000", "SPECADMIN_TRUSTED_PROXIES": "10.0.0.2"},
    ],
    ids=["default", "loopback", "unix-socket", "behind-a-proxy"],
)
def test_check_deploy_is_quiet_on_loopback_or_behind_a_proxy(
    tmp_path: Path, env: dict[str, str]
) -> None:
    assert "specadmin.W001" not in check_deploy(tmp_path, **env)


def test_gunicorn_warns_at_start_when_bound_to_a_public_address(tmp_path: Path) -> None:
    server = subprocess.Popen(
        [GUNICORN, "--config", "python:specadmin.gunicorn_conf", "--bind", UNASSIGNED],
        cwd=ROOT,
        env=environment(tmp_path),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        seen = []
        assert server.stderr is not None
        for line in server.stderr:  # it warns before it tries to bind (and fails to)
            seen.append(line)
            if "served directly on" in line or "connection to" in line:
                break
    finally:
        server.terminate()
        server.wait()
    assert any(f"specadmin is served directly on {UNASSIGNED}" in line for line in seen), seen


@pytest.mark.parametrize(
    ("bind", "public"),
    [
        ("127.0.0.1:8000", False),
        ("127.8.0.1:8000", False),
        ("localhost:8000", False),
        ("[::1]:8000", False),
        ("unix:/run/x.sock", False),
        ("fd://3", False),
        ("0.0.0.0:8000", True),
        ("10.0.0.5:8000", True),
        ("[::]:8000", True),
        ("example.org:80", True),
        ("0.0.0.0", True),
    ],
)
def test_which_binds_are_public(bind: str, public: bool) -> None:
    assert is_public(bind) == public
