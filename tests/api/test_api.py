"""The API through its real URLs: what each role may read and write (the web's
permissions), secrets masked for viewers, deploy requests made but never approved,
jobs read live, every call audited with the token's name, the limits."""

from __future__ import annotations

import re
from collections.abc import Callable

import pytest
from django.core.cache import cache
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver, reverse
from hypothesis import given, settings
from hypothesis import strategies as st
from rest_framework.test import APIClient

from api.throttling import ReadRate
from audit.models import AuditEvent, AuditKind
from deploys.models import DeployRequest, Host, JobStep
from deploys.services.deploy_requests import deploy_request_approve
from hostops.channel import HostUnreachable
from perf.models import BenchRun
from tests.deploys.helpers import Enqueued, FakeHosts, People
from tests.deploys.trial_support import PRODUCTION, TrialSide
from tests.perf.factories import stored_run
from units.models import PROFILE_FIELDS, ServiceProfile
from units.services import profile_update

pytestmark = pytest.mark.django_db

CONVERTER = re.compile(r"<(?:\w+:)?(?P<name>\w+)>")

V1 = "/api/v1"
NAME = "vllm-kimi-k25-int4"
UNIT = """[Unit]
Description=Qwen on one GPU

[Service]
User=vllm
Environment=HF_TOKEN=hf_secret_value
ExecStart=/opt/vllm/bin/vllm serve /models/qwen --port 9000 --max-loras 4
Restart=always
"""


def _request(client: APIClient, **body: object) -> dict:
    answer = client.post(
        f"{V1}/requests/", {"profile": NAME, "host": "gpu-a", **body}, format="json"
    )
    assert answer.status_code == 201, answer.content
    return answer.json()


def test_an_operator_token_requests_a_deploy_that_waits_for_a_person(
    people: People,
    client_for: Callable[..., APIClient],
    profile: ServiceProfile,
    host: Host,
    on_host: FakeHosts,
    enqueued: Enqueued,
) -> None:
    made = _request(client_for(people.olga), acknowledge_warnings=True)
    request = DeployRequest.objects.get(pk=made["id"])
    assert request.status == "pending" and request.requested_by == people.olga
    assert made["web_url"].endswith(reverse("deploys:request_detail", args=[request.pk]))
    assert (made["profile"], made["version"], made["host"]) == (NAME, 1, "gpu-a")
    assert enqueued.deploys == []  # nothing runs before a person approves


def test_no_api_route_and_no_token_can_approve_or_reject(
    people: People,
    client_for: Callable[..., APIClient],
    profile: ServiceProfile,
    host: Host,
    on_host: FakeHosts,
    enqueued: Enqueued,
) -> None:
    """Alice may approve — in the web UI, logged in. Her token on every web decision URL,
    and her token or her session on every API route with every method, decide nothing."""
    pk = _request(client_for(people.olga), acknowledge_warnings=True)["id"]
    alice = client_for(people.alice)
    body = {"decision": "approve", "status": "approved", "comment": "ok", "approve": "1"}
    decisions = [
        reverse(f"deploys:{name}", args=[pk])
        for name in ("request_approve", "request_reject", "request_cancel", "request_withdraw")
    ]
    for url in decisions:
        answer = alice.post(url, body)
        assert answer.status_code in (302, 403), url  # the login page: no session
        assert answer.status_code != 302 or "/accounts/login/" in answer["Location"]
    session = APIClient()
    session.force_login(people.alice)
    for client in (alice, session):
        for route in _api_routes(pk):
            for method in ("post", "put", "patch", "delete"):
                getattr(client, method)(route, body, format="json")
            for suffix in ("approve/", "reject/", "decision/"):
                assert client.post(route + suffix, body, format="json").status_code in (
                    403,
                    404,
                    405,
                )
    assert DeployRequest.objects.get(pk=pk).status == "pending"
    assert not AuditEvent.objects.filter(kind__in=["deploy.approved", "deploy.rejected"]).exists()
    # The person, in the web UI: approves.
    web = Client()
    web.force_login(people.alice)
    request = DeployRequest.objects.get(pk=pk)
    web.post(reverse("deploys:request_approve", args=[pk]), {"sha256": request.unit_sha256})
    assert DeployRequest.objects.get(pk=pk).status == "approved"


