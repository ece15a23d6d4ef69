"""A deploy is linted together with the other units specadmin deployed on that host, so a
unit that would clash with one already running (same port) is seen on the request page,
not at the job's GPU-clean step. The host's current unit is read through `on_host`.
"""

from __future__ import annotations

from collections.abc import Callable

from django.test import Client

from deploys import selectors
from deploys.models import DeployRequest, Host, PushedUnit
from hostops.channel.push import sha256_hex
from tests.deploys.helpers import FakeHosts, People
from tests.units.factories import baseline, ngram
from units.models import ProfileVersion
from units.rendering import render_unit


def deployed(host: Host, unit_name: str, data: dict) -> PushedUnit:
    """Record `data` rendered as pushed to `host` under `unit_name` (as a job does)."""
    text = render_unit(data)
    return PushedUnit.objects.create(
        host=host, unit_name=unit_name, text=text, sha256=sha256_hex(text.encode())
    )


def clashes(findings: list[dict]) -> list[dict]:
    return [f for f in findings if f["code"] == "VL325"]


def test_a_unit_on_the_port_of_another_deployed_unit_gets_a_finding_naming_it(
    version: ProfileVersion, host: Host
) -> None:
    deployed(host, "vllm-kimi-k25-int4-ngram", ngram())  # vLLM's default port 8000
    deployed(host, "vllm-small", baseline(name="vllm-small", port=8001))
    unit = selectors.unit_for_host(
        profile_version=version, host=host, unit_name="vllm-kimi-k25-int4"
    )
    found = clashes(unit.findings)
    assert len(found) == 1, unit.findings
    assert found[0]["severity"] == "warning"
    assert "vllm-kimi-k25-int4-ngram.service" in found[0]["message"]
    assert "vllm-small" not in found[0]["message"]


def test_a_unit_on_the_gpus_of_another_deployed_unit_gets_a_finding_naming_it(
    version: ProfileVersion, host: Host
) -> None:
    deployed(host, "vllm-small", baseline(name="vllm-small", port=8001))  # GPUs 0-7, 0.92
    unit = selectors.unit_for_host(
        profile_version=version, host=host, unit_name="vllm-kimi-k25-int4"
    )
    found = [f for f in unit.findings if f["code"] == "VL332"]
    assert len(found) == 1, unit.findings
    assert "GPU 0,1,2,3,4,5,6,7 also used by vllm-small.service" in found[0]["message"]
    assert clashes(unit.findings) == []


def test_redeploying_the_same_unit_name_is_an_upgrade_not_a_clash(
    version: ProfileVersion, host: Host
) -> None:
    deployed(host, "vllm-kimi-k25-int4", ngram(name="vllm-kimi-k25-int4"))
    unit = selectors.unit_for_host(
        profile_version=version, host=host, unit_name="vllm-kimi-k25-int4"
    )
    assert clashes(unit.findings) == []


def test_findings_of_the_other_units_themselves_are_not_shown(
    version: ProfileVersion, host: Host
) -> None:
    # Its own port and a GPU share that fits beside 0.92: only its own OP405.
    other = baseline(
        name="vllm-short-stop", port=8001, timeout_stop_sec=5, gpu_memory_utilization=0.08
    )
    deployed(host, "vllm-short-stop", other)
    unit = selectors.unit_for_host(
        profile_version=version, host=host, unit_name="vllm-kimi-k25-int4"
    )
    assert unit.findings == []  # OP405 is the other unit's, not this one's


def test_units_deployed_on_another_host_do_not_clash(version: ProfileVersion, host: Host) -> None:
    other = Host.objects.create(name="gpu-b", address="10.0.0.8")
    deployed(other, "vllm-kimi-k25-int4-ngram", ngram())
    unit = selectors.unit_for_host(
        profile_version=version, host=host, unit_name="vllm-kimi-k25-int4"
    )
    assert clashes(unit.findings) == []


def test_the_request_stores_the_clash_and_needs_it_acknowledged(
    make_request: Callable[..., DeployRequest], host: Host
) -> None:
    deployed(host, "vllm-kimi-k25-int4-ngram", ngram())
    request = make_request(acknowledge_warnings=True)
    assert [f["code"] for f in request.lint_findings] == ["VL325", "VL332"]
    assert request.warnings_acknowledged


def test_the_deploy_page_shows_the_clash_with_the_other_unit_named(
    people: People, version: ProfileVersion, host: Host, on_host: FakeHosts
) -> None:
    deployed(host, "vllm-kimi-k25-int4-ngram", ngram())
    client = Client()
    client.force_login(people.olga)
    response = client.post(
        "/deploys/requests/new/",
        {"profile_version": version.pk, "host": host.pk, "step": "preview"},
    )
    page = response.content.decode()
    assert response.status_code == 200
    assert "VL325" in page
    assert "vllm-kimi-k25-int4-ngram.service" in page
    assert "No lint findings" not in page
