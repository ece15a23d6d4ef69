"""What runs on host H as unit U: one answer for every page, choice and audit payload.

The truth is the text on the host. What specadmin knows of it is the newer of what a job
wrote there (`PushedUnit`: "as pushed") and what it last read there (`UnitReading`: "as
last read", at the end of every job, by every probe, on every request). That text is
matched by its sha256 against the rendered texts of every profile version (the text
stored with the version, and the text each deploy request rendered for it): one text may
be several versions (a restored version renders its original's text), or none ("changed
outside specadmin").

Per host and unit, the jobs that ran a text say how it went there: a deploy (or rollback
request) that failed or regressed marks that text; the last deploy that passed readiness
and the benchmark gate, with no failure of the same text since, is "last known good"; so
is a trial's candidate left running as production (it beat production's baseline).

The host page, the profile pages (`{% profile_deployments %}`), the *Roll back to*
choices, the request pages and the jobs' audit events all read this module
(docs/architecture.md, "What runs where").
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.db.models import Q
from django.utils import timezone

from deploys.models import DeployRequest, Host, JobStep, PushedUnit, TrialCandidate, UnitReading
from hostops.channel.push import sha256_hex
from units.models import ProfileVersion, ServiceProfile

Kind = DeployRequest.Kind
Status = DeployRequest.Status
PUSHED = "pushed"
READ = "read"
# A failure at these steps says nothing about the text: nothing was tried on the host.
_NOT_TRIED = frozenset({"host_lock", "preflight"})
_FAILED = (Status.FAILED, Status.ROLLED_BACK, Status.ROLLBACK_FAILED)
_TRIED_KINDS = (Kind.DEPLOY, Kind.ROLLBACK)


# -- recording what was read -----------------------------------------------------------------


def record_read(
    *,
    host: Host,
    unit_name: str,
    data: bytes | None,
    step: str,
    request: DeployRequest | None = None,
) -> UnitReading:
    """The unit file as just read on the host (None: there is none)."""
    return UnitReading.objects.create(
        host=host,
        unit_name=_plain(unit_name),
        sha256="" if data is None else sha256_hex(data),
        read_at=timezone.now(),
        request=request,
        step=step[:60],
    )


def record_probe(*, host: Host, files: Iterable[dict[str, Any]]) -> int:
    """A probe's unit files (`{"name", "sha256"}`, "" for absent); how many it recorded."""
    now = timezone.now()
    rows = [
        UnitReading(
            host=host,
            unit_name=_plain(str(f["name"])),
            sha256=str(f.get("sha256") or ""),
            read_at=now,
            step="probe",
        )
        for f in files
        if f.get("name")
    ]
    UnitReading.objects.bulk_create(rows)
    return len(rows)


def known_unit_names(*, host: Host) -> list[str]:
    """Every unit name specadmin wrote or read on `host` (without `.service`)."""
    pushed = PushedUnit.objects.filter(host=host).values_list("unit_name", flat=True)
    read = UnitReading.objects.filter(host=host).values_list("unit_name", flat=True)
    return sorted(set(pushed) | set(read))


def _plain(unit_name: str) -> str:
    return unit_name.removesuffix(".service")


# -- what is known of a file ------------------------------------------------------------------


@dataclass(frozen=True)
class Seen:
    """The last thing specadmin knows of one unit file: written or read, when, by whom."""

    sha256: str  # "" : no file
    at: datetime
    how: str  # PUSHED or READ
    step: str
    request_id: int | None

    @property
    def present(self) -> bool:
        return bool(self.sha256)

    @property
    def source(self) -> str:
        """ "as pushed by job #12" / "as read at the end of job #12" / "as read by a probe"."""
        job = f" #{self.request_id}" if self.request_id else ""
        if self.how == PUSHED:
            return f"as written by job{job} ({self.step})"
        if self.step == "probe":
            return "as read by a probe"
        if self.step == "request":
            return f"as read for request{job}"
        return f"as read at the end of job{job}"


def _last_pushes(host: Host, unit_name: str | None) -> dict[str, Seen]:
    qs = PushedUnit.objects.filter(host=host)
    if unit_name is not None:
        qs = qs.filter(unit_name=unit_name)
    found: dict[str, Seen] = {}
    rows = qs.order_by("-pushed_at", "-pk").values_list(
        "unit_name", "sha256", "pushed_at", "request_id", "text", "request__unit_sha256"
    )
    for name, sha, at, request_id, text, requested in rows:
        if name not in found:
            # A job writes its own text (push), or puts the previous one back (rollback),
            # or removes the file.
            step = ("push" if sha == requested else "rollback") if text else "remove"
            found[name] = Seen(sha if text else "", at, PUSHED, step, request_id)
    return found


