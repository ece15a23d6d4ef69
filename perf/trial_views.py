"""A trial's results page (every candidate beside production's baseline, the charts, every
level) and its JSON / CSV export (`perf.trial_page`). Thin."""

from __future__ import annotations

from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render

from deploys.ids import row_id
from deploys.models import DeployRequest
from deploys.permissions import VIEW_REQUEST
from perf.compare_views import VIEW
from perf.exports import export_response
from perf.trial_page import TrialResults, trial_results
from perf.trial_results import comparison_columns
from specadmin.access import requires


def _results(pk: int) -> TrialResults:
    deploy = (
        DeployRequest.objects.filter(pk=row_id(pk) or 0, kind=DeployRequest.Kind.TRIAL)
        .select_related("host", "profile_version__profile")
        .first()
    )
    if deploy is None:
        raise Http404("No such trial.")
    return trial_results(deploy)


@requires(VIEW_REQUEST, VIEW)
def trial_results_page(request: HttpRequest, pk: int) -> HttpResponse:
    results = _results(pk)
    return render(
        request,
        "perf/trial_results.html",
        {"results": results, "deploy": results.deploy, "comparison": results.comparison},
    )


@requires(VIEW_REQUEST, VIEW)
def trial_results_export(request: HttpRequest, pk: int, fmt: str) -> HttpResponse:
    results = _results(pk)
    body = {"trial": results.deploy.pk, **results.comparison.export()}
    stem = f"trial-{results.deploy.pk}-{results.deploy.host.name}"
    return export_response(body, comparison_columns(), stem=stem, fmt=fmt)


__all__ = ["trial_results_export", "trial_results_page"]
