"""What runs where after the sequences that once told the wrong story: a regressed deploy
rolled back, a variant deployed under the production unit that crashed while loading, a
rollback request, a unit changed on the host behind specadmin's back. Read from the pages
(as text, the way a person reads them) and the audit history."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import AbstractBaseUser
from django.test import Client
from django.urls import reverse

from audit.models import AuditEvent, AuditKind
from deploys.jobs import runner
from deploys.models import DeployRequest, Host
from deploys.running import rollback_choices, unit_on_host
from deploys.services.deploy_requests import deploy_request_create
from deploys.services.unit_requests import rollback_request_create
from tests.deploys.helpers import make_users, unique
from tests.deploys.what_runs_support import FAST, LocalSide, host_page_units, use_local_side
from tests.units.factories import baseline
from units.models import ServiceProfile
from units.services import profile_clone, profile_create, profile_update

Status = DeployRequest.Status


class Site:
    """A host (in memory), a requester, an approver and a client logged in as the first."""

    def __init__(self, side: LocalSide) -> None:
        self.side = side
        self.olga, self.adam = make_users()
        self.client = Client()
        self.client.force_login(self.olga)
        self.host = Host.objects.create(name=unique("gpu"), address="localhost", transport="local")

    def deploy(self, profile: ServiceProfile, unit: str = "", fault: str = "") -> DeployRequest:
        request = deploy_request_create(
            profile_version=profile.versions.order_by("-number").first(),
            host=self.host,
            requested_by=self.olga,
            unit_name=unit,
            acknowledge_warnings=True,
        )
        self.side.run(request, self.adam, fault)
        request.refresh_from_db()
        return request

    def host_page(self) -> str:
        return self.client.get(reverse("deploys:host_detail", args=[self.host.pk])).content.decode()

    def profile_page(self, profile: ServiceProfile) -> str:
        return self.client.get(reverse("units:detail", args=[profile.pk])).content.decode()


@pytest.fixture
def site(monkeypatch: pytest.MonkeyPatch, transactional_db: None) -> Site:
    return Site(use_local_side(monkeypatch, LocalSide()))


@pytest.fixture
def kimi(site: Site) -> ServiceProfile:
    return profile_create(data=baseline(name=unique("vllm-kimi"), **FAST), created_by=None)


def _v2(profile: ServiceProfile) -> None:
    profile_update(profile=profile, data={"max_num_seqs": 32}, updated_by=None)


def test_after_a_regressed_deploy_rolls_back_both_pages_name_the_version_whose_text_runs(
    site: Site, kimi: ServiceProfile
) -> None:
    assert site.deploy(kimi).status == Status.SUCCEEDED
    _v2(kimi)
    assert site.deploy(kimi, fault="regress").status == Status.ROLLED_BACK
    v1_sha = kimi.versions.get(number=1).unit_sha256
    [row] = host_page_units(site.client, site.host).values()
    assert row.sha256 == v1_sha
    assert row.versions == {f"{kimi.name} v1"}, row.text
    page = site.profile_page(kimi)
    running = page.split('id="running-on"', 1)[1].split("</table>", 1)[0]
    assert ">v1</a>" in running and ">v2</a>" not in running
    assert "Not deployed by specadmin yet" not in page
    # v2 regressed there: said so on the profile page and in the rollback choice.
    assert "regressed (#" in page.split('id="host-history"', 1)[1]
    [choice] = rollback_choices(host=site.host, unit_name=kimi.name)
    assert choice.label.startswith(f"{kimi.name} v2 — regressed (#")


def test_a_variant_that_crashed_under_the_production_unit_leaves_known_good_v1_offered_by_name(
    site: Site, kimi: ServiceProfile
) -> None:
    assert site.deploy(kimi).status == Status.SUCCEEDED
    ngram = profile_clone(profile=kimi, new_name=unique("vllm-ngram"), created_by=None)
    _v2(ngram)
    crashed = site.deploy(ngram, unit=kimi.name, fault="crash")
    assert crashed.status == Status.ROLLED_BACK
    unit = unit_on_host(host=site.host, unit_name=kimi.name)
    assert unit is not None and unit.text.name == f"{kimi.name} v1"
    assert unit.text.last_known_good
    # One choice per text: the crashed variant, named as such; v1 runs, so is not offered.
    labels = [c.label for c in unit.choices]
    assert labels == [f"{ngram.name} v2 — failed at readiness (#{crashed.pk})"]
    assert f">{ngram.name} v2" not in site.host_page().split("<select", 1)[0]
    # The variant's page does not claim it runs; the production profile's does.
    assert "Not deployed by specadmin yet" in site.profile_page(ngram).split("</section>", 1)[0]
    assert "Not deployed by specadmin yet" not in site.profile_page(kimi)


def test_a_rollback_request_is_about_the_version_whose_text_it_puts_back(
    site: Site, kimi: ServiceProfile
) -> None:
    site.deploy(kimi)
    ngram = profile_clone(profile=kimi, new_name=unique("vllm-ngram"), created_by=None)
    site.deploy(ngram, unit=kimi.name, fault="crash")  # the restore is written by ngram's job
    _v2(kimi)
    assert site.deploy(kimi).status == Status.SUCCEEDED
    choices = rollback_choices(host=site.host, unit_name=kimi.name)
    assert [c.text.name for c in choices] == [f"{kimi.name} v1", f"{ngram.name} v1"]
    # v1's newest push is the one ngram's job wrote when it put v1 back.
    v1 = choices[0].push
    assert v1.request is not None and v1.request.profile_version.profile == ngram
    request = rollback_request_create(host=site.host, to=v1, requested_by=site.olga)
    assert str(request.profile_version) == f"{kimi.name} v1"
    event = AuditEvent.objects.filter(
        kind=AuditKind.DEPLOY_REQUESTED, object_id=str(request.pk)
    ).get()
    assert event.profile_name == kimi.name
    assert event.payload["unit_versions"] == [f"{kimi.name} v1"]
    assert event.payload["host_unit_versions"] == [f"{kimi.name} v2"]
    page = site.client.get(reverse("deploys:request_detail", args=[request.pk])).content.decode()
    assert f"{kimi.name} v1</a>" in page  # the "Profile version" line
    assert 'class="unit-is">' + f"{kimi.name} v1</dd>" in page
    assert site.side.run(request, site.adam) == Status.SUCCEEDED
    final = AuditEvent.objects.filter(object_id=str(request.pk)).latest("id")
    assert final.payload["on_host"]["versions"] == [{"profile": kimi.name, "version": 1}]


def test_a_probe_finds_a_unit_changed_outside_specadmin(
    site: Site, kimi: ServiceProfile, django_user_model: type[AbstractBaseUser]
) -> None:
    site.deploy(kimi)
    site.side.change_outside(kimi.name)
    runner.run_probe(site.host.pk, None, connect=site.side.connect)
    [row] = host_page_units(site.client, site.host).values()
    assert not row.versions and "changed outside specadmin" in row.text
    assert "as read by a probe" in row.text
    assert "Not deployed by specadmin yet" in site.profile_page(kimi)
    probed = AuditEvent.objects.filter(kind=AuditKind.HOST_PROBED).latest("id")
    assert probed.payload["on_host"][0]["is"].startswith("changed outside specadmin")
