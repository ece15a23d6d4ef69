"""Units for `systemctl --user`: run by a user's own service manager, as that user.

There `%h` is the user's home, `%u` their name, `%t` their runtime directory, and nothing
runs as root (systemd.unit(5) "Specifiers"; src/core/unit-printf.c and
src/shared/specifier.c resolve them from the manager's own user; src/core/execute.c gives
the commands the manager's HOME, USER, LOGNAME, SHELL and XDG_RUNTIME_DIR). A unit is
read as one when:

- the run says so (`--user-unit [PATHS]`, `[tool.lintunits] user-units`);
- it sits in a user unit directory (`~/.config/systemd/user/`, `/etc/systemd/user/`,
  `/usr/lib/systemd/user/`: any path with `systemd/user/` in it);
- a comment says so (`systemctl --user …`, `~/.config/systemd/user`);
- `[Install] WantedBy=default.target` with no `User=` (`default.target` is what user
  units are enabled into; a system service is wanted by `multi-user.target`).

The user is unknown to a linter unless the path names it (`/home/alice/…`): it is then
written as `user` (uid 1000, home `/home/user`), a stand-in that a shell script can hold
without changing its syntax (`%h/models` becomes `/home/user/models`).
"""

from __future__ import annotations

import fnmatch
import os
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from linting.unitfile import UnitFile

ALL_UNITS = "*"  # `--user-unit` without a value: every unit of the run
_USER_DIR = re.compile(r"(^|/)systemd/user/")
_HOME = re.compile(r"^/home/([a-z_][a-z0-9_.-]*)/")
_COMMENT = re.compile(r"systemctl\s+--user\b|\.config/systemd/user\b")
UNKNOWN_USER = "user"
UNKNOWN_UID = "1000"  # the first uid useradd(8) gives


@dataclass(frozen=True)
class UserManager:
    """The user whose manager runs the unit, as far as the linter can tell, and why it
    thinks the unit is a user unit (for messages)."""

    name: str
    uid: str
    home: str
    shell: str
    reason: str

    @property
    def runtime_dir(self) -> str:
        """$XDG_RUNTIME_DIR, what `%t` resolves to in a user manager."""
        return f"/run/user/{self.uid}"


def user_manager(unit: UnitFile, user_units: tuple[str, ...]) -> UserManager | None:
    """The user manager that runs `unit`, or None for a system unit."""
    reason = _reason(unit, user_units)
    if reason is None:
        return None
    home = _HOME.match(os.path.abspath(unit.path))
    name = home.group(1) if home else UNKNOWN_USER
    return UserManager(
        name=name,
        uid=UNKNOWN_UID,
        home=f"/home/{name}",
        shell="/bin/bash",
        reason=reason,
    )


def _reason(unit: UnitFile, user_units: tuple[str, ...]) -> str | None:
    path = unit.path
    if any(_names(pattern, path) for pattern in user_units):
        return "--user-unit names it"
    if _USER_DIR.search(os.path.abspath(path)) or _USER_DIR.search(path):
        return "it is in a user unit directory"
    for source in unit.sources.values():
        for line in source.lines:
            stripped = line.lstrip()
            if stripped.startswith(("#", ";")) and _COMMENT.search(stripped):
                return "a comment says it is installed with systemctl --user"
    wanted = [w for a in unit.get_all("Install", "WantedBy") for w in a.value.text.split()]
    if "default.target" in wanted and not unit.last_value("Service", "User"):
        return "it is wanted by default.target and has no User="
    return None


def _names(pattern: str, path: str) -> bool:
    """A `--user-unit` entry (a file, a directory, a glob, or `*` for all) names the unit."""
    if pattern == ALL_UNITS:
        return True
    if fnmatch.fnmatch(path, pattern) or fnmatch.fnmatch(os.path.basename(path), pattern):
        return True
    full, base = os.path.abspath(path), os.path.abspath(pattern)
    return full == base or full.startswith(base.rstrip("/") + "/")
