"""Host and deploy-request pages. Thin: reads via `deploys.selectors`, writes via
`deploys.services` (which also enforce permissions); a service's ValidationError is shown
on the form, a TransportError (unreachable host, changed key) as a page error."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from django.contrib import messages
from django.core.exceptions import ValidationError
from django.core.paginator import Paginator
from django.forms import Form
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.utils import timezone
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from deploys import approvals, existing_units, job_settings, running, selectors
from deploys.existing_units import ExistingUnit, UnitFile, shadowed_diff
from deploys.forms import (
    DecisionForm,
    DeployRequestForm,
    HostConfirmForm,
    HostEditForm,
    HostForm,
    PinKeyForm,
    ProbeExecutablesForm,
    RequestFilterForm,
    UnitAdoptForm,
)
from deploys.job_views import deployed_units_context, job_context
from deploys.models import DeployRequest, Host
from deploys.permissions import (
    ADD_HOST,
    ADOPT_UNIT,
    APPROVE_DEPLOY,
    CHANGE_HOST,
    REQUEST_DEPLOY,
    VIEW_HOST,
    VIEW_REQUEST,
)
from deploys.services import deploy_requests, hosts, unit_adoptions
from hostops.channel import TransportError
from specadmin.access import requires
from units.masking import can_see_secrets, mask_text

PAGE_SIZE = 50


def _form_errors(form: Form, exc: ValidationError) -> None:
    """Put a service's ValidationError on the form (fields it names, else the form)."""
    if hasattr(exc, "error_dict"):
        for field, errors in exc.message_dict.items():
            form.add_error(field if field in form.fields else None, errors)
    else:
        form.add_error(None, exc.messages)


# -- hosts ---------------------------------------------------------------------------------


@require_GET
@requires(VIEW_HOST)
def host_list(request: HttpRequest) -> HttpResponse:
    """Hosts in use; `?archived=1` the archived ones."""
    archived = request.GET.get("archived") == "1"
    return render(
        request,
        "deploys/host_list.html",
        {
            "hosts": selectors.host_list(archived=archived),
            "archived": archived,
            "can_add": request.user.has_perm(ADD_HOST),
        },
    )


@require_http_methods(["GET", "POST"])
@requires(VIEW_HOST, ADD_HOST)
def host_add(request: HttpRequest) -> HttpResponse:
    """Two steps: enter the host → see the key it presents → confirm to pin it."""
    if request.method == "GET":
        return render(request, "deploys/host_add.html", {"form": HostForm()})
    form = HostForm(request.POST)
    if not form.is_valid():
        return render(request, "deploys/host_add.html", {"form": form})
    data = form.service_kwargs()
    if request.POST.get("step") != "confirm":
        if data["transport"] != Host.Transport.SSH:
            return _host_create(request, form, data, confirm=None)
        try:
            key = hosts.host_probe_key(address=data["address"], port=data["ssh_port"])
        except ValidationError as exc:
            _form_errors(form, exc)
            return render(request, "deploys/host_add.html", {"form": form})
        confirm = HostConfirmForm(
            initial={
                "host_key": f"{key.key_type} {key.base64}",
                "fingerprint": key.fingerprint_sha256,
            }
        )
        return _confirm_page(request, form, confirm)
    confirm = HostConfirmForm(request.POST)
    if not confirm.is_valid():
        return _confirm_page(request, form, confirm)
    return _host_create(request, form, data, confirm=confirm)


def _confirm_page(request: HttpRequest, form: HostForm, confirm: HostConfirmForm) -> HttpResponse:
    key_line = confirm["host_key"].value() or ""
    return render(
        request,
        "deploys/host_confirm.html",
        {
            "form": form,
            "confirm": confirm,
            "key_type": key_line.split(" ", 1)[0],
            "fingerprint": confirm["fingerprint"].value(),
        },
    )


