"""The trial pages: the form that requests one (from the host page or a profile version),
and what the request page shows of a trial (its candidates, the plan the approver
approves, a "Promote" link). Thin: writes through `deploys.services.trial_requests`."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

from django.contrib import messages
from django.core.exceptions import ValidationError
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_http_methods

from deploys.jobs.trial import candidate_labels, change_words
from deploys.models import DeployRequest, Host, TrialCandidate
from deploys.permissions import REQUEST_DEPLOY, VIEW_REQUEST
from deploys.running import versions_by_sha
from deploys.selectors import latest_version_number
from deploys.services.trial_requests import Candidate, trial_request_create
from deploys.trial_forms import TrialForm
from deploys.trials import candidates_of
from specadmin.access import requires

Outcome = TrialCandidate.Outcome


def _an_id(raw: object) -> bool:
    """A row id as a form sends it: ASCII digits, short enough for the database."""
    text = str(raw or "")
    return text.isascii() and text.isdigit() and len(text) <= 12


def _host_of(request: HttpRequest) -> Host | None:
    raw = request.POST.get("host") or request.GET.get("host")
    if not _an_id(raw):
        return None
    return Host.objects.filter(pk=int(raw), archived=False).first()


@require_http_methods(["GET", "POST"])
@requires(VIEW_REQUEST, REQUEST_DEPLOY)
def trial_new(request: HttpRequest) -> HttpResponse:
    """The trial form; `?host=` and `?candidate=` (a version's pk) fill it in."""
    host = _host_of(request)
    if request.method == "GET":
        initial: dict[str, Any] = {}
        if host is not None:
            initial["host"] = host.pk
        wanted = request.GET.getlist("candidate")
        if wanted:
            initial["candidates"] = [w for w in wanted[:50] if _an_id(w)]
        form = TrialForm(initial=initial, host=host)
        return render(request, "deploys/trial_new.html", {"form": form, "host": host})
    sent = request.POST.copy()  # ids no database holds are left out: "choose one"
    for name in ("host", "candidates"):
        sent.setlist(name, [v for v in sent.getlist(name)[:50] if _an_id(v)])
    form = TrialForm(sent, host=host)
    if form.is_valid():
        data = form.cleaned_data
        try:
            created = trial_request_create(
                host=data["host"],
                candidates=[
                    Candidate(v, unit_name=form.candidate_unit_name()) for v in data["candidates"]
                ],
                requested_by=request.user,
                production_unit=data["production_unit"],
                promote_threshold=data["promote_threshold"],
                keep=data["keep"],
                acknowledge_warnings=data["acknowledge_warnings"],
            )
        except ValidationError as exc:
            _errors(form, exc)
        else:
            messages.success(request, f"Trial #{created.pk} submitted for approval.")
            return redirect("deploys:request_detail", pk=created.pk)
    return render(request, "deploys/trial_new.html", {"form": form, "host": host}, status=200)


def _errors(form: TrialForm, exc: ValidationError) -> None:
    if hasattr(exc, "error_dict"):
        for field, errors in exc.message_dict.items():
            form.add_error(field if field in form.fields else None, errors)
    else:
        form.add_error(None, exc.messages)


def promote_url(request: DeployRequest, candidate: TrialCandidate) -> str | None:
    """A deploy request for the candidate's version on the trial's host, as its own unit,
    pre-filled; None when the version is not its profile's latest (a deploy needs that)."""
    version = candidate.profile_version
    if latest_version_number(profile_id=version.profile_id) != version.number:
        return None
    query = urlencode(
        {"profile_version": version.pk, "host": request.host_id, "unit_name": candidate.unit_name}
    )
    return f"{reverse('deploys:request_new')}?{query}"


def trial_context(deploy: DeployRequest) -> dict[str, Any]:
    """What the request page shows of a trial: production, the candidates with their
    outcome, the plan's end action, and a Promote link for a candidate that was faster."""
    if deploy.kind != DeployRequest.Kind.TRIAL:
        return {}
    candidates = candidates_of(deploy)
    labels = candidate_labels(candidates)
    plan = (deploy.job_settings or {}).get("trial") or {}
    promoted = any(c.outcome == Outcome.PROMOTED for c in candidates)
    rows = [
        {
            "c": c,
            "label": labels[c.position],
            "changes": change_words(c.figures or {}),
            "promote": promote_url(deploy, c)
            if c.outcome == Outcome.FASTER and deploy.finished and not promoted
            else None,
        }
        for c in candidates
    ]
    versions = versions_by_sha([deploy.unit_sha256]).get(deploy.unit_sha256, ())
    return {
        "trial": {
            "rows": rows,
            "end": plan.get("end", ""),
            "threshold": deploy.trial_promote_pct,
            "production_versions": ", ".join(str(v) for v in versions),
        }
    }


__all__ = ["promote_url", "trial_context", "trial_new"]
