"""Writes for host groups and rollouts: request, approve, reject, pause, resume, abort.

Every decision is a conditional UPDATE on the rollout's status whose row count says who
won (as `deploys.services.deploy_requests` decides on a request). A rollout is approved
once, by someone other than the requester, pinned to the set of unit texts its hosts get
(`Rollout.texts_sha256`); the approval creates each host's ordinary deploy request and
approves it (the same four-eyes rules, host by host), without queueing it: the
coordinator (`fleet.coordinator`) queues each when its batch comes. Each change appends
its audit event in the same transaction. Permissions are those of deploy requests.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from django.core.exceptions import PermissionDenied, ValidationError
from django.db import transaction
from django.utils import timezone

from audit.services import record
from deploys.approvals import approval_ttl
from deploys.job_settings import job_settings, settings_sha256
from deploys.models import DeployRequest, Host
from deploys.permissions import APPROVE_DEPLOY, CANCEL_JOB, CHANGE_HOST, REQUEST_DEPLOY, require
from deploys.services.deploy_requests import (
    ApprovalVoid,
    PreparedRequest,
    RequestNotPending,
    deploy_request_approve,
    deploy_request_create,
    deploy_request_prepare,
)
from deploys.services.unit_requests import deploy_job_cancel, queued_job_drop
from fleet import planning, queue
from fleet.models import HostGroup, Rollout, RolloutHost
from units.models import ProfileVersion

if TYPE_CHECKING:
    from django.contrib.auth.models import AbstractBaseUser as User

Status = Rollout.Status
MAX_HOSTS = 200

GROUP_SAVED = "fleet.group_saved"
GROUP_DELETED = "fleet.group_deleted"
REQUESTED = "rollout.requested"
APPROVED = "rollout.approved"
REJECTED = "rollout.rejected"
EXPIRED = "rollout.expired"
VOIDED = "rollout.voided"
PAUSED = "rollout.paused"
RESUMED = "rollout.resumed"
ABORTED = "rollout.aborted"


class RolloutNotPending(ValidationError):
    """Someone decided first, or it expired: nothing was changed by this call."""


def audit(kind: str, actor: User | None, rollout: Rollout, payload: dict[str, Any]) -> None:
    record(
        kind=kind,
        actor=actor,
        obj=rollout,
        object_repr=f"rollout #{rollout.pk}",
        profile_name=rollout.profile_version.profile.name,
        payload={"rollout": rollout.pk, **payload},
    )


# -- host groups ---------------------------------------------------------------------------


def host_group_save(
    *,
    actor: User,
    name: str,
    hosts: Iterable[Host],
    description: str = "",
    group: HostGroup | None = None,
) -> HostGroup:
    """Create a group (or change `group`): its name, description and hosts. Admins only
    (those who may change hosts). Audited with the hosts it has afterwards."""
    require(actor, CHANGE_HOST, "manage host groups")
    name = name.strip()
    hosts = list(hosts)
    with transaction.atomic():
        if group is None:
            if HostGroup.objects.filter(name=name).exists():
                raise ValidationError({"name": [f"A group named {name} exists already."]})
            group = HostGroup(name=name)
        group.name = name
        group.description = description.strip()
        group.full_clean()
        group.save()
        group.hosts.set(hosts)
        record(
            kind=GROUP_SAVED,
            actor=actor,
            obj=group,
            payload={
                "group": group.pk,
                "name": group.name,
                "hosts": sorted(h.name for h in hosts),
            },
        )
    return group


def host_group_delete(*, actor: User, group: HostGroup) -> None:
    """Delete a group (its hosts stay; rollouts keep their own host lists)."""
    require(actor, CHANGE_HOST, "manage host groups")
    with transaction.atomic():
        record(
            kind=GROUP_DELETED,
            actor=actor,
            obj=group,
            payload={"group": group.pk, "name": group.name},
        )
        group.delete()


# -- requesting ----------------------------------------------------------------------------


def texts_sha256(shas: Iterable[str]) -> str:
    """The hash an approval pins: over the sorted distinct sha256s of the hosts' texts."""
    joined = "\n".join(sorted(set(shas)))
    return hashlib.sha256(joined.encode("ascii")).hexdigest()