def _host_create(
    request: HttpRequest, form: HostForm, data: dict[str, Any], confirm: HostConfirmForm | None
) -> HttpResponse:
    keys = {}
    if confirm is not None:
        keys = {
            "host_key": confirm.cleaned_data["host_key"],
            "confirmed_fingerprint": confirm.cleaned_data["fingerprint"],
        }
    try:
        host = hosts.host_create(created_by=request.user, **data, **keys)
    except ValidationError as exc:
        _form_errors(form, exc)
        return render(request, "deploys/host_add.html", {"form": form})
    messages.success(request, f"Host {host.name} added" + (" and its key pinned." if keys else "."))
    return redirect("deploys:host_detail", pk=host.pk)


@require_GET
@requires(VIEW_HOST)
def host_detail(request: HttpRequest, pk: int) -> HttpResponse:
    return _host_page(request, get_object_or_404(Host, pk=pk))


def _host_page(
    request: HttpRequest,
    host: Host,
    *,
    executables_form: ProbeExecutablesForm | None = None,
    adopt_form: UnitAdoptForm | None = None,
    status: int = 200,
) -> HttpResponse:
    """The host page; a refused form is shown again as it was sent, with its errors."""
    user = request.user
    return render(
        request,
        "deploys/host_detail.html",
        {
            "host": host,
            "can_change": user.has_perm(CHANGE_HOST),
            "can_probe": user.has_perm(CHANGE_HOST) or user.has_perm(REQUEST_DEPLOY),
            "can_request": user.has_perm(REQUEST_DEPLOY),
            "key_differs": bool(host.presented_fingerprint)
            and host.presented_fingerprint != host.host_key_fingerprint,
            "recent_requests": selectors.deploy_request_list(host=host)[:10],
            "can_adopt": user.has_perm(ADOPT_UNIT),
            "executables_form": executables_form
            or ProbeExecutablesForm(
                initial={"executables": "\n".join(host.probe_executables or [])}
            ),
            "adopt_form": adopt_form or UnitAdoptForm(),
            "adoptions": host.unit_adoptions.select_related("adopted_by")[:20],
            **deployed_units_context(host, user),
        },
        status=status,
    )


@require_http_methods(["GET", "POST"])
@requires(VIEW_HOST, CHANGE_HOST)
def host_edit(request: HttpRequest, pk: int) -> HttpResponse:
    host = get_object_or_404(Host, pk=pk)
    if host.archived:
        messages.error(request, f"{host.name} is archived: unarchive it before editing.")
        return redirect("deploys:host_detail", pk=host.pk)
    form = HostEditForm(request.POST or None, instance=Host.objects.get(pk=pk))
    if request.method == "POST" and form.is_valid():
        was_pinned = host.key_pinned
        try:
            changed = hosts.host_update(host=host, actor=request.user, **form.service_kwargs())
        except ValidationError as exc:
            _form_errors(form, exc)
        else:
            if not changed:
                messages.info(request, "Nothing changed.")
            elif was_pinned and not host.key_pinned:
                messages.warning(
                    request,
                    f"Saved. {host.name} is reached at a new address now: read its host key "
                    "again and pin it before anything connects.",
                )
            else:
                messages.success(request, f"Saved the changes to {host.name}.")
            return redirect("deploys:host_detail", pk=host.pk)
    return render(request, "deploys/host_edit.html", {"form": form, "host": host})


@require_POST
@requires(VIEW_HOST, CHANGE_HOST)
def host_archive(request: HttpRequest, pk: int) -> HttpResponse:
    def action(host: Host) -> str:
        hosts.host_archive(host=host, actor=request.user)
        return f"Archived {host.name}: it is no longer probed or deployed to; its history is kept."

    return _host_action(request, pk, action)


@require_POST
@requires(VIEW_HOST, CHANGE_HOST)
def host_unarchive(request: HttpRequest, pk: int) -> HttpResponse:
    def action(host: Host) -> str:
        hosts.host_unarchive(host=host, actor=request.user)
        return f"{host.name} is in use again."

    return _host_action(request, pk, action)


