"""specadmin settings: everything comes from the environment, with an embedded default.

The default install is one machine: SQLite (WAL, IMMEDIATE transactions) and django-q2's
ORM broker. `DATABASE_URL` switches to PostgreSQL (or another SQLite file) and `REDIS_URL`
switches the job broker to Redis for several `qcluster` workers.
"""

from __future__ import annotations

import os
import re
from datetime import timedelta
from pathlib import Path

import dj_database_url

from specadmin.env import envbool, envint, envsecret, envstr, generated_secret

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = Path(envstr("SPECADMIN_VAR_DIR", str(BASE_DIR / "var")))

# No built-in default: SECRET_KEY / SECRET_KEY_FILE, else one generated on first run into
# var/secret_key (mode 0600) and kept there (docs/operations.md "Secrets").
SECRET_KEY = envsecret("SECRET_KEY", "") or generated_secret(VAR_DIR / "secret_key")
DEBUG = envbool("DEBUG", False)
ALLOWED_HOSTS = [h for h in envstr("ALLOWED_HOSTS", "127.0.0.1,localhost").split(",") if h]

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django_q",
    # Login throttling (https://django-axes.readthedocs.io/en/latest/2_installation.html).
    "axes",
    "linting",
    "units",
    "audit",
    "deploys",
    "perf",
    "fleet",
    "rest_framework",
    "drf_spectacular",
    "api",
    "notify",
    "watchdog",
    # specadmin's own system checks (specadmin/checks.py: file modes, the secret key, the
    # trusted proxies, serving on a public address).
    "specadmin",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    # Static files (CSS, vendored htmx) from the app itself: no separate web server needed.
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    # A NUL character in a path, query or form is a 400 before any view reads it.
    "specadmin.nul_characters.RefuseNulCharacters",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    # Last, as the axes docs ask: it turns a lockout into the lockout response.
    "axes.middleware.AxesMiddleware",
]

# django-axes first: it refuses a locked-out login before any password is checked
# (https://django-axes.readthedocs.io/en/latest/2_installation.html).
AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",
    "django.contrib.auth.backends.ModelBackend",
]
# After AXES_FAILURE_LIMIT failed logins for one username from one address, logins of
# that username from that address are refused (HTTP 429) for AXES_COOLOFF_TIME, even with
# the right password; other users at that address (everyone behind one proxy) and that
# user elsewhere are not; `manage.py axes_reset` lifts it (https://django-axes.readthedocs
# .io/en/latest/4_configuration.html). The address is X-Forwarded-For's only when the peer
# is a proxy listed in SPECADMIN_TRUSTED_PROXIES (docs/operations.md, "Behind a reverse
# proxy"; specadmin/client_address.py).
AXES_FAILURE_LIMIT = envint("AXES_FAILURE_LIMIT", 10)
AXES_COOLOFF_TIME = timedelta(minutes=envint("AXES_COOLOFF_MINUTES", 15))
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
AXES_CLIENT_IP_CALLABLE = "specadmin.client_address.client_address"
SPECADMIN_TRUSTED_PROXIES = [p for p in envstr("SPECADMIN_TRUSTED_PROXIES", "").split(",") if p]
# Where gunicorn listens (specadmin/gunicorn_conf.py; scripts/run-server.sh sets it): a
# public address with no proxy in front is warned about (specadmin/checks.py, W001).
SPECADMIN_BIND = envstr("SPECADMIN_BIND", "127.0.0.1:8000")
AXES_RESET_ON_SUCCESS = True
AXES_VERBOSE = False  # no banner on every manage.py command; lockouts are still logged

ROOT_URLCONF = "specadmin.urls"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "deploys.context_processors.rollback_banner",
            ],
        },
    },
]

WSGI_APPLICATION = "specadmin.wsgi.application"