def _message_lines(error: ValidationError) -> list[str]:
    if hasattr(error, "error_dict"):
        return [
            f"{field}: {message}" if field != "__all__" else str(message)
            for field, errors in error.message_dict.items()
            for message in errors
        ]
    return list(error.messages)


def _ordered_hosts(hosts: Sequence[Host] | None, group: HostGroup | None) -> list[Host]:
    if hosts is None and group is None:
        raise ValidationError({"hosts": ["Choose a group or a list of hosts."]})
    chosen = list(hosts) if hosts is not None else list(group.hosts.order_by("name"))
    unique = list({h.pk: h for h in chosen}.values())
    if not unique:
        raise ValidationError({"hosts": ["The rollout has no hosts (the group is empty)."]})
    if len(unique) > MAX_HOSTS:
        raise ValidationError({"hosts": [f"At most {MAX_HOSTS} hosts in one rollout."]})
    return unique


def _prepare_all(
    *,
    profile_version: ProfileVersion,
    hosts: Sequence[Host],
    requested_by: User,
    unit_name: str,
    acknowledge_warnings: bool,
) -> list[PreparedRequest]:
    """Every host prepared as a deploy request (read live, rendered and linted for its
    probed versions); every host's problems at once, each named by its host."""
    prepared: list[PreparedRequest] = []
    problems: list[str] = []
    for host in hosts:
        try:
            prepared.append(
                deploy_request_prepare(
                    profile_version=profile_version,
                    host=host,
                    requested_by=requested_by,
                    unit_name=unit_name,
                    acknowledge_warnings=acknowledge_warnings,
                )
            )
        except ValidationError as exc:
            problems += [f"{host.name}: {line}" for line in _message_lines(exc)]
    if problems:
        raise ValidationError({"hosts": problems})
    return prepared


def rollout_create(
    *,
    profile_version: ProfileVersion,
    requested_by: User,
    hosts: Sequence[Host] | None = None,
    group: HostGroup | None = None,
    unit_name: str = "",
    canary: int = 1,
    batch_size: int = 1,
    pause_s: int = 0,
    budget_kind: str = Rollout.Budget.COUNT,
    budget_value: int = 0,
    acknowledge_warnings: bool = False,
    now: datetime | None = None,
) -> Rollout:
    """Request "deploy version V to these hosts (or this group's), canary first".

    Each host is prepared as an ordinary deploy request would be (`deploy_request_prepare`:
    the unit rendered and linted for the versions it runs, its current unit read live); a
    host that could not be requested alone blocks the rollout, named. The hosts keep the
    order given (a group's: by name): the first `canary` are the canary.
    """
    require(requested_by, REQUEST_DEPLOY, "request deploys")
    if pause_s < 0 or pause_s > 7 * 24 * 3600:
        raise ValidationError({"pause_s": ["The pause is between 0 s and 7 days."]})
    chosen = _ordered_hosts(hosts, group)
    try:
        batches = planning.plan_batches(len(chosen), canary=canary, batch_size=batch_size)
        allowed = planning.allowed_failures(
            budget_kind, budget_value, after_canary=len(chosen) - canary
        )
    except planning.PlanError as exc:
        raise ValidationError(str(exc), code="plan") from exc
    prepared = _prepare_all(
        profile_version=profile_version,
        hosts=chosen,
        requested_by=requested_by,
        unit_name=unit_name,
        acknowledge_warnings=acknowledge_warnings,
    )
    settings = job_settings(profile_version=profile_version)
    now = now or timezone.now()
    with transaction.atomic():
        rollout = Rollout.objects.create(
            profile_version=profile_version,
            group=group,
            unit_name=prepared[0].unit_name,
            canary_count=canary,
            batch_size=batch_size,
            pause_s=pause_s,
            budget_kind=budget_kind,
            budget_value=budget_value,
            texts_sha256=texts_sha256(p.preview.unit.sha256 for p in prepared),
            job_settings_sha256=settings_sha256(settings),
            requested_by=requested_by,
            expires_at=now + approval_ttl(),
        )
        RolloutHost.objects.bulk_create(
            RolloutHost(
                rollout=rollout,
                host=host,
                position=index,
                batch=batch,
                unit_text=p.preview.unit.text,
                unit_sha256=p.preview.unit.sha256,
                lint_findings=p.preview.unit.findings,
                lint_vllm_version=p.preview.unit.vllm_version,
                lint_systemd_version=p.preview.unit.systemd_version,
                host_unit_sha256=p.preview.host_unit_sha256,
            )
            for index, (host, batch, p) in enumerate(zip(chosen, batches, prepared, strict=True))
        )
        audit(
            REQUESTED,
            requested_by,
            rollout,
            {
                "version": profile_version.number,
                "unit_name": rollout.unit_name,
                "group": group.name if group else "",
                "hosts": [h.name for h in chosen],
                "batches": batches,
                "pause_s": pause_s,
                "budget": {"kind": budget_kind, "value": budget_value, "allowed": allowed},
                "texts_sha256": rollout.texts_sha256,
                "host_texts": {
                    h.name: p.preview.unit.sha256 for h, p in zip(chosen, prepared, strict=True)
                },
                "expires_at": rollout.expires_at.isoformat(),
            },
        )
    return rollout


