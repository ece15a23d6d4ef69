"""Results pages: every (profile, host) measured, and one page per pair with its runs,
charts (server-rendered SVG, perf.charts) and two runs side by side; accepting a run as
the baseline (audited, perf.services.accept_baseline)."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.utils.safestring import mark_safe
from django.views.decorators.http import require_POST

from deploys.ids import row_id
from perf import charts
from perf.models import BenchRun
from perf.selectors import baseline_for, profile_host_pairs, runs_for
from perf.services import accept_baseline
from servebench.schema import BenchResult
from specadmin.access import requires

VIEW = "perf.view_benchrun"
ACCEPT = "perf.accept_baseline"
PLOTTED_RUNS = 40


@requires(VIEW)
def results_index(request: HttpRequest) -> HttpResponse:
    return render(request, "perf/index.html", {"pairs": profile_host_pairs()})


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
    tok = [
        charts.Point(_label(r), r.output_tok_s, r.verdict == BenchRun.Verdict.REGRESSED)
        for r in plotted
        if r.output_tok_s is not None
    ]
    acc = [
        charts.Point(_label(r), r.acceptance_rate) for r in plotted if r.acceptance_rate is not None
    ]
    pair = [r for r in (a, b) if r is not None]
    if len(pair) == 2 and pair[0].pk == pair[1].pk:
        pair = pair[:1]
    svg = {
        "tok": charts.line_chart(
            tok,
            title="Output tokens/s across deploys (lowest concurrency, median of repeats)",
            unit="tok/s",
            baseline=base_run.output_tok_s if base_run else None,
        ),
        "ttft": charts.distribution_strips(
            [(_label(r), _samples(r, "ttft")) for r in pair], title="TTFT per request", unit="ms"
        ),
        "tpot": charts.distribution_strips(
            [(_label(r), _samples(r, "tpot")) for r in pair], title="TPOT per request", unit="ms"
        ),
        "accept": charts.line_chart(acc, title="Speculative decoding acceptance rate", unit="%"),
    }
    return render(
        request,
        "perf/results.html",
        {
            "profile": profile,
            "host": host,
            "runs": runs,
            "baseline": baseline,
            "side_by_side": [{"run": r, "label": _label(r), "levels": _levels(r)} for r in pair],
            # perf.charts escapes every text it puts into the SVG
            "charts": {k: mark_safe(v) for k, v in svg.items()},
            "has_acceptance": bool(acc),
            "can_accept": request.user.has_perm(ACCEPT),
        },
    )


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