def _last_reads(host: Host, unit_name: str | None) -> dict[str, Seen]:
    qs = UnitReading.objects.filter(host=host)
    if unit_name is not None:
        qs = qs.filter(unit_name=unit_name)
    found: dict[str, Seen] = {}
    rows = qs.order_by("-read_at", "-pk").values_list(
        "unit_name", "sha256", "read_at", "request_id", "step"
    )
    for name, sha, at, request_id, step in rows:
        found.setdefault(name, Seen(sha, at, READ, step, request_id))
    return found


def _last_seen(host: Host, unit_name: str | None = None) -> dict[str, Seen]:
    """Per unit name, the newer of the last push and the last read (a read at the same
    instant as a push is the later knowledge)."""
    pushes = _last_pushes(host, unit_name)
    reads = _last_reads(host, unit_name)
    seen = dict(pushes)
    for name, read in reads.items():
        push = seen.get(name)
        if push is None or read.at >= push.at:
            seen[name] = read
    return seen


# -- which versions a text is ----------------------------------------------------------------


def versions_by_sha(shas: Iterable[str]) -> dict[str, tuple[ProfileVersion, ...]]:
    """Every profile version whose rendered text has one of these sha256s: the text stored
    with the version, and the text each deploy request rendered for it (a renderer that
    changed since the version was saved renders it differently)."""
    wanted = {s for s in shas if s}
    if not wanted:
        return {}
    pairs = set(
        ProfileVersion.objects.filter(unit_sha256__in=wanted).values_list("unit_sha256", "pk")
    )
    pairs |= set(
        DeployRequest.objects.filter(kind=Kind.DEPLOY, unit_sha256__in=wanted).values_list(
            "unit_sha256", "profile_version_id"
        )
    )
    # a trial candidate's text, rendered for its unit name (production's own, say)
    pairs |= set(
        TrialCandidate.objects.filter(unit_sha256__in=wanted).values_list(
            "unit_sha256", "profile_version_id"
        )
    )
    versions = ProfileVersion.objects.select_related("profile").in_bulk({pk for _, pk in pairs})
    found: dict[str, list[ProfileVersion]] = defaultdict(list)
    for sha, pk in pairs:
        found[sha].append(versions[pk])
    return {
        sha: tuple(sorted(set(vs), key=lambda v: (v.profile.name, v.number)))
        for sha, vs in found.items()
    }


def version_names(versions: Sequence[ProfileVersion]) -> str:
    """ "vllm-kimi v1, v3" (several versions of one profile), "a v1, b v2" across profiles."""
    parts: list[str] = []
    last_profile = None
    for v in versions:
        parts.append(
            f"v{v.number}" if v.profile_id == last_profile else f"{v.profile.name} v{v.number}"
        )
        last_profile = v.profile_id
    return ", ".join(parts)


# -- how a text went on a host ---------------------------------------------------------------


@dataclass(frozen=True)
class Mark:
    """A deploy of a text that failed or regressed on a host."""

    sha256: str
    what: str  # "regressed" or "failed"
    step: str
    request_id: int
    at: datetime

    @property
    def label(self) -> str:
        if self.what == "regressed":
            return f"regressed (#{self.request_id})"
        return f"failed at {self.step} (#{self.request_id})"


@dataclass(frozen=True)
class _History:
    marks: dict[str, list[Mark]]
    last_good: str  # sha256, "" when none
    last_good_request: int | None


