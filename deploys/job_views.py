"""Job pages: a request's live job (steps, progress, host state, place in the queue),
cancel and withdraw, and the host page's restart / roll back / remove actions.

Thin: reads from `deploys.selectors`, writes through `deploys.services.unit_requests`
(which check permissions themselves). The live part is one partial, `deploys/_job.html`,
served alone at `deploys:request_job` and polled with templates/live/_poll.html while the
job is queued or running (docs/architecture.md, "Live updates on the pages").
"""

from __future__ import annotations

import re
from typing import Any

from django.contrib import messages
from django.core.exceptions import PermissionDenied, ValidationError
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from deploys import selectors
from deploys.cancel_plan import cancel_plan
from deploys.ids import row_id
from deploys.jobs.liveness import worker_lost
from deploys.models import DeployRequest, Host, JobStep, PushedUnit
from deploys.permissions import CANCEL_JOB, CHANGE_HOST, REQUEST_DEPLOY, VIEW_HOST, VIEW_REQUEST
from deploys.running import units_on_host
from deploys.services.deploy_requests import RequestNotPending
from deploys.services.unit_requests import (
    deploy_job_cancel,
    deploy_request_withdraw,
    host_set_restarts_without_approval,
    remove_request_create,
    restart_request_create,
    rollback_request_create,
)
from deploys.step_notes import step_notes
from specadmin.access import requires
from units.masking import MASK, PUBLIC_ENVIRONMENT, can_see_secrets, mask_args, mask_line, mask_text

LIVE = (DeployRequest.Status.APPROVED, DeployRequest.Status.RUNNING)


_SECRET_INSIDE = re.compile(
    r"--[A-Za-z0-9_-]*(key|token|secret|password|passwd|credential|auth)", re.IGNORECASE
)
_ENV_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _viewer_argv(argv: list[str]) -> list[str]:
    """A command as a viewer may see it (units.masking): secret option values, the
    unit's environment values (`env NAME=value …`), and any word that carries a secret
    option inside it (the vLLM check's JSON of the arguments) masked."""
    shown = []
    for word in mask_args([str(w) for w in argv]):
        name, eq, _ = word.partition("=")
        if eq and _ENV_WORD.fullmatch(name) and name not in PUBLIC_ENVIRONMENT:
            shown.append(f"{name}={MASK}")
        elif not word.startswith("--") and _SECRET_INSIDE.search(word):
            shown.append(MASK)
        else:
            shown.append(word)
    return shown


def _masked(step: JobStep) -> JobStep:
    """The step as a viewer may see it (a copy; nothing is saved)."""
    step.log = mask_text(step.log)
    if step.progress.get("message"):
        step.progress = {**step.progress, "message": mask_line(step.progress["message"])}
    if step.result.get("reason"):
        step.result = {**step.result, "reason": mask_line(str(step.result["reason"]))}
    commands = dict(step.commands or {})
    for key in ("records", "folded"):
        commands[key] = [
            {**c, "argv": _viewer_argv(c.get("argv", []))} for c in commands.get(key, [])
        ]
    step.commands = commands
    return step


def job_context(deploy: DeployRequest, user: Any) -> dict[str, Any]:
    """What `deploys/_job.html` shows (also included by the request page); for people who
    may not see secrets, logs, progress and commands are masked (units.masking)."""
    steps = list(selectors.deploy_request_steps(request=deploy))
    if not can_see_secrets(user):
        steps = [_masked(step) for step in steps]
        deploy.status_reason = mask_text(deploy.status_reason)
    step_notes(deploy, steps)
    main = [s for s in steps if s.phase == JobStep.Phase.MAIN]
    rollback = [s for s in steps if s.phase == JobStep.Phase.ROLLBACK]
    live = deploy.status in LIVE
    return {
        "deploy": deploy,
        "worker_lost": worker_lost(deploy),
        "main_steps": main,
        "rollback_steps": rollback,
        "live": live,
        "queue_position": selectors.queue_position(request=deploy),
        "can_cancel": live and user.has_perm(CANCEL_JOB) and deploy.cancel_requested_at is None,
        "can_withdraw": deploy.status
        in (DeployRequest.Status.PENDING, DeployRequest.Status.APPROVED)
        and deploy.requested_by_id == user.pk,
    }


@require_GET
@requires(VIEW_REQUEST)
def request_job(request: HttpRequest, pk: int) -> HttpResponse:
    """The job part of a request page, alone (polled while the job is queued or running)."""
    try:
        deploy = selectors.deploy_request_get(pk=pk)
    except DeployRequest.DoesNotExist:
        raise Http404("No such deploy request.") from None
    return render(request, "deploys/_job.html", job_context(deploy, request.user))


def _request_action(request: HttpRequest, pk: int, action: Any) -> HttpResponse:
    deploy = get_object_or_404(DeployRequest.objects.select_related("host"), pk=pk)
    try:
        messages.success(request, action(deploy))
    except (ValidationError, PermissionDenied) as exc:
        text = " ".join(exc.messages) if isinstance(exc, ValidationError) else str(exc)
        messages.error(request, text)
    return redirect("deploys:request_detail", pk=deploy.pk)


