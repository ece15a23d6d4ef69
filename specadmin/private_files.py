"""Files only specadmin's own user may read: the SQLite database (with its -wal and -shm
files), the secret key, the audit key.

Anyone who reads the database reads every session (and can use an admin's cookie); anyone
who reads a key can forge sessions or audit history. Such files are created 0600 and a file
others may read or write is refused, naming the `chmod` that fixes it. Imports only the
standard library (settings and the database backend use it).
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

PRIVATE_MODE = 0o600
# SQLite's write-ahead log and its index (https://www.sqlite.org/wal.html, "Files").
SQLITE_COMPANIONS = ("-wal", "-shm")


def loose_mode(path: Path | str) -> int | None:
    """The file's mode when group or others have any access to it; None when only its
    owner has (or it does not exist)."""
    try:
        mode = stat.S_IMODE(os.stat(path).st_mode)
    except FileNotFoundError:
        return None
    return mode if mode & 0o077 else None


def loose_mode_message(path: Path | str, mode: int, what: str) -> str:
    return (
        f"{path} ({what}) is readable or writable by others (mode {mode:04o}): "
        f"run `chmod 600 {path}`"
    )


def create_private(path: Path | str) -> None:
    """Create an empty file with mode 0600 unless it exists (never truncates one).

    SQLite gives its -wal and -shm files the mode of the database file
    (src/os_unix.c `findCreateFileMode()`), so a database created here keeps them private
    too."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, PRIVATE_MODE)
    except FileExistsError:
        return
    os.close(fd)


def sqlite_files(database: Path | str) -> list[Path]:
    """The database file and the companions SQLite keeps beside it."""
    base = Path(database)
    return [base, *(base.with_name(base.name + suffix) for suffix in SQLITE_COMPANIONS)]


def loose_sqlite_files(database: Path | str) -> list[str]:
    """A message per database file (main, -wal, -shm) that others may read or write."""
    problems = []
    for path in sqlite_files(database):
        mode = loose_mode(path)
        if mode is not None:
            problems.append(loose_mode_message(path, mode, "the SQLite database"))
    return problems


__all__ = [
    "PRIVATE_MODE",
    "create_private",
    "loose_mode",
    "loose_mode_message",
    "loose_sqlite_files",
    "sqlite_files",
]
