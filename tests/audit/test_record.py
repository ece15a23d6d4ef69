"""record() appends hash-chained events with a snapshot of who, what and where."""

from __future__ import annotations

import hashlib
import hmac
import json

import pytest
from django.db import transaction

from audit.keys import load_keys
from audit.models import GENESIS_HASH, AuditChainHead, AuditEvent, AuditKind
from audit.services import record
from audit.verify import verify_chain
from tests.audit.helpers import intact

pytestmark = pytest.mark.django_db


def test_first_event_starts_from_the_genesis_hash(alice):
    event = record(kind=AuditKind.PROFILE_CREATED, actor=alice, profile_name="vllm-a")

    assert event.id == 1
    assert event.prev_hash == GENESIS_HASH
    assert event.actor_name == "alice"


def test_hash_is_an_hmac_of_the_canonical_json_of_every_field_with_the_audit_key(alice):
    event = record(kind="host.added", actor=alice, host_name="gpu1", payload={"b": 1, "a": [2]})
    stored = AuditEvent.objects.get(pk=event.pk)

    document = json.dumps(
        stored.canonical_document(), sort_keys=True, separators=(",", ":"), ensure_ascii=False
    )
    keys = load_keys()
    assert keys is not None and stored.key_id == keys.key_id and stored.scheme == 2
    assert stored.hash == hmac.new(keys.chain_key, document.encode(), hashlib.sha256).hexdigest()
    assert stored.hash != hashlib.sha256(document.encode()).hexdigest()
    assert set(stored.canonical_document()) >= {
        "scheme",
        "key_id",
        "id",
        "at",
        "actor_id",
        "actor_name",
        "kind",
        "object_type",
        "object_id",
        "object_repr",
        "host_name",
        "profile_name",
        "payload",
        "prev_hash",
    }


def test_each_event_links_to_the_one_before(alice, bob):
    events = [
        record(kind="deploy.requested", actor=alice, host_name="gpu1"),
        record(kind="deploy.approved", actor=bob, host_name="gpu1"),
        record(kind="job.step_started", actor=None, host_name="gpu1"),
    ]

    assert [e.id for e in events] == [1, 2, 3]
    assert events[1].prev_hash == events[0].hash
    assert events[2].prev_hash == events[1].hash
    head = AuditChainHead.objects.get()
    assert (head.last_id, head.last_hash) == (3, events[2].hash)
    assert str(verify_chain()) == intact(3)


def test_hash_still_matches_after_a_round_trip_through_the_database(alice):
    payload = {
        "unit_sha256": "ab" * 32,
        "ratio": 0.1,
        "big": 2**53 + 1,
        "text": 'ünïcode ✓ "quoted"',
        "nested": {"list": (1, 2.5, None, True)},
        "huge_float": 1e20,  # jsonb returns it as an integer
        "negative_zero": -0.0,  # jsonb drops the sign
        "tiny": 1e-7,
    }
    event = record(kind="unit.pushed", actor=alice, payload=payload)

    stored = AuditEvent.objects.get(pk=event.pk)
    assert stored.payload["nested"]["list"] == [1, 2.5, None, True]
    assert stored.payload == event.payload
    assert stored.at == event.at
    assert stored.compute_hash() == stored.hash == event.hash


def test_obj_fills_the_object_fields(alice, bob):
    event = record(kind="profile.edited", actor=alice, obj=bob)

    assert (event.object_type, event.object_id, event.object_repr) == (
        "auth.user",
        str(bob.pk),
        "bob",
    )


def test_explicit_object_fields_win_over_obj(alice, bob):
    event = record(kind="profile.edited", actor=alice, obj=bob, object_repr="Bob the builder")

    assert event.object_repr == "Bob the builder"
    assert event.object_type == "auth.user"


def test_long_object_repr_is_truncated_with_an_ellipsis(alice):
    event = record(kind="profile.edited", actor=alice, object_repr="x" * 500)

    assert len(event.object_repr) == 200
    assert event.object_repr.endswith("…")


@pytest.mark.parametrize("field", ["object_type", "object_id", "host_name", "profile_name"])
def test_over_long_filter_fields_are_refused_on_every_database(alice, field):
    with pytest.raises(ValueError, match=f"audit {field} is longer than"):
        record(kind="host.added", actor=alice, **{field: "x" * 256})

    assert not AuditEvent.objects.exists()


def test_history_keeps_the_username_of_the_time_after_a_rename(alice):
    record(kind="profile.created", actor=alice)
    alice.username = "alice2"
    alice.save()

    event = AuditEvent.objects.get()
    assert event.actor_name == "alice"
    assert verify_chain().ok


def test_deleting_a_user_neither_fails_nor_rewrites_history(alice, django_user_model):
    event = record(kind="profile.created", actor=alice)
    alice_id = alice.pk
    alice.delete()

    stored = AuditEvent.objects.get(pk=event.pk)
    assert not django_user_model.objects.filter(pk=alice_id).exists()
    assert (stored.actor_id, stored.actor_name) == (alice_id, "alice")
    assert verify_chain().ok


def test_system_events_have_no_actor():
    event = record(kind="deploy.expired", actor=None)

    assert event.actor_id is None
    assert event.actor_name == ""
    assert event.actor_display == "system"


@pytest.mark.parametrize(
    "kind", ["", "Deploy.Approved", "deploy approved", "deploy.", ".x", "x" * 65]
)
def test_malformed_kinds_are_refused(alice, kind):
    with pytest.raises(ValueError, match="audit kind"):
        record(kind=kind, actor=alice)


def test_an_event_rolls_back_with_the_change_it_records(alice):
    with pytest.raises(RuntimeError), transaction.atomic():
        record(kind="deploy.approved", actor=alice)
        raise RuntimeError("approval failed after recording")

    assert not AuditEvent.objects.exists()
    assert record(kind="deploy.approved", actor=alice).id == 1
    assert verify_chain().ok
