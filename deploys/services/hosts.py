"""Writes for hosts: add one with its key pinned, re-read and re-pin the key, probe.

HackSoft style: keyword-only functions, each write and its audit event in one
transaction, permissions checked here (every caller gets them), background work queued
with `transaction.on_commit` so a worker never sees a rolled-back row.
"""

from __future__ import annotations

import functools
import posixpath
from typing import TYPE_CHECKING, Any

from django.core.exceptions import PermissionDenied, ValidationError
from django.db import transaction
from django.db.models import F
from django.utils import timezone

from audit.models import AuditKind
from audit.services import record
from deploys.addresses import host_address_problem
from deploys.jobs import queue
from deploys.models import DeployRequest, Host
from deploys.permissions import ADD_HOST, CHANGE_HOST, REQUEST_DEPLOY, require
from deploys.running import on_host_list, record_probe
from hostops.channel import TransportError
from hostops.channel.bounds import STORED_STRING_CHARS, clip_json, clip_text
from hostops.channel.ssh import HostKeyInfo, fingerprint_sha256, parse_pinned_key
from hostops.channel.ssh import probe_host_key as _probe_host_key
from hostops.executables import plain_path_problem
from units.rendering import is_python

if TYPE_CHECKING:
    from django.contrib.auth.models import AbstractBaseUser as User

KEY_PROBE_TIMEOUT = 10.0
KEY_MATERIAL_ERROR = "Enter the path of the key file on the worker, not the key itself."


def probe_host_key(host: str, port: int, timeout: float) -> HostKeyInfo:
    """Indirection so tests without a test host can stand in for the network."""
    return _probe_host_key(host, port, timeout)


def _audit_host(kind: str, actor: User | None, host: Host, payload: dict[str, Any]) -> None:
    record(kind=kind, actor=actor, obj=host, host_name=host.name, payload=payload)


def transport_error(action: str, exc: TransportError) -> ValidationError:
    """A TransportError as the ValidationError a form shows ("<action>: <why>")."""
    return ValidationError(f"{action}: {exc}", code=type(exc).__name__)


def _check_address(address: str) -> None:
    """A field error for what the socket layer's IDNA codec would refuse."""
    problem = host_address_problem(address)
    if problem:
        raise ValidationError({"address": [problem]})


def host_probe_key(*, address: str, port: int) -> HostKeyInfo:
    """The key the host presents now (step 1 of adding a host; nothing is stored)."""
    _check_address(address)
    try:
        return probe_host_key(address, port, KEY_PROBE_TIMEOUT)
    except TransportError as exc:
        raise transport_error(f"Cannot read the host key of {address}:{port}", exc) from exc


def _key_line(key: HostKeyInfo) -> str:
    return f"{key.key_type} {key.base64}"


def looks_like_key_material(text: str) -> bool:
    """A pasted private key rather than a path (the forms check it too, so the key is
    never echoed back into a page)."""
    return "PRIVATE KEY" in text or "\n" in text.strip()


def clean_key_file(auth: str, key_file: str) -> str:
    """The key file path as stored (empty with agent auth); ValidationError on key_file."""
    key_file = key_file.strip()
    if auth == Host.Auth.AGENT:
        return ""
    if looks_like_key_material(key_file):
        # Never let key material reach the database, the page or the audit log.
        raise ValidationError({"key_file": [KEY_MATERIAL_ERROR]})
    if not key_file:
        raise ValidationError({"key_file": ["A key file path is required for key-file auth."]})
    if not key_file.startswith("/"):
        raise ValidationError({"key_file": ["Use an absolute path (the worker's cwd varies)."]})
    return key_file


def host_create(
    *,
    name: str,
    address: str,
    created_by: User,
    ssh_port: int = 22,
    username: str = "root",
    transport: str = Host.Transport.SSH,
    auth: str = Host.Auth.KEY_FILE,
    key_file: str = "",
    host_key: str = "",
    confirmed_fingerprint: str = "",
) -> Host:
    """Add a host with its key pinned (step 2: the admin confirmed the fingerprint).

    For SSH, `host_key` ("type base64") is the key shown in step 1 and
    `confirmed_fingerprint` the fingerprint the admin confirmed; the host is probed again
    and must still present exactly that key, else nothing is saved.
    """
    require(created_by, ADD_HOST, "add hosts")
    _check_address(address.strip())
    host = Host(
        name=name.strip(),
        address=address.strip(),
        ssh_port=ssh_port,
        username=username.strip(),
        transport=transport,
        auth=auth,
    )
    key: HostKeyInfo | None = None
    if transport == Host.Transport.SSH:
        host.key_file = clean_key_file(auth, key_file)
        key = _confirmed_key(host, host_key, confirmed_fingerprint)
        now = timezone.now()
        host.presented_host_key = host.host_key = _key_line(key)
        host.presented_fingerprint = host.host_key_fingerprint = key.fingerprint_sha256
        host.host_key_confirmed_by = created_by
        host.host_key_confirmed_at = now
    else:
        host.key_file = ""
    host.full_clean()
    with transaction.atomic():
        host.save()
        _audit_host(
            AuditKind.HOST_ADDED,
            created_by,
            host,
            {
                "address": host.address,
                "ssh_port": host.ssh_port,
                "username": host.username,
                "transport": host.transport,
                "auth": host.auth,
            },
        )
        if key is not None:
            _audit_host(
                AuditKind.HOST_KEY_PINNED,
                created_by,
                host,
                {"fingerprint": key.fingerprint_sha256, "key_type": key.key_type},
            )
    return host