def _web_routes(resolver: URLResolver | None = None, prefix: str = "") -> list[str]:
    """Every route of the web UI (not the API's), as its pattern text."""
    found = []
    for entry in (resolver or get_resolver()).url_patterns:
        if isinstance(entry, URLResolver):
            if str(entry.pattern) not in ("api/", "admin/"):
                found += _web_routes(entry, prefix + str(entry.pattern))
        else:
            found.append(prefix + str(entry.pattern))
    return found


def test_a_token_authenticates_no_web_page_so_no_decision_is_made_with_one(
    people: People,
    token: Callable[..., str],
    profile: ServiceProfile,
    host: Host,
    on_host: FakeHosts,
    enqueued: Enqueued,
) -> None:
    """The approver's and the admin's tokens on every page of the web UI (approve, reject,
    accept a baseline, adopt a unit, pin a host key, …): each is refused as anonymous."""
    pk = _request(
        APIClient(HTTP_AUTHORIZATION=f"Bearer {token(people.olga)}"), acknowledge_warnings=True
    )["id"]
    before = AuditEvent.objects.count()
    routes = _web_routes()
    assert "deploys/requests/<int:pk>/approve/" in routes
    for who in (people.alice, people.ada):
        client = Client(HTTP_AUTHORIZATION=f"Bearer {token(who)}")
        for route in routes:
            url = "/" + CONVERTER.sub(lambda m: str(pk) if m["name"] == "pk" else "1", route)
            for answer in (client.get(url), client.post(url, {"sha256": "x", "comment": "ok"})):
                assert not answer.wsgi_request.user.is_authenticated, url
                assert answer.status_code < 500, url
    assert DeployRequest.objects.get(pk=pk).status == "pending"
    new = AuditEvent.objects.filter(id__gt=before).exclude(kind__startswith="api.")
    assert list(new.values_list("kind", flat=True)) == []


def _api_routes(pk: int) -> list[str]:
    """Every API route, with its parameters filled."""
    values = {"name": NAME, "number": "1", "pk": str(pk)}
    found = []
    resolver = get_resolver()
    for pattern in resolver.url_patterns:
        if isinstance(pattern, URLResolver) and str(pattern.pattern) == "api/":
            for route in pattern.url_patterns:
                assert isinstance(route, URLPattern)
                text = "/api/" + str(route.pattern)
                for key, value in values.items():
                    text = text.replace(f"<str:{key}>", value).replace(f"<int:{key}>", value)
                found.append(text)
    assert f"{V1}/jobs/{pk}/" in found
    return found


def test_roles_decide_what_a_token_may_do_as_on_the_web(
    people: People,
    client_for: Callable[..., APIClient],
    profile: ServiceProfile,
    host: Host,
    on_host: FakeHosts,
) -> None:
    viewer, approver, operator = (client_for(u) for u in (people.vic, people.alice, people.olga))
    for client in (viewer, approver, operator):
        for path in (
            "/profiles/",
            f"/profiles/{NAME}/versions/1/",
            "/hosts/",
            "/requests/",
            "/history/",
        ):
            assert client.get(V1 + path).status_code == 200, path
    new_version = {"data": {"port": 9001}}
    assert (
        viewer.post(f"{V1}/profiles/{NAME}/versions/", new_version, format="json").status_code
        == 403
    )
    assert (
        approver.post(f"{V1}/profiles/{NAME}/versions/", new_version, format="json").status_code
        == 403
    )
    refused = viewer.post(f"{V1}/requests/", {"profile": NAME, "host": "gpu-a"}, format="json")
    assert refused.status_code == 403
    made = operator.post(f"{V1}/profiles/{NAME}/versions/", new_version, format="json")
    assert made.status_code == 201 and made.json()["number"] == 2
    assert (
        viewer.post(
            f"{V1}/imports/", {"filename": "q.service", "text": UNIT}, format="json"
        ).status_code
        == 403
    )


