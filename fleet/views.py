"""The fleet pages: rollouts (list, request, the rollout page with its live hosts table,
decision and controls) and host groups. Thin: reads from `fleet.selectors`, writes through
`fleet.services`, which check permissions themselves. The live part is one partial,
`fleet/_rollout_live.html`, served alone at `fleet:rollout_live` and polled with
templates/live/_poll.html while the rollout changes (docs/architecture.md, "Live updates
on the pages")."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.core.exceptions import PermissionDenied, ValidationError
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from deploys.permissions import (
    APPROVE_DEPLOY,
    CANCEL_JOB,
    CHANGE_HOST,
    REQUEST_DEPLOY,
    VIEW_HOST,
    VIEW_REQUEST,
)
from fleet import selectors
from fleet.forms import DecisionForm, HostGroupForm, RolloutForm
from fleet.models import HostGroup, Rollout
from fleet.services import (
    host_group_save,
    rollout_abort,
    rollout_approve,
    rollout_create,
    rollout_pause,
    rollout_reject,
    rollout_resume,
)
from specadmin.access import requires


def _errors(exc: ValidationError) -> list[str]:
    if hasattr(exc, "error_dict"):
        return [m for errors in exc.message_dict.values() for m in errors]
    return list(exc.messages)


@require_GET
@requires(VIEW_REQUEST)
def rollout_list(request: HttpRequest) -> HttpResponse:
    return render(
        request,
        "fleet/rollout_list.html",
        {"rollouts": selectors.rollout_list()[:100], "groups": selectors.group_list()},
    )


@require_http_methods(["GET", "POST"])
@requires(VIEW_REQUEST, REQUEST_DEPLOY)
def rollout_new(request: HttpRequest) -> HttpResponse:
    form = RolloutForm(request.POST or None)
    problems: list[str] = []
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        try:
            rollout = rollout_create(
                profile_version=data["profile_version"],
                requested_by=request.user,
                group=data["group"],
                hosts=None if data["group"] else list(data["hosts"]),
                unit_name=data["unit_name"],
                canary=data["canary"],
                batch_size=data["batch_size"],
                pause_s=data["pause_s"],
                budget_kind=data["budget_kind"],
                budget_value=data["budget_value"],
                acknowledge_warnings=data["acknowledge_warnings"],
            )
        except ValidationError as exc:
            problems = _errors(exc)
        else:
            messages.success(request, f"Rollout #{rollout.pk} requested: someone else approves it.")
            return redirect("fleet:rollout_detail", pk=rollout.pk)
    return render(request, "fleet/rollout_new.html", {"form": form, "problems": problems})


def _live_context(request: HttpRequest, rollout: Rollout) -> dict[str, Any]:
    user = request.user
    active = rollout.status in (Rollout.Status.RUNNING, Rollout.Status.PAUSED)
    return {
        "rollout": rollout,
        "rows": selectors.host_rows(rollout),
        "verdict": selectors.verdict(rollout),
        "canary_run": selectors.canary_run(rollout),
        "live": rollout.live,
        "can_control": active and user.has_perm(CANCEL_JOB),
    }


@require_GET
@requires(VIEW_REQUEST)
def rollout_detail(request: HttpRequest, pk: int) -> HttpResponse:
    rollout = get_object_or_404(
        Rollout.objects.select_related("profile_version__profile", "requested_by", "group"), pk=pk
    )
    user = request.user
    can_decide = (
        rollout.status == Rollout.Status.PENDING
        and user.has_perm(APPROVE_DEPLOY)
        and rollout.requested_by_id != user.pk
    )
    context = _live_context(request, rollout) | {
        "groups": selectors.text_groups(rollout),
        "can_decide": can_decide,
        "decision_form": DecisionForm(initial={"expected_texts_sha256": rollout.texts_sha256}),
    }
    return render(request, "fleet/rollout_detail.html", context)


@require_GET
@requires(VIEW_REQUEST)
def rollout_live(request: HttpRequest, pk: int) -> HttpResponse:
    rollout = get_object_or_404(Rollout.objects.select_related("profile_version__profile"), pk=pk)
    return render(request, "fleet/_rollout_live.html", _live_context(request, rollout))


def _act(request: HttpRequest, pk: int, action: Any, done: str, **kwargs: Any) -> HttpResponse:
    rollout = get_object_or_404(Rollout, pk=pk)
    try:
        action(rollout=rollout, **kwargs)
    except ValidationError as exc:
        for line in _errors(exc):
            messages.error(request, line)
    except PermissionDenied as exc:
        if getattr(exc, "permissions", None) is not None:
            raise
        messages.error(request, str(exc))
    else:
        messages.success(request, done)
    return redirect("fleet:rollout_detail", pk=pk)


@require_POST
@requires(VIEW_REQUEST, APPROVE_DEPLOY)
def rollout_decide(request: HttpRequest, pk: int) -> HttpResponse:
    form = DecisionForm(request.POST)
    if not form.is_valid():
        messages.error(request, "The decision form was incomplete: reload the page.")
        return redirect("fleet:rollout_detail", pk=pk)
    comment = form.cleaned_data["comment"]
    if request.POST.get("decision") == "reject":
        return _act(
            request, pk, rollout_reject, "Rejected.", approver=request.user, comment=comment
        )
    return _act(
        request,
        pk,
        rollout_approve,
        "Approved: the canary starts now.",
        approver=request.user,
        comment=comment,
        expected_texts_sha256=form.cleaned_data["expected_texts_sha256"],
    )


@require_POST
@requires(VIEW_REQUEST, CANCEL_JOB)
def rollout_control(request: HttpRequest, pk: int) -> HttpResponse:
    what = request.POST.get("action", "")
    if what == "pause":
        return _act(request, pk, rollout_pause, "Paused: no new batch starts.", user=request.user)
    if what == "resume":
        return _act(request, pk, rollout_resume, "Resumed.", user=request.user)
    if what in ("abort", "abort_cancel"):
        return _act(
            request,
            pk,
            rollout_abort,
            "Aborted.",
            user=request.user,
            cancel_running=what == "abort_cancel",
        )
    messages.error(request, f"Unknown action {what[:40]!r}: pause, resume, abort or abort_cancel.")
    return redirect("fleet:rollout_detail", pk=pk)


# -- host groups ---------------------------------------------------------------------------


@require_http_methods(["GET", "POST"])
@requires(VIEW_HOST)
def group_list(request: HttpRequest) -> HttpResponse:
    can_edit = request.user.has_perm(CHANGE_HOST)
    form = HostGroupForm(request.POST or None) if can_edit else None
    if request.method == "POST":
        if form is None:
            raise PermissionDenied("You are not allowed to manage host groups.")
        if form.is_valid():
            try:
                group = host_group_save(actor=request.user, **form.cleaned_data)
            except ValidationError as exc:
                for field, errors in exc.message_dict.items():
                    for error in errors:
                        form.add_error(field if field in form.fields else None, error)
            else:
                messages.success(request, f"Group {group.name} saved.")
                return redirect("fleet:group_list")
    return render(
        request,
        "fleet/group_list.html",
        {"groups": selectors.group_list(), "form": form, "can_edit": can_edit},
    )


@require_http_methods(["GET", "POST"])
@requires(VIEW_HOST, CHANGE_HOST)
def group_edit(request: HttpRequest, pk: int) -> HttpResponse:
    group = get_object_or_404(HostGroup, pk=pk)
    initial = {"name": group.name, "description": group.description, "hosts": group.hosts.all()}
    form = HostGroupForm(request.POST or None, initial=initial)
    if request.method == "POST" and form.is_valid():
        try:
            host_group_save(actor=request.user, group=group, **form.cleaned_data)
        except ValidationError as exc:
            for field, errors in exc.message_dict.items():
                for error in errors:
                    form.add_error(field if field in form.fields else None, error)
        else:
            messages.success(request, f"Group {group.name} saved.")
            return redirect("fleet:group_list")
    return render(request, "fleet/group_edit.html", {"group": group, "form": form})