def _histories(host: Host, unit_name: str | None) -> dict[str, _History]:
    """Per unit name on `host`: the marks of each text and the last known good one."""
    jobs = DeployRequest.objects.filter(host=host, kind__in=_TRIED_KINDS).filter(
        Q(status__in=_FAILED) | Q(status=Status.SUCCEEDED, kind=Kind.DEPLOY)
    )
    if unit_name is not None:
        jobs = jobs.filter(unit_name=unit_name)
    rows = list(
        jobs.order_by("finished_at", "pk").values_list(
            "pk", "unit_name", "unit_sha256", "status", "finished_at"
        )
    )
    failed_ids = [pk for pk, _, _, status, _ in rows if status != Status.SUCCEEDED]
    first_failure: dict[int, tuple[str, str]] = {}
    for request_id, name, outcome in (
        JobStep.objects.filter(
            request_id__in=failed_ids, phase=JobStep.Phase.MAIN, status=JobStep.Status.FAILED
        )
        .order_by("pk")
        .values_list("request_id", "name", "result__outcome")
    ):
        first_failure.setdefault(request_id, (name, str(outcome or "")))
    marks: dict[str, dict[str, list[Mark]]] = defaultdict(lambda: defaultdict(list))
    good: dict[str, list[tuple[str, int, datetime]]] = defaultdict(list)
    for pk, name, sha, status, finished in _promotions(host, unit_name) + rows:
        at = finished or timezone.now()
        if status == Status.SUCCEEDED:
            good[name].append((sha, pk, at))
            continue
        step, outcome = first_failure.get(pk, ("", ""))
        if step in _NOT_TRIED or not step or outcome == "cancelled":
            continue  # a cancel (whose rollback then failed) says nothing of the text
        what = "regressed" if outcome == "regressed" else "failed"
        marks[name][sha].append(Mark(sha, what, step, pk, at))
    for kept in good.values():
        kept.sort(key=lambda g: (g[2], g[1]))
    histories = {}
    for name in set(marks) | set(good):
        last_sha, last_pk = "", None
        for sha, pk, at in reversed(good[name]):
            if not any(m.at > at for m in marks[name].get(sha, [])):
                last_sha, last_pk = sha, pk
                break
        histories[name] = _History(dict(marks[name]), last_sha, last_pk)
    return histories


def _promotions(
    host: Host, unit_name: str | None
) -> list[tuple[int, str, str, str, datetime | None]]:
    """The candidates trials left running as production on `host` (they passed readiness
    and beat production's baseline), as the successful deploys of their text."""
    promoted = TrialCandidate.objects.filter(
        request__host=host,
        request__status=Status.SUCCEEDED,
        outcome=TrialCandidate.Outcome.PROMOTED,
    )
    if unit_name is not None:
        promoted = promoted.filter(unit_name=unit_name)
    return [
        (pk, name, sha, Status.SUCCEEDED, finished)
        for pk, name, sha, finished in promoted.values_list(
            "request_id", "unit_name", "unit_sha256", "request__finished_at"
        )
    ]


# -- the answer --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Text:
    """One unit text as specadmin knows it on a host: the versions it is, how it went."""

    sha256: str
    versions: tuple[ProfileVersion, ...] = ()
    marks: tuple[Mark, ...] = ()
    last_known_good: bool = False

    @property
    def name(self) -> str:
        """The versions by name, or what the text is when it is none."""
        if not self.sha256:
            return "no unit file"
        if not self.versions:
            return f"changed outside specadmin (sha256 {self.sha256[:12]}…)"
        return version_names(self.versions)

    @property
    def outside_specadmin(self) -> bool:
        return bool(self.sha256) and not self.versions

    @property
    def notes(self) -> list[str]:
        """ "last known good", then the failures and regressions, newest last."""
        return (["last known good"] if self.last_known_good else []) + [m.label for m in self.marks]

    @property
    def label(self) -> str:
        notes = self.notes
        return self.name + (f" — {'; '.join(notes)}" if notes else "")

    def as_json(self) -> list[dict[str, Any]]:
        return [{"profile": v.profile.name, "version": v.number} for v in self.versions]


@dataclass(frozen=True)
class RollbackChoice:
    """An earlier text pushed as this unit on this host that a rollback can put back."""

    push: PushedUnit
    text: Text

    @property
    def label(self) -> str:
        return self.text.label


@dataclass(frozen=True)
class RunningUnit:
    """What runs on `host` as `unit_name`: the text there now and what is known of it."""

    host: Host
    unit_name: str
    seen: Seen
    text: Text
    last_good: Text | None
    since: datetime
    choices: tuple[RollbackChoice, ...] = field(default=())

    @property
    def removed_outside(self) -> bool:
        """specadmin's last word was a unit file, and a read found none."""
        return not self.seen.present

    def audit_json(self) -> dict[str, Any]:
        """For audit payloads: the text on the host now and the versions it is."""
        return {
            "unit": f"{self.unit_name}.service",
            "sha256": self.text.sha256,
            "versions": self.text.as_json(),
            "is": self.text.name,
            "known": self.seen.source,
        }


