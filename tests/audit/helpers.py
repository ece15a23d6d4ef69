"""Going around the append-only guards, as an attacker with database access would."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from django.db import connection

# (table, trigger): the event table's append-only trigger (0002) and the chain head's
# guard (0004).
PG_TRIGGERS = [
    ("audit_auditevent", "audit_auditevent_append_only"),
    ("audit_auditchainhead", "audit_chainhead_guard"),
]
SQLITE_TRIGGERS = [
    "audit_auditevent_no_update",
    "audit_chainhead_insert_guard",
    "audit_chainhead_forward_only",
]


@contextmanager
def triggers_disabled() -> Iterator[None]:
    """Switch the database's audit triggers off inside the block, then back on."""
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            for table, trigger in PG_TRIGGERS:
                cursor.execute(f"ALTER TABLE {table} DISABLE TRIGGER {trigger}")
            try:
                yield
            finally:
                for table, trigger in PG_TRIGGERS:
                    cursor.execute(f"ALTER TABLE {table} ENABLE TRIGGER {trigger}")
        else:
            saved = []
            for name in SQLITE_TRIGGERS:
                cursor.execute(
                    "SELECT sql FROM sqlite_master WHERE type = 'trigger' AND name = %s", [name]
                )
                (create_sql,) = cursor.fetchone()
                saved.append(create_sql)
                cursor.execute(f"DROP TRIGGER {name}")
            try:
                yield
            finally:
                for create_sql in saved:
                    cursor.execute(create_sql)


def intact(events: int, checkpoints: int = 1) -> str:
    """What verifyaudit says of an intact chain: the test's checkpoint file and its witness
    file (tests/conftest.py) hold the same checkpoints; a chain's first event is preceded
    by its genesis checkpoint (audit/checkpoints.py)."""
    return (
        f"OK: {events} events, chain intact; matches {checkpoints} checkpoints, "
        f"and {checkpoints} in 1 more file"
    )


def tamper(sql: str, params: list[Any] | None = None) -> int:
    """Run raw SQL against the audit tables with the triggers off; return the row count."""
    with triggers_disabled(), connection.cursor() as cursor:
        cursor.execute(sql, params or [])
        return cursor.rowcount
