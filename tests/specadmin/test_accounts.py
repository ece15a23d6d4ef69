"""Accounts and secrets: login throttling, password rules, the secret key, the
demo account, django-q's admin, TLS settings."""

from __future__ import annotations

import io
import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group, Permission
from django.contrib.auth.password_validation import validate_password
from django.core import mail
from django.core.exceptions import ValidationError
from django.core.management import CommandError, call_command
from django.test import Client
from django_q.models import Failure, Schedule

from units.roles import ROLE_PERMISSIONS, VIEWER, ensure_roles

ROOT = Path(__file__).resolve().parents[2]
LOGIN = "/accounts/login/"


@pytest.fixture(autouse=True)
def _fast_hashing(settings) -> None:  # type: ignore[no-untyped-def]
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


def login(client: Client, username: str, password: str, address: str = "10.1.1.1") -> int:
    response = client.post(LOGIN, {"username": username, "password": password}, REMOTE_ADDR=address)
    return response.status_code


def logged_in(client: Client) -> bool:
    return client.get("/").status_code == 200


# -- login throttling (django-axes) ---------------------------------------------------------


@pytest.mark.django_db
def test_200_wrong_passwords_then_the_right_one_does_not_log_in() -> None:
    get_user_model().objects.create_user("carol", password="correct horse battery")
    client = Client()
    codes = {login(client, "carol", f"guess-{n}") for n in range(200)}
    assert 429 in codes
    assert login(client, "carol", "correct horse battery") == 429
    assert not logged_in(client)


@pytest.mark.django_db
def test_ten_wrong_passwords_for_one_user_do_not_lock_out_another_user_at_that_address() -> None:
    users = get_user_model().objects
    users.create_user("carol", password="correct horse battery")
    users.create_user("ada", password="ada's long passphrase")
    for _ in range(10):
        login(Client(), "carol", "wrong", address="10.0.0.1")  # e.g. the proxy's address
    assert login(Client(), "carol", "correct horse battery", address="10.0.0.1") == 429
    admin = Client()
    assert login(admin, "ada", "ada's long passphrase", address="10.0.0.1") == 302
    assert logged_in(admin)


@pytest.mark.django_db
def test_guessing_one_user_from_one_address_does_not_lock_that_user_elsewhere() -> None:
    get_user_model().objects.create_user("carol", password="correct horse battery")
    for _ in range(12):
        login(Client(), "carol", "wrong", address="10.2.0.1")
    assert login(Client(), "carol", "correct horse battery", address="10.2.0.1") == 429
    elsewhere = Client()
    assert login(elsewhere, "carol", "correct horse battery", address="10.9.9.9") == 302


def forwarded_login(
    client: Client, username: str, password: str, *, peer: str, forwarded_for: str
) -> int:
    response = client.post(
        LOGIN,
        {"username": username, "password": password},
        REMOTE_ADDR=peer,
        HTTP_X_FORWARDED_FOR=forwarded_for,
    )
    return response.status_code


@pytest.mark.django_db
def test_behind_the_configured_proxy_each_client_address_is_throttled_on_its_own(
    settings,  # type: ignore[no-untyped-def]
) -> None:
    settings.SPECADMIN_TRUSTED_PROXIES = ["127.0.0.1"]
    get_user_model().objects.create_user("carol", password="correct horse battery")
    for _ in range(10):
        forwarded_login(Client(), "carol", "wrong", peer="127.0.0.1", forwarded_for="203.0.113.9")
    locked = forwarded_login(
        Client(), "carol", "correct horse battery", peer="127.0.0.1", forwarded_for="203.0.113.9"
    )
    assert locked == 429
    other = forwarded_login(
        Client(), "carol", "correct horse battery", peer="127.0.0.1", forwarded_for="198.51.100.4"
    )
    assert other == 302


