"""Going around the append-only guards, as an attacker with database access would."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from django.db import connection

PG_TRIGGER = "audit_auditevent_append_only"
SQLITE_TRIGGER = "audit_auditevent_no_update"


@contextmanager
def triggers_disabled() -> Iterator[None]:
    """Switch the database's append-only trigger off inside the block, then back on."""
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute(f"ALTER TABLE audit_auditevent DISABLE TRIGGER {PG_TRIGGER}")
            try:
                yield
            finally:
                cursor.execute(f"ALTER TABLE audit_auditevent ENABLE TRIGGER {PG_TRIGGER}")
        else:
            cursor.execute(
                "SELECT sql FROM sqlite_master WHERE type = 'trigger' AND name = %s",
                [SQLITE_TRIGGER],
            )
            (create_sql,) = cursor.fetchone()
            cursor.execute(f"DROP TRIGGER {SQLITE_TRIGGER}")
            try:
                yield
            finally:
                cursor.execute(create_sql)


def tamper(sql: str, params: list[Any] | None = None) -> int:
    """Run raw SQL against audit_auditevent with the trigger off; return the row count."""
    with triggers_disabled(), connection.cursor() as cursor:
        cursor.execute(sql, params or [])
        return cursor.rowcount
