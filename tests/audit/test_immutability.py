"""Audit events cannot be changed or removed: refused in code, in the database and the admin."""

from __future__ import annotations

import pytest
from django.db import DatabaseError, connection, transaction

from audit.models import AuditEvent, AuditImmutableError
from audit.services import record
from audit.verify import verify_chain

pytestmark = pytest.mark.django_db


@pytest.fixture
def event(alice):
    return record(kind="deploy.approved", actor=alice, host_name="gpu1")


def test_saving_an_existing_event_is_refused(event):
    event.kind = "deploy.rejected"
    with pytest.raises(AuditImmutableError, match="append-only"):
        event.save()

    assert AuditEvent.objects.get().kind == "deploy.approved"


def test_saving_a_reloaded_event_is_refused(event):
    with pytest.raises(AuditImmutableError):
        AuditEvent.objects.get(pk=event.pk).save()


def test_deleting_an_event_is_refused(event):
    with pytest.raises(AuditImmutableError, match="delete"):
        event.delete()

    assert AuditEvent.objects.count() == 1


@pytest.mark.parametrize(
    "bulk_write",
    [
        lambda qs: qs.update(kind="deploy.rejected"),
        lambda qs: qs.delete(),
        lambda qs: qs.bulk_update(list(qs), ["kind"]),
        lambda qs: qs.bulk_create([AuditEvent(id=99, kind="x")]),
        lambda qs: qs.update_or_create(id=1, defaults={"kind": "x"}),
    ],
    ids=["update", "delete", "bulk_update", "bulk_create", "update_or_create"],
)
def test_queryset_writes_are_refused(event, bulk_write):
    with pytest.raises(AuditImmutableError):
        bulk_write(AuditEvent.objects.all())

    assert verify_chain().ok


def test_creating_an_event_outside_record_is_refused(alice):
    with pytest.raises(AuditImmutableError, match="hash does not match"):
        AuditEvent.objects.create(id=1, kind="deploy.approved", actor=alice)


def test_the_database_refuses_a_raw_update(event):
    sql = "UPDATE audit_auditevent SET kind = 'deploy.rejected' WHERE id = %s"
    with (
        pytest.raises(DatabaseError, match="append-only"),
        transaction.atomic(),
        connection.cursor() as cursor,
    ):
        cursor.execute(sql, [event.id])

    assert AuditEvent.objects.get().kind == "deploy.approved"


def test_admin_shows_events_but_cannot_add_change_or_delete(client, admin_user, event):
    client.force_login(admin_user)

    assert client.get("/admin/audit/auditevent/").status_code == 200
    detail = client.get(f"/admin/audit/auditevent/{event.pk}/change/")
    assert detail.status_code == 200
    assert b"deploy.approved" in detail.content
    assert b'name="_save"' not in detail.content
    assert client.get("/admin/audit/auditevent/add/").status_code == 403
    assert client.get(f"/admin/audit/auditevent/{event.pk}/delete/").status_code == 403
    assert client.post(f"/admin/audit/auditevent/{event.pk}/change/", {}).status_code == 403