@require_GET
@requires(VIEW_HOST)
def host_probe_results(request: HttpRequest, pk: int) -> HttpResponse:
    """The host page's probe results alone: the page polls it while a probe is queued
    (templates/live/_poll.html), so results appear in place."""
    host = get_object_or_404(Host, pk=pk)
    return render(request, "deploys/_probe_results.html", {"host": host})


def _host_action(request: HttpRequest, pk: int, action: Callable[[Host], str]) -> HttpResponse:
    host = get_object_or_404(Host, pk=pk)
    try:
        messages.success(request, action(host))
    except ValidationError as exc:
        messages.error(request, " ".join(exc.messages))
    return redirect("deploys:host_detail", pk=host.pk)


@require_POST
@requires(VIEW_HOST)
def host_probe(request: HttpRequest, pk: int) -> HttpResponse:
    def action(host: Host) -> str:
        hosts.host_request_probe(host=host, actor=request.user)
        return f"Probe of {host.name} queued: its results appear below when a worker has run it."

    return _host_action(request, pk, action)


@require_POST
@requires(VIEW_HOST, CHANGE_HOST)
def host_rescan_key(request: HttpRequest, pk: int) -> HttpResponse:
    def action(host: Host) -> str:
        key = hosts.host_rescan_key(host=host, actor=request.user)
        if key.fingerprint_sha256 == host.host_key_fingerprint:
            return "The host presents the pinned key."
        return f"The host presents another key ({key.fingerprint_sha256}): compare it below."

    return _host_action(request, pk, action)


@require_POST
@requires(VIEW_HOST, CHANGE_HOST)
def host_pin_key(request: HttpRequest, pk: int) -> HttpResponse:
    form = PinKeyForm(request.POST)

    def action(host: Host) -> str:
        if not form.is_valid():
            raise ValidationError("No fingerprint confirmed.")
        hosts.host_pin_key(
            host=host, fingerprint=form.cleaned_data["fingerprint"], actor=request.user
        )
        return f"Key {form.cleaned_data['fingerprint']} pinned for {host.name}."

    return _host_action(request, pk, action)


@require_POST
@requires(VIEW_HOST, CHANGE_HOST)
def host_probe_executables(request: HttpRequest, pk: int) -> HttpResponse:
    host = get_object_or_404(Host, pk=pk)
    form = ProbeExecutablesForm(request.POST)
    if form.is_valid():
        try:
            saved = hosts.host_set_probe_executables(
                host=host, executables=form.paths(), actor=request.user
            )
        except ValidationError as exc:
            form.add_error(None, exc)
        else:
            listed = ", ".join(saved.probe_executables) or "none"
            messages.success(
                request,
                f"The probe of {host.name} may run: {listed} (and the executables of pushed "
                "units).",
            )
            return redirect("deploys:host_detail", pk=host.pk)
    # Refused: the list as typed stays in the form, each problem on its own line.
    return _host_page(request, host, executables_form=form, status=400)


@require_POST
@requires(VIEW_HOST, ADOPT_UNIT)
def host_adopt_unit(request: HttpRequest, pk: int) -> HttpResponse:
    host = get_object_or_404(Host, pk=pk)
    form = UnitAdoptForm(request.POST)
    if form.is_valid():
        try:
            adoption = unit_adoptions.unit_adopt(
                host=host,
                unit_name=form.cleaned_data["unit_name"],
                comment=form.cleaned_data["comment"],
                actor=request.user,
            )
        except ValidationError as exc:
            form.add_error(None, exc)
        else:
            messages.success(
                request,
                f"{adoption.unit_name}.service on {host.name} adopted (sha256 "
                f"{adoption.sha256[:12]}…): a deploy may now replace exactly this file.",
            )
            return redirect("deploys:host_detail", pk=host.pk)
    # Refused: the name and the reason stay as typed, the problem at its field.
    return _host_page(request, host, adopt_form=form, status=400)


# -- deploy requests -----------------------------------------------------------------------


def _shown_for(user: Any) -> Callable[[str], str]:
    """Texts as this user may see them: secrets masked for viewers (units.masking)."""
    return (lambda text: text) if can_see_secrets(user) else mask_text


