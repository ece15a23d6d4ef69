"""Host addresses Python's IDNA codec refuses (a label over 63 letters, an empty label)
are a field error, never a 500."""

from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError
from django.test import Client
from django.urls import reverse

from deploys.models import Host
from deploys.services.hosts import host_create, host_update
from hostops.channel import HostUnreachable
from hostops.channel.ssh import SSHTransport, probe_host_key
from tests.deploys.helpers import People, fake_host_key

BAD_ADDRESSES = ["a" * 64, "b..c", ".", "x" * 254, "-a.example", "exa mple.com", "ä" * 70]


@pytest.mark.parametrize("address", BAD_ADDRESSES)
def test_host_form_refuses_an_address_that_is_no_host_name(
    client: Client, people: People, address: str
) -> None:
    client.force_login(people.ada)
    response = client.post(
        reverse("deploys:host_add"),
        {
            "name": "gpu-b",
            "address": address,
            "ssh_port": "22",
            "username": "root",
            "transport": "ssh",
            "auth": "agent",
        },
    )
    assert response.status_code == 200
    assert "is not a host name or an IP address" in response.content.decode()
    assert not Host.objects.exists()


@pytest.mark.parametrize("address", ["a" * 64 + ".example", "b..c"])
def test_ssh_transport_reports_an_address_idna_refuses_as_unreachable(address: str) -> None:
    with pytest.raises(HostUnreachable, match="not a valid host name"):
        probe_host_key(address, 22, timeout=2)
    key = fake_host_key()
    transport = SSHTransport(
        address,
        22,
        "root",
        pinned_host_key=f"{key.key_type} {key.base64}",
        use_agent=True,
        connect_timeout=2,
    )
    with pytest.raises(HostUnreachable, match="not a valid host name"):
        transport.run(["true"])


def test_services_refuse_such_addresses_too(people: People, host: Host) -> None:
    with pytest.raises(ValidationError) as info:
        host_update(host=host, actor=people.ada, address="b..c")
    assert "is not a host name or an IP address" in info.value.message_dict["address"][0]
    with pytest.raises(ValidationError):
        host_create(name="gpu-z", address="a" * 64, created_by=people.ada, transport="local")
    host.refresh_from_db()
    assert host.address == "10.0.0.7"