@require_http_methods(["GET", "POST"])
@requires(VIEW_REQUEST, CANCEL_JOB)
def request_cancel(request: HttpRequest, pk: int) -> HttpResponse:
    """Cancel, in two steps: a page that says exactly what the cancel will do
    (`deploys.cancel_plan`), and its form's confirmed POST. A POST without the
    confirmation shows that page again and cancels nothing."""
    deploy = get_object_or_404(
        DeployRequest.objects.select_related("host", "profile_version__profile"), pk=pk
    )
    if request.method == "POST" and request.POST.get("confirm") == "yes":

        def action(deploy: DeployRequest) -> str:
            done = deploy_job_cancel(request=deploy, user=request.user)
            if done.status == DeployRequest.Status.CANCELLED:
                return f"#{deploy.pk} cancelled before it ran; nothing was done on {deploy.host}."
            return f"Cancel asked: #{deploy.pk} stops at its next step and puts back what ran."

        return _request_action(request, pk, action)
    if deploy.status not in LIVE or deploy.cancel_requested_at is not None:
        messages.error(
            request, f"#{deploy.pk} is {deploy.status_label.lower()}: nothing to cancel."
        )
        return redirect("deploys:request_detail", pk=deploy.pk)
    return render(
        request, "deploys/request_cancel.html", {"deploy": deploy, "plan": cancel_plan(deploy)}
    )


@require_POST
@requires(VIEW_REQUEST)
def request_withdraw(request: HttpRequest, pk: int) -> HttpResponse:
    def action(deploy: DeployRequest) -> str:
        deploy_request_withdraw(request=deploy, user=request.user)
        return f"Request #{deploy.pk} withdrawn."

    return _request_action(request, pk, action)


# -- the host page's actions on deployed units -----------------------------------------


def deployed_units_context(host: Host, user: Any) -> dict[str, Any]:
    """What runs on `host`, unit by unit, each with what it can be rolled back to
    (`deploys.running`)."""
    return {
        "deployed_units": units_on_host(host=host),
        "can_request": user.has_perm(REQUEST_DEPLOY) and not host.archived,
        "can_set_restarts": user.has_perm(CHANGE_HOST) and user.has_perm("deploys.add_host"),
    }


def _unit_request(request: HttpRequest, pk: int, make: Any) -> HttpResponse:
    host = get_object_or_404(Host, pk=pk)
    try:
        created = make(host)
    except (ValidationError, RequestNotPending) as exc:
        messages.error(request, " ".join(exc.messages))
        return redirect("deploys:host_detail", pk=host.pk)
    note = (
        "approved at once (restarts on this host need no approval)"
        if created.status == DeployRequest.Status.APPROVED
        else "another person must approve it"
    )
    messages.success(request, f"{created.get_kind_display()} request #{created.pk}: {note}.")
    return redirect("deploys:request_detail", pk=created.pk)


@require_POST
@requires(VIEW_HOST, REQUEST_DEPLOY)
def host_unit_restart(request: HttpRequest, pk: int) -> HttpResponse:
    unit_name = request.POST.get("unit_name", "")
    return _unit_request(
        request,
        pk,
        lambda host: restart_request_create(
            host=host, unit_name=unit_name, requested_by=request.user
        ),
    )


@require_POST
@requires(VIEW_HOST, REQUEST_DEPLOY)
def host_unit_remove(request: HttpRequest, pk: int) -> HttpResponse:
    unit_name = request.POST.get("unit_name", "")
    return _unit_request(
        request,
        pk,
        lambda host: remove_request_create(
            host=host, unit_name=unit_name, requested_by=request.user
        ),
    )


@require_POST
@requires(VIEW_HOST, REQUEST_DEPLOY)
def host_unit_rollback(request: HttpRequest, pk: int) -> HttpResponse:
    push_id = row_id(request.POST.get("push", ""))
    target = PushedUnit.objects.filter(pk=push_id).first() if push_id is not None else None

    def make(host: Host) -> DeployRequest:
        if target is None:
            raise ValidationError("Choose an earlier deployed version to roll back to.")
        return rollback_request_create(host=host, to=target, requested_by=request.user)

    return _unit_request(request, pk, make)


@require_POST
@requires(VIEW_HOST, CHANGE_HOST)
def host_restarts_setting(request: HttpRequest, pk: int) -> HttpResponse:
    host = get_object_or_404(Host, pk=pk)
    value = request.POST.get("restarts_without_approval") == "on"
    try:
        host_set_restarts_without_approval(host=host, value=value, actor=request.user)
    except PermissionDenied as exc:
        messages.error(request, str(exc))
    else:
        messages.success(
            request,
            f"Restarts on {host.name} "
            + ("now run without a second approval." if value else "need an approval again."),
        )
    return redirect("deploys:host_detail", pk=host.pk)


__all__ = [
    "deployed_units_context",
    "host_restarts_setting",
    "host_unit_remove",
    "host_unit_restart",
    "host_unit_rollback",
    "job_context",
    "request_cancel",
    "request_job",
    "request_withdraw",
]
