"""Host and deploy pages: permissions, the two-step host add, request preview/submit,
approve/reject, job steps. Host I/O is replaced by the `on_host` fixture (conftest.py)."""

from __future__ import annotations

import html
import re
from collections.abc import Callable
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from deploys.models import DeployRequest, Host, JobStep
from deploys.probe import NO_EXECUTABLE
from deploys.services import deploy_requests, hosts
from hostops.channel import HostUnreachable
from hostops.channel.ssh import HostKeyInfo
from tests.deploys.helpers import Enqueued, FakeHosts, People, fake_host_key
from tests.units.factories import baseline
from units.models import ProfileVersion
from units.services import profile_create

Status = DeployRequest.Status


def client_for(user: Any) -> Client:
    client = Client()
    client.force_login(user)
    return client


def url(name: str, *args: Any) -> str:
    return reverse(f"deploys:{name}", args=args)


# -- permissions ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "args"),
    [("host_list", ()), ("host_add", ()), ("request_list", ()), ("request_new", ())],
)
def test_anonymous_users_are_sent_to_the_login_page(db: None, name: str, args: tuple) -> None:
    response = Client().get(url(name, *args))
    assert response.status_code == 302
    assert response["Location"].startswith("/accounts/login/")


def test_viewer_sees_pages_but_cannot_request_approve_or_add(
    people: People, host: Host, make_request: Callable[..., DeployRequest]
) -> None:
    request = make_request()
    vic = client_for(people.vic)
    for page in (url("host_list"), url("host_detail", host.pk), url("request_list")):
        assert vic.get(page).status_code == 200
    detail = vic.get(url("request_detail", request.pk))
    assert detail.status_code == 200 and b"Approve this exact unit" not in detail.content
    assert vic.get(url("request_new")).status_code == 403
    assert vic.get(url("host_add")).status_code == 403
    assert vic.post(url("request_approve", request.pk)).status_code == 403
    assert vic.post(url("host_probe", host.pk)).status_code == 403
    request.refresh_from_db()
    assert request.status == Status.PENDING


def test_operator_cannot_approve(
    people: People, make_request: Callable[..., DeployRequest], enqueued: Enqueued
) -> None:
    request = make_request(requested_by=people.ada)
    olga = client_for(people.olga)
    assert b"Approve this exact unit" not in olga.get(url("request_detail", request.pk)).content
    assert olga.post(url("request_approve", request.pk)).status_code == 403
    request.refresh_from_db()
    assert request.status == Status.PENDING and enqueued.deploys == []


# -- hosts ----------------------------------------------------------------------------------


@pytest.fixture
def presented(monkeypatch: pytest.MonkeyPatch) -> HostKeyInfo:
    key = fake_host_key()
    monkeypatch.setattr(hosts, "probe_host_key", lambda address, port, timeout: key)
    return key


HOST_FORM = {
    "name": "gpu-c",
    "address": "10.0.0.9",
    "ssh_port": "22",
    "username": "root",
    "transport": "ssh",
    "auth": "key_file",
    "key_file": "/etc/specadmin/id_ed25519",
}


def test_add_host_in_two_steps_shows_the_fingerprint_then_pins_it(
    people: People, presented: HostKeyInfo
) -> None:
    ada = client_for(people.ada)
    step1 = ada.post(url("host_add"), {**HOST_FORM, "step": "probe"})
    assert step1.status_code == 200
    assert presented.fingerprint_sha256.encode() in step1.content
    assert not Host.objects.exists()
    unconfirmed = ada.post(
        url("host_add"),
        {
            **HOST_FORM,
            "step": "confirm",
            "host_key": f"{presented.key_type} {presented.base64}",
            "fingerprint": presented.fingerprint_sha256,
        },
    )
    assert unconfirmed.status_code == 200 and not Host.objects.exists()  # box not ticked
    step2 = ada.post(
        url("host_add"),
        {
            **HOST_FORM,
            "step": "confirm",
            "host_key": f"{presented.key_type} {presented.base64}",
            "fingerprint": presented.fingerprint_sha256,
            "confirm": "on",
        },
    )
    added = Host.objects.get(name="gpu-c")
    assert step2.status_code == 302 and step2["Location"] == url("host_detail", added.pk)
    assert added.host_key_fingerprint == presented.fingerprint_sha256
    page = ada.get(url("host_detail", added.pk))
    assert presented.fingerprint_sha256.encode() in page.content
    assert b"BEGIN" not in page.content  # no key material, only the path