@pytest.mark.django_db
def test_a_forged_forwarded_for_from_an_address_that_is_not_the_proxy_is_ignored(
    settings,  # type: ignore[no-untyped-def]
) -> None:
    settings.SPECADMIN_TRUSTED_PROXIES = ["127.0.0.1"]
    get_user_model().objects.create_user("carol", password="correct horse battery")
    # A guesser talking to the server directly names a new address on every try …
    for n in range(10):
        forwarded_login(Client(), "carol", "wrong", peer="192.0.2.50", forwarded_for=f"10.3.0.{n}")
    # … but is throttled by the address it really comes from.
    again = forwarded_login(
        Client(), "carol", "correct horse battery", peer="192.0.2.50", forwarded_for="10.3.0.99"
    )
    assert again == 429


@pytest.mark.django_db
def test_a_few_typos_do_not_lock_anyone_out() -> None:
    get_user_model().objects.create_user("carol", password="correct horse battery")
    client = Client()
    for _ in range(3):
        assert login(client, "carol", "typo") == 200  # the form again, with its error
    assert login(client, "carol", "correct horse battery") == 302
    assert logged_in(client)


@pytest.mark.django_db
def test_axes_reset_lifts_a_lockout() -> None:
    get_user_model().objects.create_user("carol", password="correct horse battery")
    client = Client()
    for _ in range(12):
        login(client, "carol", "wrong")
    call_command("axes_reset", stdout=io.StringIO())
    assert login(client, "carol", "correct horse battery") == 302


# -- password reset by e-mail ------------------------------------------------------------------


@pytest.mark.django_db
@pytest.mark.parametrize(
    "url", ["/accounts/password_reset/", "/accounts/password_reset/done/", "/accounts/reset/done/",
            "/accounts/reset/MQ/set-password/"],
)  # fmt: skip
def test_without_a_mail_server_the_reset_pages_say_reset_by_email_is_off(
    settings,
    url: str,  # type: ignore[no-untyped-def]
) -> None:
    settings.PASSWORD_RESET_BY_EMAIL = False
    response = Client().get(url)
    assert response.status_code == 404
    page = response.content.decode()
    assert "Password reset by e-mail is off" in page and "manage.py changepassword" in page


@pytest.mark.django_db
def test_without_a_mail_server_a_reset_request_sends_nothing(settings) -> None:  # type: ignore[no-untyped-def]
    settings.PASSWORD_RESET_BY_EMAIL = False
    get_user_model().objects.create_user("carol", email="carol@example.com", password="x" * 16)
    response = Client().post("/accounts/password_reset/", {"email": "carol@example.com"})
    assert response.status_code == 404
    assert mail.outbox == []


@pytest.mark.django_db
def test_with_a_mail_server_the_reset_link_is_sent(settings) -> None:  # type: ignore[no-untyped-def]
    settings.PASSWORD_RESET_BY_EMAIL = True
    get_user_model().objects.create_user("carol", email="carol@example.com", password="x" * 16)
    response = Client().post("/accounts/password_reset/", {"email": "carol@example.com"})
    assert response.status_code == 302
    assert [m.to for m in mail.outbox] == [["carol@example.com"]]


@pytest.mark.parametrize(
    ("env", "enabled"),
    [({}, False), ({"EMAIL_HOST": "smtp.example"}, True),
     ({"EMAIL_BACKEND": "django.core.mail.backends.console.EmailBackend"}, True)],
)  # fmt: skip
def test_reset_by_email_is_on_only_with_a_mail_server(
    tmp_path: Path, env: dict[str, str], enabled: bool
) -> None:
    got = settings_probe("s.PASSWORD_RESET_BY_EMAIL", tmp_path, **env)
    assert got.returncode == 0, got.stderr
    assert json.loads(got.stdout) is enabled