def _database() -> dict:
    url = envstr("DATABASE_URL", f"sqlite:///{VAR_DIR / 'specadmin.sqlite3'}")
    config = dj_database_url.parse(url, conn_max_age=envint("DB_CONN_MAX_AGE", 0))
    if config["ENGINE"] == "django.db.backends.sqlite3":
        # Django's backend, but the database file is created 0600 and refused when others
        # may read it (specadmin/backends/sqlite3/base.py).
        config["ENGINE"] = "specadmin.backends.sqlite3"
        # SQLite creates the file but not its directory (var/ is not in git).
        Path(config["NAME"]).parent.mkdir(parents=True, exist_ok=True)
        VAR_DIR.mkdir(parents=True, exist_ok=True)
        # Several qcluster workers write at once: IMMEDIATE transactions take the write lock
        # up front (no deadlock-prone lock upgrades), WAL lets readers proceed, and the busy
        # timeout waits instead of failing with "database is locked".
        config["OPTIONS"] = {
            "transaction_mode": "IMMEDIATE",
            "timeout": 20,
            "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
        }
        # Tests of concurrent writers (threads) need a real file: in-memory SQLite answers
        # "database table is locked" instead of waiting for the busy timeout.
        # One file per process, so two test runs at once (or xdist workers) never share it.
        config["TEST"] = {"NAME": str(VAR_DIR / f"test-{os.getpid()}.sqlite3")}
    return config


DATABASES = {"default": _database()}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# Django's standard validators (docs: topics/auth/passwords, "Enabling password validation").
AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {
        "NAME": "django.contrib.auth.password_validation.MinimumLengthValidator",
        "OPTIONS": {"min_length": 12},
    },
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = VAR_DIR / "static"  # `collectstatic` (make run) fills it; WhiteNoise serves it
STATIC_ROOT.mkdir(parents=True, exist_ok=True)
# Serve straight from the app folders too, so tests and a fresh checkout need no collectstatic.
WHITENOISE_USE_FINDERS = True
STATICFILES_DIRS = [BASE_DIR / "static"]
LOGIN_URL = "/accounts/login/"

# Served over TLS (SPECADMIN_TLS=1, or behind a proxy that sets SPECADMIN_PROXY_SSL_HEADER,
# e.g. X-Forwarded-Proto): cookies only over HTTPS, HTTP redirected, HSTS. `manage.py check
# --deploy` is clean then (docs: howto/deployment/checklist; ref/settings SECURE_*).
SPECADMIN_TLS = envbool("SPECADMIN_TLS", False)
_PROXY_SSL_HEADER = envstr("SPECADMIN_PROXY_SSL_HEADER", "")
if _PROXY_SSL_HEADER:
    # Only when the proxy always sets (or strips) this header: a client could send it too.
    SECURE_PROXY_SSL_HEADER = ("HTTP_" + _PROXY_SSL_HEADER.upper().replace("-", "_"), "https")
if SPECADMIN_TLS or _PROXY_SSL_HEADER:
    SESSION_COOKIE_SECURE = True
    CSRF_COOKIE_SECURE = True
    SECURE_SSL_REDIRECT = envbool("SECURE_SSL_REDIRECT", True)
    SECURE_HSTS_SECONDS = envint("SECURE_HSTS_SECONDS", 31_536_000)
    SECURE_HSTS_INCLUDE_SUBDOMAINS = envbool("SECURE_HSTS_INCLUDE_SUBDOMAINS", True)
    SECURE_HSTS_PRELOAD = envbool("SECURE_HSTS_PRELOAD", True)
SESSION_COOKIE_HTTPONLY = True
X_FRAME_OPTIONS = "DENY"
LOGIN_REDIRECT_URL = "/"

# Mail, for password reset links only (specadmin/accounts.py): without EMAIL_HOST (or an
# EMAIL_BACKEND) the reset pages say reset by e-mail is off instead of failing to send.
EMAIL_HOST = envstr("EMAIL_HOST", "")
EMAIL_PORT = envint("EMAIL_PORT", 587)
EMAIL_HOST_USER = envstr("EMAIL_HOST_USER", "")
EMAIL_HOST_PASSWORD = envsecret("EMAIL_HOST_PASSWORD", "")
EMAIL_USE_TLS = envbool("EMAIL_USE_TLS", True)
DEFAULT_FROM_EMAIL = envstr("DEFAULT_FROM_EMAIL", "specadmin@localhost")
if envstr("EMAIL_BACKEND", ""):
    EMAIL_BACKEND = envstr("EMAIL_BACKEND", "")