class _Lookup:
    """The reads behind the answers for one host: one set of queries per page."""

    def __init__(self, host: Host, unit_name: str | None = None) -> None:
        self.host = host
        self.seen = _last_seen(host, unit_name)
        self.histories = _histories(host, unit_name)
        pushes = PushedUnit.objects.filter(host=host, request__isnull=False).exclude(text="")
        if unit_name is not None:
            pushes = pushes.filter(unit_name=unit_name)
        self.pushes = list(pushes.order_by("-pushed_at", "-pk"))
        shas = {s.sha256 for s in self.seen.values()}
        shas |= {p.sha256 for p in self.pushes}
        shas |= {h.last_good for h in self.histories.values()}
        self.versions = versions_by_sha(shas)

    def text(self, unit_name: str, sha: str) -> Text:
        history = self.histories.get(unit_name) or _History({}, "", None)
        return Text(
            sha256=sha,
            versions=self.versions.get(sha, ()),
            marks=tuple(history.marks.get(sha, ())) if sha else (),
            last_known_good=bool(sha) and sha == history.last_good,
        )

    def choices(self, unit_name: str, current: str) -> tuple[RollbackChoice, ...]:
        """One per earlier text (newest push of it), never the current one nor a text
        that is no profile version; the last known good first, then newest first."""
        found: dict[str, RollbackChoice] = {}
        for push in self.pushes:
            if push.unit_name != unit_name or push.sha256 in found or push.sha256 == current:
                continue
            text = self.text(unit_name, push.sha256)
            if text.versions:
                found[push.sha256] = RollbackChoice(push, text)
        return tuple(sorted(found.values(), key=lambda c: not c.text.last_known_good))

    def since(self, unit_name: str, seen: Seen) -> datetime:
        for push in self.pushes:
            if push.unit_name == unit_name and push.sha256 == seen.sha256:
                return push.pushed_at
        return seen.at

    def unit(self, unit_name: str) -> RunningUnit | None:
        seen = self.seen.get(unit_name)
        if seen is None:
            return None
        history = self.histories.get(unit_name)
        last_good = (
            self.text(unit_name, history.last_good) if history and history.last_good else None
        )
        return RunningUnit(
            host=self.host,
            unit_name=unit_name,
            seen=seen,
            text=self.text(unit_name, seen.sha256),
            last_good=last_good,
            since=self.since(unit_name, seen),
            choices=self.choices(unit_name, seen.sha256),
        )


def unit_on_host(*, host: Host, unit_name: str) -> RunningUnit | None:
    """What runs on `host` as `unit_name` (None: specadmin never wrote or read it)."""
    unit_name = _plain(unit_name)
    return _Lookup(host, unit_name).unit(unit_name)


def units_on_host(*, host: Host) -> list[RunningUnit]:
    """Every unit specadmin wrote or read on `host`, except those specadmin removed
    itself; one removed outside specadmin stays, saying so. By unit name."""
    lookup = _Lookup(host)
    units = [lookup.unit(name) for name in sorted(lookup.seen)]
    return [
        u
        for u in units
        if u is not None and (u.seen.present or (u.seen.how == READ and _was_pushed(lookup, u)))
    ]


def _was_pushed(lookup: _Lookup, unit: RunningUnit) -> bool:
    """Was the last thing specadmin did to this unit writing it (not removing it)?"""
    pushes = _last_pushes(lookup.host, unit.unit_name)
    last = pushes.get(unit.unit_name)
    return last is not None and last.present


def rollback_choices(*, host: Host, unit_name: str) -> tuple[RollbackChoice, ...]:
    """What a rollback of `unit_name` on `host` can go back to (see `_Lookup.choices`)."""
    unit = unit_on_host(host=host, unit_name=unit_name)
    return unit.choices if unit is not None else ()


def on_host_payload(*, host: Host, unit_name: str) -> dict[str, Any]:
    """`{"on_host": …}` for an audit payload: what runs there now, by version."""
    unit = unit_on_host(host=host, unit_name=unit_name)
    if unit is None:
        return {"on_host": {"unit": f"{_plain(unit_name)}.service", "is": "never seen"}}
    return {"on_host": unit.audit_json()}


def on_host_list(*, host: Host, unit_names: Iterable[str]) -> list[dict[str, Any]]:
    """What runs as each of these units (a probe's audit event)."""
    lookup = _Lookup(host)
    units = [lookup.unit(_plain(name)) for name in unit_names]
    return [unit.audit_json() for unit in units if unit is not None]