# -- deciding ------------------------------------------------------------------------------


def _refuse_requester(rollout: Rollout, user: User) -> None:
    if rollout.requested_by_id == user.pk:
        raise PermissionDenied(
            "You requested this rollout: someone else must decide on it (admins too)."
        )


def _not_pending(rollout: Rollout, now: datetime, actor: User) -> RolloutNotPending:
    rollout.refresh_from_db()
    if rollout.status == Status.PENDING and rollout.expires_at <= now:
        with transaction.atomic():
            if Rollout.objects.filter(pk=rollout.pk, status=Status.PENDING).update(
                status=Status.EXPIRED, status_reason="Not decided before it expired."
            ):
                audit(EXPIRED, actor, rollout, {"expires_at": rollout.expires_at.isoformat()})
        rollout.refresh_from_db()
    return RolloutNotPending(
        f"Rollout #{rollout.pk} is already {rollout.get_status_display().lower()}.",
        code="not_pending",
    )


def _void(rollout: Rollout, approver: User, problems: list[str]) -> ValidationError:
    reason = "; ".join(problems)
    with transaction.atomic():
        if Rollout.objects.filter(pk=rollout.pk, status=Status.PENDING).update(
            status=Status.VOID, status_reason=reason
        ):
            audit(VOIDED, approver, rollout, {"reason": reason})
    return ValidationError(f"The rollout is void: {reason}.", code="void")


def _busy_hosts(rollout: Rollout) -> list[str]:
    """Hosts of this rollout that another unfinished rollout holds."""
    others = RolloutHost.objects.filter(
        host__in=rollout.hosts.values("host"),
        rollout__status__in=(Status.RUNNING, Status.PAUSED),
    ).exclude(rollout=rollout)
    return sorted(
        {f"{row.host.name} (rollout #{row.rollout_id})" for row in others.select_related("host")}
    )


def _changes_since_request(
    rollout: Rollout, rows: list[RolloutHost], prepared: list[PreparedRequest]
) -> list[str]:
    """What differs from what the rollout's page showed: a host's text, the job settings."""
    problems = [
        f"{row.host.name} now gets another text (sha256 {p.preview.unit.sha256[:12]}…, "
        f"requested {row.unit_sha256[:12]}…)"
        for row, p in zip(rows, prepared, strict=True)
        if p.preview.unit.sha256 != row.unit_sha256
    ]
    if (
        settings_sha256(job_settings(profile_version=rollout.profile_version))
        != rollout.job_settings_sha256
    ):
        problems.append("the job settings (benchmark policy, waits) changed since the request")
    return problems