def _confirmed_key(host: Host, host_key: str, confirmed_fingerprint: str) -> HostKeyInfo:
    """The key to pin: parsed, matching what the admin confirmed and what the host
    presents right now (a key swapped between the two steps is refused)."""
    if not host_key or not confirmed_fingerprint:
        raise ValidationError("Read the host key first and confirm its fingerprint.")
    try:
        pkey = parse_pinned_key(host_key)
    except ValueError as exc:
        raise ValidationError(f"Not an SSH host key: {exc}") from exc
    shown = HostKeyInfo(pkey.get_name(), pkey.get_base64(), fingerprint_sha256(pkey))
    if shown.fingerprint_sha256 != confirmed_fingerprint.strip():
        raise ValidationError("The confirmed fingerprint does not belong to the key shown.")
    presented = host_probe_key(address=host.address, port=host.ssh_port)
    if presented.fingerprint_sha256 != shown.fingerprint_sha256:
        raise ValidationError(
            f"{host.address}:{host.ssh_port} now presents another host key "
            f"({presented.fingerprint_sha256}) than the one you confirmed "
            f"({shown.fingerprint_sha256}); nothing was saved. Check the host out of band."
        )
    return shown


def host_rescan_key(*, host: Host, actor: User) -> HostKeyInfo:
    """Read the key the host presents now (e.g. after a reinstall) for an admin to
    compare; the pinned key stays in force until `host_pin_key`."""
    require(actor, CHANGE_HOST, "change hosts")
    if host.transport != Host.Transport.SSH:
        raise ValidationError("Only SSH hosts have a host key.")
    key = host_probe_key(address=host.address, port=host.ssh_port)
    with transaction.atomic():
        Host.objects.filter(pk=host.pk).update(
            presented_host_key=_key_line(key), presented_fingerprint=key.fingerprint_sha256
        )
        _audit_host(
            AuditKind.HOST_KEY_PRESENTED,
            actor,
            host,
            {
                "fingerprint": key.fingerprint_sha256,
                "pinned_fingerprint": host.host_key_fingerprint,
            },
        )
    host.refresh_from_db()
    return key


def host_pin_key(*, host: Host, fingerprint: str, actor: User) -> Host:
    """Pin the presented key whose fingerprint the admin confirmed (conditional: a
    rescan in between that changed the presented key makes this refuse)."""
    require(actor, CHANGE_HOST, "change hosts")
    previous = host.host_key_fingerprint
    with transaction.atomic():
        pinned = (
            Host.objects.filter(pk=host.pk, presented_fingerprint=fingerprint.strip())
            .exclude(presented_host_key="")
            .update(
                host_key=F("presented_host_key"),
                host_key_fingerprint=F("presented_fingerprint"),
                host_key_confirmed_by=actor,
                host_key_confirmed_at=timezone.now(),
            )
        )
        if not pinned:
            raise ValidationError(
                "The presented key changed since you looked at it (or none was read): "
                "read it again and compare the fingerprint."
            )
        _audit_host(
            AuditKind.HOST_KEY_PINNED,
            actor,
            host,
            {"fingerprint": fingerprint.strip(), "previous_fingerprint": previous},
        )
    host.refresh_from_db()
    return host


MAX_PROBE_EXECUTABLES = 10


def _probe_executable_problem(path: str) -> str | None:
    plain = plain_path_problem(path)
    if plain:
        return plain
    if any(c in path for c in "'\"\\$ "):
        return "quotes, “\\”, “$” and spaces are not allowed"
    if not (posixpath.basename(path) == "vllm" or is_python(path)):
        return "name `vllm` (e.g. /opt/vllm/bin/vllm) or a venv's python"
    return None


