""" "Compare these versions on host H": the newest run of each chosen profile version on the
host against a reference run (by default the first version's baseline there), with the
trial results' building block (perf.trial_results, templates/perf/_comparison.html) and its
JSON / CSV export. A trial's page renders the same include with its own runs."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render

from deploys.ids import row_id
from deploys.models import Host
from perf.exports import export_response
from perf.models import BenchRun
from perf.trial_results import (
    HostComparison,
    compare_on_host,
    comparison_columns,
    default_reference,
    newest_runs,
)
from specadmin.access import requires
from units.models import ProfileVersion

VIEW = "perf.view_benchrun"
AT_MOST = 16  # versions on one page


def _comparison(request: HttpRequest, host: Host) -> tuple[HostComparison, list[ProfileVersion]]:
    wanted = [row_id(v) for v in request.GET.getlist("version")][: AT_MOST + 1]
    ids = [i for i in dict.fromkeys(wanted) if i is not None]
    found = {v.pk: v for v in ProfileVersion.objects.filter(pk__in=ids).select_related("profile")}
    versions = [found[i] for i in ids if i in found]
    runs, missing = newest_runs(host, versions)
    ref_id = row_id(request.GET.get("ref"))
    reference = (
        BenchRun.objects.filter(pk=ref_id, host=host).select_related("profile").first()
        if ref_id is not None
        else None
    ) or default_reference(host, versions)
    name = "production" if reference is not None else "the reference"
    if reference is not None and request.GET.get("ref"):
        name = f"run #{reference.pk}"
    return compare_on_host(host, reference, runs, reference_name=name, missing=missing), versions


@requires(VIEW)
def compare_versions(request: HttpRequest, host_id: int) -> HttpResponse:
    host = get_object_or_404(Host, pk=row_id(host_id) or 0)
    comparison, versions = _comparison(request, host)
    return render(
        request,
        "perf/compare_versions.html",
        {
            "host": host,
            "comparison": comparison,
            "versions": versions,
            "query": request.GET.urlencode(),
            "too_many": len(request.GET.getlist("version")) > AT_MOST,
            "at_most": AT_MOST,
        },
    )


@requires(VIEW)
def compare_versions_export(request: HttpRequest, host_id: int, fmt: str) -> HttpResponse:
    host = get_object_or_404(Host, pk=row_id(host_id) or 0)
    comparison, _ = _comparison(request, host)
    stem = f"versions-{host.name}"
    return export_response(comparison.export(), comparison_columns(), stem=stem, fmt=fmt)


__all__ = ["compare_versions", "compare_versions_export"]
