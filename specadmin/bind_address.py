"""Is the web server bound to an address other machines reach? (standard library only:
gunicorn's configuration imports it before Django is loaded.)

gunicorn gives each request one thread from its first byte to its last, so a handful of
clients sending their headers slowly hold every thread (docs/operations.md, "Behind a
reverse proxy"). On loopback only a proxy on the same machine reaches it.
"""

from __future__ import annotations

import ipaddress

PUBLIC_BIND_WARNING = (
    "specadmin is served directly on {binds}: slow clients can hold every web thread. Put "
    "a buffering reverse proxy in front and bind gunicorn to 127.0.0.1 "
    "(docs/operations.md, 'Behind a reverse proxy')."
)


def _host(bind: str) -> str | None:
    """The host part of a gunicorn bind ("HOST:PORT", "[V6]:PORT", "HOST"); None for a
    Unix socket or a file descriptor."""
    if bind.startswith(("unix:", "fd://")):
        return None
    if bind.startswith("["):
        return bind[1:].split("]", 1)[0]
    if bind.count(":") > 1:  # a bare IPv6 address
        return bind
    return bind.rsplit(":", 1)[0] if ":" in bind else bind


def is_public(bind: str) -> bool:
    """True unless the bind is a Unix socket, `localhost` or a loopback address."""
    host = _host(bind.strip())
    if host is None or host == "localhost":
        return False
    try:
        return not ipaddress.ip_address(host).is_loopback
    except ValueError:
        return True  # a name other than localhost: it resolves to whatever the DNS says


def public_binds(binds: list[str]) -> list[str]:
    return [bind for bind in binds if is_public(bind)]


__all__ = ["PUBLIC_BIND_WARNING", "is_public", "public_binds"]