def test_a_viewer_reads_secrets_masked_as_on_the_web(
    people: People, client_for: Callable[..., APIClient], profile: ServiceProfile
) -> None:
    profile_update(
        profile=profile,
        data={"environment": {"HF_TOKEN": "hf_secret_value"}},
        updated_by=people.olga,
    )
    viewer, operator = client_for(people.vic), client_for(people.olga)
    shown = viewer.get(f"{V1}/profiles/{NAME}/versions/2/").json()
    assert "hf_secret_value" not in str(shown) and shown["data"]["environment"]["HF_TOKEN"] != ""
    assert (
        "hf_secret_value" in operator.get(f"{V1}/profiles/{NAME}/versions/2/").json()["unit_text"]
    )
    assert "hf_secret_value" not in str(viewer.get(f"{V1}/profiles/{NAME}/").json())


def test_a_unit_file_becomes_a_profile_then_a_new_version_once_per_text(
    people: People, client_for: Callable[..., APIClient]
) -> None:
    client = client_for(people.olga)
    imported = client.post(
        f"{V1}/imports/", {"filename": "qwen.service", "text": UNIT}, format="json"
    )
    assert imported.status_code == 201, imported.content
    assert imported.json()["argv_equal"] and imported.json()["environment_equal"]
    changed = UNIT.replace("--port 9000", "--port 9001")
    pushed = client.post(f"{V1}/profiles/qwen/versions/", {"unit_text": changed}, format="json")
    assert pushed.status_code == 201 and pushed.json()["number"] == 2
    assert pushed.json()["data"]["port"] == 9001
    again = client.post(f"{V1}/profiles/qwen/versions/", {"unit_text": changed}, format="json")
    assert again.status_code == 200 and again.json()["number"] == 2
    refused = client.post(
        f"{V1}/profiles/qwen/versions/",
        {"unit_text": "[Service]\nExecStart=/bin/sleep 1\n"},
        format="json",
    )
    assert refused.status_code == 400 and "does not run a vLLM server" in refused.json()["detail"]


def test_lint_reports_the_linters_findings_and_whether_they_block(
    people: People, client_for: Callable[..., APIClient]
) -> None:
    bad = "[Service]\nExecStart=/opt/vllm/bin/vllm serve /m --no-such-flag\n"
    report = client_for(people.vic, "read").post(
        f"{V1}/lint/", {"filename": "a.service", "text": bad}, format="json"
    )
    assert report.status_code == 200
    body = report.json()
    assert body["blocking"] and body["summary"]["error"] >= 1
    assert any(f["severity"] == "error" for f in body["file"]["findings"])


@pytest.mark.parametrize(
    ("versions", "field"),
    [({"systemd_version": 235}, "systemd_version"), ({"vllm_version": "0.0.1"}, "vllm_version")],
)
def test_lint_for_a_version_without_a_catalog_says_so(
    people: People, client_for: Callable[..., APIClient], versions: dict, field: str
) -> None:
    answer = client_for(people.vic, "read").post(
        f"{V1}/lint/", {"text": "[Service]\nExecStart=/bin/true\n", **versions}, format="json"
    )
    assert answer.status_code == 400 and field in answer.json()["errors"]