def host_set_probe_executables(*, host: Host, executables: list[str], actor: User) -> Host:
    """An admin's list of vLLM executables the probe may run on `host` (besides those of
    approved, pushed units). Each is checked on the host before every run
    (`hostops.executables`); here only its shape. Audited with the old and new list."""
    require(actor, CHANGE_HOST, "change hosts")
    paths = list(dict.fromkeys(p.strip() for p in executables if p.strip()))
    problems = [
        f"{path!r}: {problem}" for path in paths if (problem := _probe_executable_problem(path))
    ]
    if len(paths) > MAX_PROBE_EXECUTABLES:
        problems.append(f"At most {MAX_PROBE_EXECUTABLES} executables.")
    if problems:
        raise ValidationError({"executables": problems})
    with transaction.atomic():
        locked = Host.objects.select_for_update().get(pk=host.pk)
        previous = list(locked.probe_executables or [])
        if previous == paths:
            return locked
        locked.probe_executables = paths
        locked.save(update_fields=["probe_executables"])
        _audit_host(
            AuditKind.HOST_PROBE_EXECUTABLES_SET,
            actor,
            locked,
            {"executables": paths, "previous": previous},
        )
    return locked


# What an edit may change; the name stays (audit history and units on hosts refer to it).
EDITABLE_FIELDS = ("address", "ssh_port", "username", "transport", "auth", "key_file")
# Changing any of these points the pinned key at another endpoint: it must be confirmed
# again before anything connects.
_ENDPOINT_FIELDS = ("address", "ssh_port", "transport")
_OPEN_STATUSES = (
    DeployRequest.Status.PENDING,
    DeployRequest.Status.APPROVED,
    DeployRequest.Status.RUNNING,
)


def host_update(*, host: Host, actor: User, **values: Any) -> list[str]:
    """Change how specadmin reaches a host; returns the fields that changed.

    A new address, port or transport unpins the host key (and forgets the key last
    presented): the admin reads and pins it again, as when adding a host. One audit
    event lists every change (old and new values)."""
    require(actor, CHANGE_HOST, "change hosts")
    unknown = set(values) - set(EDITABLE_FIELDS)
    if unknown:
        raise ValueError(f"not editable: {', '.join(sorted(unknown))}")
    with transaction.atomic():
        current = Host.objects.select_for_update().get(pk=host.pk)
        new = {name: values.get(name, getattr(current, name)) for name in EDITABLE_FIELDS}
        for text in ("address", "username"):
            new[text] = str(new[text]).strip()
        _check_address(new["address"])
        if new["transport"] == Host.Transport.SSH:
            new["key_file"] = clean_key_file(new["auth"], str(new["key_file"]))
        else:
            new["key_file"] = ""
        changes = {
            name: [getattr(current, name), new[name]]
            for name in EDITABLE_FIELDS
            if getattr(current, name) != new[name]
        }
        if not changes:
            return []
        for name, (_, value) in changes.items():
            setattr(current, name, value)
        endpoint_changed = any(name in changes for name in _ENDPOINT_FIELDS)
        unpin = current.key_pinned and endpoint_changed
        if endpoint_changed:
            current.host_key = current.host_key_fingerprint = ""
            current.presented_host_key = current.presented_fingerprint = ""
            current.host_key_confirmed_by = None
            current.host_key_confirmed_at = None
        current.full_clean()
        current.save()
        _audit_host(
            AuditKind.HOST_CHANGED, actor, current, {"changes": changes, "key_unpinned": unpin}
        )
    host.refresh_from_db()
    return list(changes)


def host_archive(*, host: Host, actor: User) -> Host:
    """Remove a host from use: hidden from lists and deploy forms, never probed or deployed
    to; its history stays. Refused while a request for it is open (pending, approved or
    running): decide or finish those first."""
    require(actor, CHANGE_HOST, "archive hosts")
    with transaction.atomic():
        current = Host.objects.select_for_update().get(pk=host.pk)
        if current.archived:
            return current
        open_requests = list(
            DeployRequest.objects.filter(host=current, status__in=_OPEN_STATUSES)
            .order_by("pk")
            .values_list("pk", "status")[:10]
        )
        if open_requests:
            listed = ", ".join(f"#{pk} ({status})" for pk, status in open_requests)
            raise ValidationError(
                f"{current.name} has open deploy requests ({listed}): reject, wait for or "
                "finish them before archiving the host."
            )
        current.archived = True
        current.save(update_fields=["archived"])
        _audit_host(AuditKind.HOST_ARCHIVED, actor, current, {})
    host.refresh_from_db()
    return host


