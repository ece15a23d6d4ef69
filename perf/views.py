"""Results pages: every (profile, host) measured; one page per pair with its runs, charts
(Chart.js specs from perf.charts, each with its table) and two runs side by side; one page
per host comparing chosen runs of any profiles against a reference, exported as JSON or
CSV; accepting a run as the baseline (audited, perf.services.accept_baseline)."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST

from deploys.ids import row_id
from deploys.models import Host
from perf import charts
from perf.comparison import compare_runs, export_columns, export_rows
from perf.exports import export_response
from perf.forms import BenchPolicyForm
from perf.models import BenchRun
from perf.selectors import (
    POLICY_FIELDS,
    baseline_for,
    host_runs,
    hosts_with_runs,
    policy_for,
    profile_host_pairs,
    runs_for,
)
from perf.services import accept_baseline, save_policy
from servebench.names import METRIC_NAMES, metric_label
from servebench.schema import BenchResult
from specadmin.access import MissingPermission, requires
from units.models import ServiceProfile

VIEW = "perf.view_benchrun"
ACCEPT = "perf.accept_baseline"
PLOTTED_RUNS = 40


COMPARED_AT_MOST = 12  # runs on one host page's charts


@requires(VIEW)
def results_index(request: HttpRequest) -> HttpResponse:
    return render(
        request, "perf/index.html", {"pairs": profile_host_pairs(), "hosts": hosts_with_runs()}
    )


def _label(run: BenchRun) -> str:
    version = f"v{run.profile_version.number}" if run.profile_version else "—"
    return f"{version} #{run.pk}"


def _levels(run: BenchRun) -> list[dict[str, Any]]:
    """Per level and repeat: the figures of the side-by-side table."""
    result = BenchResult.from_dict(run.result)
    rows = []
    for lv in result.levels:
        rows.append(
            {
                "concurrency": lv.concurrency,
                "repeat": lv.repeat + 1,
                "completed": lv.completed,
                "failed": lv.failed,
                "tok_s": lv.output_throughput,
                "ttft_p50": lv.ttft_ms.median,
                "ttft_p99": lv.ttft_ms.p99,
                "tpot_p50": lv.tpot_ms.median,
                "tpot_p99": lv.tpot_ms.p99,
                "itl_p50": lv.itl_ms.median,
                "accept": lv.spec_decode.acceptance_rate if lv.spec_decode else None,
                "accept_len": lv.spec_decode.acceptance_length if lv.spec_decode else None,
            }
        )
    return rows


def _samples(run: BenchRun, metric: str) -> list[float]:
    """Per-request samples of the run's first concurrency level, all repeats."""
    result = BenchResult.from_dict(run.result)
    if not result.concurrencies:
        return []
    return [v for lv in result.repeats_of(result.concurrencies[0]) for v in lv.samples_ms(metric)]


def _pick(runs: list[BenchRun], raw: str | None, default: BenchRun | None) -> BenchRun | None:
    wanted = row_id(raw)
    if wanted is not None:
        return next((r for r in runs if r.pk == wanted), default)
    return default


@requires(VIEW)
def results(request: HttpRequest, profile_id: int, host_id: int) -> HttpResponse:
    if row_id(profile_id) is None or row_id(host_id) is None:
        return render(request, "perf/results.html", {"runs": [], "empty": True}, status=404)
    runs = list(runs_for(profile_id, host_id)[:200])
    if not runs:
        return render(request, "perf/results.html", {"runs": [], "empty": True}, status=404)
    profile, host = runs[0].profile, runs[0].host
    baseline = baseline_for(profile, host)
    base_run = baseline.run if baseline else None
    latest = runs[0]
    a = _pick(runs, request.GET.get("a"), base_run or (runs[1] if len(runs) > 1 else latest))
    b = _pick(runs, request.GET.get("b"), latest)
    plotted = list(reversed(runs[:PLOTTED_RUNS]))
    pair = [r for r in (a, b) if r is not None]
    if len(pair) == 2 and pair[0].pk == pair[1].pk:
        pair = pair[:1]
    shown = [
        charts.across_deploys(
            [
                charts.Point(_label(r), r.output_tok_s, r.verdict == BenchRun.Verdict.REGRESSED)
                for r in plotted
                if r.output_tok_s is not None
            ],
            chart_id="chart-deploys",
            title="Output tokens/s across deploys (lowest concurrency, median of repeats)",
            metric="output_tok_s",
            baseline=base_run.output_tok_s if base_run else None,
        )
    ]
    accepted = [
        charts.Point(_label(r), r.acceptance_rate) for r in plotted if r.acceptance_rate is not None
    ]
    if accepted:
        shown.append(
            charts.across_deploys(
                accepted,
                chart_id="chart-acceptance",
                title="Speculative decoding acceptance rate across deploys",
                metric="acceptance_rate",
                baseline=None,
            )
        )
    for metric, name in (("ttft", "TTFT"), ("tpot", "TPOT")):
        shown.append(
            charts.percentiles(
                [(_label(r), _samples(r, metric)) for r in pair],
                chart_id=f"chart-{metric}",
                metric=name,
                title=f"{name} per request: p50, p90 and p99 of the two runs side by side",
            )
        )
    return render(
        request,
        "perf/results.html",
        {
            "profile": profile,
            "host": host,
            "runs": runs,
            "baseline": baseline,
            "side_by_side": [{"run": r, "label": _label(r), "levels": _levels(r)} for r in pair],
            "charts": shown,
            "names": {key: metric_label(key) for key in METRIC_NAMES},
            "can_accept": request.user.has_perm(ACCEPT),
        },
    )


