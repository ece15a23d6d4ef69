"""Reads for hosts and deploy requests, and the unit a request would push.

`unit_for_host` is the single definition of "the text deployed for version V on host H":
the request stores it, the approval re-checks it, the job pushes it. It renders the
version's data snapshot and lints it for the versions the host was probed to run (the
profile's targets where the probe found none or no catalog covers them).
"""

from __future__ import annotations

import dataclasses
import difflib
from dataclasses import dataclass, field
from typing import Any

from django.db.models import Exists, OuterRef, QuerySet, Subquery

from deploys.connect import transport_for
from deploys.locks import HostLock
from deploys.models import DeployRequest, Host, JobStep, PushedUnit
from hostops.channel.push import DEFAULT_UNIT_DIR as UNIT_DIR
from hostops.channel.push import MAX_UNIT_BYTES, sha256_hex
from linting.findings import Finding
from linting.options import LintOptions
from linting.systemd.catalog import UnknownSystemdVersion
from linting.systemd.catalog import load_catalog as load_systemd_catalog
from linting.vllm.catalog import available_versions as vllm_catalog_versions
from units.linting import lint_beside
from units.models import ProfileVersion
from units.rendering import render_unit
from units.unicode_text import split_lines, split_lines_keepends

# MAX_UNIT_BYTES is push_unit's limit, also enforced at request time so nothing waits for
# approval that could never be pushed.


def unit_path(unit_name: str) -> str:
    return f"{UNIT_DIR}/{unit_name}.service"