# -- passwords ------------------------------------------------------------------------------


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("password", "why"),
    [
        ("short-1", "too short"),
        ("password1234", "too common"),
        ("123456789012345", "entirely numeric"),
        ("carol.smith.2026", "too similar"),
    ],
)
def test_the_standard_password_validators_apply(password: str, why: str) -> None:
    user = get_user_model()(username="carol.smith.2026", email="carol@example.com")
    with pytest.raises(ValidationError, match=why):
        validate_password(password, user)


# -- the secret key -------------------------------------------------------------------------


def settings_probe(expression: str, var_dir: Path, **env: str) -> subprocess.CompletedProcess:
    clean = {
        k: v
        for k, v in os.environ.items()
        if k not in {"SECRET_KEY", "SECRET_KEY_FILE", "DATABASE_URL", "REDIS_URL"}
    }
    clean.update(env, DJANGO_SETTINGS_MODULE="specadmin.settings", SPECADMIN_VAR_DIR=str(var_dir))
    code = (
        "import json, django; django.setup(); from django.conf import settings as s; "
        f"print(json.dumps({expression}, default=str))"
    )
    return subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=clean, capture_output=True, text=True
    )


def test_without_a_secret_key_one_is_generated_once_into_var_mode_0600(tmp_path: Path) -> None:
    first = settings_probe("s.SECRET_KEY", tmp_path)
    second = settings_probe("s.SECRET_KEY", tmp_path)
    assert first.returncode == 0, first.stderr
    key = json.loads(first.stdout)
    assert key == json.loads(second.stdout) and len(key) >= 50
    assert "insecure" not in key
    path = tmp_path / "secret_key"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_a_secret_key_file_others_can_read_is_refused_with_a_clear_message(
    tmp_path: Path,
) -> None:
    settings_probe("s.SECRET_KEY", tmp_path)
    (tmp_path / "secret_key").chmod(0o644)
    result = settings_probe("s.SECRET_KEY", tmp_path)
    assert result.returncode != 0
    assert "is readable or writable by others (mode 0644): run `chmod 600" in result.stderr


def test_a_missing_secret_key_file_is_a_clear_error(tmp_path: Path) -> None:
    result = settings_probe("s.SECRET_KEY", tmp_path, SECRET_KEY_FILE=str(tmp_path / "nope"))
    assert result.returncode != 0
    assert f"SECRET_KEY_FILE={tmp_path / 'nope'}: cannot read it" in result.stderr


# -- TLS ------------------------------------------------------------------------------------


def check_deploy(tmp_path: Path, **env: str) -> subprocess.CompletedProcess:
    # Not the test run's own switches (nor DJANGO_ALLOW_ASYNC_UNSAFE from a developer's shell).
    unset = {"DATABASE_URL", "REDIS_URL", "DJANGO_ALLOW_ASYNC_UNSAFE", "DEBUG"}
    clean = {k: v for k, v in os.environ.items() if k not in unset}
    clean.update(env, SPECADMIN_VAR_DIR=str(tmp_path), ALLOWED_HOSTS="specadmin.example")
    return subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        cwd=ROOT,
        env=clean,
        capture_output=True,
        text=True,
    )


@pytest.mark.parametrize(
    "env",
    [{"SPECADMIN_TLS": "1"}, {"SPECADMIN_PROXY_SSL_HEADER": "X-Forwarded-Proto"}],
    ids=["tls", "proxy"],
)
def test_check_deploy_is_clean_when_served_over_tls(tmp_path: Path, env: dict[str, str]) -> None:
    result = check_deploy(tmp_path, **env)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "no issues" in result.stdout


def test_check_deploy_names_what_plain_http_lacks(tmp_path: Path) -> None:
    result = check_deploy(tmp_path)
    assert result.returncode != 0
    assert "security.W004" in result.stderr and "security.W012" in result.stderr