def host_unarchive(*, host: Host, actor: User) -> Host:
    """Put an archived host back in use (its pinned key as it was)."""
    require(actor, CHANGE_HOST, "unarchive hosts")
    with transaction.atomic():
        updated = Host.objects.filter(pk=host.pk, archived=True).update(archived=False)
        if updated:
            _audit_host(AuditKind.HOST_UNARCHIVED, actor, host, {})
    host.refresh_from_db()
    return host


def host_request_probe(*, host: Host, actor: User) -> None:
    """Queue a probe job (read-only on the host; operators may ask for one too)."""
    if not (actor.has_perm(CHANGE_HOST) or actor.has_perm(REQUEST_DEPLOY)):
        raise PermissionDenied("You are not allowed to probe hosts.")
    if host.archived:
        raise ValidationError(f"{host.name} is archived.")
    if host.transport == Host.Transport.SSH and not host.key_pinned:
        raise ValidationError(f"Pin the host key of {host.name} before probing it.")
    with transaction.atomic():
        Host.objects.filter(pk=host.pk).update(probe_queued_at=timezone.now())
        transaction.on_commit(functools.partial(queue.enqueue_probe, host.pk, actor.pk))


def host_probe_after_job(*, host_id: int) -> bool:
    """Queue a probe once a job has ended, so the host page's probe results (its GPUs, the
    units specadmin manages there) are read again instead of showing what was there before
    the job. Read-only on the host and asked by nobody: the job's approval covers it, and
    its audit event names no actor. False: the host cannot be probed (archived, or an SSH
    host whose key is not pinned)."""
    with transaction.atomic():
        updated = (
            Host.objects.filter(pk=host_id, archived=False)
            .exclude(transport=Host.Transport.SSH, host_key="")
            .update(probe_queued_at=timezone.now())
        )
        if updated:
            transaction.on_commit(functools.partial(queue.enqueue_probe, host_id, None))
    return bool(updated)


def host_record_probe(*, host: Host, facts: dict[str, Any], actor: User | None) -> Host:
    """Save a probe's facts (from `deploys.probe.probe_host`); linting then targets them."""
    # Host output, clipped on its way into the row and the append-only audit event.
    errors = [clip_text(str(e), STORED_STRING_CHARS) for e in facts.get("errors", [])]
    with transaction.atomic():
        host = Host.objects.select_for_update().get(pk=host.pk)
        host.systemd_version = facts.get("systemd_version")
        host.vllm_version = str(facts.get("vllm_version") or "")[:30]
        host.gpu_count = facts.get("gpu_count")
        host.gpus = clip_json(list(facts.get("gpus") or []), 200)
        host.managed_units = clip_json(list(facts.get("managed_units") or []), 300)
        host.foreign_vllm_units = clip_json(list(facts.get("foreign_vllm_units") or []), 300)
        record_probe(host=host, files=clip_json(list(facts.get("unit_files") or []), 300))
        host.probed_at = timezone.now()
        host.probe_error = clip_text("\n".join(errors))
        host.probe_queued_at = None
        host.save(
            update_fields=[
                "systemd_version",
                "vllm_version",
                "gpu_count",
                "gpus",
                "managed_units",
                "foreign_vllm_units",
                "probed_at",
                "probe_error",
                "probe_queued_at",
            ]
        )
        _audit_host(
            AuditKind.HOST_PROBED,
            actor,
            host,
            {
                "systemd_version": host.systemd_version,
                "vllm_version": host.vllm_version,
                "gpu_count": host.gpu_count,
                "managed_units": [u.get("name", "") for u in host.managed_units],
                "on_host": on_host_list(
                    host=host, unit_names=[f["name"] for f in facts.get("unit_files") or []]
                ),
                "errors": errors,
            },
        )
    return host


def host_record_probe_error(*, host: Host, error: str, actor: User | None) -> Host:
    """A probe that could not connect (unreachable, key mismatch) or failed: keep the old
    facts, show why on the host page, and record it."""
    error = clip_text(error, STORED_STRING_CHARS)
    with transaction.atomic():
        Host.objects.filter(pk=host.pk).update(probe_error=error, probe_queued_at=None)
        _audit_host(
            AuditKind.HOST_PROBE_FAILED,
            actor,
            host,
            {"error": error},
        )
    host.refresh_from_db()
    return host


__all__ = [
    "EDITABLE_FIELDS",
    "KEY_MATERIAL_ERROR",
    "host_archive",
    "host_create",
    "host_pin_key",
    "host_probe_after_job",
    "host_probe_key",
    "host_record_probe",
    "host_record_probe_error",
    "host_request_probe",
    "host_rescan_key",
    "host_set_probe_executables",
    "host_unarchive",
    "host_update",
    "looks_like_key_material",
    "probe_host_key",
    "transport_error",
]
