"""Writes of the watchdog: one host's check from reading to incidents, and the incidents'
opening and closing (audited: `watchdog.incident_opened` / `watchdog.incident_closed`,
then `watchdog.signals`). docs/watchdog.md says what each check looks at."""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction
from django.db.models import F, Value
from django.db.models.functions import Least
from django.utils import timezone

from audit.services import record
from deploys.connect import transport_for
from deploys.models import Host, PushedUnit
from hostops.channel import Transport, TransportError
from hostops.channel.push import sha256_hex
from units.importing.service import ImportResult, import_unit_version
from watchdog import claims
from watchdog.canary import DEFAULT_DEADLINE_S
from watchdog.checks import Finding, Verdict
from watchdog.evaluate import Evaluation, Windows, evaluate
from watchdog.models import HostWatch, Incident
from watchdog.reader import UNIT_DIR, read_host
from watchdog.signals import incident_closed, incident_opened
from watchdog.targets import watched_targets

log = logging.getLogger(__name__)

OPENED = "watchdog.incident_opened"
CLOSED = "watchdog.incident_closed"
SETTINGS_CHANGED = "watchdog.settings_changed"
EVIDENCE_CHARS = 16_000
STRING_CHARS = 8_000
LIST_ITEMS = 50


def windows(watch: HostWatch | None = None) -> Windows:
    """The checks' windows from settings (`WATCHDOG_HUNG_WINDOW_S`, …), else defaults;
    a host's own hung-engine window (its watch settings) first."""
    d = Windows()
    hung_s = float(getattr(settings, "WATCHDOG_HUNG_WINDOW_S", d.hung_s))
    if watch is not None and watch.hung_window_s:
        hung_s = float(watch.hung_window_s)
    return Windows(
        hung_s=hung_s,
        acceptance_s=float(getattr(settings, "WATCHDOG_ACCEPTANCE_WINDOW_S", d.acceptance_s)),
        min_draft_tokens=int(getattr(settings, "WATCHDOG_MIN_DRAFT_TOKENS", d.min_draft_tokens)),
        collapse_ratio=float(getattr(settings, "WATCHDOG_COLLAPSE_RATIO", d.collapse_ratio)),
        loop_s=float(getattr(settings, "WATCHDOG_LOOP_WINDOW_S", d.loop_s)),
        loop_restarts=int(getattr(settings, "WATCHDOG_LOOP_RESTARTS", d.loop_restarts)),
    )


def bounded(value: Any, depth: int = 0) -> Any:
    """Evidence small enough to store: long strings cut, long lists cut, deep nesting
    flattened to its text."""
    if isinstance(value, str):
        return value if len(value) <= STRING_CHARS else value[:STRING_CHARS] + " …(cut)"
    if isinstance(value, dict):
        if depth > 4:
            return json.dumps(value, default=str)[:STRING_CHARS]
        return {str(k)[:100]: bounded(v, depth + 1) for k, v in list(value.items())[:LIST_ITEMS]}
    if isinstance(value, (list, tuple)):
        return [bounded(v, depth + 1) for v in list(value)[:LIST_ITEMS]]
    if isinstance(value, float) and (value != value or value in (float("inf"), float("-inf"))):
        return None
    if value is None or isinstance(value, (bool, int, float)):
        return value
    return str(value)[:STRING_CHARS]


def _evidence(evidence: dict[str, Any]) -> dict[str, Any]:
    kept = bounded(evidence)
    if len(json.dumps(kept)) > EVIDENCE_CHARS:
        return {"cut": json.dumps(kept)[:EVIDENCE_CHARS]}
    return kept  # type: ignore[no-any-return]


def _payload(incident: Incident) -> dict[str, Any]:
    """What the audit keeps: which incident, not its evidence (a unit's diff may hold a
    secret the audit must not carry)."""
    return {
        "incident": incident.pk,
        "kind": incident.kind,
        "unit": incident.unit_name,
        "key": incident.key,
        "summary": incident.summary,
    }


@dataclass(frozen=True)
class _Found:
    verdict: Verdict
    finding: Finding
    unit: str


def _keyed(verdicts: list[Verdict]) -> dict[str, _Found]:
    """Each finding under its incident key: kind, unit, subject ("drift:vllm-a")."""
    found = {}
    for verdict in verdicts:
        for finding in verdict.findings:
            unit = verdict.unit or str(finding.evidence.get("unit") or "")
            key = ":".join(p for p in (finding.kind, verdict.unit, finding.subject) if p)
            found[key[:400]] = _Found(verdict, finding, unit)
    return found


def _open(host: Host, key: str, seen: _Found, now: datetime) -> Incident | None:
    """A new open incident, audited; None when another check opened it meanwhile."""
    incident = Incident(
        host=host,
        kind=seen.finding.kind,
        unit_name=seen.unit[:247],
        scope=seen.verdict.scope[:300],
        key=key,
        summary=seen.finding.summary[:500],
        evidence=_evidence(seen.finding.evidence),
        last_seen_at=now,
    )
    try:
        with transaction.atomic():
            incident.save()
    except IntegrityError:
        return None
    record(kind=OPENED, actor=None, obj=incident, payload=_payload(incident), host_name=host.name)
    return incident


