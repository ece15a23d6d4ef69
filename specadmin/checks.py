"""specadmin's system checks (`manage.py check`; Django runs them before `migrate`,
`qcluster` and the development server; the web server runs them at start-up,
specadmin/wsgi.py).

Errors: a secret or the database readable by others, a weak secret key, a trusted-proxy
list that is not one (specadmin/private_files.py, specadmin/client_address.py). With
`--deploy`: a warning when the web server is bound to a public address with no proxy in
front (specadmin/bind_address.py).
"""

from __future__ import annotations

import math
import os
import zlib
from collections import Counter
from typing import Any

from django.conf import settings
from django.core.checks import CheckMessage, Error, Tags, Warning, register
from django.core.checks.security.base import (
    SECRET_KEY_INSECURE_PREFIX,
    SECRET_KEY_MIN_LENGTH,
    SECRET_KEY_MIN_UNIQUE_CHARACTERS,
)
from django.core.exceptions import ImproperlyConfigured

from specadmin.bind_address import PUBLIC_BIND_WARNING, public_binds
from specadmin.client_address import parse_networks
from specadmin.private_files import loose_mode, loose_mode_message, loose_sqlite_files

# A random key of Django's minimum length (50 characters of `secrets.token_urlsafe`) has
# about 290 bits by this estimate; a hex string of 50 digits about 190; "abcde" ten times 80.
MIN_SECRET_KEY_BITS = 128
ZLIB_OVERHEAD = 6  # bytes: the zlib header and the Adler-32 checksum (RFC 1950)


def estimated_bits(text: str) -> float:
    """A rough upper bound of the text's randomness: the smaller of Shannon's estimate
    (length × entropy of its characters) and the size it compresses to (which sees
    repetition, "abcdefgh" seven times, that character counts miss)."""
    if not text:
        return 0.0
    counts = Counter(text)
    per_char = -sum(n / len(text) * math.log2(n / len(text)) for n in counts.values())
    compressed = 8 * max(0, len(zlib.compress(text.encode("utf-8"), 9)) - ZLIB_OVERHEAD)
    return min(per_char * len(text), float(compressed))


def secret_key_weakness(key: str) -> str | None:
    """Why the key is too weak to sign sessions and password-reset links, or None."""
    if key.startswith(SECRET_KEY_INSECURE_PREFIX):
        return f"it starts with {SECRET_KEY_INSECURE_PREFIX!r} (Django's placeholder)"
    if len(key) < SECRET_KEY_MIN_LENGTH:
        return f"it has {len(key)} characters (at least {SECRET_KEY_MIN_LENGTH})"
    if len(set(key)) < SECRET_KEY_MIN_UNIQUE_CHARACTERS:
        return f"it has {len(set(key))} different characters"
    bits = estimated_bits(key)
    if bits < MIN_SECRET_KEY_BITS:
        return f"it looks like about {bits:.0f} bits of randomness (at least {MIN_SECRET_KEY_BITS})"
    return None


HINT_KEY = "Generate one: python -c 'import secrets; print(secrets.token_urlsafe(50))'"


def _secret_key_messages() -> list[CheckMessage]:
    found: list[CheckMessage] = []
    key_file = os.environ.get("SECRET_KEY_FILE", "")
    if key_file:
        mode = loose_mode(key_file)
        if mode is not None:
            found.append(
                Error(loose_mode_message(key_file, mode, "SECRET_KEY_FILE"), id="specadmin.E001")
            )
    weakness = secret_key_weakness(str(getattr(settings, "SECRET_KEY", "")))
    if weakness:
        source = f"SECRET_KEY_FILE {key_file}" if key_file else "SECRET_KEY"
        found.append(
            Error(
                f"The secret key ({source}) is weak: {weakness}.",
                hint=HINT_KEY,
                id="specadmin.E002",
            )
        )
    return found


def _database_messages() -> list[CheckMessage]:
    found: list[CheckMessage] = []
    for alias, config in settings.DATABASES.items():
        if not str(config.get("ENGINE", "")).endswith("sqlite3"):
            continue
        name = str(config.get("NAME") or "")
        if not name or name == ":memory:" or name.startswith("file:"):
            continue
        for problem in loose_sqlite_files(name):
            found.append(Error(f"Database {alias!r}: {problem}.", id="specadmin.E003"))
    return found


def _audit_key_messages() -> list[CheckMessage]:
    path = getattr(settings, "AUDIT_KEY_FILE", None)
    mode = loose_mode(path) if path else None
    if mode is None:
        return []
    return [Error(loose_mode_message(path, mode, "the audit key"), id="specadmin.E004")]


@register(Tags.security)
def private_files_check(app_configs: Any = None, **kwargs: Any) -> list[CheckMessage]:
    """The secret key (its file and its strength), the database files, the audit key."""
    return _secret_key_messages() + _database_messages() + _audit_key_messages()


@register(Tags.security)
def trusted_proxies_check(app_configs: Any = None, **kwargs: Any) -> list[CheckMessage]:
    try:
        parse_networks(getattr(settings, "SPECADMIN_TRUSTED_PROXIES", []))
    except ValueError as exc:
        return [Error(str(exc), id="specadmin.E005")]
    return []


@register(Tags.security, deploy=True)
def public_bind_check(app_configs: Any = None, **kwargs: Any) -> list[CheckMessage]:
    """The web server's address (SPECADMIN_BIND) reachable from other machines, and no
    trusted proxy configured in front of it."""
    binds = [b for b in str(getattr(settings, "SPECADMIN_BIND", "")).split(",") if b]
    public = public_binds(binds)
    if not public or getattr(settings, "SPECADMIN_TRUSTED_PROXIES", []):
        return []
    return [Warning(PUBLIC_BIND_WARNING.format(binds=", ".join(public)), id="specadmin.W001")]


def refuse_unsafe_files() -> None:
    """Raise at start-up when a private file is open to others or the key is weak (the
    web server does not run the system checks itself)."""
    errors = [m for m in private_files_check() + trusted_proxies_check() if m.is_serious()]
    if errors:
        raise ImproperlyConfigured("; ".join(f"{m.id}: {m.msg}" for m in errors))
