"""PostgreSQL specifics: the append-only trigger and the chain-head row lock.

Skipped on SQLite. Run with
`DATABASE_URL=postgres://postgres@127.0.0.1:5432/specadmin .venv/bin/python -m pytest tests/audit`.
"""

from __future__ import annotations

import os
import threading

import pytest
from django.db import DatabaseError, connection, connections, transaction

from audit.models import AuditChainHead, AuditEvent
from audit.services import record
from audit.verify import verify_chain
from tests.audit.helpers import intact

pytestmark = [
    pytest.mark.django_db,
    pytest.mark.skipif(
        os.environ.get("DATABASE_URL", "").split(":")[0] not in {"postgres", "postgresql"},
        reason="PostgreSQL only (set DATABASE_URL=postgres://…)",
    ),
]


@pytest.fixture(autouse=True)
def _on_postgresql():
    assert connection.vendor == "postgresql"


@pytest.fixture
def event(alice):
    return record(kind="deploy.approved", actor=alice, host_name="gpu1")


def test_the_trigger_is_installed_and_enabled():
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT tgenabled FROM pg_trigger WHERE tgname = 'audit_auditevent_append_only'"
            " AND tgrelid = 'audit_auditevent'::regclass"
        )
        assert cursor.fetchall() == [("O",)]


@pytest.mark.parametrize(
    "sql",
    [
        "UPDATE audit_auditevent SET kind = 'deploy.rejected' WHERE id = %s",
        "UPDATE audit_auditevent SET payload = '{}'::jsonb, hash = hash WHERE id = %s",
        "DELETE FROM audit_auditevent WHERE id = %s",
    ],
    ids=["update-kind", "update-payload", "delete"],
)
def test_the_trigger_refuses_raw_updates_and_deletes(event, sql):
    with (
        pytest.raises(DatabaseError, match=f"append-only: .* of event #{event.id} refused"),
        transaction.atomic(),
        connection.cursor() as cursor,
    ):
        cursor.execute(sql, [event.id])

    assert AuditEvent.objects.get().kind == "deploy.approved"
    assert verify_chain().ok


@pytest.mark.django_db(transaction=True)
def test_record_holds_the_chain_head_lock_until_commit(alice):
    """A second writer cannot read the last hash while the first one's event is uncommitted."""
    record(kind="deploy.requested", actor=alice)
    recorded, release = threading.Event(), threading.Event()

    def first_writer() -> None:
        try:
            with transaction.atomic():
                record(kind="deploy.approved", actor=None)
                recorded.set()
                release.wait(timeout=10)
        finally:
            connections.close_all()

    thread = threading.Thread(target=first_writer)
    thread.start()
    try:
        assert recorded.wait(timeout=10)
        with pytest.raises(DatabaseError, match="could not obtain lock"), transaction.atomic():
            AuditChainHead.objects.select_for_update(nowait=True).get()
    finally:
        release.set()
        thread.join()

    record(kind="deploy.rejected", actor=alice)
    assert str(verify_chain()) == intact(3)