def test_a_job_is_read_live_with_its_steps_and_its_benchmark_verdict(
    people: People,
    client_for: Callable[..., APIClient],
    profile: ServiceProfile,
    host: Host,
    on_host: FakeHosts,
    enqueued: Enqueued,
) -> None:
    client = client_for(people.vic, "read")
    pk = _request(client_for(people.olga), acknowledge_warnings=True)["id"]
    request = deploy_request_approve(
        request=DeployRequest.objects.get(pk=pk), approver=people.alice
    )
    DeployRequest.objects.filter(pk=pk).update(status="running")
    JobStep.objects.create(request=request, name="preflight", status="succeeded", log="ok\n")
    JobStep.objects.create(request=request, name="readiness", progress={"message": "loading 40%"})
    live = client.get(f"{V1}/jobs/{pk}/").json()
    assert (live["status"], live["done"]) == ("running", False)
    assert [(s["name"], s["status"]) for s in live["steps"]] == [
        ("preflight", "succeeded"),
        ("readiness", "running"),
    ]
    assert live["steps"][1]["progress"]["message"] == "loading 40%"
    run = stored_run(profile, host, 100.0)
    BenchRun.objects.filter(pk=run.pk).update(request=request, verdict="regressed")
    DeployRequest.objects.filter(pk=pk).update(status="succeeded")
    done = client.get(f"{V1}/jobs/{pk}/").json()
    assert done["done"] and done["succeeded"] and done["regressed"]
    assert (
        client.get(f"{V1}/benchmarks/?request={pk}").json()["results"][0]["verdict"] == "regressed"
    )


def test_every_write_is_audited_with_the_token_name_and_reads_once_an_hour(
    people: People, token: Callable[..., str], profile: ServiceProfile
) -> None:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {token(people.olga)}")  # named ci-1
    client.post(f"{V1}/profiles/{NAME}/versions/", {"data": {"port": 9001}}, format="json")
    client.post(f"{V1}/profiles/{NAME}/versions/", {"data": {"port": 0}}, format="json")  # refused
    calls = AuditEvent.objects.filter(kind="api.call").order_by("id")
    assert [(c.payload["credential"], c.payload["status"]) for c in calls] == [
        ("ci-1", 201),
        ("ci-1", 400),
    ]
    assert calls[0].actor_name == "olga" and calls[0].payload["version"] == 2
    edited = AuditEvent.objects.get(kind="profile.edited")
    assert edited.actor_name == "olga"
    for _ in range(5):
        assert client.get(f"{V1}/profiles/").status_code == 200
    reads = AuditEvent.objects.filter(kind="api.read")
    assert reads.count() == 1 and reads.get().payload["credential"] == "ci-1"


def test_bodies_pages_and_rates_are_bounded(
    people: People, client_for: Callable[..., APIClient], monkeypatch: pytest.MonkeyPatch
) -> None:
    client = client_for(people.olga)
    huge = client.post(f"{V1}/lint/", {"text": "#" * (2 * 1024 * 1024)}, format="json")
    assert huge.status_code == 413
    over = client.post(f"{V1}/lint/", {"text": "#" * (300 * 1024)}, format="json")
    assert over.status_code == 400 and "text" in over.json()["errors"]
    page = client.get(f"{V1}/history/?limit=100000").json()
    assert len(page["results"]) <= 200
    assert client.get(f"{V1}/benchmarks/?request=abc").status_code == 400
    monkeypatch.setattr(ReadRate, "rate", "3/min", raising=False)
    cache.clear()  # the reads above counted too
    answers = [client.get(f"{V1}/hosts/").status_code for _ in range(5)]
    assert answers[:3] == [200, 200, 200] and answers[3:] == [429, 429]


def test_a_host_that_cannot_be_read_refuses_the_request_and_says_why(
    people: People,
    client_for: Callable[..., APIClient],
    profile: ServiceProfile,
    host: Host,
    on_host: FakeHosts,
) -> None:
    on_host.error = HostUnreachable("gpu-a: connection refused")
    answer = client_for(people.olga).post(
        f"{V1}/requests/", {"profile": NAME, "host": "gpu-a"}, format="json"
    )
    assert answer.status_code == 400, answer.content
    assert "Cannot read the current unit on gpu-a" in answer.json()["detail"]
    assert not DeployRequest.objects.exists()


