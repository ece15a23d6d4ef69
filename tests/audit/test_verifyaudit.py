"""`manage.py verifyaudit` walks the chain and names the first broken link."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from audit.models import AuditEvent
from audit.services import record
from tests.audit.helpers import intact, tamper

pytestmark = pytest.mark.django_db


def verifyaudit() -> str:
    out = io.StringIO()
    call_command("verifyaudit", stdout=out)
    return out.getvalue().strip()


def verifyaudit_failure() -> str:
    with pytest.raises(CommandError) as failure:
        verifyaudit()
    assert failure.value.returncode == 1
    return str(failure.value)


@pytest.fixture
def chain(alice, bob) -> list[AuditEvent]:
    return [
        record(kind="deploy.requested", actor=alice, host_name="gpu1", payload={"version": 3}),
        record(kind="deploy.approved", actor=bob, host_name="gpu1", payload={"comment": "ok"}),
        record(kind="unit.pushed", actor=None, host_name="gpu1", payload={"sha256": "ab" * 32}),
        record(kind="job.step_finished", actor=None, host_name="gpu1"),
    ]


def test_a_server_that_recorded_nothing_yet_is_intact(key_file):
    assert verifyaudit() == "OK: 0 events, chain intact; nothing recorded yet (no audit key)"


def test_an_empty_log_with_an_audit_key_but_no_checkpoints_is_an_error(settings):
    message = verifyaudit_failure()
    assert f"the checkpoint file {settings.AUDIT_CHECKPOINT_FILE} is missing" in message


def test_an_untouched_chain_is_intact(chain):
    assert verifyaudit() == intact(4)


@pytest.mark.parametrize("setting", ["AUDIT_CHECKPOINT_FILE", "AUDIT_WITNESS_FILE"])
def test_a_deleted_checkpoint_file_is_an_error_naming_it(chain, settings, setting):
    Path(getattr(settings, setting)).unlink()

    message = verifyaudit_failure()
    assert f"the checkpoint file {getattr(settings, setting)} is missing" in message
    assert "the chain has 4 events and nothing there vouches for them" in message


def test_an_emptied_checkpoint_file_is_an_error_naming_it(chain, settings):
    Path(settings.AUDIT_CHECKPOINT_FILE).write_text("")

    assert f"the checkpoint file {settings.AUDIT_CHECKPOINT_FILE} is empty" in (
        verifyaudit_failure()
    )


def test_a_checkpoint_copy_that_does_not_exist_is_an_error(chain, tmp_path):
    with pytest.raises(CommandError) as failure:
        call_command("verifyaudit", "--checkpoints", str(tmp_path / "nowhere.jsonl"))
    assert failure.value.returncode == 1
    assert f"the checkpoint file {tmp_path / 'nowhere.jsonl'} is missing" in str(failure.value)


def test_editing_a_row_is_named_at_that_row(chain):
    approved = chain[1]
    tamper(
        "UPDATE audit_auditevent SET payload = %s WHERE id = %s",
        [json.dumps({"comment": "approved by someone else"}), approved.id],
    )

    message = verifyaudit_failure()
    assert f"event #2 (deploy.approved at {approved.at.isoformat()})" in message
    assert "stored hash does not match its content" in message


def test_editing_the_actor_name_is_detected(chain):
    tamper("UPDATE audit_auditevent SET actor_name = 'carol' WHERE id = 2")

    assert "event #2 (deploy.approved" in verifyaudit_failure()


def test_an_edited_row_with_a_recomputed_hash_breaks_the_next_link(chain):
    forged = AuditEvent.objects.get(pk=2)
    forged.actor_name = "carol"
    tamper(
        "UPDATE audit_auditevent SET actor_name = %s, hash = %s WHERE id = 2",
        [forged.actor_name, forged.compute_hash()],
    )

    message = verifyaudit_failure()
    assert "event #3 (unit.pushed at" in message
    assert "prev_hash does not match event #2" in message


def test_deleting_a_row_in_the_middle_is_detected(chain):
    tamper("DELETE FROM audit_auditevent WHERE id = 2")

    message = verifyaudit_failure()
    assert "event #3 (unit.pushed at" in message
    assert "prev_hash does not match event #1; event #2 is missing" in message


def test_deleting_the_first_rows_is_detected(chain):
    tamper("DELETE FROM audit_auditevent WHERE id <= 2")

    message = verifyaudit_failure()
    assert "event #3" in message
    assert "does not match the start of the chain; events #1–#2 are missing" in message


def test_deleting_the_newest_rows_is_detected_by_the_chain_head(chain):
    tamper("DELETE FROM audit_auditevent WHERE id >= 3")

    message = verifyaudit_failure()
    assert "the chain ends at event #2 but its head records event #4" in message


def test_swapping_two_rows_contents_is_detected(chain):
    tamper("UPDATE audit_auditevent SET id = 100 WHERE id = 3")
    tamper("UPDATE audit_auditevent SET id = 3 WHERE id = 4")
    tamper("UPDATE audit_auditevent SET id = 4 WHERE id = 100")

    assert "event #3 (job.step_finished" in verifyaudit_failure()


def test_recording_continues_the_chain_after_verification(chain, alice):
    record(kind="rollback", actor=alice, host_name="gpu1")

    assert verifyaudit() == intact(5)