def version_of_text(sha: str, *, prefer: ProfileVersion | None = None) -> ProfileVersion | None:
    """The profile version a request about this text belongs to: `prefer` when the text
    is that version, else the newest version it is (None: it is none)."""
    versions = versions_by_sha([sha]).get(sha, ())
    if prefer is not None and any(v.pk == prefer.pk for v in versions):
        return prefer
    return max(versions, key=lambda v: (v.created_at, v.pk), default=None)


def text_of(*, host: Host, unit_name: str, sha: str) -> Text:
    """A text (e.g. a request's) as known on `host` as `unit_name`."""
    return _Lookup(host, _plain(unit_name)).text(_plain(unit_name), sha)


# -- a profile's versions on the hosts ---------------------------------------------------------


@dataclass(frozen=True)
class Deployment:
    """`host` runs `versions` (of one profile) as `unit_name`, known `seen`."""

    host: Host
    unit_name: str
    versions: tuple[ProfileVersion, ...]
    text: Text
    seen: Seen
    since: datetime

    @property
    def version(self) -> ProfileVersion:
        return self.versions[-1]

    @property
    def version_label(self) -> str:
        return ", ".join(f"v{v.number}" for v in self.versions)


@dataclass(frozen=True)
class VersionNote:
    """A version of the profile that is not running on a host but has a story there."""

    host: Host
    unit_name: str
    versions: tuple[ProfileVersion, ...]
    notes: tuple[str, ...]

    @property
    def version_label(self) -> str:
        return ", ".join(f"v{v.number}" for v in self.versions)


@dataclass(frozen=True)
class ProfileOnHosts:
    running: list[Deployment]
    history: list[VersionNote]


def _hosts_touching(profile: ServiceProfile) -> list[Host]:
    """Hosts where a text of `profile` was ever pushed, read, or a job of it ran."""
    shas = set(profile.versions.values_list("unit_sha256", flat=True))
    shas |= set(
        DeployRequest.objects.filter(profile_version__profile=profile).values_list(
            "unit_sha256", flat=True
        )
    )
    ids = set(PushedUnit.objects.filter(sha256__in=shas).values_list("host_id", flat=True))
    ids |= set(UnitReading.objects.filter(sha256__in=shas).values_list("host_id", flat=True))
    ids |= set(
        DeployRequest.objects.filter(profile_version__profile=profile).values_list(
            "host_id", flat=True
        )
    )
    return list(Host.objects.filter(pk__in=ids, archived=False).order_by("name"))


def profile_deployments(*, profile: ServiceProfile) -> ProfileOnHosts:
    """Where each version of `profile` runs now (the text on the host is that version),
    and the versions that failed, regressed or are last known good on a host. Newest
    version first; archived hosts left out."""
    running: list[Deployment] = []
    history: list[VersionNote] = []
    for host in _hosts_touching(profile):
        lookup = _Lookup(host)
        for name in sorted(lookup.seen):
            unit = lookup.unit(name)
            if unit is None:
                continue
            mine = tuple(v for v in unit.text.versions if v.profile_id == profile.pk)
            if mine and unit.seen.present:
                running.append(Deployment(host, name, mine, unit.text, unit.seen, unit.since))
            history.extend(_notes(lookup, name, profile, unit.seen.sha256))
    running.sort(key=lambda d: (-d.version.number, d.host.name, d.unit_name))
    history.sort(key=lambda n: (-n.versions[-1].number, n.host.name, n.unit_name))
    return ProfileOnHosts(running, history)


def _notes(
    lookup: _Lookup, unit_name: str, profile: ServiceProfile, current: str
) -> list[VersionNote]:
    """The profile's texts on this unit other than the current one that have a story."""
    history = lookup.histories.get(unit_name)
    if history is None:
        return []
    notes = []
    for sha in {*history.marks, history.last_good} - {current, ""}:
        text = lookup.text(unit_name, sha)
        mine = tuple(v for v in text.versions if v.profile_id == profile.pk)
        if mine and text.notes:
            notes.append(VersionNote(lookup.host, unit_name, mine, tuple(text.notes)))
    return notes


__all__ = [
    "Deployment",
    "Mark",
    "ProfileOnHosts",
    "RollbackChoice",
    "RunningUnit",
    "Seen",
    "Text",
    "known_unit_names",
    "on_host_list",
    "on_host_payload",
    "profile_deployments",
    "record_probe",
    "record_read",
    "rollback_choices",
    "text_of",
    "unit_on_host",
    "units_on_host",
    "version_names",
    "version_of_text",
    "versions_by_sha",
]
