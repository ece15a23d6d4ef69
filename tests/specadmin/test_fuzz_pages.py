"""Arbitrary text in every form field and query parameter never makes a page answer 5xx
.

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

import inspect
import os
import re
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from html.parser import HTMLParser
from typing import Any
from urllib.parse import urljoin, urlsplit

import pytest
from django.contrib.auth import get_user_model
from django.test import Client
from django.urls import NoReverseMatch, URLPattern, URLResolver, get_resolver, reverse
from django.urls.resolvers import RegexPattern
from django.utils import timezone
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from deploys import existing_units, selectors
from deploys.jobs import queue
from deploys.models import DeployRequest, Host, PushedUnit
from deploys.services import hosts as host_services
from deploys.services.deploy_requests import deploy_request_create
from hostops.channel import HostUnreachable
from tests.deploys.helpers import OLD_UNIT, fake_host_key, loaded_from_etc
from tests.perf.factories import stored_run
from tests.units.factories import baseline
from units.roles import ADMIN, OPERATOR, ensure_roles
from units.services import profile_create, profile_update
from watchdog.models import HostWatch

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
    "²",
    "٣",
    "9999-12-31",
    "0001-01-01",
    "2026-02-30",
    "1",
]
# Given to every parameter of every route at once, each in turn (random picks would
# rarely hit a date at the end of the calendar): digits that are not ASCII, numbers past
# Python's and the databases' limits, the first and last dates there are, a NUL.
EDGES = ["²", "9" * 5000, "99999999999999999999", "-1", "9999-12-31", "0001-01-01", "a\x00b"]
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
    pushed = PushedUnit.objects.create(
        host=host,
        unit_name=profile.name,
        request=request,
        text=request.unit_text,
        sha256=request.unit_sha256,
    )
    HostWatch.objects.create(host=host, next_due=timezone.now())
    runs = [stored_run(profile, host, tok_s) for tok_s in (70.0, 72.0)]
    client = Client()
    client.force_login(admin)
    return {
        "run": runs[0],
        "client": client,
        "profile": profile,
        "host": host,
        "request": request,
        "push": pushed,
        "admin": admin,
    }


PAGES: dict[str, Callable[[dict[str, Any]], str]] = {
    "home": lambda s: "/",
    "profile list": lambda s: "/profiles/",
    "new profile": lambda s: "/profiles/new/",
    "profile": lambda s: f"/profiles/{s['profile'].pk}/",
    "edit profile": lambda s: f"/profiles/{s['profile'].pk}/edit/",
    "clone profile": lambda s: f"/profiles/{s['profile'].pk}/clone/",
    "versions": lambda s: f"/profiles/{s['profile'].pk}/versions/",
    "version": lambda s: f"/profiles/{s['profile'].pk}/versions/1/",
    "sweep": lambda s: f"/benchmarks/profiles/{s['profile'].pk}/sweep/",
    "versions on a host": lambda s: f"/benchmarks/hosts/{s['host'].pk}/versions/?version=1",
    "history": lambda s: "/history/",
    "hosts": lambda s: "/deploys/hosts/",
    "new host": lambda s: "/deploys/hosts/new/",
    "host": lambda s: f"/deploys/hosts/{s['host'].pk}/",
    "requests": lambda s: "/deploys/requests/",
    "new request": lambda s: "/deploys/requests/new/",
    "request": lambda s: f"/deploys/requests/{s['request'].pk}/",
    "api tokens": lambda s: "/api/tokens/",
    "notifications": lambda s: "/notifications/",
    "watch settings": lambda s: f"/watchdog/hosts/{s['host'].pk}/settings/",
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


# -- every URL pattern: its path converters and the query parameters its view reads --------

# Values for a path converter besides the site's own rows: the edges of Python's and the
# databases' integers, and text that only a `str`/`path` converter lets through.
PATH_VALUES = {
    "int": ["0", "9999999999999999999", "9" * 5000],
    "str": ["\u202eevil", "a\x00b", "x" * 3000, "%n%s", "{{ request }}"],
    "slug": ["a" * 300, "-", "_"],
    "path": ["../../etc/passwd", "a/b/c", "\u2028"],
    "uuid": ["00000000-0000-0000-0000-000000000000"],
}
CONVERTER = re.compile(r"<(?:(?P<type>\w+):)?(?P<name>\w+)>")
# Names a view reads from the query string or the form data, found in its source.
READS = re.compile(r"""(?:GET|POST|QUERY)(?:\.get|\.getlist)?\s*[(\[]\s*["']([\w-]+)["']""")
FORM_OF_REQUEST = re.compile(r"(\w+Form)\(\s*request\.(?:GET|POST)")
# Django admin's own changelist parameters, and a few any view might read.
COMMON_NAMES = ["page", "q", "o", "p", "e", "all", "_popup", "_to_field", "next", "unrelated"]


@dataclass(frozen=True)
class Route:
    route: str  # "deploys/hosts/<int:pk>/"
    name: str  # "deploys:host_detail"
    callback: Callable[..., Any]
    regex: bool = False  # a re_path (the admin's): filled through reverse()


def routes(
    resolver: URLResolver | None = None, prefix: str = "", space: str = ""
) -> Iterator[Route]:
    """Every URL pattern of the project (the resolver's tree, so a new view is included)."""
    resolver = resolver or get_resolver()
    for entry in resolver.url_patterns:
        if isinstance(entry, URLResolver):
            inner = f"{space}{entry.namespace}:" if entry.namespace else space
            yield from routes(entry, prefix + str(entry.pattern), inner)
        elif isinstance(entry, URLPattern):
            name = f"{space}{entry.name}" if entry.name else ""
            regex = isinstance(entry.pattern, RegexPattern)
            yield Route(prefix + str(entry.pattern), name, entry.callback, regex)


def _view_function(callback: Callable[..., Any]) -> Callable[..., Any]:
    view = getattr(callback, "view_class", None) or callback
    while hasattr(view, "__wrapped__"):
        view = view.__wrapped__
    return view


def parameter_names(callback: Callable[..., Any]) -> list[str]:
    """What the view may read: request.GET/POST keys in its module's source (views hand
    the request to helpers beside them), and the fields of forms built from them."""
    view = _view_function(callback)
    try:
        source = inspect.getsource(sys.modules[view.__module__])
    except (OSError, TypeError, KeyError, AttributeError):
        return list(COMMON_NAMES)
    names = list(READS.findall(source))
    module = sys.modules[view.__module__]
    for form_name in FORM_OF_REQUEST.findall(source):
        form = getattr(module, form_name, None)
        names.extend(getattr(form, "base_fields", {}))
    return list(dict.fromkeys(names + COMMON_NAMES))


def own_values(site: dict[str, Any]) -> dict[str, str]:
    """The site's rows, by the converter names the routes use."""
    ids = {
        "pk": site["host"].pk,
        "number": 1,
        "profile_id": site["profile"].pk,
        "host_id": site["host"].pk,
        "run_id": site["run"].pk,
        "object_id": site["profile"].pk,
    }
    return {name: str(value) for name, value in ids.items()}


def _reversed(route: Route, site: dict[str, Any]) -> list[str]:
    """A regular-expression route, filled with the site's values (or the first app)."""
    if not route.name:  # the admin's catch-all: any path below it
        return [
            "/" + re.sub(r"\(\?P<\w+>[^)]*\)", "nowhere/", route.route).replace("^", "").rstrip("$")
        ]
    names = list(re.compile(route.route.split("/", 1)[-1]).groupindex) if route.regex else []
    own = own_values(site) | {"app_label": "units", "url": "nowhere/"}
    try:
        return [reverse(route.name, kwargs={n: own.get(n, "1") for n in names})]
    except NoReverseMatch:
        return []


def paths(route: Route, site: dict[str, Any]) -> list[str]:
    """The route filled with the site's own rows, then each converter in turn with each
    troublemaker of its kind."""
    if route.regex:
        return _reversed(route, site)
    converters = CONVERTER.findall(route.route)
    own = own_values(site)

    def fill(name: str, value: str) -> str:
        def one(match: re.Match[str]) -> str:
            return value if match["name"] == name else own.get(match["name"], "1")

        return "/" + CONVERTER.sub(one, route.route)

    found = [fill("", "")]
    for kind, name in converters:
        for value in PATH_VALUES.get(kind or "str", PATH_VALUES["str"]):
            found.append(fill(name, value))
    return found


ROUTES = sorted((r for r in routes() if "logout" not in r.route), key=lambda r: r.route)


@pytest.mark.parametrize("route", ROUTES, ids=[r.route or "/" for r in ROUTES])
def test_every_url_pattern_with_arbitrary_path_values_and_query_never_answers_5xx(
    site: dict[str, Any], route: Route
) -> None:
    client = site["client"]
    urls = paths(route, site)
    for url in urls:
        assert client.get(url).status_code < 500, url
    if not urls:
        pytest.fail(f"no URL could be made for {route.route} ({route.name})")
    url = urls[0]
    names = parameter_names(route.callback)
    for value in EDGES:
        values = dict.fromkeys(names, value)
        assert answer(client.get(url, values)) < 500, (url, "GET", value)
        assert answer(client.post(url, values)) < 500, (url, "POST", value)

    @settings(
        max_examples=max(3, EXAMPLES // 10),
        deadline=None,
        suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    )
    @given(values=st.fixed_dictionaries({name: TEXT for name in names}), post=st.booleans())
    def anything(values: dict[str, str], post: bool) -> None:
        response = client.post(url, values) if post else client.get(url, values)
        assert answer(response) < 500, (url, "POST" if post else "GET", values)

    anything()


def answer(response: Any) -> int:
    """The status, after reading a streamed body (an export fails while it streams)."""
    if getattr(response, "streaming", False):
        b"".join(response.streaming_content)
    return response.status_code


def test_the_route_walker_sees_every_app_and_fills_converters(site: dict[str, Any]) -> None:
    found = {r.route for r in ROUTES}
    assert {"benchmarks/<int:profile_id>/<int:host_id>/", "history/export.csv"} <= found
    assert any(r.startswith("admin/") for r in found)
    results = next(r for r in ROUTES if r.route == "benchmarks/<int:profile_id>/<int:host_id>/")
    filled = paths(results, site)
    assert f"/benchmarks/{site['profile'].pk}/{site['host'].pk}/" in filled
    assert "/benchmarks/9999999999999999999/" + str(site["host"].pk) + "/" in filled
    history = next(r for r in ROUTES if r.route == "history/")
    assert {"since", "until", "page"} <= set(parameter_names(history.callback))


@pytest.mark.parametrize(
    ("method", "url", "data"),
    [
        ("get", "/history/?until=9999-12-31", None),
        ("get", "/history/export.csv?until=9999-12-31", None),
        ("get", "/history/export.json?until=9999-12-31", None),
        ("get", "/benchmarks/9999999999999999999/1/", None),
        ("get", "/benchmarks/{profile}/{host}/?a=²", None),
        ("get", "/profiles/9999999999999999999/versions/1/", None),
        ("post", "/deploys/hosts/{host}/rollback/", {"push": "²"}),
        ("post", "/deploys/hosts/{host}/rollback/", {"push": "9" * 5000}),
        ("post", "/deploys/hosts/{host}/rollback/", {"push": "99999999999999999999"}),
    ],
)
def test_the_requests_that_answered_5xx_get_a_clear_answer(
    site: dict[str, Any], method: str, url: str, data: dict[str, str] | None
) -> None:
    url = url.format(profile=site["profile"].pk, host=site["host"].pk)
    response = getattr(site["client"], method)(url, data or {})
    assert answer(response) < 500
