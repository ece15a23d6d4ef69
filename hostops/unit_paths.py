"""Where systemd loads a unit's files from, and which paths a host may name for them.

Django-free so that the deploy pipeline's unit reading (`deploys.existing_units`) and the
watchdog's drift check (`watchdog.checks`, which the GPU benchmark imports without Django)
share one list. A hostile host could name any path as a unit's "fragment" or drop-in:
only files in systemd's unit directories, named after the unit, are ever read.
"""

from __future__ import annotations

import posixpath

from hostops.channel.base import Transport

# systemd.unit(5), "Unit File Load Path", system manager (v252…v257), plus Debian's
# /lib/systemd/system (merged /usr makes it /usr/lib/systemd/system).
UNIT_DIRECTORIES: tuple[str, ...] = (
    "/etc/systemd/system.control",
    "/run/systemd/system.control",
    "/run/systemd/transient",
    "/run/systemd/generator.early",
    "/etc/systemd/system",
    "/etc/systemd/system.attached",
    "/run/systemd/system",
    "/run/systemd/system.attached",
    "/run/systemd/generator",
    "/usr/local/lib/systemd/system",
    "/usr/lib/systemd/system",
    "/lib/systemd/system",
    "/run/systemd/generator.late",
)


def _clean_absolute(path: str) -> bool:
    return path.startswith("/") and posixpath.normpath(path) == path


def is_drop_in_path(path: str, unit: str) -> bool:
    """A `.conf` in `UNIT.d/` of a unit directory (`unit` is the full name,
    `NAME.service`); no `..`."""
    if not _clean_absolute(path):
        return False
    directory, name = posixpath.split(path)
    parent, dropins = posixpath.split(directory)
    return dropins == f"{unit}.d" and parent in UNIT_DIRECTORIES and name.endswith(".conf")


def is_unit_path(path: str, unit: str) -> bool:
    """A path systemd could load for `unit`: the unit file directly in a unit directory,
    or one of its drop-ins."""
    if not _clean_absolute(path):
        return False
    directory, name = posixpath.split(path)
    if name == unit:
        return directory in UNIT_DIRECTORIES
    return is_drop_in_path(path, unit)


def waiting_drop_ins(transport: Transport, unit: str) -> list[str]:
    """`UNIT.d/*.conf` in every unit directory. systemd lists a unit's drop-ins only once
    it has a unit file (v252 reports a drop-in-only name as not-found with no
    DropInPaths), but they apply the moment a push writes one. In directory priority
    order; a name in a higher directory hides the same name below (systemd.unit(5))."""
    argv = ["find", *(f"{d}/{unit}.d" for d in UNIT_DIRECTORIES)]
    result = transport.run([*argv, "-maxdepth", "1", "-name", "*.conf", "!", "-type", "d"])
    # find exits 1 for the directories that do not exist; what it printed still counts.
    found = [line for line in result.stdout_text.splitlines() if line.startswith("/")]
    order = {d: i for i, d in enumerate(UNIT_DIRECTORIES)}
    found.sort(key=lambda p: (order.get(posixpath.dirname(posixpath.dirname(p)), 99), p))
    return found


__all__ = ["UNIT_DIRECTORIES", "is_drop_in_path", "is_unit_path", "waiting_drop_ins"]