def _close(incident: Incident, reason: str, now: datetime) -> bool:
    """Closed by this call (a conditional UPDATE: two checks never both close it), audited."""
    done = Incident.objects.filter(pk=incident.pk, closed_at__isnull=True).update(
        closed_at=now, closed_reason=reason
    )
    if not done:
        return False
    incident.closed_at, incident.closed_reason = now, reason
    payload = {**_payload(incident), "reason": reason}
    record(kind=CLOSED, actor=None, obj=incident, payload=payload, host_name=incident.host.name)
    return True


def _close_reason(incident: Incident, judged: set[str], watched: set[str] | None) -> str:
    if incident.scope in judged:
        return "cleared: the check no longer finds it"
    if watched is not None and incident.unit_name and incident.unit_name not in watched:
        return "the unit is no longer deployed here"
    return ""  # its check did not run or could not tell: left open


class JobTookHost(Exception):
    """A job took the host while the check read it: nothing of that reading is applied."""


def apply_verdicts(
    *,
    host: Host,
    verdicts: Iterable[Verdict],
    units: Iterable[str] | None,
    since: datetime | None = None,
) -> tuple[list[Incident], list[Incident]]:
    """Open an incident per new finding, refresh those still found, close those of a
    judged scope no longer found and those of units no longer watched (`units` None: not
    known, none of those closes). (opened, closed).

    `since`: when the reading began, on the database's clock. Before anything is written,
    JobTookHost if a job holds the host's lease or took it since: the reading may show a
    deploy half done (the unit stopped, its GPUs still held by the old server), and the
    check after the job (`dispatch.check_after_job`) reads the host again. A quiet check
    writes nothing, so it does not ask."""
    verdicts = list(verdicts)
    watched = None if units is None else set(units)
    judged = {v.scope for v in verdicts if v.judged}
    found = _keyed(verdicts)
    now = timezone.now()
    opened: list[Incident] = []
    closed: list[Incident] = []
    # Read outside a transaction: a quiet check (nothing found, nothing open) writes
    # nothing and takes no lock (SQLite's BEGIN IMMEDIATE would take the database's). The
    # writes below are conditional each (the open incident's unique constraint, a close
    # or refresh only while it is open), so a stale read never opens twice nor closes twice.
    current = {i.key: i for i in Incident.objects.filter(host=host, closed_at__isnull=True)}
    for row in current.values():
        row.host = host  # the same row: no join for the audit's host name
    closing = [
        (incident, reason)
        for key, incident in current.items()
        if key not in found and (reason := _close_reason(incident, judged, watched))
    ]
    if not found and not closing:
        return opened, closed
    with transaction.atomic():
        if since is not None and claims.job_took_host(host.pk, since):
            raise JobTookHost(f"a job took {host.name} while it was read")
        opened = _open_or_refresh(host, found, current, now)
        for incident, reason in closing:
            if _close(incident, reason, now):
                closed.append(incident)
        transaction.on_commit(lambda: _announce(opened, closed))
    return opened, closed


def _open_or_refresh(
    host: Host, found: dict[str, _Found], current: dict[str, Incident], now: datetime
) -> list[Incident]:
    """Open the incidents of new findings, refresh those still found; the opened ones."""
    opened = []
    seen_again = []  # still found, same summary and evidence: one UPDATE for them all
    for key, seen in found.items():
        if key not in current:
            if (incident := _open(host, key, seen, now)) is not None:
                opened.append(incident)
            continue
        summary, evidence = seen.finding.summary[:500], _evidence(seen.finding.evidence)
        if summary == current[key].summary and evidence == current[key].evidence:
            seen_again.append(current[key].pk)
        else:
            Incident.objects.filter(pk=current[key].pk, closed_at__isnull=True).update(
                last_seen_at=now, summary=summary, evidence=evidence
            )
    if seen_again:
        Incident.objects.filter(pk__in=seen_again, closed_at__isnull=True).update(last_seen_at=now)
    return opened


def _announce(opened: list[Incident], closed: list[Incident]) -> None:
    for signal, incidents in ((incident_opened, opened), (incident_closed, closed)):
        for incident in incidents:
            for receiver, result in signal.send_robust(sender=Incident, incident=incident):
                if isinstance(result, Exception):
                    log.error("%r failed for incident #%s: %s", receiver, incident.pk, result)


def _watch_of(host: Host) -> HostWatch | None:
    """The host's watch settings (the runner's `select_related` has them cached)."""
    try:
        return host.watch
    except HostWatch.DoesNotExist:
        return None


def _canary_s(watch: HostWatch | None) -> float | None:
    """The canary's deadline where the host's watch has it on (`WATCHDOG_CANARY_TIMEOUT_S`)."""
    if watch is None or not watch.canary:
        return None
    return float(getattr(settings, "WATCHDOG_CANARY_TIMEOUT_S", DEFAULT_DEADLINE_S))