@dataclass(frozen=True)
class HostUnit:
    """What `unit_for_host` produces: the text, its hash, and its lint result."""

    unit_name: str  # without ".service"
    text: str
    sha256: str
    systemd_version: int
    vllm_version: str
    findings: list[dict[str, Any]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def size(self) -> int:
        return len(self.text.encode("utf-8"))

    @property
    def errors(self) -> list[dict[str, Any]]:
        return [f for f in self.findings if f["severity"] == "error"]

    @property
    def warnings(self) -> list[dict[str, Any]]:
        return [f for f in self.findings if f["severity"] == "warning"]


def finding_json(finding: Finding) -> dict[str, Any]:
    """A finding as stored on the request (plain JSON, no source objects)."""
    return {
        "code": finding.code,
        "name": finding.name,
        "severity": str(finding.severity),
        "line": finding.span.start.line,
        "column": finding.span.start.column,
        "message": finding.message,
    }


def lint_versions(*, profile_version: ProfileVersion, host: Host) -> tuple[int, str, list[str]]:
    """(systemd version, vLLM version, notes): the host's probed versions where linting
    has a catalog for them, else the profile's targets, with a note saying so."""
    data = profile_version.data
    target_systemd = int(data.get("target_systemd_version") or 252)
    target_vllm = str(data.get("target_vllm_version") or "")
    notes: list[str] = []
    systemd_version = target_systemd
    if host.systemd_version:
        try:
            load_systemd_catalog(host.systemd_version)
            systemd_version = host.systemd_version
        except UnknownSystemdVersion:
            notes.append(
                f"{host.name} runs systemd {host.systemd_version}, older than any catalog: "
                f"linted for the profile's target systemd {target_systemd}"
            )
    else:
        notes.append(f"{host.name} not probed for systemd: linted for {target_systemd}")
    vllm_version = target_vllm
    if host.vllm_version:
        known = vllm_catalog_versions()
        plain = host.vllm_version.split("+", 1)[0]
        if host.vllm_version in known or plain in known:
            vllm_version = host.vllm_version if host.vllm_version in known else plain
        else:
            notes.append(
                f"{host.name} runs vLLM {host.vllm_version}, which has no catalog: linted "
                f"for the profile's target vLLM {target_vllm}"
            )
    else:
        # Also after a probe: it asks only executables of approved units (or an admin's list).
        notes.append(
            f"{host.name}'s vLLM version is not known yet: linted for the profile's target "
            f"vLLM {target_vllm}"
        )
    return systemd_version, vllm_version, notes


def rendered_text(*, profile_version: ProfileVersion) -> str:
    """The unit text for a version, rendered now from its data snapshot.

    Deterministic (same snapshot, same bytes) and independent of the host's versions,
    which only change how it is linted; a different result than at request time means
    the renderer changed, which voids an approval."""
    return render_unit(profile_version.data)


def unit_for_host(
    *,
    profile_version: ProfileVersion,
    host: Host,
    unit_name: str,
    not_beside: frozenset[str] = frozenset(),
) -> HostUnit:
    """Render `profile_version` and lint it as `<unit_name>.service` for the host's
    versions. `not_beside`: unit names (without `.service`) that will not run at the same
    time (a trial stops production while a candidate runs), left out of the cross-unit
    rules (VL325 shared port, VL332 GPUs asked twice)."""
    text = rendered_text(profile_version=profile_version)
    systemd_version, vllm_version, notes = lint_versions(profile_version=profile_version, host=host)
    options = dataclasses.replace(
        LintOptions(), systemd_version=systemd_version, vllm_version=vllm_version
    )
    name = f"{unit_name}.service"
    # The units specadmin deployed on this host under other names run beside this one:
    # linted together, a port the new unit shares with one of them shows on the request
    # page, not at the job's GPU-clean step. The same name is this unit's upgrade.
    neighbours = {
        f"{push.unit_name}.service": push.text
        for push in deployed_units(host=host)
        if push.unit_name != unit_name and push.unit_name not in not_beside
    }
    report = lint_beside(text, name, neighbours, options)
    findings = sorted(report.findings, key=lambda f: (-int(f.severity), f.span.start, f.code))
    return HostUnit(
        unit_name=unit_name,
        text=text,
        sha256=sha256_hex(text.encode("utf-8")),
        systemd_version=systemd_version,
        vllm_version=vllm_version,
        findings=[finding_json(f) for f in findings],
        notes=notes,
    )


def unit_diff(*, old: str | None, new: str, unit_name: str, host_name: str) -> str:
    """Unified diff host → to be pushed ("" when identical)."""
    old_label = f"{host_name}:{unit_path(unit_name)}" + ("" if old is not None else " (absent)")
    return "".join(
        difflib.unified_diff(
            split_lines_keepends(old or ""),
            split_lines_keepends(new),
            fromfile=old_label,
            tofile=f"{unit_name}.service (to be pushed)",
        )
    )


def diff_lines(diff: str) -> list[tuple[str, str]]:
    """(css class, line) pairs for templates (the classes units' compare page uses)."""

    def cls(line: str) -> str:
        if line.startswith(("+++", "---")):
            return "file"
        return {"+": "add", "-": "del", "@": "hunk"}.get(line[:1], "")

    return [(cls(line), line) for line in split_lines(diff)]


def read_host_unit(*, host: Host, unit_name: str) -> bytes | None:
    """The unit file on the host now (live, through the pinned-key transport); None when
    absent. Raises TransportError (unreachable, key mismatch, not pinned; FileRefused for
    a file larger than a push may write or not a regular file: never read whole)."""
    with transport_for(host) as transport:
        return transport.read_file(unit_path(unit_name), limit=MAX_UNIT_BYTES)


@dataclass(frozen=True)
class DeployPreview:
    """What a request page shows before submitting: the unit, the host's, the diff."""

    unit: HostUnit
    host_unit: bytes | None

    @property
    def host_unit_text(self) -> str:
        return "" if self.host_unit is None else self.host_unit.decode("utf-8", "replace")

    @property
    def host_unit_sha256(self) -> str:
        """ "" when absent: push_unit's `expected_previous_sha256` uses the same convention."""
        return "" if self.host_unit is None else sha256_hex(self.host_unit)

    @property
    def unchanged(self) -> bool:
        return self.host_unit == self.unit.text.encode("utf-8")

    def diff(self, host_name: str) -> str:
        return unit_diff(
            old=None if self.host_unit is None else self.host_unit_text,
            new=self.unit.text,
            unit_name=self.unit.unit_name,
            host_name=host_name,
        )


def deploy_preview(*, profile_version: ProfileVersion, host: Host, unit_name: str) -> DeployPreview:
    """Render + lint for the host, and read the host's current unit live."""
    unit = unit_for_host(profile_version=profile_version, host=host, unit_name=unit_name)
    return DeployPreview(unit=unit, host_unit=read_host_unit(host=host, unit_name=unit_name))


# -- hosts ---------------------------------------------------------------------------------


def host_list(*, archived: bool | None = False) -> QuerySet[Host]:
    qs = Host.objects.all()
    if archived is not None:
        qs = qs.filter(archived=archived)
    return qs.order_by("name")


def host_probe_executables(*, host: Host, pushed_limit: int = 50) -> list[str]:
    """The vLLM executables the probe may run on `host`, in the order it tries them: those
    of units approved and pushed there (newest push first), then the list an admin set on
    the host. Never that of a request that was not approved and pushed."""
    pushed = (
        PushedUnit.objects.filter(host=host, request__isnull=False)
        .order_by("-pushed_at", "-pk")
        .values_list("request__profile_version__data", flat=True)[:pushed_limit]
    )
    found = [str(data.get("vllm_executable") or "") for data in pushed if isinstance(data, dict)]
    listed = [str(path) for path in host.probe_executables or []]
    return [path for path in dict.fromkeys(found + listed) if path]


def deployable_hosts() -> QuerySet[Host]:
    """Hosts a request can target: not archived, and reachable with a pinned key."""
    return (
        host_list()
        .exclude(transport=Host.Transport.SSH, host_key="")
        .only("id", "name", "address", "transport", "host_key")
    )


# -- versions a request can deploy ---------------------------------------------------------


def deployable_versions() -> QuerySet[ProfileVersion]:
    """The latest version of every active profile (older ones would be void at once)."""
    latest = (
        ProfileVersion.objects.filter(profile=OuterRef("profile"))
        .order_by("-number")
        .values("number")[:1]
    )
    return (
        ProfileVersion.objects.filter(profile__archived=False, number=Subquery(latest))
        .select_related("profile")
        .only("id", "number", "profile__name", "profile__archived")
        .order_by("profile__name")
    )


def latest_version_number(*, profile_id: int) -> int | None:
    return (
        ProfileVersion.objects.filter(profile_id=profile_id)
        .order_by("-number")
        .values_list("number", flat=True)
        .first()
    )


# -- requests ------------------------------------------------------------------------------


def deploy_request_list(*, status: str = "", host: Host | int | None = None) -> QuerySet:
    qs = DeployRequest.objects.select_related(
        "host", "profile_version__profile", "requested_by", "decided_by"
    ).defer("unit_text", "host_unit_text", "lint_findings")
    if status:
        qs = qs.filter(status=status)
    if host:
        qs = qs.filter(host=host)
    return qs.order_by("-requested_at", "-pk")


def deploy_request_get(*, pk: int) -> DeployRequest:
    return DeployRequest.objects.select_related(
        "host", "profile_version__profile", "requested_by", "decided_by"
    ).get(pk=pk)


def deploy_request_steps(*, request: DeployRequest) -> QuerySet[JobStep]:
    return JobStep.objects.filter(request=request).order_by("started_at", "pk")


# -- what is deployed, and the queue of jobs per host ---------------------------------------


def deployed_unit(*, host: Host, unit_name: str) -> PushedUnit | None:
    """The last unit specadmin wrote as `unit_name` on `host` (None: never, or removed)."""
    last = (
        PushedUnit.objects.filter(host=host, unit_name=unit_name)
        .select_related("request__profile_version__profile")
        .order_by("-pushed_at", "-pk")
        .first()
    )
    return last if last is not None and last.text else None


def deployed_units(*, host: Host) -> list[PushedUnit]:
    """Every unit specadmin deployed on `host` and did not remove since (the last push of
    each unit name), for the host page's restart / rollback / remove actions."""
    names = PushedUnit.objects.filter(host=host).values_list("unit_name", flat=True).distinct()
    found = [deployed_unit(host=host, unit_name=name) for name in sorted(set(names))]
    return [p for p in found if p is not None]


def queue_position(*, request: DeployRequest) -> int | None:
    """0: this job holds the host; N: N-th in line for it; None: not queued or running.

    In line are the jobs waiting for the host's lock (oldest wait first), then approved
    requests no worker has picked up yet (by approval time).
    """
    if request.status not in (DeployRequest.Status.APPROVED, DeployRequest.Status.RUNNING):
        return None
    holder = HostLock.objects.filter(host=request.host_id).values_list("request_id", flat=True)
    if request.status == DeployRequest.Status.RUNNING and request.pk in holder:
        return 0
    waiting = list(
        JobStep.objects.filter(
            request__host_id=request.host_id,
            request__status=DeployRequest.Status.RUNNING,
            name="host_lock",
            status=JobStep.Status.RUNNING,
        )
        .order_by("pk")
        .values_list("request_id", flat=True)
    )
    queued = list(
        DeployRequest.objects.filter(host_id=request.host_id, status=DeployRequest.Status.APPROVED)
        .order_by("decided_at", "pk")
        .values_list("pk", flat=True)
    )
    line = [pk for pk in waiting + queued if pk not in holder]
    return line.index(request.pk) + 1 if request.pk in line else None


def failed_rollbacks() -> list[DeployRequest]:
    """Jobs whose rollback failed and whose unit no later job brought back: the hosts
    that may be down (the banner on every page). One query."""
    later_success = DeployRequest.objects.filter(
        host_id=OuterRef("host_id"),
        unit_name=OuterRef("unit_name"),
        status=DeployRequest.Status.SUCCEEDED,
        finished_at__gt=OuterRef("finished_at"),
    )
    return list(
        DeployRequest.objects.filter(status=DeployRequest.Status.ROLLBACK_FAILED)
        .exclude(Exists(later_success))
        .select_related("host")
        .only("id", "unit_name", "finished_at", "host__name")
        .order_by("-finished_at")[:20]
    )


__all__ = [
    "MAX_UNIT_BYTES",
    "DeployPreview",
    "HostUnit",
    "deploy_preview",
    "deploy_request_get",
    "deploy_request_list",
    "deploy_request_steps",
    "deployable_hosts",
    "deployable_versions",
    "deployed_unit",
    "deployed_units",
    "diff_lines",
    "failed_rollbacks",
    "host_list",
    "host_probe_executables",
    "latest_version_number",
    "lint_versions",
    "queue_position",
    "read_host_unit",
    "rendered_text",
    "unit_diff",
    "unit_for_host",
    "unit_path",
]