# Notifications (notify/, docs/notifications.md): each try waits at most NOTIFY_TIMEOUT_S on a
# socket; a failed one is tried again after NOTIFY_BACKOFF_S, doubling up to
# NOTIFY_MAX_BACKOFF_S, NOTIFY_MAX_ATTEMPTS times in all; links start with NOTIFY_SITE_URL.
NOTIFY_TIMEOUT_S = envint("NOTIFY_TIMEOUT_S", 10)
NOTIFY_MAX_ATTEMPTS = envint("NOTIFY_MAX_ATTEMPTS", 8)
NOTIFY_BACKOFF_S = envint("NOTIFY_BACKOFF_S", 30)
NOTIFY_MAX_BACKOFF_S = envint("NOTIFY_MAX_BACKOFF_S", 3600)
NOTIFY_SITE_URL = envstr("NOTIFY_SITE_URL", "")
PASSWORD_RESET_BY_EMAIL = bool(EMAIL_HOST or envstr("EMAIL_BACKEND", ""))

_REDIS_URL = envstr("REDIS_URL", "")
Q_CLUSTER: dict = {
    "name": "specadmin",
    "workers": envint("Q_WORKERS", 2),
    # django-q2 requires retry > timeout, or a slow task is handed to a second worker.
    # 3 h: a deploy with the default waits (a 45 min model load, and as long again for its
    # rollback) takes at most about 1 h 55 min (deploys.jobs.checks, W002).
    "timeout": envint("Q_TIMEOUT", 10800),
    "retry": envint("Q_RETRY", 10900),
    "max_attempts": 1,
    "catch_up": False,
}
# Workers run only specadmin's own tasks, whatever the queue or a schedule row names: the
# brokers hold every package to the allow-list in code (docs/security.md).
if _REDIS_URL:
    Q_CLUSTER["redis"] = _REDIS_URL
    Q_CLUSTER["broker_class"] = "deploys.jobs.brokers.AllowListedRedis"
else:
    Q_CLUSTER["orm"] = "default"
    Q_CLUSTER["broker_class"] = "deploys.jobs.brokers.AllowListedORM"

# The watchdog (docs/watchdog.md): off, its minute schedule and the check after each job do
# nothing (the schedule row stays). The job tests with real workers turn it off, so their
# two workers are the jobs'.
WATCHDOG_ENABLED = envbool("WATCHDOG_ENABLED", True)

# Audit history (audit/keys.py, audit/checkpoints.py; docs/operations.md "Audit history"):
# the HMAC/signing secret lives in a file beside SECRET_KEY_FILE (or in var/), never in the
# database; signed checkpoints of the chain's head go to a file, optionally to syslog (the
# journal) and to a command (e.g. `ssh auditor@loghost 'cat >> checkpoints.jsonl'`).
_SECRET_KEY_FILE = envstr("SECRET_KEY_FILE", "")
_KEY_DIR = Path(_SECRET_KEY_FILE).parent if _SECRET_KEY_FILE else VAR_DIR
AUDIT_KEY_FILE = Path(envstr("AUDIT_KEY_FILE", str(_KEY_DIR / "audit.key")))
# One checkpoint file per database by default: checkpoints of another chain (a test
# database, a switch from SQLite to PostgreSQL) would contradict this one.
_DB = DATABASES["default"]
_DB_LABEL = re.sub(
    r"[^A-Za-z0-9_.-]", "_", f"{_DB['ENGINE'].rsplit('.', 1)[-1]}-{Path(str(_DB['NAME'])).stem}"
)
AUDIT_CHECKPOINT_FILE = envstr(
    "AUDIT_CHECKPOINT_FILE", str(VAR_DIR / f"audit-checkpoints-{_DB_LABEL}.jsonl")
)
# Witnesses (audit/witnesses.py; docs/security.md): every checkpoint is also sent, as it is
# made, where this server cannot rewrite it. The file is on by default: put it on another
# machine's mount ("off" turns it off); a webhook gets each checkpoint as a JSON POST.
_WITNESS_FILE = envstr("AUDIT_WITNESS_FILE", str(VAR_DIR / f"audit-witness-{_DB_LABEL}.jsonl"))
AUDIT_WITNESS_FILE = "" if _WITNESS_FILE.lower() == "off" else _WITNESS_FILE
AUDIT_WITNESS_URLS = envstr("AUDIT_WITNESS_URL", "").split()
AUDIT_WITNESS_TOKEN = envsecret("AUDIT_WITNESS_TOKEN", "")
AUDIT_WITNESS_TIMEOUT = envint("AUDIT_WITNESS_TIMEOUT", 10)
AUDIT_CHECKPOINT_SYSLOG = envbool("AUDIT_CHECKPOINT_SYSLOG", False)
AUDIT_CHECKPOINT_SYSLOG_ADDRESS = envstr("AUDIT_CHECKPOINT_SYSLOG_ADDRESS", "/dev/log")
AUDIT_CHECKPOINT_COMMAND = envstr("AUDIT_CHECKPOINT_COMMAND", "")

