"""Editing and removing (archiving) a host: admins only, every change audited, and nothing
that would leave a pinned key pointing at another machine or a queued job without a host."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from django.core.exceptions import ValidationError
from django.test import Client
from django.urls import reverse

from audit.models import AuditEvent, AuditKind
from deploys.models import DeployRequest, Host
from deploys.selectors import deployable_hosts
from deploys.services import hosts
from tests.deploys.helpers import People


def client_for(user: Any) -> Client:
    client = Client()
    client.force_login(user)
    return client


def url(name: str, *args: Any) -> str:
    return reverse(f"deploys:{name}", args=args)


def edit_form(host: Host, **changes: Any) -> dict[str, Any]:
    form = {
        "address": host.address,
        "ssh_port": host.ssh_port,
        "username": host.username,
        "transport": host.transport,
        "auth": host.auth,
        "key_file": host.key_file,
    }
    return {**form, **changes}


def events(kind: str) -> list[AuditEvent]:
    return list(AuditEvent.objects.filter(kind=kind).order_by("id"))


def test_an_admin_edits_a_host_and_the_change_is_audited(people: People, host: Host) -> None:
    response = client_for(people.ada).post(
        url("host_edit", host.pk), edit_form(host, username="deploy", key_file="/etc/k2")
    )
    assert response.status_code == 302
    host.refresh_from_db()
    assert (host.username, host.key_file) == ("deploy", "/etc/k2")
    assert host.key_pinned  # same machine: the pinned key still applies
    (event,) = events(AuditKind.HOST_CHANGED)
    assert event.actor_id == people.ada.pk
    assert event.payload["changes"] == {
        "username": ["root", "deploy"],
        "key_file": ["/etc/specadmin/id_ed25519", "/etc/k2"],
    }


def test_a_new_address_unpins_the_key_until_it_is_confirmed_again(
    people: People, host: Host
) -> None:
    page = client_for(people.ada).post(
        url("host_edit", host.pk), edit_form(host, address="10.0.0.9"), follow=True
    )
    host.refresh_from_db()
    assert host.address == "10.0.0.9" and not host.key_pinned
    assert "pin" in page.content.decode().lower()
    assert host not in deployable_hosts()
    (event,) = events(AuditKind.HOST_CHANGED)
    assert event.payload["key_unpinned"] is True


def test_nothing_changed_records_nothing(people: People, host: Host) -> None:
    client_for(people.ada).post(url("host_edit", host.pk), edit_form(host))
    assert events(AuditKind.HOST_CHANGED) == []


def test_bad_input_is_shown_at_its_field_and_nothing_is_saved(people: People, host: Host) -> None:
    ada = client_for(people.ada)
    for field, value in (("ssh_port", "0"), ("key_file", "relative/key")):
        response = ada.post(url("host_edit", host.pk), edit_form(host, **{field: value}))
        assert response.status_code == 200
        assert list(response.context["form"].errors) == [field]
    host.refresh_from_db()
    assert host.ssh_port == 22 and events(AuditKind.HOST_CHANGED) == []


def test_archiving_hides_the_host_is_audited_and_can_be_undone(people: People, host: Host) -> None:
    ada = client_for(people.ada)
    ada.post(url("host_archive", host.pk))
    host.refresh_from_db()
    assert host.archived and host not in deployable_hosts()
    listed = f'href="{url("host_detail", host.pk)}"'
    assert listed not in ada.get(url("host_list")).content.decode()
    assert listed in ada.get(url("host_list") + "?archived=1").content.decode()
    ada.post(url("host_unarchive", host.pk))
    host.refresh_from_db()
    assert not host.archived
    assert [e.kind for e in AuditEvent.objects.filter(kind__startswith="host.").order_by("id")] == [
        AuditKind.HOST_ARCHIVED,
        AuditKind.HOST_UNARCHIVED,
    ]


def test_a_host_with_open_requests_is_not_archived(
    people: People, host: Host, make_request: Callable[..., DeployRequest]
) -> None:
    request = make_request()
    with pytest.raises(ValidationError, match=f"#{request.pk}"):
        hosts.host_archive(host=host, actor=people.ada)
    page = client_for(people.ada).post(url("host_archive", host.pk), follow=True)
    assert f"#{request.pk}" in page.content.decode()
    host.refresh_from_db()
    assert not host.archived


@pytest.mark.parametrize("who", ["olga", "vic"])
def test_only_admins_edit_or_archive_hosts(people: People, host: Host, who: str) -> None:
    client = client_for(getattr(people, who))
    assert client.get(url("host_edit", host.pk)).status_code == 403
    assert client.post(url("host_edit", host.pk), edit_form(host)).status_code == 403
    assert client.post(url("host_archive", host.pk)).status_code == 403
    with pytest.raises(Exception, match="not allowed"):
        hosts.host_archive(host=host, actor=getattr(people, who))
