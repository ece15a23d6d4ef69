"""Tiny helpers that read settings from the environment (healthchecks' style)."""

from __future__ import annotations

import os


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


def envsecret(name: str, default: str) -> str:
    """Read a secret from NAME, or from the file named by NAME_FILE (for systemd credentials)."""
    path = os.environ.get(f"{name}_FILE")
    if path:
        with open(path, encoding="utf-8") as fh:
            return fh.read().strip()
    return os.environ.get(name) or default