def test_tls_makes_cookies_secure_and_sends_hsts(tmp_path: Path) -> None:
    got = settings_probe(
        "[s.SESSION_COOKIE_SECURE, s.CSRF_COOKIE_SECURE, s.SECURE_HSTS_SECONDS, "
        "s.SECURE_SSL_REDIRECT, s.SECURE_PROXY_SSL_HEADER]",
        tmp_path,
        SPECADMIN_PROXY_SSL_HEADER="X-Forwarded-Proto",
    )
    assert json.loads(got.stdout) == [
        True,
        True,
        31_536_000,
        True,
        ["HTTP_X_FORWARDED_PROTO", "https"],
    ]


# -- the demo account ------------------------------------------------------------------------


@pytest.mark.django_db
def test_loaddemo_says_the_demo_account_is_for_the_demo_only() -> None:
    out = io.StringIO()
    call_command("loaddemo", stdout=out)
    assert "DEMO ONLY: log in as admin / specadmin-demo" in out.getvalue()


@pytest.mark.django_db
def test_loaddemo_refuses_a_database_with_real_users() -> None:
    get_user_model().objects.create_user("carol", password="correct horse battery")
    with pytest.raises(CommandError, match=r"this database has real users \(carol\)") as info:
        call_command("loaddemo", stdout=io.StringIO())
    assert info.value.returncode == 1
    assert not get_user_model().objects.filter(username="admin").exists()
    out = io.StringIO()
    call_command("loaddemo", "--skip-if-real-users", stdout=out)
    assert out.getvalue().startswith("loaddemo skipped: this database has real users")
    assert not get_user_model().objects.filter(username="admin").exists()


# -- django-q2 in the admin ---------------------------------------------------------------------


@pytest.mark.django_db
def test_schedules_and_tasks_are_read_only_in_the_admin(admin_client: Client) -> None:
    schedule = Schedule.objects.get(func="audit.tasks.checkpoint_task")
    assert admin_client.get("/admin/django_q/schedule/add/").status_code == 403
    change = f"/admin/django_q/schedule/{schedule.pk}/change/"
    response = admin_client.post(change, {"func": "os.system", "args": "'id'", "name": "x"})
    assert response.status_code == 403
    schedule.refresh_from_db()
    assert schedule.func == "audit.tasks.checkpoint_task"
    listing = admin_client.get("/admin/django_q/failure/").content.decode()
    assert "resubmit" not in listing.lower()
    assert Failure.objects.count() == 0


# -- roles on a fresh install -------------------------------------------------------------------

ROLES_OF = (
    "import json, django; django.setup(); from django.contrib.auth.models import Group; "
    "print(json.dumps({g.name: sorted(f'{p.content_type.app_label}.{p.codename}' "
    "for p in g.permissions.all()) for g in Group.objects.all()}))"
)


def test_migrate_alone_creates_the_four_roles_with_their_permissions(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k not in {"DATABASE_URL", "REDIS_URL", "DEBUG"}}
    env.update(SPECADMIN_VAR_DIR=str(tmp_path), DJANGO_SETTINGS_MODULE="specadmin.settings")
    migrate = [sys.executable, "manage.py", "migrate", "-v0"]
    subprocess.run(migrate, cwd=ROOT, env=env, check=True, capture_output=True)
    read = subprocess.run(
        [sys.executable, "-c", ROLES_OF], cwd=ROOT, env=env, capture_output=True, text=True
    )
    assert read.returncode == 0, read.stderr
    roles = json.loads(read.stdout)
    expected = {role: sorted(names) for role, names in ROLE_PERMISSIONS.items()}
    assert roles == expected
    # Again: nothing changes (ensure_roles is idempotent).
    subprocess.run(migrate, cwd=ROOT, env=env, check=True, capture_output=True)


@pytest.mark.django_db
def test_ensure_roles_twice_keeps_an_administrators_extra_grant() -> None:
    viewer = ensure_roles()[VIEWER]
    extra = Permission.objects.get(codename="add_host")
    viewer.permissions.add(extra)
    again = ensure_roles()[VIEWER]
    assert again.pk == viewer.pk and extra in again.permissions.all()
    assert Group.objects.filter(name=VIEWER).count() == 1