def _create_children(
    rollout: Rollout,
    rows: list[RolloutHost],
    prepared: list[PreparedRequest],
    approver: User,
    now: datetime,
) -> dict[str, int]:
    """Each host's deploy request, from what was just read there, approved by the
    rollout's approver (the same rules as alone) and not queued: {host: request id}."""
    made = {}
    for row, p in zip(rows, prepared, strict=True):
        child = deploy_request_create(
            profile_version=rollout.profile_version,
            host=row.host,
            requested_by=rollout.requested_by,
            unit_name=rollout.unit_name,
            acknowledge_warnings=True,
            preview=p.preview,
            existing=p.existing,
            now=now,
        )
        deploy_request_approve(
            request=child,
            approver=approver,
            comment=f"rollout #{rollout.pk}",
            expected_sha256=row.unit_sha256,
            now=now,
            enqueue=False,
        )
        RolloutHost.objects.filter(pk=row.pk).update(request=child)
        made[row.host.name] = child.pk
    return made


def rollout_approve(
    *,
    rollout: Rollout,
    approver: User,
    comment: str = "",
    expected_texts_sha256: str | None = None,
    now: datetime | None = None,
) -> Rollout:
    """Approve the whole rollout once: pinned to its set of texts, each host read live
    again (its text must still be the one shown), each host's deploy request created and
    approved (queued later, batch by batch), then the coordinator is queued on commit.
    Exactly one of concurrent approvals wins; a rollout found out of date becomes void."""
    require(approver, APPROVE_DEPLOY, "approve deploy requests")
    _refuse_requester(rollout, approver)
    if expected_texts_sha256 is not None and expected_texts_sha256 != rollout.texts_sha256:
        raise ValidationError("The unit texts changed since your page was loaded: reload.")
    now = now or timezone.now()
    if rollout.status != Status.PENDING or rollout.expires_at <= now:
        raise _not_pending(rollout, now, approver)
    rows = list(rollout.hosts.select_related("host").order_by("position"))
    version = rollout.profile_version
    busy = _busy_hosts(rollout)
    if busy:
        raise ValidationError(f"Hosts in another running rollout: {', '.join(busy)}.")
    try:
        prepared = _prepare_all(
            profile_version=version,
            hosts=[row.host for row in rows],
            requested_by=rollout.requested_by,
            unit_name=rollout.unit_name,
            acknowledge_warnings=True,  # the requester acknowledged them (REQUESTED event)
        )
    except ValidationError as exc:
        raise _void(rollout, approver, _message_lines(exc)) from exc
    problems = _changes_since_request(rollout, rows, prepared)
    if problems:
        raise _void(rollout, approver, problems)
    try:
        with transaction.atomic():
            claimed = Rollout.objects.filter(
                pk=rollout.pk, status=Status.PENDING, expires_at__gt=now
            ).update(
                status=Status.RUNNING,
                decided_by=approver,
                decided_at=now,
                decision_comment=comment.strip(),
                approved_texts_sha256=rollout.texts_sha256,
                started_at=now,
            )
            if not claimed:
                raise RolloutNotPending("not pending", code="not_pending")
            made = _create_children(rollout, rows, prepared, approver, now)
            rollout.refresh_from_db()
            audit(
                APPROVED,
                approver,
                rollout,
                {
                    "approved_texts_sha256": rollout.approved_texts_sha256,
                    "comment": comment.strip(),
                    "requests": made,
                },
            )
            transaction.on_commit(functools.partial(queue.enqueue_advance, rollout.pk))
    except RolloutNotPending:
        raise _not_pending(rollout, now, approver) from None
    except (ApprovalVoid, RequestNotPending) as exc:
        raise _void(rollout, approver, list(exc.messages)) from exc
    rollout.refresh_from_db()
    return rollout


def rollout_reject(*, rollout: Rollout, approver: User, comment: str) -> Rollout:
    """Reject with a reason (required)."""
    require(approver, APPROVE_DEPLOY, "reject deploy requests")
    _refuse_requester(rollout, approver)
    comment = comment.strip()
    if not comment:
        raise ValidationError({"comment": ["Say why the rollout is rejected."]})
    now = timezone.now()
    with transaction.atomic():
        claimed = Rollout.objects.filter(pk=rollout.pk, status=Status.PENDING).update(
            status=Status.REJECTED, decided_by=approver, decided_at=now, decision_comment=comment
        )
        if claimed:
            audit(REJECTED, approver, rollout, {"comment": comment})
    if not claimed:
        raise _not_pending(rollout, now, approver)
    rollout.refresh_from_db()
    return rollout


# -- while it runs -------------------------------------------------------------------------