# The API (api/; docs/api.md): tokens or a session, JSON only, bounded pages and bodies,
# rates per token (DRF keeps the counts in the default cache: per process).
API_MAX_BODY_BYTES = envint("API_MAX_BODY_BYTES", 1024 * 1024)
REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "api.authentication.TokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["api.permissions.TokenScope", "api.permissions.RolePermissions"],
    "DEFAULT_THROTTLE_CLASSES": ["api.throttling.ReadRate", "api.throttling.WriteRate"],
    "DEFAULT_THROTTLE_RATES": {
        "api_read": envstr("API_READ_RATE", "600/min"),
        "api_write": envstr("API_WRITE_RATE", "60/min"),
    },
    "DEFAULT_PARSER_CLASSES": ["api.parsers.BoundedJSONParser"],
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    "DEFAULT_PAGINATION_CLASS": "api.pagination.Pages",
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "EXCEPTION_HANDLER": "api.errors.handle",
    "UNAUTHENTICATED_USER": "django.contrib.auth.models.AnonymousUser",
}
SPECTACULAR_SETTINGS = {
    "TITLE": "specadmin API",
    "DESCRIPTION": "Profiles, versions, hosts, deploy requests, jobs, benchmarks and history "
    "for CI and scripts (docs/api.md). Approval is not part of the API.",
    "VERSION": "1",
    "SERVE_INCLUDE_SCHEMA": False,
    "SCHEMA_PATH_PREFIX": "/api/v1",
    "POSTPROCESSING_HOOKS": [
        "drf_spectacular.hooks.postprocess_schema_enums",
        "api.schema.add_error_responses",
    ],
}

# A deploy approval (and a pending request) expires after this many hours.
DEPLOY_APPROVAL_TTL_HOURS = envint("DEPLOY_APPROVAL_TTL_HOURS", 24)
# One job per host: its lease (renewed every sixth of it; a dead worker's expires after
# this long and its job page says "worker lost") and how long a job waits for a busy host
# (deploys.jobs.lease, deploys.jobs.liveness).
DEPLOY_LOCK_LEASE_S = envint("DEPLOY_LOCK_LEASE_S", 60)
DEPLOY_LOCK_WAIT_S = envint("DEPLOY_LOCK_WAIT_S", 600)

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "filters": {"client_errors": {"()": "specadmin.log_filters.ClientErrorsOnOneLine"}},
    "formatters": {
        # gunicorn's own layout, so the console reads as one log.
        "line": {
            "format": "[%(asctime)s] [%(process)d] [%(levelname)s] %(name)s: %(message)s",
            "datefmt": "%Y-%m-%d %H:%M:%S %z",
        }
    },
    "handlers": {
        "console": {
            "class": "logging.StreamHandler",
            "formatter": "line",
            "filters": ["client_errors"],
        }
    },
    "root": {"handlers": ["console"], "level": envstr("LOG_LEVEL", "INFO")},
    "loggers": {
        # paramiko logs every failed connection from its transport thread at ERROR, with
        # the traceback one record per line. The same failure reaches our transports as an
        # exception and is reported once, as a TransportError (page, probe result, audit).
        "paramiko": {"level": "CRITICAL"},
        # django-axes logs four INFO lines per successful login; failures and lockouts
        # (WARNING) stay.
        "axes": {"level": "WARNING"},
    },
}