@pytest.mark.parametrize(
    ("key_file", "message"),
    [("id_ed25519", b"Use an absolute path"), ("", b"A key file path is required")],
)
def test_add_host_refuses_an_unusable_key_file_path_in_step_one_before_the_fingerprint(
    people: People, monkeypatch: pytest.MonkeyPatch, key_file: str, message: bytes
) -> None:
    # Said only after the admin had compared and confirmed the fingerprint, this sent them
    # back to step 1 to read and compare it all over again.
    probed: list[str] = []
    monkeypatch.setattr(hosts, "probe_host_key", lambda address, *a: probed.append(address))
    step1 = client_for(people.ada).post(
        url("host_add"), {**HOST_FORM, "key_file": key_file, "step": "probe"}
    )
    assert step1.status_code == 200 and message in step1.content
    assert probed == [] and not Host.objects.exists()


def test_add_host_with_a_pasted_private_key_refuses_and_never_echoes_it(
    people: People, monkeypatch: pytest.MonkeyPatch
) -> None:
    probed: list[str] = []
    monkeypatch.setattr(hosts, "probe_host_key", lambda address, *a: probed.append(address))
    key = "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n-----END"
    for step in ("probe", "confirm"):
        response = client_for(people.ada).post(
            url("host_add"), {**HOST_FORM, "key_file": key, "step": step}
        )
        assert response.status_code == 200
        assert b"not the key itself" in response.content
        assert b"PRIVATE KEY" not in response.content
        assert b"b3BlbnNzaC1rZXkt" not in response.content
    assert probed == [] and not Host.objects.exists()


def test_add_host_unreachable_shows_the_error(
    people: People, monkeypatch: pytest.MonkeyPatch
) -> None:
    def refuse(address: str, port: int, timeout: float) -> HostKeyInfo:
        raise HostUnreachable(f"cannot connect to {address}:{port}: Connection refused")

    monkeypatch.setattr(hosts, "probe_host_key", refuse)
    response = client_for(people.ada).post(url("host_add"), {**HOST_FORM, "step": "probe"})
    assert response.status_code == 200
    assert b"Connection refused" in response.content
    assert not Host.objects.exists()


def test_probe_button_queues_a_probe_and_results_show(
    people: People, host: Host, enqueued: Enqueued, django_capture_on_commit_callbacks: Any
) -> None:
    olga = client_for(people.olga)
    with django_capture_on_commit_callbacks(execute=True):
        response = olga.post(url("host_probe", host.pk), follow=True)
    assert b"Probe of gpu-a queued" in response.content
    assert enqueued.probes == [(host.pk, people.olga.pk)]
    Host.objects.filter(pk=host.pk).update(
        systemd_version=257,
        vllm_version="0.16.0",
        gpu_count=1,
        gpus=[{"index": 0, "name": "NVIDIA H200", "memory_free_mib": 140000}],
        managed_units=[{"name": "vllm-x.service", "profile": "vllm-x"}],
        probed_at="2026-01-01T00:00:00Z",
    )
    page = olga.get(url("host_detail", host.pk)).content
    assert b"NVIDIA H200" in page and b"vllm-x.service" in page and b"257" in page


@pytest.mark.parametrize("outcome", ["facts", "error"])
def test_a_queued_probe_polls_its_results_until_the_worker_records_them(
    people: People,
    host: Host,
    enqueued: Enqueued,
    django_capture_on_commit_callbacks: Any,
    outcome: str,
) -> None:
    olga = client_for(people.olga)
    results = url("host_probe_results", host.pk)
    assert f'hx-get="{results}"' not in olga.get(url("host_detail", host.pk)).content.decode()
    with django_capture_on_commit_callbacks(execute=True):
        olga.post(url("host_probe", host.pk))
    page = olga.get(url("host_detail", host.pk)).content.decode()
    assert f'hx-get="{results}"' in page and "waiting for a worker" in page
    assert f'hx-get="{results}"' in olga.get(results).content.decode()
    # The worker records the outcome (what deploys.jobs.runner.run_probe calls).
    if outcome == "facts":
        hosts.host_record_probe(
            host=host, facts={"systemd_version": 257, "gpu_count": 8}, actor=people.olga
        )
    else:
        hosts.host_record_probe_error(host=host, error="HostUnreachable: no route", actor=None)
    fragment = olga.get(results).content.decode()
    assert "hx-get" not in fragment and "waiting for a worker" not in fragment
    assert ("257" if outcome == "facts" else "no route") in fragment


# -- requests ----------------------------------------------------------------------------------


