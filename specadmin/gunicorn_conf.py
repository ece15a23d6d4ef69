"""gunicorn settings for `make run` and the systemd unit of docs/operations.md.

One access-log line per request on stdout; gunicorn's own messages and the application's
log on stderr (Django's logging, `specadmin.settings.LOGGING`). Sizes come from the
environment like every other setting (`WEB_WORKERS`, `WEB_THREADS`, `WEB_TIMEOUT`).
See https://docs.gunicorn.org/en/stable/settings.html for each name.
"""

from __future__ import annotations

from typing import Any

from specadmin.bind_address import PUBLIC_BIND_WARNING, public_binds
from specadmin.env import envint, envstr

wsgi_app = "specadmin.wsgi:application"
# Loopback by default: a buffering reverse proxy belongs in front (docs/operations.md,
# "Behind a reverse proxy"); `--bind` on the command line overrides it.
bind = [b for b in envstr("SPECADMIN_BIND", "127.0.0.1:8000").split(",") if b]
# Threads per worker: the pages poll with htmx and some views wait on SSH for a few seconds.
worker_class = "gthread"
workers = envint("WEB_WORKERS", 2)
threads = envint("WEB_THREADS", 4)
# A request that reads a unit from a host waits at most for the SSH timeouts; beyond this
# the worker is restarted.
timeout = envint("WEB_TIMEOUT", 60)
graceful_timeout = 10
accesslog = "-"
access_log_format = '%(h)s "%(r)s" %(s)s %(B)s %(M)sms'
errorlog = "-"
loglevel = "info"
control_socket_disable = True  # no `gunicornc`; two servers on one machine would share its path


def on_starting(server: Any) -> None:
    """Before binding: say so when the addresses are reachable from other machines and no
    trusted proxy is configured in front (the same test as `check --deploy`, W001)."""
    public = public_binds(list(server.cfg.bind))
    if public and not envstr("SPECADMIN_TRUSTED_PROXIES", ""):
        server.log.warning(PUBLIC_BIND_WARNING.format(binds=", ".join(public)))