def check_host(
    *,
    host: Host,
    transport: Transport,
    history: dict[str, Any],
    clock: Callable[[], float] = time.time,
    since: datetime | None = None,
) -> tuple[Evaluation, list[Incident], list[Incident]]:
    """Read the host, judge every check, open and close incidents. The caller stores the
    evaluation's history and `now` (watchdog.claims.finish). `since`: when the check
    began, on the database's clock (`apply_verdicts` says why)."""
    targets = watched_targets(host)
    watch = _watch_of(host)
    read = read_host(
        transport, targets, gpus=host.gpu_count != 0, clock=clock, canary_s=_canary_s(watch)
    )
    evaluation = evaluate(read, history, windows(watch))
    opened, closed = apply_verdicts(
        host=host, verdicts=evaluation.verdicts, units=[t.unit for t in targets], since=since
    )
    return evaluation, opened, closed


# -- the drift incident's actions -------------------------------------------------------------


def approved_push(incident: Incident) -> PushedUnit | None:
    """The push whose text is the approved one the drift is measured against."""
    return (
        PushedUnit.objects.filter(host=incident.host, unit_name=incident.unit_name)
        .exclude(text="")
        .select_related("request__profile_version__profile")
        .order_by("-pushed_at", "-pk")
        .first()
    )


def take_in_host_text(*, incident: Incident, actor: AbstractBaseUser) -> ImportResult:
    """The unit file as it is on the host now, as a new version of the profile whose text
    was approved there (`units.importing.service.import_unit_version`: refused unless it
    runs the same commands); the operator then requests its deploy as usual. Audited, with
    the incident it came from. ValidationError says why not."""
    if incident.kind != Incident.Kind.DRIFT:
        raise ValidationError("Only a drift incident has a host text to take in.")
    if incident.evidence.get("path"):
        raise ValidationError(
            "This drift is a drop-in, and a drop-in has no unit text to take in: remove it "
            "on the host, or have an admin adopt it and deploy with it."
        )
    push = approved_push(incident)
    version = push.request.profile_version if push and push.request else None
    if version is None:
        raise ValidationError("No profile version was deployed as this unit: nothing to add to.")
    path = f"{UNIT_DIR}/{incident.unit_name}.service"
    try:
        with connect_host(incident.host) as transport:
            data = transport.read_file(path)
    except TransportError as exc:
        raise ValidationError(f"Cannot read {path} on {incident.host.name}: {exc}") from exc
    if data is None:
        raise ValidationError(f"{path} is no longer on {incident.host.name}.")
    expected = str(incident.evidence.get("host_sha256") or "")
    if sha256_hex(data) != expected:
        raise ValidationError(
            f"{path} on {incident.host.name} changed since the incident saw it; wait for the "
            "next check and look at its diff first."
        )
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ValidationError(f"{path} is not UTF-8 text.") from exc
    with transaction.atomic():
        result = import_unit_version(profile=version.profile, text=text, actor=actor)
        record(
            kind="watchdog.host_text_taken_in",
            actor=actor,
            obj=incident,
            payload={
                **_payload(incident),
                "host_sha256": expected,
                "profile": version.profile.name,
                "version": result.version.number,
                "created": result.created,
            },
            host_name=incident.host.name,
        )
    return result


# -- a host's watch settings ------------------------------------------------------------------


def save_watch_settings(
    *, watch: HostWatch, values: dict[str, Any], actor: AbstractBaseUser
) -> dict[str, dict[str, Any]]:
    """Change a host's watch settings (watchdog.forms.SETTINGS_FIELDS); the audit says who
    changed what, from what to what, as other settings changes are audited. Only those
    columns are written (a check finishing meanwhile keeps its readings), and a shorter
    period takes effect now, not after the old one. The changes; nothing when none."""
    changes = {
        name: {"from": getattr(watch, name), "to": value}
        for name, value in values.items()
        if getattr(watch, name) != value
    }
    if not changes:
        return {}
    now = timezone.now()
    fields: dict[str, Any] = {name: change["to"] for name, change in changes.items()}
    if "period_s" in changes:
        soon = now + timedelta(seconds=int(values["period_s"]))
        fields["next_due"] = Least(F("next_due"), Value(soon))
    with transaction.atomic():
        HostWatch.objects.filter(pk=watch.pk).update(**fields)
        record(
            kind=SETTINGS_CHANGED,
            actor=actor,
            obj=watch,
            payload={"host": watch.host_id, "changes": changes},
            host_name=watch.host.name,
        )
    watch.refresh_from_db()
    return changes


def connect_host(host: Host) -> Transport:
    return transport_for(host, connect_timeout=10)


__all__ = [
    "CLOSED",
    "OPENED",
    "SETTINGS_CHANGED",
    "JobTookHost",
    "apply_verdicts",
    "approved_push",
    "bounded",
    "check_host",
    "save_watch_settings",
    "take_in_host_text",
    "windows",
]