def test_new_request_preview_shows_diff_and_findings_then_submits(
    people: People, version: ProfileVersion, host: Host, on_host: FakeHosts
) -> None:
    olga = client_for(people.olga)
    form = {"profile_version": version.pk, "host": host.pk, "unit_name": ""}
    assert olga.get(url("request_new")).status_code == 200
    preview = olga.post(url("request_new"), {**form, "step": "preview"})
    assert preview.status_code == 200
    text = preview.content.decode()
    assert "gpu-a:/etc/systemd/system/vllm-kimi-k25-int4.service" in text  # diff header
    assert "-ExecStart=/bin/true" in text and "No lint findings" in text
    assert not DeployRequest.objects.exists()
    submitted = olga.post(url("request_new"), {**form, "step": "submit"})
    request = DeployRequest.objects.get()
    assert submitted.status_code == 302
    assert submitted["Location"] == url("request_detail", request.pk)


def test_new_request_with_unreachable_host_shows_the_error(
    people: People, version: ProfileVersion, host: Host, on_host: FakeHosts
) -> None:
    on_host.error = HostUnreachable("cannot connect to 10.0.0.7:22: No route to host")
    response = client_for(people.olga).post(
        url("request_new"),
        {"profile_version": version.pk, "host": host.pk, "step": "submit"},
    )
    assert response.status_code == 200
    assert b"No route to host" in response.content
    assert not DeployRequest.objects.exists()


def test_new_request_with_a_bad_unit_name_shows_the_error(
    people: People, version: ProfileVersion, host: Host, on_host: FakeHosts
) -> None:
    response = client_for(people.olga).post(
        url("request_new"),
        {"profile_version": version.pk, "host": host.pk, "unit_name": "../x", "step": "submit"},
    )
    assert response.status_code == 200
    assert "cannot contain “/” or “..”".encode() in response.content
    assert on_host.reads == [] and not DeployRequest.objects.exists()


def test_warnings_need_the_checkbox(people: People, host: Host, on_host: FakeHosts) -> None:
    short = profile_create(
        data=baseline(name="vllm-short", timeout_stop_sec=5), created_by=people.olga
    ).versions.get()
    olga = client_for(people.olga)
    form = {"profile_version": short.pk, "host": host.pk, "step": "submit"}
    refused = olga.post(url("request_new"), form)
    assert refused.status_code == 200 and b"OP405" in refused.content
    assert b"acknowledge" in refused.content and not DeployRequest.objects.exists()
    assert len(on_host.reads) == 1, "the refused submit and its preview share one host read"
    accepted = olga.post(url("request_new"), {**form, "acknowledge_warnings": "on"})
    assert accepted.status_code == 302 and DeployRequest.objects.get().warnings_acknowledged
    assert len(on_host.reads) == 2


def test_approver_approves_from_the_detail_page(
    people: People,
    make_request: Callable[..., DeployRequest],
    enqueued: Enqueued,
    django_capture_on_commit_callbacks: Any,
) -> None:
    request = make_request()
    alice = client_for(people.alice)
    page = alice.get(url("request_detail", request.pk))
    assert b"Approve this exact unit" in page.content
    with django_capture_on_commit_callbacks(execute=True):
        response = alice.post(
            url("request_approve", request.pk),
            {"comment": "looks right", "expected_sha256": request.unit_sha256},
            follow=True,
        )
    assert b"approved: the job below shows each step" in response.content
    assert enqueued.deploys == [request.pk]
    again = client_for(people.bob).post(url("request_approve", request.pk), follow=True)
    assert b"already approved, queued by alice" in again.content
    assert enqueued.deploys == [request.pk]


def test_requester_sees_no_decision_form_and_cannot_approve_by_post(
    people: People, make_request: Callable[..., DeployRequest], enqueued: Enqueued
) -> None:
    request = make_request(requested_by=people.ada)
    ada = client_for(people.ada)
    page = ada.get(url("request_detail", request.pk))
    assert b"Approve this exact unit" not in page.content
    assert b"You requested this deploy: someone else must decide" in page.content
    assert ada.post(url("request_approve", request.pk)).status_code == 403
    request.refresh_from_db()
    assert request.status == Status.PENDING and enqueued.deploys == []


def test_a_comment_over_the_limit_decides_nothing(
    people: People, make_request: Callable[..., DeployRequest], enqueued: Enqueued
) -> None:
    request = make_request()
    response = client_for(people.alice).post(
        url("request_approve", request.pk),
        {"comment": "x" * 2001, "expected_sha256": request.unit_sha256},
        follow=True,
    )
    assert b"at most 2000 characters" in response.content
    request.refresh_from_db()
    assert request.status == Status.PENDING and enqueued.deploys == []


