"""What the pages and the audit history say runs on a host, read the way a person reads
them (the host page, the profile pages, the *Roll back to* choices, the last job event),
for the "what runs where" tests (docs/architecture.md, "What runs where")."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from html.parser import HTMLParser
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from audit.models import AuditEvent
from deploys import existing_units, selectors
from deploys.jobs import pipelines, runner
from deploys.models import DeployRequest, Host
from deploys.services import unit_requests
from deploys.services.deploy_requests import deploy_request_approve
from hostops.channel import Transport
from tests.deploys.helpers import unique
from tests.doubles.unit_host import (
    Script,
    UnitHost,
    UnitHostTransport,
    service_step_doubles,
    with_doubles,
)
from tests.units.factories import baseline
from units.models import ServiceProfile

# Deploy-job waits a test can afford (the budget check refuses longer ones).
FAST = {
    "timeout_stop_sec": 20,
    "deploy_gpu_clean_sec": 30,
    "deploy_kill_grace_sec": 2,
    "deploy_journal_check_sec": 10,
    "deploy_ready_timeout_sec": 60,
}


@dataclass
class UnitRow:
    """One unit's row of the host page."""

    versions: set[str] = field(default_factory=set)
    sha256: str = ""
    text: str = ""
    choices: list[tuple[str, str]] = field(default_factory=list)  # (sha256, label)
    last_good: str = ""


class _Rows(HTMLParser):
    """`<tr data-unit=… [data-host=…]>` rows: the `data-version` links in them, the
    `data-sha256` of the running cell, the rollback `<option>`s."""

    def __init__(self) -> None:
        super().__init__()
        self.rows: dict[tuple[str, str], UnitRow] = {}
        self._row: UnitRow | None = None
        self._option: str | None = None
        self._cell = ""

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {k: v or "" for k, v in attrs}
        if tag == "tr" and "data-unit" in a:
            self._row = self.rows.setdefault((a.get("data-host", ""), a["data-unit"]), UnitRow())
        if self._row is None:
            return
        if "data-version" in a and tag in ("a", "span"):
            self._row.versions.add(a["data-version"])
        if tag == "td":
            self._cell = "running" if "running" in a.get("class", "") else a.get("class", "")
            if self._cell == "running":
                self._row.sha256 = a.get("data-sha256", "")
        if tag == "option":
            self._option = a.get("data-sha256", "")
            self._row.choices.append((self._option, ""))

    def handle_endtag(self, tag: str) -> None:
        if tag == "tr":
            self._row = None
        if tag == "option":
            self._option = None
        if tag == "td":
            self._cell = ""

    def handle_data(self, data: str) -> None:
        if self._row is None:
            return
        if self._option is not None:
            sha, label = self._row.choices[-1]
            self._row.choices[-1] = (sha, label + data)
        elif self._cell == "running":
            self._row.text += data
        elif self._cell == "last-good":
            self._row.last_good += data


def rows(html: str) -> dict[tuple[str, str], UnitRow]:
    parser = _Rows()
    parser.feed(html)
    return parser.rows


def host_page_units(client: Client, host: Host) -> dict[str, UnitRow]:
    page = client.get(reverse("deploys:host_detail", args=[host.pk]))
    assert page.status_code == 200
    return {unit: row for (_, unit), row in rows(page.content.decode()).items()}


def profile_page_rows(client: Client, profile: ServiceProfile, host: Host) -> dict[str, set[str]]:
    """unit name → the versions the profile page says run on `host` as that unit."""
    page = client.get(reverse("units:detail", args=[profile.pk]))
    assert page.status_code == 200
    html = page.content.decode()
    running = html.split('class="list running-on"', 1)
    if len(running) < 2:
        return {}
    table = running[1].split("</table>", 1)[0]
    return {
        unit: row.versions
        for (host_name, unit), row in rows("<table " + table).items()
        if host_name == host.name
    }


