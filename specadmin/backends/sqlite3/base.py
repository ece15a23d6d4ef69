"""Django's SQLite backend, with a private database file.

SQLite creates a missing database with mode 0644 (less the umask): every local user could
read the sessions in it. This backend creates the file 0600 before SQLite opens it (its
-wal and -shm files then get the same mode) and refuses to open a database file that
others may read or write (`specadmin.private_files`). Everything else is Django's
(`django.db.backends.sqlite3`); the engine's last name stays `sqlite3`.
"""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ImproperlyConfigured
from django.db.backends.sqlite3 import base

from specadmin.private_files import create_private, loose_sqlite_files


def _is_file_name(name: str) -> bool:
    return bool(name) and name != ":memory:" and not name.startswith("file:")


class DatabaseWrapper(base.DatabaseWrapper):
    def get_new_connection(self, conn_params: dict[str, Any]) -> Any:
        name = str(conn_params.get("database") or "")
        if _is_file_name(name) and not self.is_in_memory_db():
            create_private(name)
            problems = loose_sqlite_files(name)
            if problems:
                raise ImproperlyConfigured("; ".join(problems))
        return super().get_new_connection(conn_params)