@pytest.mark.parametrize(
    "body",
    [
        "[" * 100_000,  # deeper than Python's JSON decoder goes
        '{"data": ' * 50_000,
        '{"text": "' + "9" * 5000 + '"}',
        '{"filename": 12, "text": ["a"]}',
        "\xff\xfe",
        '{"text": "\\ud800"}',
        "",
    ],
)
def test_any_body_gets_an_answer_never_a_server_error(
    people: People, client_for: Callable[..., APIClient], body: str
) -> None:
    client = client_for(people.olga)
    for path in ("/lint/", "/imports/", "/requests/", f"/profiles/{NAME}/versions/"):
        answer = client.generic(
            "POST", V1 + path, body.encode("utf-8", "surrogatepass"), "application/json"
        )
        assert answer.status_code < 500, (path, answer.content[:200])
        assert answer.status_code < 400 or "detail" in answer.json()


JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=40),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)


def test_any_json_in_any_field_of_a_new_profile_or_version_gets_an_answer_never_a_5xx(
    people: People, client_for: Callable[..., APIClient], profile: ServiceProfile
) -> None:
    """The form only ever sends text; the API takes JSON, so every field gets every JSON
    type (numbers past limits, lists, objects, null) and the services must judge it."""
    client = client_for(people.olga)
    names = sorted(PROFILE_FIELDS)

    @settings(max_examples=60, deadline=None)
    @given(data=st.dictionaries(st.sampled_from(names), JSON, min_size=1, max_size=4))
    def post(data: dict[str, object]) -> None:
        cache.clear()  # the write rate is not what this test is about
        for path in (f"{V1}/profiles/{NAME}/versions/", f"{V1}/profiles/"):
            answer = client.post(path, {"data": data}, format="json")
            assert answer.status_code < 500, (path, data, answer.content[:300])

    post()


def test_an_operator_token_requests_a_trial_that_waits_for_a_person(
    trial_side: TrialSide, client_for: Callable[..., APIClient]
) -> None:
    ngram = trial_side.candidate(f"{PRODUCTION}-ngram")
    olga = client_for(trial_side.requester)
    body = {
        "host": trial_side.host.name,
        "production_unit": PRODUCTION,
        "candidates": [{"profile": ngram.profile.name}],
        "acknowledge_warnings": True,
    }
    answer = olga.post(f"{V1}/trials/", body, format="json")
    assert answer.status_code == 201, answer.content
    trial = DeployRequest.objects.get(pk=answer.json()["id"])
    assert (trial.kind, trial.status) == ("trial", "pending")
    assert [c.profile_version for c in trial.candidates.all()] == [ngram]
    assert AuditEvent.objects.filter(kind=AuditKind.API_CALL, payload__request=trial.pk).exists()
    # a candidate of no profile, or none at all, is a 400 that says where
    for wrong in ([{"profile": "no-such"}], []):
        refused = olga.post(f"{V1}/trials/", {**body, "candidates": wrong}, format="json")
        assert refused.status_code in (400, 404), refused.content
    # two candidates under one unit name other than production's: the service's reason
    same = [{"profile": ngram.profile.name, "unit_name": "vllm-x"}] * 2
    refused = olga.post(f"{V1}/trials/", {**body, "candidates": same}, format="json")
    assert refused.status_code == 400 and "same unit name" in refused.content.decode()
    # production's own unit name is a candidate's to take (docs/trials.md, "Candidates")
    in_place = [{"profile": ngram.profile.name, "unit_name": PRODUCTION}]
    taken = olga.post(f"{V1}/trials/", {**body, "candidates": in_place}, format="json")
    assert taken.status_code == 201, taken.content
    taking = DeployRequest.objects.get(pk=taken.json()["id"])
    assert taking.job_settings["trial"]["candidates"][0]["takes_production_unit"] is True