def _masked(loaded: ExistingUnit, shown: Callable[[str], str]) -> ExistingUnit:
    files = [dataclasses.replace(f, text=shown(f.text)) for f in loaded.files]
    return dataclasses.replace(loaded, files=files)


def _loaded_files(loaded: ExistingUnit | None, shown: Callable[[str], str]) -> list[UnitFile]:
    """The files systemd loads under the unit's name besides the one a push writes."""
    return [] if loaded is None else _masked(loaded, shown).others


@require_GET
@requires(VIEW_REQUEST)
def request_list(request: HttpRequest) -> HttpResponse:
    filters = RequestFilterForm(request.GET)
    requests = selectors.deploy_request_list(**filters.selector_kwargs())
    page = Paginator(requests, PAGE_SIZE).get_page(request.GET.get("page"))
    return render(
        request,
        "deploys/request_list.html",
        {
            "filters": filters,
            "page": page,
            "can_request": request.user.has_perm(REQUEST_DEPLOY),
        },
    )


@require_http_methods(["GET", "POST"])
@requires(VIEW_REQUEST, REQUEST_DEPLOY)
def request_new(request: HttpRequest) -> HttpResponse:
    """Choose version + host (+ unit name) → preview (diff, findings) → submit."""
    if request.method == "GET":
        initial = {
            k: request.GET[k]
            for k in ("profile_version", "host", "unit_name")
            if request.GET.get(k)
        }
        return render(
            request, "deploys/request_new.html", {"form": DeployRequestForm(initial=initial)}
        )
    form = DeployRequestForm(request.POST)
    context: dict[str, Any] = {"form": form}
    if not form.is_valid():
        return render(request, "deploys/request_new.html", context)
    data = form.cleaned_data
    unit_name = data["unit_name"] or data["profile_version"].profile.name
    # One live read of the host's unit per page: the preview shown is the one submitted.
    try:
        preview = selectors.deploy_preview(
            profile_version=data["profile_version"], host=data["host"], unit_name=unit_name
        )
        loaded = existing_units.read_existing_unit(host=data["host"], unit_name=unit_name)
    except TransportError as exc:
        form.add_error("host", f"Cannot read the current unit on {data['host'].name}: {exc}")
        return render(request, "deploys/request_new.html", context)
    shown = _shown_for(request.user)
    context["loaded_files"] = _loaded_files(loaded, shown)
    context["unit_name"] = unit_name
    if request.POST.get("step") == "submit":
        try:
            created = deploy_requests.deploy_request_create(
                profile_version=data["profile_version"],
                host=data["host"],
                unit_name=unit_name,
                acknowledge_warnings=data["acknowledge_warnings"],
                requested_by=request.user,
                preview=preview,
                existing=loaded,
            )
        except ValidationError as exc:
            _form_errors(form, exc)
        else:
            messages.success(request, f"Request #{created.pk} submitted for approval.")
            return redirect("deploys:request_detail", pk=created.pk)
        if any(f in form.errors for f in ("profile_version", "host", "unit_name")):
            return render(request, "deploys/request_new.html", context)
    settings = job_settings.page_context(
        requested=job_settings.job_settings(profile_version=data["profile_version"]),
        host_id=data["host"].pk,
        unit_name=unit_name,
        exclude_request=None,
    )
    unit_diff = preview.diff(data["host"].name)
    if preview.host_unit is None:  # the push would shadow a unit loaded from elsewhere
        unit_diff = shadowed_diff(loaded, preview.unit.text, data["host"].name) or unit_diff
    context.update(
        preview=preview,
        unit_name=unit_name,
        diff_lines=selectors.diff_lines(unit_diff + settings["settings_diff"]),
        **settings,
    )
    return render(request, "deploys/request_new.html", context)


