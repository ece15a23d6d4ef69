"""Secrets never reach the audit log: record() refuses payloads that look like they hold one."""

from __future__ import annotations

import pytest

from audit.models import AuditEvent
from audit.services import record

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(
    "payload",
    [
        {"password": "hunter2"},
        {"db_password": "x"},
        {"ssh-passphrase": "x"},
        {"private_key": "x"},
        {"privateKey": "x"},
        {"ssh_private_key_path": "/root/.ssh/id_ed25519"},
        {"api_token": "x"},
        {"Token": "x"},
        {"client_secret": "x"},
        {"SECRET_KEY": "x"},
        {"api_key": "x"},
        {"host": {"auth": {"password": "x"}}},
        {"steps": [{"name": "push"}, {"token": "x"}]},
    ],
)
def test_payload_keys_that_name_a_secret_are_refused(alice, payload):
    with pytest.raises(ValueError, match="secrets never go to the audit log"):
        record(kind="host.added", actor=alice, payload=payload)

    assert not AuditEvent.objects.exists()


def test_a_private_key_in_a_value_is_refused(alice):
    key = "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n"
    with pytest.raises(ValueError, match="contains a private key"):
        record(kind="host.added", actor=alice, payload={"note": key})


@pytest.mark.parametrize(
    "payload",
    [
        {"output_tokens": 512},
        {"num_speculative_tokens": 3},
        {"host_key_fingerprint": "SHA256:abc"},
        {"key_file": "/etc/specadmin/id_ed25519"},
        {"secretary": "not a secret"},
    ],
)
def test_ordinary_keys_that_merely_resemble_secrets_are_accepted(alice, payload):
    assert record(kind="host.added", actor=alice, payload=payload).payload == payload


@pytest.mark.parametrize(
    ("payload", "message"),
    [
        ({"when": object()}, "not plain JSON"),
        ({"ids": {1, 2}}, "not plain JSON"),
        ({"ratio": float("nan")}, "JSON cannot hold"),
        (["not", "a", "dict"], "must be a dict"),
        ({"text": "a\x00b"}, "NUL"),
    ],
)
def test_payloads_that_are_not_plain_json_are_refused(alice, payload, message):
    with pytest.raises(ValueError, match=message):
        record(kind="host.added", actor=alice, payload=payload)