def rollout_pause(*, rollout: Rollout, user: User) -> Rollout:
    """No new batch starts; the jobs running now finish. Resume goes on from there."""
    require(user, CANCEL_JOB, "pause rollouts")
    with transaction.atomic():
        done = Rollout.objects.filter(pk=rollout.pk, status=Status.RUNNING).update(
            status=Status.PAUSED, status_reason=f"paused by {user}"
        )
        if done:
            audit(PAUSED, user, rollout, {})
    rollout.refresh_from_db()
    if not done:
        raise ValidationError(f"Rollout #{rollout.pk} is {rollout.get_status_display().lower()}.")
    return rollout


def rollout_resume(*, rollout: Rollout, user: User) -> Rollout:
    require(user, CANCEL_JOB, "resume rollouts")
    with transaction.atomic():
        done = Rollout.objects.filter(pk=rollout.pk, status=Status.PAUSED).update(
            status=Status.RUNNING, status_reason=""
        )
        if done:
            audit(RESUMED, user, rollout, {})
            transaction.on_commit(functools.partial(queue.enqueue_advance, rollout.pk))
    rollout.refresh_from_db()
    if not done:
        raise ValidationError(f"Rollout #{rollout.pk} is not paused.")
    return rollout


def close_waiting(rollout: Rollout, reason: str, actor: User | None) -> list[str]:
    """Every host still waiting for its batch: not reached (it keeps what it runs), its
    approved deploy request closed unrun. Returns their names."""
    names = []
    waiting = rollout.hosts.filter(state=RolloutHost.State.WAITING).select_related(
        "host", "request"
    )
    for row in waiting:
        if RolloutHost.objects.filter(pk=row.pk, state=RolloutHost.State.WAITING).update(
            state=RolloutHost.State.NOT_REACHED, finished_at=timezone.now()
        ):
            names.append(row.host.name)
            if row.request is not None:
                queued_job_drop(
                    request=row.request,
                    reason=f"not reached: rollout #{rollout.pk} {reason}",
                    actor=actor,
                )
    return names


def rollout_abort(*, rollout: Rollout, user: User, cancel_running: bool = False) -> Rollout:
    """Stop the rollout: no new host is started; hosts waiting keep what they run. The
    jobs running now finish (`cancel_running=False`) or are cancelled, each putting back
    the unit that ran before (`deploys.jobs.runner.cancel_and_put_back`): a host is never
    left half-deployed either way."""
    require(user, CANCEL_JOB, "abort rollouts")
    with transaction.atomic():
        done = Rollout.objects.filter(
            pk=rollout.pk, status__in=(Status.RUNNING, Status.PAUSED)
        ).update(
            status=Status.ABORTED,
            status_reason=f"aborted by {user}"
            + (", running jobs cancelled" if cancel_running else ", running jobs let finish"),
            aborted_by=user,
            abort_cancels=cancel_running,
            finished_at=timezone.now(),
        )
        if done:
            rollout.refresh_from_db()
            skipped = close_waiting(rollout, f"was aborted by {user}", user)
            running = list(
                rollout.hosts.filter(state=RolloutHost.State.STARTED).select_related(
                    "host", "request"
                )
            )
            audit(
                ABORTED,
                user,
                rollout,
                {
                    "cancel_running": cancel_running,
                    "not_reached": skipped,
                    "running": [row.host.name for row in running],
                },
            )
    rollout.refresh_from_db()
    if not done:
        raise ValidationError(f"Rollout #{rollout.pk} is {rollout.get_status_display().lower()}.")
    if cancel_running:
        for row in running:
            if row.request is not None:
                _cancel_child(row.request, user)
    return rollout


def _cancel_child(request: DeployRequest, user: User) -> None:
    with contextlib.suppress(RequestNotPending):  # it ended meanwhile: the coordinator says how
        deploy_job_cancel(request=request, user=user)


__all__ = [
    "MAX_HOSTS",
    "RolloutNotPending",
    "close_waiting",
    "host_group_delete",
    "host_group_save",
    "rollout_abort",
    "rollout_approve",
    "rollout_create",
    "rollout_pause",
    "rollout_reject",
    "rollout_resume",
    "texts_sha256",
]
