"""Tiny helpers that read settings from the environment (healthchecks' style)."""

from __future__ import annotations

import contextlib
import os
import secrets
import stat
from pathlib import Path


def envbool(name: str, default: bool) -> bool:
    """Parse a boolean the way operators write it; anything unknown is an error, not False."""
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    value = raw.strip().lower()
    if value in {"1", "true", "yes", "on"}:
        return True
    if value in {"0", "false", "no", "off"}:
        return False
    raise ValueError(f"environment variable {name}={raw!r} is not a boolean (use true/false)")


def envint(name: str, default: int) -> int:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    try:
        return int(raw)
    except ValueError:
        raise ValueError(f"environment variable {name}={raw!r} is not an integer") from None


def envstr(name: str, default: str) -> str:
    return os.environ.get(name) or default


class SettingsError(Exception):
    """A setting that cannot be used as given; the message says what to do."""


def envsecret(name: str, default: str) -> str:
    """Read a secret from NAME, or from the file named by NAME_FILE (for systemd credentials)."""
    path = os.environ.get(f"{name}_FILE")
    if path:
        try:
            with open(path, encoding="utf-8") as fh:
                return fh.read().strip()
        except OSError as exc:
            raise SettingsError(f"{name}_FILE={path}: cannot read it ({exc.strerror})") from None
    return os.environ.get(name) or default


def generated_secret(path: Path) -> str:
    """The secret kept in `path`, created on first use (random, mode 0600).

    Written whole to a temp file and hard-linked into place, so two processes starting at
    once end up with the same secret; a file others can read is refused (anyone who reads
    the secret key can forge sessions and password-reset links)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if not path.exists():
        temp = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}")
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            with os.fdopen(fd, "w", encoding="ascii") as fh:
                fh.write(secrets.token_urlsafe(50) + "\n")
            with contextlib.suppress(FileExistsError):  # another process was first: use its
                os.link(temp, path)
        finally:
            temp.unlink(missing_ok=True)
    mode = stat.S_IMODE(path.stat().st_mode)
    if mode & 0o077:
        raise SettingsError(
            f"{path} is readable or writable by others (mode {mode:04o}): run `chmod 600 {path}`"
        )
    text = path.read_text(encoding="ascii").strip()
    if len(text) < 50:
        raise SettingsError(f"{path} holds no usable secret key (50 characters or more)")
    return text