def last_job_event_on_host(host: Host, unit_name: str) -> dict | None:
    """`on_host` of the newest audit event that says what runs there as `unit_name`."""
    events = AuditEvent.objects.filter(host_name=host.name, payload__has_key="on_host")
    for event in events.order_by("-id").only("payload").iterator():
        on_host = (event.payload or {}).get("on_host")
        entries = on_host if isinstance(on_host, list) else [on_host] if on_host else []
        for entry in entries:
            if entry.get("unit") == f"{unit_name}.service":
                return entry
    return None


class LocalSide:
    """The host as an in-memory unit directory (tests.doubles.unit_host): the real
    runner, preflight, push, daemon-reload, restore and remove steps; the service steps
    doubled and scripted (`arm`)."""

    def __init__(self) -> None:
        self.host = UnitHost()
        self.script = Script()
        doubles = service_step_doubles(self.script)
        self.pipelines = {
            kind: with_doubles(steps, doubles) for kind, steps in pipelines.PIPELINES.items()
        }
        self.rollback = with_doubles(pipelines.ROLLBACK, doubles)

    # The faults this side can cause, and whether units of two names may run at once.
    faults = frozenset({"", "crash", "regress", "cancel"})
    cancel_points = frozenset({"queued", "vllm_check", "stop", "start", "readiness", "benchmark"})
    one_unit = False

    def make_host(self) -> Host:
        return Host.objects.create(name=unique("gpu"), address="localhost", transport="local")

    def profile_data(self, name: str) -> dict[str, Any]:
        return baseline(name=name, **FAST)

    def supported(self, fault: str, cancel_at: str) -> tuple[str, str]:
        """(fault, cancel_at) as this side can cause them ("" where it cannot)."""
        if fault not in self.faults or (fault == "cancel" and cancel_at not in self.cancel_points):
            return "", ""
        return fault, cancel_at if fault == "cancel" else ""

    def close(self, unit_names: list[str]) -> None:
        pass

    def connect(self, host: Host) -> Transport:
        return UnitHostTransport(self.host)

    def file(self, unit_name: str) -> bytes | None:
        return self.host.unit_file(unit_name)

    def change_outside(self, unit_name: str) -> None:
        path = self.host.path(f"{unit_name}.service")
        self.host.files[path] += b"# tuned by hand on the host\n"

    def arm(
        self, fault: str, cancel_at: str = "", on_cancel: Callable[[Any], None] | None = None
    ) -> None:
        self.script.fault, self.script.cancel_at, self.script.on_cancel = (
            fault,
            cancel_at,
            on_cancel,
        )

    def steps(self, kind: str) -> Any:
        return self.pipelines[kind]

    def run(self, request: DeployRequest, approver: Any, fault: str = "") -> str:
        """Approve `request` and run its job the way the worker does, with `fault`."""
        request = deploy_request_approve(request=request, approver=approver)
        self.arm(fault)
        return runner.run_deploy(request.pk, steps=self.steps(request.kind), connect=self.connect)


def use_local_side(monkeypatch: pytest.MonkeyPatch, side: LocalSide) -> LocalSide:
    """Requests read `side`'s host (its file and what systemd loads), the runner rolls
    back with its steps, cancels are seen at once."""

    def read_host_unit(*, host: Host, unit_name: str) -> bytes | None:
        return side.file(unit_name)

    def read_existing_unit(*, host: Host, unit_name: str) -> existing_units.ExistingUnit:
        return existing_units.existing_unit(side.connect(host), unit_name)

    monkeypatch.setattr(selectors, "read_host_unit", read_host_unit)
    monkeypatch.setattr(existing_units, "read_existing_unit", read_existing_unit)
    monkeypatch.setattr(unit_requests, "read_host_unit", read_host_unit)
    monkeypatch.setattr(runner, "ROLLBACK", side.rollback)
    monkeypatch.setattr(runner, "CANCEL_POLL_S", 0.0)
    return side


__all__ = [
    "FAST",
    "LocalSide",
    "UnitRow",
    "host_page_units",
    "last_job_event_on_host",
    "profile_page_rows",
    "rows",
    "use_local_side",
]
