"""The profile page says which hosts run which of its versions (the last unit pushed there
under each name), and offers "Deploy…" to those who may request deploys."""

from __future__ import annotations

from collections.abc import Callable

from django.test import Client
from django.urls import reverse

from deploys.models import DeployRequest, Host, PushedUnit
from deploys.running import profile_deployments
from tests.deploys.helpers import People, fake_host_key
from tests.units.factories import baseline
from units.models import ServiceProfile
from units.services import profile_create, profile_update

Status = DeployRequest.Status


def pushed(request: DeployRequest) -> PushedUnit:
    """The host runs `request`'s version now (as the job's push step records it)."""
    DeployRequest.objects.filter(pk=request.pk).update(status=Status.SUCCEEDED)
    return PushedUnit.objects.create(
        host=request.host,
        unit_name=request.unit_name,
        request=request,
        text=request.unit_text,
        sha256=request.unit_sha256,
    )


def second_host() -> Host:
    key = fake_host_key()
    return Host.objects.create(
        name="gpu-b",
        address="10.0.0.8",
        key_file="/etc/specadmin/id_ed25519",
        host_key=f"{key.key_type} {key.base64}",
        host_key_fingerprint=key.fingerprint_sha256,
    )


def test_each_host_shows_the_version_it_runs_now(
    people: People,
    profile: ServiceProfile,
    host: Host,
    make_request: Callable[..., DeployRequest],
) -> None:
    v1 = profile.versions.get()
    pushed(make_request(profile_version=v1))
    other = second_host()
    pushed(make_request(profile_version=v1, host=other))
    profile_update(profile=profile, data={"max_num_seqs": 32}, updated_by=people.olga)
    v2 = profile.versions.get(number=2)
    pushed(make_request(profile_version=v2))  # gpu-a moves to v2; gpu-b stays on v1
    # Another profile pushed under the same unit name replaces it on gpu-b.
    intruder = profile_create(data=baseline(name="vllm-other"), created_by=people.olga)
    pushed(
        make_request(profile_version=intruder.versions.get(), host=other, unit_name=profile.name)
    )
    found = [
        (d.version.number, d.host.name, d.unit_name)
        for d in profile_deployments(profile=profile).running
    ]
    assert found == [(2, "gpu-a", profile.name)]

    client = Client()
    client.force_login(people.olga)
    page = client.get(reverse("units:detail", args=[profile.pk])).content.decode()
    assert "Running on" in page and "gpu-a" in page and "gpu-b" not in page
    deploy = reverse("deploys:request_new") + f"?profile_version={v2.pk}"
    assert f'href="{deploy}"' in page


def test_viewers_see_where_it_runs_but_no_deploy_button(
    people: People, profile: ServiceProfile
) -> None:
    client = Client()
    client.force_login(people.vic)
    page = client.get(reverse("units:detail", args=[profile.pk])).content.decode()
    assert "Deploy…" not in page
    assert "Not deployed by specadmin yet" in page