def _chosen(request: HttpRequest, runs: list[BenchRun]) -> tuple[list[BenchRun], BenchRun | None]:
    """The runs picked in the form (`run=…`, several) and the reference (`ref=…`); by
    default the newest run of each profile and the first profile's baseline."""
    by_id = {r.pk: r for r in runs}
    wanted = [row_id(v) for v in request.GET.getlist("run")]
    picked = [by_id[i] for i in dict.fromkeys(wanted) if i is not None and i in by_id]
    if not picked:
        newest: dict[int, BenchRun] = {}
        for run in runs:  # newest first
            newest.setdefault(run.profile_id, run)
        picked = list(newest.values())
    ref_id = row_id(request.GET.get("ref"))
    reference = by_id.get(ref_id) if ref_id is not None else None
    if reference is None and picked:
        baseline = baseline_for(picked[0].profile, picked[0].host)
        reference = baseline.run if baseline else picked[0]
        by_id.setdefault(reference.pk, reference)
    return picked[:COMPARED_AT_MOST], reference


def _host_comparison(request: HttpRequest, host: Host) -> dict[str, Any]:
    runs = list(host_runs(host)[:200])
    picked, reference = _chosen(request, runs)
    threshold = policy_for(reference.profile).threshold_pct if reference else 5.0
    name = f"reference run #{reference.pk}" if reference else "the reference"
    compared = compare_runs(picked, reference, threshold, name=name)
    return {
        "host": host,
        "runs": runs,
        "picked": {r.pk for r in picked},
        "reference": reference,
        "compared": compared,
        "threshold": threshold,
        "figure_names": [
            (key, METRIC_NAMES[key].name, METRIC_NAMES[key].unit) for key in FIGURE_COLUMNS
        ],
        "charts": [charts.throughput_vs_ttft(compared), charts.throughput_vs_concurrency(compared)],
        "query": request.GET.urlencode(),
    }


FIGURE_COLUMNS = (
    "output_tok_s",
    "ttft_p50_ms",
    "ttft_p99_ms",
    "tpot_p50_ms",
    "tpot_p99_ms",
    "acceptance_rate",
)


@requires(VIEW)
def host_results(request: HttpRequest, host_id: int) -> HttpResponse:
    """Chosen runs of any profiles on one host against a reference (charts and table)."""
    host = get_object_or_404(Host, pk=row_id(host_id) or 0)
    return render(request, "perf/host.html", _host_comparison(request, host))


@requires(VIEW)
def host_export(request: HttpRequest, host_id: int, fmt: str) -> HttpResponse:
    """The host page's comparison as JSON (rows, columns and each run's verdict) or CSV."""
    host = get_object_or_404(Host, pk=row_id(host_id) or 0)
    context = _host_comparison(request, host)
    rows = export_rows(context["compared"])
    columns = export_columns()
    body = {"host": host.name, "columns": dict(columns), "rows": rows}
    return export_response(body, columns, stem=f"benchmarks-{host.name}", fmt=fmt)


@require_POST
@requires(ACCEPT)
def accept(request: HttpRequest, run_id: int) -> HttpResponse:
    run = get_object_or_404(BenchRun, pk=run_id)
    reason = (request.POST.get("reason") or "").strip()
    if not reason:
        messages.error(request, "Say why this run becomes the baseline.")
    else:
        try:
            accept_baseline(run=run, actor=request.user, reason=reason)
            messages.success(request, f"Run #{run.pk} is now the baseline.")
        except ValueError as exc:
            messages.error(request, str(exc))
    return redirect("perf:results", profile_id=run.profile_id, host_id=run.host_id)


EDIT_POLICY = "perf.change_benchpolicy"


@requires(VIEW, "units.view_serviceprofile")
def policy_edit(request: HttpRequest, profile_id: int) -> HttpResponse:
    """A profile's benchmark settings: shown to viewers, changed (audited) by editors."""
    profile = get_object_or_404(ServiceProfile, pk=row_id(profile_id) or 0)
    policy = policy_for(profile)
    before = {name: getattr(policy, name) for name in POLICY_FIELDS}
    can_edit = request.user.has_perm(EDIT_POLICY) and not profile.archived
    form = BenchPolicyForm(request.POST if request.method == "POST" else None, instance=policy)
    if request.method == "POST":
        if not can_edit:
            raise MissingPermission([EDIT_POLICY])
        if form.is_valid():
            save_policy(policy=form.save(commit=False), actor=request.user, before=before)
            messages.success(
                request,
                f"Benchmark settings of {profile.name} saved; deploy requests made from now on "
                "carry them for approval.",
            )
            return redirect("perf:policy", profile_id=profile.pk)
    return render(
        request,
        "perf/policy_form.html",
        {"profile": profile, "form": form, "can_edit": can_edit, "saved": policy.pk is not None},
    )
