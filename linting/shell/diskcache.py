"""A persistent cache of ShellCheck results, shared by runs on one machine.

ShellCheck costs a few milliseconds per script and CI lints the same units over and over;
results depend only on the script, dialect, exported names, excluded codes and the
ShellCheck binary (all in the key), so they can be kept on disk.

One SQLite database (stdlib `sqlite3`), written one transaction per ShellCheck batch, in
WAL mode: concurrent runs read while one writes, and never see half an entry. (It was one
small JSON file per key, written atomically: on a busy disk the 1,000 files of a cold run
of 1,000 units cost ~0.8 s of the linter's own CPU, more than half of what the Python
rules take; benchmarks/lint_throughput.py.)

`LINTUNITS_CACHE_DIR` chooses the directory (default `$XDG_CACHE_HOME/lintunits` or
`~/.cache/lintunits`); `LINTUNITS_CACHE_DIR=off` disables it. Every failure (a read-only
or full disk, a locked or damaged database) only costs the speed-up.
"""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
import threading
from pathlib import Path

DATABASE = "shellcheck.sqlite3"
# How long a writer waits for another run's transaction before giving up on storing.
_BUSY_TIMEOUT_S = 2.0

_local = threading.local()  # one connection per thread (sqlite3 objects stay in theirs)


def cache_dir() -> Path | None:
    configured = os.environ.get("LINTUNITS_CACHE_DIR")
    if configured is not None:
        return None if configured.strip().lower() in ("", "off", "0", "false") else Path(configured)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "lintunits"


def _connection() -> sqlite3.Connection | None:
    """This thread's connection to the cache of the configured directory (None: off, or
    the database cannot be used)."""
    root = cache_dir()
    if root is None:
        return None
    # A forked web worker must not use its parent's connection; a changed
    # LINTUNITS_CACHE_DIR means another database.
    wanted = (os.getpid(), str(root))
    cached = getattr(_local, "connection", None)
    if cached is not None and cached[0] == wanted:
        return cached[1]
    connection = None
    try:
        root.mkdir(parents=True, exist_ok=True)
        connection = sqlite3.connect(root / DATABASE, timeout=_BUSY_TIMEOUT_S)
        connection.execute("PRAGMA journal_mode=WAL")
        connection.execute("PRAGMA synchronous=NORMAL")  # WAL: a crash loses, never corrupts
        connection.execute(
            "CREATE TABLE IF NOT EXISTS results (key TEXT PRIMARY KEY, value TEXT NOT NULL)"
            " WITHOUT ROWID"
        )
        connection.commit()
    except (OSError, sqlite3.Error):
        if connection is not None:
            connection.close()
        connection = None
    _local.connection = (wanted, connection)
    return connection


def load(key: str) -> list | None:
    connection = _connection()
    if connection is None:
        return None
    try:
        row = connection.execute("SELECT value FROM results WHERE key = ?", (key,)).fetchone()
        data = json.loads(row[0]) if row is not None else None
    except (sqlite3.Error, ValueError, TypeError):
        return None
    return data if isinstance(data, list) else None


def store(entries: dict[str, list]) -> None:
    """Best effort: a read-only or full disk only costs the speed-up."""
    connection = _connection()
    if connection is None or not entries:
        return
    rows = [(key, json.dumps(value)) for key, value in entries.items()]
    try:
        with connection:  # one transaction
            connection.executemany("INSERT OR REPLACE INTO results VALUES (?, ?)", rows)
    except sqlite3.Error:
        return


def close() -> None:
    """Close this thread's connection. SQLite folds the write-ahead log into the database,
    and removes it, only when the last connection closes: a process that leaves with
    `os._exit` (the lintunits command) calls this first."""
    cached = getattr(_local, "connection", None)
    _local.connection = None
    if cached is not None and cached[1] is not None:
        with contextlib.suppress(sqlite3.Error):
            cached[1].close()
