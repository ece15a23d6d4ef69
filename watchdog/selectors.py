"""Reads for the watchdog's pages: the fleet, incidents, and a host's live unit state and
journal tail (read from the host when the page asks; bounded)."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.db.models import Count, Q, QuerySet
from django.utils import timezone

from deploys.models import Host
from deploys.running import version_names, versions_by_sha
from hostops.channel.bounds import clip_text
from watchdog.checks import UNIT_PROPERTIES, UnitState, unit_state
from watchdog.models import Incident
from watchdog.runner import connect
from watchdog.targets import watched_targets

JOURNAL_LINES = 20
JOURNAL_LINE_CHARS = 300


@dataclass(frozen=True)
class FleetRow:
    host: Host
    enabled: bool
    last_check_at: datetime | None
    units: list[dict[str, Any]]
    gpus: list[dict[str, Any]] | None
    errors: dict[str, str]
    open_incidents: int
    error: str = ""
    paused: bool = False  # a watch row with watching turned off (its settings page)
    has_watch: bool = False

    @property
    def age_s(self) -> float | None:
        if self.last_check_at is None:
            return None
        return (timezone.now() - self.last_check_at).total_seconds()

    @property
    def gpu_used_gib(self) -> float | None:
        return None if self.gpus is None else sum(g["used_mib"] for g in self.gpus) / 1024

    @property
    def gpu_total_gib(self) -> float | None:
        return None if self.gpus is None else sum(g["total_mib"] for g in self.gpus) / 1024


def fleet() -> list[FleetRow]:
    hosts = (
        Host.objects.filter(archived=False)
        .select_related("watch")
        .annotate(open_incidents=Count("incidents", filter=Q(incidents__closed_at__isnull=True)))
        .order_by("name")
    )
    rows = []
    for host in hosts:
        watch = getattr(host, "watch", None)
        now = (watch.readings or {}).get("now", {}) if watch is not None else {}
        rows.append(
            FleetRow(
                host=host,
                enabled=bool(watch and watch.enabled),
                last_check_at=watch.last_check_at if watch else None,
                units=list(now.get("units", [])),
                gpus=now.get("gpus"),
                errors=dict(now.get("errors", {})),
                open_incidents=host.open_incidents,
                error=watch.last_error if watch else "",
                paused=bool(watch and not watch.enabled),
                has_watch=watch is not None,
            )
        )
    return _named(rows)


def _named(rows: list[FleetRow]) -> list[FleetRow]:
    """Each unit's text on the host named as the profile versions it is, by its sha256
    (`deploys.running`: the host is the truth, not what was last pushed); "" when it is
    no version. One lookup for the whole fleet."""
    shas = {str(u.get("sha256") or "") for row in rows for u in row.units}
    known = versions_by_sha(shas)
    for row in rows:
        row.units[:] = [
            {**u, "running_as": version_names(known.get(str(u.get("sha256") or ""), ()))}
            for u in row.units
        ]
    return rows


def incidents(*, state: str = "open", host: Host | None = None) -> QuerySet[Incident]:
    qs = Incident.objects.select_related("host")
    if host is not None:
        qs = qs.filter(host=host)
    if state == "open":
        return qs.filter(closed_at__isnull=True)
    if state == "closed":
        return qs.filter(closed_at__isnull=False)
    return qs


@dataclass
class LiveUnit:
    unit: str
    version: str
    state: UnitState | None = None
    journal: list[str] = field(default_factory=list)
    error: str = ""


@dataclass
class HostLive:
    units: list[LiveUnit]
    error: str = ""
    seconds: float = 0.0


def host_live(host: Host) -> HostLive:
    """Each watched unit's state and its last journal lines, read now (short timeouts)."""
    started = time.monotonic()
    units = [LiveUnit(t.unit, t.version) for t in watched_targets(host)]
    if not units:
        return HostLive(units)
    try:
        with connect(host) as transport:
            for unit in units:
                name = f"{unit.unit}.service"
                try:
                    unit.state = unit_state(
                        unit.unit, transport.unit_properties(name, UNIT_PROPERTIES)
                    )
                    entries = transport.journal(name, lines=JOURNAL_LINES, timeout=10)
                    unit.journal = [clip_text(e.message, JOURNAL_LINE_CHARS) for e in entries]
                except Exception as exc:
                    unit.error = f"{type(exc).__name__}: {exc}"[:500]
    except Exception as exc:
        return HostLive(units, f"{type(exc).__name__}: {exc}"[:500], time.monotonic() - started)
    return HostLive(units, "", time.monotonic() - started)


__all__ = ["FleetRow", "HostLive", "fleet", "host_live", "incidents"]
