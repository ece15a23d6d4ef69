"""The audit chain against someone who can write the database but not read the audit key
file. Each attack is done the way such a person would do it: raw
SQL with the triggers dropped, hashes recomputed with whatever they can compute.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import io
import json
import os
import shlex
import socket
import stat
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from django.core.management import CommandError, call_command
from django.db import DatabaseError, connection, transaction

from audit.checkpoints import _canonical, as_line, line_digest, read_checkpoints, sign
from audit.keys import AuditKeyError, AuditKeys, create_keys, forget_cached_keys, load_keys
from audit.models import AuditChainHead, AuditEvent
from audit.services import record
from audit.verify import verify_chain
from tests.audit.helpers import intact, tamper, triggers_disabled

pytestmark = pytest.mark.django_db


def verifyaudit(*args: str) -> str:
    out = io.StringIO()
    call_command("verifyaudit", *args, stdout=out)
    return out.getvalue().strip()


def broken(*args: str) -> str:
    with pytest.raises(CommandError) as failure:
        verifyaudit(*args)
    assert failure.value.returncode == 1
    return str(failure.value)


def checkpoint() -> str:
    out = io.StringIO()
    call_command("auditcheckpoint", stdout=out)
    return out.getvalue()


@pytest.fixture
def chain(alice, bob) -> list[AuditEvent]:
    events = [
        record(kind="deploy.requested", actor=alice, host_name="gpu1", payload={"version": 3}),
        record(kind="deploy.approved", actor=bob, host_name="gpu1", payload={"comment": "ok"}),
        record(kind="unit.pushed", actor=None, host_name="gpu1", payload={"changed": True}),
        record(kind="job.step_finished", actor=None, host_name="gpu1"),
        record(kind="deploy.succeeded", actor=None, host_name="gpu1"),
    ]
    checkpoint()  # what the worker's schedule does every 5 minutes
    return events


def sha256_as_attacker(event: AuditEvent) -> str:
    """The hash someone without the key can compute: plain sha256 of the public format."""
    return hashlib.sha256(event.canonical_bytes()).hexdigest()


def hmac_with_a_guessed_key(event: AuditEvent) -> str:
    return hmac.new(b"guess" * 8, event.canonical_bytes(), hashlib.sha256).hexdigest()


def rewrite_from(
    first_id: int,
    change: dict[str, Any],
    rehash: Any,
    *,
    last_id: int | None = None,
    **columns: Any,
) -> None:
    """Edit event `first_id`, recompute every hash from there to `last_id` (default: the
    end) with `rehash`, fixing each prev_hash; rewriting to the end also moves the chain
    head to the new last hash."""
    prev_hash = AuditEvent.objects.get(pk=first_id).prev_hash
    rows = AuditEvent.objects.filter(id__gte=first_id).order_by("id")
    if last_id is not None:
        rows = rows.filter(id__lte=last_id)
    with triggers_disabled(), connection.cursor() as cursor:
        for event in rows:
            if event.id == first_id:
                for field, value in change.items():
                    setattr(event, field, value)
            for field, value in columns.items():
                setattr(event, field, value)
            event.prev_hash = prev_hash
            event.hash = rehash(event)
            cursor.execute(
                "UPDATE audit_auditevent SET actor_name = %s, payload = %s, prev_hash = %s, "
                "hash = %s, scheme = %s, key_id = %s WHERE id = %s",
                [
                    event.actor_name,
                    json.dumps(event.payload),
                    event.prev_hash,
                    event.hash,
                    event.scheme,
                    event.key_id,
                    event.id,
                ],
            )
            prev_hash = event.hash
        if last_id is None:
            cursor.execute(
                "UPDATE audit_auditchainhead SET last_hash = %s WHERE id = 1", [prev_hash]
            )


# -- the attacks ------------------------------------------------------------------------


def test_deleting_the_newest_events_and_moving_the_head_back_is_detected(chain):
    tamper("DELETE FROM audit_auditevent WHERE id >= 4")
    tamper("UPDATE audit_auditchainhead SET last_id = 3, last_hash = %s", [chain[2].hash])

    message = broken()
    assert "events #4–#5 are missing" in message
    assert "saw the chain end at event #5, the database's chain ends at #3" in message


def test_deleting_only_the_last_event_and_moving_the_head_back_is_detected(chain):
    tamper("DELETE FROM audit_auditevent WHERE id = 5")
    tamper("UPDATE audit_auditchainhead SET last_id = 4, last_hash = %s", [chain[3].hash])

    assert "event #5 is missing" in broken()


@pytest.mark.parametrize("rehash", [sha256_as_attacker, hmac_with_a_guessed_key])
def test_editing_a_row_and_recomputing_the_hashes_after_it_is_detected(chain, rehash):
    rewrite_from(2, {"actor_name": "carol", "payload": {"comment": "carol approved"}}, rehash)

    message = broken()
    assert "event #2 (deploy.approved at" in message
    assert "stored hash does not match its content" in message


def test_rewriting_keyed_events_as_legacy_unkeyed_ones_is_detected(chain):
    rewrite_from(2, {"actor_name": "carol"}, sha256_as_attacker, scheme=None)

    message = broken()
    assert "event #2 (deploy.approved at" in message
    assert "unkeyed (legacy) event after keyed event #1" in message


def test_rewriting_the_whole_chain_as_legacy_is_detected_by_the_checkpoints(chain):
    rewrite_from(1, {"payload": {"version": 4}}, sha256_as_attacker, scheme=None)

    message = broken()
    assert "event #1 (deploy.requested at" in message
    assert "the checkpoints record keyed events from #1" in message


def test_a_checkpoint_signed_with_another_key_is_refused(chain, settings):
    forged = {
        "type": "specadmin-audit-checkpoint",
        "version": 1,
        "created_at": "2030-01-01T00:00:00+00:00",
        "head_id": 3,
        "head_hash": chain[2].hash,
        "keyed_from": 1,
        "previous": read_checkpoints(Path(settings.AUDIT_CHECKPOINT_FILE))[-1].digest,
    }
    signature = Ed25519PrivateKey.generate().sign(_canonical(forged))
    forged["signature"] = base64.b64encode(signature).decode()
    with open(settings.AUDIT_CHECKPOINT_FILE, "a") as fh:
        fh.write(json.dumps(forged) + "\n")

    assert "has no valid signature of this audit key" in broken()


def test_removing_a_checkpoint_from_the_file_is_detected(chain, alice, settings):
    record(kind="rollback", actor=alice)
    checkpoint()
    record(kind="rollback", actor=alice)
    checkpoint()
    path = Path(settings.AUDIT_CHECKPOINT_FILE)
    lines = path.read_text().splitlines()
    path.write_text("\n".join([lines[0], lines[2]]) + "\n")

    assert "does not follow the checkpoint before it" in broken()


def test_no_checkpoint_is_signed_over_a_chain_that_lost_checkpointed_events(chain):
    tamper("DELETE FROM audit_auditevent WHERE id = 5")
    tamper("UPDATE audit_auditchainhead SET last_id = 4, last_hash = %s", [chain[3].hash])

    with pytest.raises(CommandError, match="no checkpoint written: event #5 is missing"):
        checkpoint()


# -- the guards inside the database -----------------------------------------------------


def test_the_chain_head_cannot_move_back(chain):
    with (
        pytest.raises(DatabaseError, match="audit chain head"),
        transaction.atomic(),
        connection.cursor() as cursor,
    ):
        cursor.execute(
            "UPDATE audit_auditchainhead SET last_id = 3, last_hash = %s", [chain[2].hash]
        )
    assert AuditChainHead.objects.get().last_id == 5


def test_the_chain_head_cannot_point_at_an_event_that_does_not_exist(chain):
    with (
        pytest.raises(DatabaseError, match="audit chain head"),
        transaction.atomic(),
        connection.cursor() as cursor,
    ):
        cursor.execute("UPDATE audit_auditchainhead SET last_id = 9, last_hash = 'x'")
    assert verify_chain().ok


# -- the checkpoints themselves ---------------------------------------------------------


def test_checkpoints_are_private_signed_lines_outside_the_database(chain, settings):
    path = Path(settings.AUDIT_CHECKPOINT_FILE)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    genesis, only = read_checkpoints(path)
    assert (genesis.genesis, genesis.head_id, genesis.keyed_from) == (True, 0, 1)
    assert (only.head_id, only.head_hash, only.keyed_from) == (5, chain[4].hash, 1)

    public = Ed25519PublicKey.from_public_bytes(bytes.fromhex(verifyaudit("--public-key")))
    public.verify(base64.b64decode(only.document["signature"]), _canonical(only.document))
    assert verifyaudit() == intact(5, checkpoints=2)


def test_the_genesis_checkpoint_comes_once_before_the_first_keyed_event(alice, settings):
    class Abandoned(Exception):
        pass

    with pytest.raises(Abandoned), transaction.atomic():
        record(kind="rollback", actor=alice)
        raise Abandoned  # the first event rolled back: its genesis stays, and still holds
    record(kind="rollback", actor=alice)
    record(kind="rollback", actor=alice)

    for path in (settings.AUDIT_CHECKPOINT_FILE, settings.AUDIT_WITNESS_FILE):
        (genesis,) = read_checkpoints(Path(path))
        assert genesis.genesis and (genesis.head_id, genesis.keyed_from) == (0, 1)
        assert genesis.document["public_key"] == load_keys().public_key_hex
    assert verifyaudit() == intact(2)


def test_a_checkpoint_copy_from_elsewhere_is_checked_too(chain, settings, tmp_path):
    copy = tmp_path / "from-loghost.jsonl"
    copy.write_text(Path(settings.AUDIT_CHECKPOINT_FILE).read_text())
    Path(settings.AUDIT_CHECKPOINT_FILE).unlink()  # the local file is gone too
    tamper("DELETE FROM audit_auditevent WHERE id >= 4")
    tamper("UPDATE audit_auditchainhead SET last_id = 3, last_hash = %s", [chain[2].hash])

    assert "events #4–#5 are missing" in broken("--checkpoints", str(copy))


def test_checkpoints_go_to_a_command_such_as_ssh_to_a_log_host(chain, settings, tmp_path):
    remote = tmp_path / "loghost.jsonl"
    settings.AUDIT_CHECKPOINT_COMMAND = f"sh -c 'cat >> {remote}'"
    assert "written to command sh" in checkpoint()
    (line,) = remote.read_text().splitlines()
    assert json.loads(line)["head_id"] == 5


def test_checkpoints_go_to_syslog_when_asked(chain, settings, tmp_path):
    address = str(tmp_path / "log.sock")
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as server:
        server.bind(address)
        server.settimeout(10)
        settings.AUDIT_CHECKPOINT_SYSLOG = True
        settings.AUDIT_CHECKPOINT_SYSLOG_ADDRESS = address
        assert "written to syslog" in checkpoint()
        message = server.recv(65536).decode()
    assert "specadmin-audit: " in message and '"head_id":5' in message


def test_a_failing_place_is_reported_and_the_others_still_written(chain, settings):
    settings.AUDIT_CHECKPOINT_COMMAND = "false"
    with pytest.raises(CommandError, match="`false` exited 1"):
        checkpoint()
    assert len(read_checkpoints(Path(settings.AUDIT_CHECKPOINT_FILE))) == 3  # genesis + 2
    assert len(read_checkpoints(Path(settings.AUDIT_WITNESS_FILE))) == 3


# -- the key file -----------------------------------------------------------------------


def test_the_key_is_created_on_first_use_readable_only_by_its_owner(key_file, alice):
    record(kind="rollback", actor=alice)
    assert stat.S_IMODE(os.stat(key_file).st_mode) == 0o600
    assert len(key_file.read_text().strip()) == 64


def test_a_lost_key_file_stops_recording_instead_of_starting_a_new_key(key_file, alice):
    record(kind="rollback", actor=alice)
    key_file.unlink()
    forget_cached_keys()

    with pytest.raises(AuditKeyError, match="restore the file from its backup"):
        record(kind="rollback", actor=alice)
    assert not key_file.exists()
    assert "the audit key file" in broken() and "is missing" in broken()


def test_a_different_key_file_is_named_as_such(key_file, alice):
    event = record(kind="rollback", actor=alice)
    key_file.write_text(os.urandom(32).hex() + "\n")
    forget_cached_keys()

    message = broken()
    assert f"was hashed with audit key {event.key_id}" in message


def test_a_key_file_others_can_read_is_refused(key_file, alice):
    record(kind="rollback", actor=alice)
    key_file.chmod(0o644)
    forget_cached_keys()

    with pytest.raises(AuditKeyError, match="chmod 600"):
        load_keys()


# -- chains written before keys existed -------------------------------------------------


def legacy_events(count: int) -> list[AuditEvent]:
    """Rows as specadmin wrote them before keyed hashes: plain sha256, no scheme or key id."""
    made: list[AuditEvent] = []
    prev = "0" * 64
    with connection.cursor() as cursor:
        for number in range(1, count + 1):
            event = AuditEvent(
                id=number,
                at=AuditEvent._meta.get_field("at").to_python("2026-01-01T00:00:00+00:00"),
                kind="profile.edited",
                payload={"version": number},
                prev_hash=prev,
            )
            event.hash = sha256_as_attacker(event)
            cursor.execute(
                "INSERT INTO audit_auditevent (id, at, actor_name, kind, object_type, "
                "object_id, object_repr, host_name, profile_name, payload, prev_hash, hash) "
                "VALUES (%s, %s, '', %s, '', '', '', '', '', %s, %s, %s)",
                [number, event.at, event.kind, json.dumps(event.payload), prev, event.hash],
            )
            prev = event.hash
            made.append(event)
        cursor.execute(
            "INSERT INTO audit_auditchainhead (id, last_id, last_hash) VALUES (1, 0, %s)",
            ["0" * 64],
        )
        cursor.execute(
            "UPDATE audit_auditchainhead SET last_id = %s, last_hash = %s", [count, prev]
        )
    return made


def test_a_legacy_chain_keeps_verifying_and_keyed_events_continue_it(alice, settings):
    legacy = legacy_events(3)
    keyed = record(kind="rollback", actor=alice)

    assert keyed.prev_hash == legacy[-1].hash and keyed.scheme == 2
    (genesis,) = read_checkpoints(Path(settings.AUDIT_CHECKPOINT_FILE))
    assert (genesis.head_id, genesis.head_hash, genesis.keyed_from) == (3, legacy[-1].hash, 4)
    assert verifyaudit() == intact(4)


def test_rewriting_legacy_events_is_caught_by_the_first_keyed_event(alice):
    legacy_events(3)
    record(kind="rollback", actor=alice)
    rewrite_from(2, {"payload": {"version": 99}}, sha256_as_attacker, last_id=3)

    message = broken()
    assert "event #4 (rollback at" in message
    assert "the legacy, unkeyed events up to #3 were rewritten" in message


def test_postgresql_refuses_deleting_the_chain_head(chain):
    if connection.vendor != "postgresql":
        pytest.skip("SQLite has no DELETE guard (Django's flush deletes rows there)")
    with (
        pytest.raises(DatabaseError, match="audit chain head: DELETE refused"),
        transaction.atomic(),
        connection.cursor() as cursor,
    ):
        cursor.execute("DELETE FROM audit_auditchainhead")


@pytest.mark.testhost
def test_checkpoints_reach_a_log_host_over_ssh_and_verify_from_there(
    chain, settings, testhost, tmp_path
):
    """The remote anchor: a host the database cannot write (here the test host, over the
    system's ssh with its pinned key), then a copy of its file checked by verifyaudit."""
    remote = f"/root/checkpoints-{os.getpid()}-{id(chain)}.jsonl"
    ssh = shlex.join(["ssh", *testhost.ssh_options(), f"{testhost.user}@{testhost.host}"])
    settings.AUDIT_CHECKPOINT_COMMAND = f"{ssh} {shlex.quote('cat >> ' + remote)}"
    assert "written to command ssh" in checkpoint()
    copy = tmp_path / "from-loghost.jsonl"
    copy.write_text(testhost.read_file(remote))
    testhost.ssh(["rm", "-f", remote])
    Path(settings.AUDIT_CHECKPOINT_FILE).unlink()
    tamper("DELETE FROM audit_auditevent WHERE id = 5")
    tamper("UPDATE audit_auditchainhead SET last_id = 4, last_hash = %s", [chain[3].hash])

    assert "event #5 is missing" in broken("--checkpoints", str(copy))


def test_a_long_checkpoint_file_keeps_its_chain_of_checkpoints(chain, alice, settings):
    for _ in range(25):  # past the tail the writer reads (2 × 4 KiB)
        record(kind="rollback", actor=alice)
        checkpoint()
    assert Path(settings.AUDIT_CHECKPOINT_FILE).stat().st_size > 8192
    assert verifyaudit() == intact(30, checkpoints=27)


# -- the witnessed copy against someone who also holds the key ---------------------------


def resign_checkpoint_file(path: Path, keys: AuditKeys) -> None:
    """What the attacker with the key does to the server's checkpoint file: every line
    re-signed over the rewritten chain's hashes, the links recomputed."""
    previous = ""
    lines = []
    for old in read_checkpoints(path):
        document = {k: v for k, v in old.document.items() if k != "signature"}
        if document["head_id"]:
            document["head_hash"] = AuditEvent.objects.get(pk=document["head_id"]).hash
        document["previous"] = previous
        line = as_line(sign(document, keys))
        previous = line_digest(line)
        lines.append(line)
    path.write_text("".join(line + "\n" for line in lines))


@pytest.fixture
def witnessed_history(alice, bob, settings, tmp_path) -> Path:
    """Events with checkpoints in between, as the worker makes them; returns a copy of the
    witness file, as fetched from the other machine."""
    record(kind="deploy.requested", actor=alice, host_name="gpu1", payload={"version": 3})
    checkpoint()  # head #1
    record(kind="deploy.approved", actor=bob, host_name="gpu1", payload={"comment": "ok"})
    record(kind="unit.pushed", actor=None, host_name="gpu1", payload={"changed": True})
    checkpoint()  # head #3
    record(kind="deploy.succeeded", actor=None, host_name="gpu1")
    checkpoint()  # head #4
    copy = tmp_path / "witness-copy.jsonl"
    copy.write_text(Path(settings.AUDIT_WITNESS_FILE).read_text())
    return copy


def test_a_rewrite_with_the_key_and_re_signed_checkpoints_is_caught_by_the_witness_copy(
    witnessed_history, settings
):
    """The attack as it was done: the approval's approver changed, every HMAC after it
    recomputed with the stolen key, the chain head moved, the checkpoint file re-signed."""
    keys = load_keys()
    rewrite_from(
        2,
        {"actor_name": "carol", "payload": {"comment": "carol approved"}},
        lambda event: event.compute_hash(keys),
    )
    server_file = Path(settings.AUDIT_CHECKPOINT_FILE)
    resign_checkpoint_file(server_file, keys)
    assert verifyaudit("--checkpoints", str(server_file)).startswith("OK: ")  # it fools that

    message = broken("--checkpoints", str(witnessed_history))
    assert "event #3 is not the event the checkpoint of" in message
    assert f"(line 3 of {witnessed_history}) saw" in message
    assert "still holds at event #1; the first altered event is one of #2–#3" in message
    assert "event #3 is not the event" in broken()  # the configured witness file, too


def test_a_chain_rewritten_under_a_new_key_is_named_by_the_genesis(
    witnessed_history, settings, key_file
):
    new_keys = load_keys() or create_keys()  # key_file: a new, empty path → a new key
    rewrite_from(
        1,
        {"payload": {"version": 4}},
        lambda event: event.compute_hash(new_keys),
        key_id=new_keys.key_id,
    )
    server_file = Path(settings.AUDIT_CHECKPOINT_FILE)
    resign_checkpoint_file(server_file, new_keys)

    message = broken("--checkpoints", str(witnessed_history))
    assert "the genesis checkpoint of" in message
    assert f"but {key_file} holds key {new_keys.key_id}" in message
    assert "the key was replaced" in message


def test_an_unkeyed_rewrite_with_the_checkpoint_file_deleted_is_caught(witnessed_history, settings):
    """Before: with no checkpoint file, a chain rewritten as legacy sha256 verified OK."""
    rewrite_from(1, {"payload": {"version": 4}}, sha256_as_attacker, scheme=None)
    Path(settings.AUDIT_CHECKPOINT_FILE).unlink()

    keyed_since_genesis = "the checkpoints record keyed events from #1"
    assert keyed_since_genesis in broken()  # the witness file on its mount
    Path(settings.AUDIT_WITNESS_FILE).unlink()
    assert f"the checkpoint file {settings.AUDIT_CHECKPOINT_FILE} is missing" in broken()
    message = broken("--checkpoints", str(witnessed_history))
    assert "event #1 (deploy.requested at" in message and keyed_since_genesis in message
