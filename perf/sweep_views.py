"""The sweep page of a profile: the grid form; "Check the points" shows every point
rendered and validated for the host's vLLM release (rejected ones with their reasons), the
bound and the time estimate; "Create candidates" saves the accepted points as versions of
a clone (audited) and sends them as a trial where the installation has trials
(perf.sweep_trial). Bad input is a form error, never a 500 (docs/sweeps.md)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.models import User
from django.core.exceptions import PermissionDenied, ValidationError
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_http_methods

from deploys.ids import row_id
from perf.sweep_estimate import sweep_estimate
from perf.sweep_forms import SweepForm
from perf.sweep_trial import send_as_trial
from specadmin.access import MissingPermission, requires
from units.models import ProfileVersion, ServiceProfile
from units.selectors import profile_latest_version
from units.sweep_services import sweep_create_candidates
from units.sweeps import DEFAULT_MAX_POINTS, SweepError, SweepPlan, build_sweep

VIEW = "units.view_serviceprofile"
ADD = "units.add_serviceprofile"


def max_points() -> int:
    return int(getattr(settings, "SPECADMIN_SWEEP_MAX_POINTS", DEFAULT_MAX_POINTS))


def _plan(form: SweepForm) -> SweepPlan | None:
    """The plan of a valid form, or None with the reason added to the form."""
    version = form.cleaned_data["version"]
    host = form.cleaned_data["host"]
    release = host.vllm_version or version.data.get("target_vllm_version") or ""
    try:
        return build_sweep(version.data, form.grid(), vllm_version=release, max_points=max_points())
    except SweepError as exc:
        form.add_error(None, str(exc))
        return None


def _default_name(profile: ServiceProfile) -> str:
    taken = set(
        ServiceProfile.objects.filter(name__startswith=f"{profile.name}-sweep").values_list(
            "name", flat=True
        )
    )
    n = 1
    while f"{profile.name}-sweep{n}" in taken:
        n += 1
    return f"{profile.name}-sweep{n}"


@require_http_methods(["GET", "POST"])
@requires(VIEW)
def sweep(request: HttpRequest, profile_id: int) -> HttpResponse:
    profile = get_object_or_404(ServiceProfile, pk=row_id(profile_id) or 0)
    latest = profile_latest_version(profile=profile)
    default_name = _default_name(profile)
    initial = {
        "version": latest.pk if latest else None,
        "methods": ["ngram"],
        "num_speculative_tokens": "3, 5",
        "prompt_lookup_max": "4",
        "clone_name": default_name,
    }
    data = None
    if request.method == "POST":
        data = request.POST.copy()
        if "clone_name" not in data:  # the field appears with the points: offer the default
            data["clone_name"] = default_name
    form = SweepForm(data, profile=profile, initial=initial)
    context: dict[str, Any] = {
        "profile": profile,
        "form": form,
        "max_points": max_points(),
        "can_create": request.user.has_perm(ADD) and not profile.archived,
    }
    if request.method != "POST":
        return render(request, "perf/sweep.html", context)
    plan = _plan(form) if form.is_valid() else None
    if plan is not None:
        context["plan"] = plan
        context["estimate"] = sweep_estimate(
            host=form.cleaned_data["host"], profile=profile, points=len(plan.accepted)
        )
    if plan is not None and request.POST.get("action") == "create":
        if not context["can_create"]:
            raise MissingPermission([ADD])
        created = _create(request, form, plan)
        if created is not None:
            return created
        plan = None  # the candidates were not created: the form says why
    status = 200 if plan is not None else 400
    return render(request, "perf/sweep.html", context, status=status)


def _create(request: HttpRequest, form: SweepForm, plan: SweepPlan) -> HttpResponse | None:
    """Save the candidates and send them (redirect), or None with the errors on the form."""
    name = form.cleaned_data["clone_name"]
    if not name:
        form.add_error("clone_name", "Name the profile that holds the candidates.")
        return None
    version, host = form.cleaned_data["version"], form.cleaned_data["host"]
    try:
        clone, versions = sweep_create_candidates(
            version=version, plan=plan, clone_name=name, created_by=request.user
        )
    except ValidationError as exc:
        texts = exc.message_dict if hasattr(exc, "error_dict") else {"__all__": exc.messages}
        for key, items in texts.items():
            for text in items:
                form.add_error("clone_name" if key == "name" else None, text)
        return None
    numbers = ", ".join(f"v{v.number}" for v in versions)
    try:
        trial = send_as_trial(
            host=host, production=version, versions=versions, requested_by=_person(request)
        )
    except ValidationError as exc:
        reason = " ".join(exc.messages).strip().rstrip(".")
        messages.warning(
            request,
            f"Created {len(versions)} candidates ({clone.name} {numbers}), but no trial on "
            f"{host.name}: {reason}. Deploy each, or try them from the host page; this page "
            "then compares their benchmarks with production's.",
        )
        return redirect(compare_url(host, [version, *versions]))
    messages.success(
        request,
        f"Created {len(versions)} candidates ({clone.name} {numbers}) and a trial request "
        f"on {host.name}; a second person approves it.",
    )
    return redirect("deploys:request_detail", pk=trial.pk)


def _person(request: HttpRequest) -> User:
    """The signed-in person (`requires` let only them in)."""
    if not isinstance(request.user, User):
        raise PermissionDenied("Sign in to create candidates.")
    return request.user


def compare_url(host: Any, versions: Sequence[ProfileVersion]) -> str:
    """ "Compare these versions on host H": the sweep's start first (its baseline is the
    reference), then the candidates."""
    query = "&".join(f"version={v.pk}" for v in versions)
    return f"{reverse('perf:compare_versions', args=[host.pk])}?{query}"


__all__ = ["max_points", "sweep"]