def test_reject_with_a_comment(people: People, make_request: Callable[..., DeployRequest]) -> None:
    request = make_request()
    bob = client_for(people.bob)
    empty = bob.post(url("request_reject", request.pk), {"comment": ""}, follow=True)
    assert b"Say why" in empty.content
    bob.post(url("request_reject", request.pk), {"comment": "wrong GPU split"})
    request.refresh_from_db()
    assert request.status == Status.REJECTED
    page = re.sub(r"<[^>]+>", "", bob.get(url("request_detail", request.pk)).content.decode())
    assert "Rejected — Rejected" not in page and "wrong GPU split" in page


def test_request_list_filters_by_status_and_host(
    people: People, make_request: Callable[..., DeployRequest], host: Host
) -> None:
    other = Host.objects.create(name="gpu-z", address="10.0.0.99", key_file="/k", host_key="k")
    first = make_request()
    second = make_request(host=other)
    deploy_requests.deploy_request_reject(request=second, approver=people.alice, comment="no")
    vic = client_for(people.vic)

    def listed(**query: Any) -> set[int]:
        response = vic.get(url("request_list"), query)
        return {r.pk for r in response.context["page"]}

    assert listed() == {first.pk, second.pk}
    assert listed(status="pending") == {first.pk}
    assert listed(host=other.pk) == {second.pk}
    assert listed(status="pending", host=other.pk) == set()


def test_request_detail_shows_job_steps_and_logs(
    people: People, make_request: Callable[..., DeployRequest]
) -> None:
    request = make_request()
    JobStep.objects.create(request=request, name="preflight", status="succeeded", log="lint ok")
    JobStep.objects.create(
        request=request, name="push", status="failed", log="host key of 10.0.0.7:22 does not …"
    )
    page = client_for(people.vic).get(url("request_detail", request.pk)).content
    assert b"preflight" in page and b"lint ok" in page and b"does not" in page


def test_admin_pages_are_read_only(
    people: People, make_request: Callable[..., DeployRequest]
) -> None:
    request = make_request()
    root = get_user_model().objects.create_superuser("root")
    client = client_for(root)
    for name in ("host", "deployrequest", "jobstep", "pushedunit"):
        assert client.get(f"/admin/deploys/{name}/").status_code == 200
    assert client.get(f"/admin/deploys/deployrequest/{request.pk}/change/").status_code == 200
    assert client.get("/admin/deploys/host/add/").status_code == 403


def test_the_deploy_form_preselects_the_only_host(people: People, host: Host) -> None:
    page = client_for(people.olga).get(url("request_new")).content.decode()
    assert re.search(rf'<option value="{host.pk}" selected>', page)


def test_the_deploy_form_without_any_host_says_how_to_get_one(people: People) -> None:
    assert not Host.objects.exists()
    page = client_for(people.olga).get(url("request_new")).content.decode()
    assert "No host to deploy to yet" in page
    assert f'href="{url("host_list")}"' in page


def test_a_refused_list_of_probe_executables_is_kept_in_the_form_with_each_problem(
    people: People, host: Host
) -> None:
    # It used to redirect: the admin's text was gone and both problems read as one line.
    typed = "vllm\n/opt/vllm/bin/../bin/vllm\n/opt/vllm/bin/vllm"
    response = client_for(people.ada).post(
        url("host_probe_executables", host.pk), {"executables": typed}
    )
    assert response.status_code == 400
    page = html.unescape(response.content.decode())
    assert f">\n{typed}</textarea>" in page
    assert re.search(r"<li>.vllm.: not an absolute path</li>", page)
    assert re.search(r"<li>'/opt/vllm/bin/\.\./bin/vllm': write it plainly", page)
    host.refresh_from_db()
    assert host.probe_executables == []


def test_a_new_hosts_probe_with_nothing_it_may_run_is_a_note_not_an_error(
    people: People, host: Host
) -> None:
    # A first probe (no unit pushed yet) read systemd and the GPUs and asked no vLLM:
    # expected, yet it showed in red and the host list said "error".
    Host.objects.filter(pk=host.pk).update(probed_at=timezone.now(), probe_error=NO_EXECUTABLE)
    ada = client_for(people.ada)
    page = html.unescape(ada.get(url("host_detail", host.pk)).content.decode())
    assert f'<li class="issue info">{NO_EXECUTABLE}</li>' in page
    assert 'class="badge error"' not in ada.get(url("host_list")).content.decode()
    Host.objects.filter(pk=host.pk).update(probe_error=f"{NO_EXECUTABLE}\nGPUs: timed out")
    page = html.unescape(ada.get(url("host_detail", host.pk)).content.decode())
    assert '<li class="issue error">GPUs: timed out</li>' in page
    assert 'class="badge error"' in ada.get(url("host_list")).content.decode()
