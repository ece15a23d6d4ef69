"""A hand-written vLLM unit on a real systemd host (tests/testhost): the probe lists it,
the import makes a profile whose rendered unit runs the same commands with the host's
drop-in, the history has the import, and specadmin may replace the file only after an
admin adopts it (then a request can be made for an approver to decide)."""

from __future__ import annotations

import secrets
from collections.abc import Iterator

import pytest
from django.core.exceptions import ValidationError

from audit.models import AuditEvent
from deploys.connect import transport_for
from deploys.probe import probe_host
from deploys.services import deploy_requests, hosts
from deploys.services.unit_adoptions import unit_adopt
from deploys.services.unit_imports import import_host_unit
from tests.deploys.helpers import UNIT_DIR, People
from tests.deploys.test_e2e_deploy import add_test_host
from tests.testhost.host import TestHost

pytestmark = pytest.mark.testhost

UNIT = """[Unit]
Description=Hand-written vLLM

[Service]
User=nobody
Environment=HF_HOME=/srv/hf
ExecStartPre=/bin/true
ExecStart=/opt/vllm/bin/vllm serve /models/m --port 8123 --max-num-seqs 8 --seed 1
Restart=on-failure
"""
DROPIN = "[Service]\nEnvironment=VLLM_LOGGING_LEVEL=DEBUG\n"


@pytest.fixture
def foreign(testhost: TestHost) -> Iterator[str]:
    name = f"vllm-hand-{secrets.token_hex(4)}"
    testhost.write_file(f"{UNIT_DIR}/{name}.service", UNIT)
    testhost.ssh(["mkdir", "-p", f"{UNIT_DIR}/{name}.service.d"])
    testhost.write_file(f"{UNIT_DIR}/{name}.service.d/10-debug.conf", DROPIN)
    yield name
    testhost.ssh(["rm", "-rf", f"{UNIT_DIR}/{name}.service", f"{UNIT_DIR}/{name}.service.d"])


def test_a_hand_written_unit_is_listed_imported_and_only_replaced_after_adoption(
    testhost: TestHost, people: People, foreign: str
) -> None:
    host = add_test_host(testhost, people)
    with transport_for(host) as transport:
        facts = probe_host(host=host, transport=transport)
    assert f"{foreign}.service" in facts["foreign_vllm_units"]
    host = hosts.host_record_probe(host=host, facts=facts, actor=people.olga)

    result = import_host_unit(host=host, unit_name=f"{foreign}.service", actor=people.olga)
    assert result.created and result.sameness.equal, result.sameness
    assert result.record.host_name == host.name
    assert any("10-debug.conf" in note for note in result.record.notes)
    event = AuditEvent.objects.filter(payload__imported=f"{foreign}.service").get()
    assert event.payload["host"] == host.name

    version = result.version
    with pytest.raises(ValidationError, match="adopt"):
        deploy_requests.deploy_request_create(
            profile_version=version, host=host, requested_by=people.olga
        )
    unit_adopt(host=host, unit_name=foreign, actor=people.ada, comment="imported as a profile")
    request = deploy_requests.deploy_request_create(
        profile_version=version, host=host, requested_by=people.olga
    )
    assert request.host_unit_text == UNIT  # the approver sees the file it replaces
