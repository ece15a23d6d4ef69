"""Arbitrary text in every form field and query parameter never makes a page answer 5xx
(issue 9, "Bad input must never be a 500").

The forms are not listed by hand: each page is fetched as an admin and every `<form>` on
it is read from the HTML (its action, method and the names of its inputs, selects and
textareas), so a field added later is fuzzed too. Hypothesis then posts (or, for GET
forms, queries) arbitrary text in every field at once, mixed with known troublemakers
(numbers past Python's limits, deep JSON, NUL, line and bidi controls, long host
labels). The test client re-raises a view's exception, so a crash fails the example with
its traceback. The hosts are never reached: reads of a host's unit and host keys answer
at once, and nothing is queued.

Bounded for CI: a few dozen examples per form (derandomized when CI is set, see
tests/conftest.py), no deadline per example.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from html.parser import HTMLParser
from typing import Any
from urllib.parse import urljoin, urlsplit

import pytest
from django.contrib.auth import get_user_model
from django.test import Client
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from deploys import existing_units, selectors
from deploys.jobs import queue
from deploys.models import DeployRequest, Host
from deploys.services import hosts as host_services
from deploys.services.deploy_requests import deploy_request_create
from deploys.transports import HostUnreachable
from tests.deploys.helpers import OLD_UNIT, fake_host_key, loaded_from_etc
from tests.units.factories import baseline
from units.roles import ADMIN, OPERATOR, ensure_roles
from units.services import profile_create, profile_update

pytestmark = pytest.mark.django_db

# More locally: FUZZ_EXAMPLES=500 pytest tests/specadmin/test_fuzz_pages.py
EXAMPLES = int(os.environ.get("FUZZ_EXAMPLES", "30"))
NASTY = [
    "",
    " ",
    "0",
    "-1",
    "9" * 5000,
    "99999999999999999999",
    "1E+1000000",
    "NaN",
    "inf",
    "\x00",
    "a\x00b",
    "\u2028ExecStartPre=/bin/sh",
    "\u202eevil",
    "zero\u200bwidth",
    "line\nExecStartPre=/bin/true",
    "\r\n",
    "[" * 5000,
    '{"a":' * 2000,
    "a" * 64,
    "b..c",
    "../../etc/passwd",
    "sshd",
    "%n%s%%",
    "$(id)",
    "<script>alert(1)</script>",
    "{{ request }}",
    "x" * 3000,
    "--api-key=sk-1",
]
TEXT = st.one_of(
    st.text(st.characters(codec="utf-8"), max_size=60),
    st.sampled_from(NASTY),
)
FUZZ = settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


@dataclass
class Form:
    action: str
    method: str
    fields: list[str] = field(default_factory=list)


class FormParser(HTMLParser):
    """Every <form> of a page: action, method and the names of its fields."""

    def __init__(self, page_url: str) -> None:
        super().__init__()
        self.page_url = page_url
        self.forms: list[Form] = []
        self._current: Form | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = dict(attrs)
        if tag == "form":
            action = urljoin(self.page_url, values.get("action") or self.page_url)
            self._current = Form(action, (values.get("method") or "get").lower())
            self.forms.append(self._current)
        elif tag in ("input", "select", "textarea", "button") and self._current is not None:
            name = values.get("name")
            if name and name != "csrfmiddlewaretoken" and name not in self._current.fields:
                self._current.fields.append(name)
            formaction = values.get("formaction")
            if formaction:  # a second submit target (approve / reject)
                extra = Form(urljoin(self.page_url, formaction), self._current.method)
                extra.fields = self._current.fields  # the same inputs, shared
                self.forms.append(extra)

    def handle_endtag(self, tag: str) -> None:
        if tag == "form":
            self._current = None


@pytest.fixture
def site(monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """An admin, a profile with two versions, a pinned host, a pending request; no
    network, no queue."""
    users = get_user_model().objects
    admin = users.create_user("ada")
    admin.groups.add(ensure_roles()[ADMIN])
    olga = users.create_user("olga")
    olga.groups.add(ensure_roles()[OPERATOR])
    monkeypatch.setattr(selectors, "read_host_unit", lambda *, host, unit_name: OLD_UNIT)
    monkeypatch.setattr(
        existing_units,
        "read_existing_unit",
        lambda *, host, unit_name: loaded_from_etc(unit_name, OLD_UNIT),
    )

    def unreachable(address: str, port: int, timeout: float) -> Any:
        raise HostUnreachable(f"cannot connect to {address}:{port}: fuzzing")

    monkeypatch.setattr(host_services, "probe_host_key", unreachable)
    monkeypatch.setattr(queue, "enqueue_deploy", lambda *a: None)
    monkeypatch.setattr(queue, "enqueue_probe", lambda *a: None)
    profile = profile_create(data=baseline(), created_by=olga)
    profile_update(profile=profile, data={"max_num_seqs": 32}, updated_by=olga)
    key = fake_host_key()
    host = Host.objects.create(
        name="gpu-a",
        address="10.0.0.7",
        key_file="/etc/specadmin/id_ed25519",
        host_key=f"{key.key_type} {key.base64}",
        host_key_fingerprint=key.fingerprint_sha256,
    )
    request = deploy_request_create(
        profile_version=profile.versions.get(number=2),
        host=host,
        requested_by=olga,
        acknowledge_warnings=True,
    )
    client = Client()
    client.force_login(admin)
    return {"client": client, "profile": profile, "host": host, "request": request}


PAGES: dict[str, Callable[[dict[str, Any]], str]] = {
    "home": lambda s: "/",
    "profile list": lambda s: "/profiles/",
    "new profile": lambda s: "/profiles/new/",
    "profile": lambda s: f"/profiles/{s['profile'].pk}/",
    "edit profile": lambda s: f"/profiles/{s['profile'].pk}/edit/",
    "clone profile": lambda s: f"/profiles/{s['profile'].pk}/clone/",
    "versions": lambda s: f"/profiles/{s['profile'].pk}/versions/",
    "version": lambda s: f"/profiles/{s['profile'].pk}/versions/1/",
    "history": lambda s: "/history/",
    "hosts": lambda s: "/deploys/hosts/",
    "new host": lambda s: "/deploys/hosts/new/",
    "host": lambda s: f"/deploys/hosts/{s['host'].pk}/",
    "requests": lambda s: "/deploys/requests/",
    "new request": lambda s: "/deploys/requests/new/",
    "request": lambda s: f"/deploys/requests/{s['request'].pk}/",
}
# Query parameters pages read besides their GET forms' fields.
QUERY_NAMES = ["page", "a", "b", "q", "host", "profile_version", "status", "unrelated"]


def forms_on(client: Client, url: str) -> Iterator[Form]:
    response = client.get(url)
    assert response.status_code < 500
    parser = FormParser("http://testserver" + url)
    parser.feed(response.content.decode())
    for form in parser.forms:
        parts = urlsplit(form.action)
        form.action = parts.path + (f"?{parts.query}" if parts.query else "")
        if form.action.startswith("/accounts/logout"):
            continue  # would end the session the other forms need
        yield form


def fuzz_form(client: Client, form: Form) -> None:
    names = form.fields or ["unrelated"]

    @FUZZ
    @given(values=st.fixed_dictionaries({name: TEXT for name in names}))
    def post_anything(values: dict[str, str]) -> None:
        if form.method == "post":
            response = client.post(form.action, values)
        else:
            response = client.get(form.action, values)
        assert response.status_code < 500, (form.action, values)

    post_anything()


@pytest.mark.parametrize("page", sorted(PAGES))
def test_arbitrary_text_in_every_form_field_never_answers_5xx(
    site: dict[str, Any], page: str
) -> None:
    client = site["client"]
    url = PAGES[page](site)
    found = list(forms_on(client, url))
    for form in found:
        fuzz_form(client, form)


@pytest.mark.parametrize("page", sorted(PAGES))
def test_arbitrary_query_parameters_never_answer_5xx(site: dict[str, Any], page: str) -> None:
    client = site["client"]
    url = PAGES[page](site)
    names = list(QUERY_NAMES)
    for form in forms_on(client, url):
        if form.method == "get":
            names.extend(n for n in form.fields if n not in names)

    @FUZZ
    @given(values=st.fixed_dictionaries({name: TEXT for name in names}))
    def query_anything(values: dict[str, str]) -> None:
        response = client.get(url, values)
        assert response.status_code < 500, (url, values)

    query_anything()


def test_the_parser_finds_the_forms_of_a_page(site: dict[str, Any]) -> None:
    forms = list(forms_on(site["client"], f"/deploys/requests/{site['request'].pk}/"))
    actions = {f.action for f in forms}
    assert f"/deploys/requests/{site['request'].pk}/approve/" in actions
    assert f"/deploys/requests/{site['request'].pk}/reject/" in actions
    assert any("comment" in f.fields for f in forms)
    edit = list(forms_on(site["client"], f"/profiles/{site['profile'].pk}/edit/"))
    assert any({"port", "gpu_memory_utilization", "environment"} <= set(f.fields) for f in edit)
    assert DeployRequest.objects.count() == 1
