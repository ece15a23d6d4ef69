"""How systemd resolves `User=` of a system service: the passwd entry of the machine that
runs the linter (the `%u %U %h %s` specifiers and `$USER $HOME $SHELL` come from it)."""

from __future__ import annotations

import pwd
from functools import lru_cache


@lru_cache(maxsize=256)
def user_fields(user: str | None) -> tuple[str, str, str, str]:
    """(name, uid, home, shell) as systemd resolves them for a system service."""
    if user is None:
        return "root", "0", "/root", "/bin/sh"
    try:
        entry = pwd.getpwnam(user) if not user.isdigit() else pwd.getpwuid(int(user))
    except KeyError:
        return user, user if user.isdigit() else "?", "?", "?"
    return entry.pw_name, str(entry.pw_uid), entry.pw_dir, entry.pw_shell
