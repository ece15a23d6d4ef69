"""The rollout and group pages through Django's test client (no hosts: the deploy tests'
fake unit reads)."""

from __future__ import annotations

import pytest
from django.urls import reverse

from fleet.models import HostGroup, Rollout
from tests.fleet.helpers import advance

pytestmark = pytest.mark.django_db


def test_an_admin_makes_a_group_and_the_host_pages_show_it(client, people, hosts):
    client.force_login(people.ada)
    page = client.post(
        reverse("fleet:group_list"),
        {"name": "serving", "description": "behind the LB", "hosts": [h.pk for h in hosts[:2]]},
    )
    assert page.status_code == 302
    assert list(HostGroup.objects.get().hosts.order_by("name")) == hosts[:2]
    detail = client.get(reverse("deploys:host_detail", args=[hosts[0].pk])).content.decode()
    assert 'id="host-groups"' in detail and "serving" in detail
    listing = client.get(reverse("deploys:host_list")).content.decode()
    assert listing.count(">serving</a>") == 2


def test_an_operator_cannot_change_groups(client, people, hosts):
    client.force_login(people.olga)
    page = client.post(reverse("fleet:group_list"), {"name": "mine", "hosts": [hosts[0].pk]})
    assert page.status_code == 403 and not HostGroup.objects.exists()


def test_a_rollout_is_requested_shown_approved_once_and_goes_live(
    client, people, version, hosts, on_host, queued
):
    client.force_login(people.olga)
    form = {
        "profile_version": version.pk,
        "hosts": [h.pk for h in hosts[:3]],
        "canary": 1,
        "batch_size": 2,
        "pause_s": 0,
        "budget_kind": "count",
        "budget_value": 0,
        "acknowledge_warnings": "on",
    }
    made = client.post(reverse("fleet:rollout_new"), form)
    assert made.status_code == 302, made.content.decode()[-3000:]
    rollout = Rollout.objects.get()
    own = client.get(made["Location"]).content.decode()
    assert "3 hosts get text A" in own and "Approve the whole rollout" not in own
    assert f'id="rollout-history" href="/history/?rollout={rollout.pk}"' in own

    client.force_login(people.alice)
    page = client.get(made["Location"]).content.decode()
    assert "Approve the whole rollout" in page
    decided = client.post(
        reverse("fleet:rollout_decide", args=[rollout.pk]),
        {"decision": "approve", "expected_texts_sha256": rollout.texts_sha256, "comment": "go"},
    )
    assert decided.status_code == 302
    rollout.refresh_from_db()
    assert rollout.status == "running"
    advance(rollout)
    live = client.get(reverse("fleet:rollout_live", args=[rollout.pk])).content.decode()
    assert 'hx-get="' in live and "Deploying" in live and "canary" in live
    paused = client.post(reverse("fleet:rollout_control", args=[rollout.pk]), {"action": "pause"})
    assert paused.status_code == 302
    rollout.refresh_from_db()
    assert rollout.status == "paused"


def test_bad_rollout_input_is_a_clear_error_not_a_500(client, people, version, hosts, on_host):
    client.force_login(people.olga)
    form = {
        "profile_version": version.pk,
        "hosts": [hosts[0].pk],
        "canary": 2,
        "batch_size": 1,
        "pause_s": 0,
        "budget_kind": "percent",
        "budget_value": 0,
    }
    page = client.post(reverse("fleet:rollout_new"), form)
    assert page.status_code == 200
    assert "The canary (2 hosts) is larger than the rollout (1)." in page.content.decode()
    nothing = client.post(reverse("fleet:rollout_new"), {**form, "hosts": []})
    assert "Choose a host group or at least one host." in nothing.content.decode()
    control = client.post(reverse("fleet:rollout_control", args=[999]), {"action": "x"})
    assert control.status_code in (302, 404)
