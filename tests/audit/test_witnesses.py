"""Every checkpoint leaves the server as it is made (audit/witnesses.py): to a witness file
(its own path; on another machine's mount in production) and to a webhook, a receiver on
a loopback port here (tests/doubles/witness_receiver.py). A witness that fails does not
stop recording, gets the checkpoints again later, and verifyaudit says so; verifyaudit
says loudly when no copy leaves the server at all.
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command
from django.db import connection

from audit.checkpoints import read_checkpoints, write_checkpoint
from audit.keys import load_keys
from audit.models import AuditEvent
from audit.services import record
from audit.witnesses import FileWitness
from tests.audit.helpers import intact
from tests.doubles.witness_receiver import WitnessReceiver

pytestmark = pytest.mark.django_db


def verifyaudit(*args: str) -> tuple[str, str]:
    out, err = io.StringIO(), io.StringIO()
    call_command("verifyaudit", *args, stdout=out, stderr=err)
    return out.getvalue().strip(), err.getvalue().strip()


def verifyaudit_exit(*args: str) -> tuple[int, str]:
    with pytest.raises(CommandError) as failure:
        verifyaudit(*args)
    return failure.value.returncode, str(failure.value)


def checkpoint() -> str:
    out = io.StringIO()
    call_command("auditcheckpoint", stdout=out)
    return out.getvalue()


@pytest.fixture
def webhook(settings, tmp_path) -> Iterator[WitnessReceiver]:
    """A webhook witness, configured before anything is recorded (it gets the genesis)."""
    with WitnessReceiver(tmp_path / "received.jsonl") as receiver:
        settings.AUDIT_WITNESS_URLS = [receiver.url]
        settings.AUDIT_WITNESS_TOKEN = "witness-token-of-this-test"
        yield receiver


def events(alice, bob, count: int = 3) -> list[AuditEvent]:
    kinds = ["deploy.requested", "deploy.approved", "unit.pushed", "deploy.succeeded"]
    return [record(kind=kinds[i % 4], actor=[alice, bob][i % 2]) for i in range(count)]


def test_every_checkpoint_goes_to_the_witness_file_as_it_is_made(alice, bob, settings):
    events(alice, bob)
    assert "written to witness file" in checkpoint()

    server = Path(settings.AUDIT_CHECKPOINT_FILE).read_text()
    assert Path(settings.AUDIT_WITNESS_FILE).read_text() == server
    assert [c.genesis for c in read_checkpoints(Path(settings.AUDIT_WITNESS_FILE))] == [
        True,
        False,
    ]


def test_a_witness_file_counts_as_outside_only_on_another_filesystem(tmp_path):
    server = tmp_path / "checkpoints.jsonl"
    assert not FileWitness(tmp_path / "witness.jsonl", server).outside
    other = Path("/dev/shm")
    if not other.is_dir() or other.stat().st_dev == tmp_path.stat().st_dev:
        pytest.skip("no second filesystem at /dev/shm here")
    assert FileWitness(other / "specadmin-witness.jsonl", server).outside


def test_checkpoints_are_posted_to_a_webhook_whose_copy_verifyaudit_checks(webhook, alice, bob):
    events(alice, bob)
    assert f"written to webhook {webhook.url}" in checkpoint()

    genesis, made = (json.loads(line) for line in webhook.lines())
    assert genesis["genesis"] is True and made["head_id"] == 3
    headers = webhook.requests[-1]
    assert headers["Content-Type"] == "application/json"
    assert headers["Authorization"] == "Bearer witness-token-of-this-test"
    copy = str(webhook.path)
    assert verifyaudit("--checkpoints", copy) == (
        "OK: 3 events, chain intact; matches 2 checkpoints",
        "",
    )


def test_a_webhook_that_is_down_stops_nothing_and_gets_every_checkpoint_later(
    webhook, alice, bob, settings
):
    events(alice, bob)
    webhook.status = 503
    with pytest.raises(CommandError, match=r"answered HTTP 503 .*\(1 checkpoints wait for it"):
        checkpoint()
    record(kind="rollback", actor=alice)  # recording goes on
    out, err = verifyaudit()
    assert out == intact(4, checkpoints=2)
    assert f"WARNING: 1 checkpoints wait for webhook {webhook.url}, the oldest of" in err

    webhook.status = 200
    checkpoint()

    local = Path(settings.AUDIT_CHECKPOINT_FILE).read_text().splitlines()
    assert webhook.lines() == local  # all of them, in order
    assert verifyaudit("--checkpoints", str(webhook.path)) == (
        "OK: 4 events, chain intact; matches 3 checkpoints",
        "",
    )


def test_verifyaudit_warns_when_no_copy_leaves_the_server(alice, bob):
    events(alice, bob)
    checkpoint()

    out, err = verifyaudit()
    assert out == intact(3, checkpoints=2)
    assert err.startswith("WARNING: no copy of the audit checkpoints leaves this server")
    assert "AUDIT_WITNESS_URL" in err
    returncode, message = verifyaudit_exit("--require-witness")
    assert returncode == 3 and "not (all) kept outside this server" in message


def test_with_a_webhook_witness_verifyaudit_requires_nothing_more(webhook, alice, bob):
    events(alice, bob)
    checkpoint()

    assert verifyaudit("--require-witness") == (intact(3, checkpoints=2), "")


def test_a_witness_that_is_behind_fails_require_witness(webhook, alice, bob):
    events(alice, bob)
    webhook.status = 503
    with pytest.raises(CommandError):
        checkpoint()

    returncode, _ = verifyaudit_exit("--require-witness")
    assert returncode == 3


def test_a_journal_copy_with_its_syslog_prefix_is_read_too(alice, bob, settings, tmp_path):
    events(alice, bob)
    checkpoint()
    journal = tmp_path / "journal.txt"
    journal.write_text(
        "".join(
            f"Dec 01 12:00:00 gpu1 specadmin-audit: {line}\n"
            for line in Path(settings.AUDIT_CHECKPOINT_FILE).read_text().splitlines()
        )
    )

    out, _ = verifyaudit("--checkpoints", str(journal))
    assert out == "OK: 3 events, chain intact; matches 2 checkpoints"


@pytest.mark.django_db(transaction=True)
def test_checkpoints_made_at_once_still_each_name_the_one_before(alice, bob, settings):
    """The worker's schedule, `auditcheckpoint` by hand and a first event's genesis can
    overlap: one writer at a time, or two would name the same predecessor."""
    events(alice, bob)
    keys = load_keys()

    def write_some() -> None:
        try:
            for _ in range(5):
                write_checkpoint(keys)
        finally:
            connection.close()

    threads = [threading.Thread(target=write_some) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)

    assert len(read_checkpoints(Path(settings.AUDIT_CHECKPOINT_FILE))) == 31
    assert verifyaudit()[0] == intact(3, checkpoints=31)


def test_witnesses_come_from_the_environment(tmp_path):
    probe = (
        "import json, django; django.setup(); from django.conf import settings as s; "
        "print(json.dumps([s.AUDIT_WITNESS_FILE, s.AUDIT_WITNESS_URLS, s.AUDIT_WITNESS_TOKEN]))"
    )
    token = tmp_path / "token"
    token.write_text("from-a-file\n")
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "specadmin.settings",
        "AUDIT_WITNESS_FILE": "off",
        "AUDIT_WITNESS_URL": "https://a.example/c https://b.example/c",
        "AUDIT_WITNESS_TOKEN_FILE": str(token),
    }
    done = subprocess.run(
        [sys.executable, "-c", probe],
        cwd=Path(__file__).resolve().parents[2],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    assert json.loads(done.stdout) == [
        "",
        ["https://a.example/c", "https://b.example/c"],
        "from-a-file",
    ]