@require_GET
@requires(VIEW_REQUEST)
def request_detail(request: HttpRequest, pk: int) -> HttpResponse:
    try:
        deploy = selectors.deploy_request_get(pk=pk)
    except DeployRequest.DoesNotExist:
        raise Http404("No such deploy request.") from None
    user = request.user
    pending = deploy.status == DeployRequest.Status.PENDING
    overdue = pending and deploy.expires_at <= timezone.now()
    own = deploy.requested_by_id == user.pk
    refusal = approvals.decision_refusal(deploy, user) if pending else None
    # A viewer sees secrets masked (units.masking); approvers see the unit as it runs.
    shown = _shown_for(user)
    loaded = ExistingUnit.from_json(deploy.host_loaded_unit)
    diff = selectors.unit_diff(
        old=shown(deploy.host_unit_text) if deploy.host_unit_sha256 else None,
        new=shown(deploy.unit_text),
        unit_name=deploy.unit_name,
        host_name=deploy.host.name,
    )
    if not deploy.host_unit_sha256 and loaded is not None:
        masked = _masked(loaded, shown)
        diff = shadowed_diff(masked, shown(deploy.unit_text), deploy.host.name) or diff
    findings = [{**f, "message": shown(str(f.get("message", "")))} for f in deploy.lint_findings]
    settings = job_settings.page_context(
        requested=deploy.job_settings,
        host_id=deploy.host_id,
        unit_name=deploy.unit_name,
        exclude_request=deploy.pk,
    )
    return render(
        request,
        "deploys/request_detail.html",
        {
            "deploy": deploy,
            "diff_lines": selectors.diff_lines(diff + settings["settings_diff"]),
            **settings,
            "findings": findings,
            "unit_text": shown(deploy.unit_text),
            "loaded_files": _loaded_files(loaded, shown),
            "unit_is": running.text_of(
                host=deploy.host, unit_name=deploy.unit_name, sha=deploy.unit_sha256
            ),
            "host_unit_was": running.text_of(
                host=deploy.host, unit_name=deploy.unit_name, sha=deploy.host_unit_sha256
            ),
            **job_context(deploy, user),
            "overdue": overdue,
            "own": own,
            "refusal": refusal,
            "can_decide": pending and not overdue and not refusal and user.has_perm(APPROVE_DEPLOY),
            "decision_form": DecisionForm(initial={"expected_sha256": deploy.unit_sha256}),
            "problems": approvals.approval_problems(request=deploy)
            if deploy.status == DeployRequest.Status.APPROVED
            else [],
        },
    )


def _decide(request: HttpRequest, pk: int, approve: bool) -> HttpResponse:
    deploy = get_object_or_404(DeployRequest.objects.select_related("host"), pk=pk)
    form = DecisionForm(request.POST)
    if not form.is_valid():  # e.g. a comment over the limit: never decide without it
        messages.error(request, " ".join(e for errors in form.errors.values() for e in errors))
        return redirect("deploys:request_detail", pk=deploy.pk)
    comment = form.cleaned_data["comment"]
    try:
        if approve:
            deploy_requests.deploy_request_approve(
                request=deploy,
                approver=request.user,
                comment=comment,
                expected_sha256=form.cleaned_data.get("expected_sha256") or None,
            )
            # The job part of the page updates itself; this message stays as it is.
            messages.success(
                request, f"Request #{deploy.pk} approved: the job below shows each step."
            )
        else:
            deploy_requests.deploy_request_reject(
                request=deploy, approver=request.user, comment=comment
            )
            messages.success(request, f"Request #{deploy.pk} rejected.")
    except deploy_requests.RequestNotPending as exc:
        messages.warning(request, " ".join(exc.messages))
    except ValidationError as exc:
        messages.error(request, " ".join(exc.messages))
    return redirect("deploys:request_detail", pk=deploy.pk)


@require_POST
@requires(VIEW_REQUEST, APPROVE_DEPLOY)
def request_approve(request: HttpRequest, pk: int) -> HttpResponse:
    return _decide(request, pk, approve=True)


@require_POST
@requires(VIEW_REQUEST, APPROVE_DEPLOY)
def request_reject(request: HttpRequest, pk: int) -> HttpResponse:
    return _decide(request, pk, approve=False)
