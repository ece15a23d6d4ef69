"""Per-level metrics, defined exactly as `vllm bench serve` defines them.

Source: vllm/benchmarks/serve.py `calculate_metrics` (vllm-project/vllm):
- TTFT per request; TPOT = (E2EL - TTFT) / (output_tokens - 1) for requests with more than
  one output token; ITL = every gap between chunks (all requests pooled); E2EL per request;
- output throughput = sum of output tokens / level duration; request throughput =
  completed / duration; only successful requests count;
- mean, median, std and percentiles with numpy's default (linear) interpolation.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from servebench.schema import Distribution, LevelResult, RequestRecord, SpecDecodeStats


def percentile(values: Sequence[float], p: float) -> float:
    """numpy.percentile(values, p) with method='linear' (vLLM's call), without numpy."""
    if not values:
        return 0.0
    ordered = sorted(values)
    rank = (len(ordered) - 1) * p / 100
    low = math.floor(rank)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)


def distribution_ms(values_s: Sequence[float]) -> Distribution:
    """Summary in ms; an empty list gives zeros, as vLLM's `np.mean(x or 0)` does."""
    if not values_s:
        return Distribution()
    n = len(values_s)
    mean = math.fsum(values_s) / n
    std = math.sqrt(math.fsum((v - mean) ** 2 for v in values_s) / n)  # np.std: ddof=0
    return Distribution(
        mean=mean * 1000,
        median=percentile(values_s, 50) * 1000,
        std=std * 1000,
        p90=percentile(values_s, 90) * 1000,
        p99=percentile(values_s, 99) * 1000,
        count=n,
    )


def summarize(
    records: Sequence[RequestRecord],
    duration_s: float,
    *,
    concurrency: int | None,
    request_rate: float | None,
    spec_decode: SpecDecodeStats | None = None,
) -> LevelResult:
    """One level's result; failed requests count as failed and mark the level incomplete."""
    ok = [r for r in records if r.success]
    failed = [r for r in records if not r.success]
    errors: dict[str, int] = {}
    for r in failed:
        errors[r.error] = errors.get(r.error, 0) + 1
    tpots = [t for r in ok if (t := r.tpot_s) is not None]
    output_tokens = sum(r.output_tokens for r in ok)
    per_second = 1 / duration_s if duration_s > 0 else 0.0
    return LevelResult(
        concurrency=concurrency,
        request_rate=request_rate,
        duration_s=duration_s,
        completed=len(ok),
        failed=len(failed),
        total_input_tokens=sum(r.prompt_tokens for r in ok),
        total_output_tokens=output_tokens,
        request_throughput=len(ok) * per_second,
        output_throughput=output_tokens * per_second,
        ttft_ms=distribution_ms([r.ttft_s for r in ok]),
        tpot_ms=distribution_ms(tpots),
        itl_ms=distribution_ms([gap for r in ok for gap in r.itl_s]),
        e2el_ms=distribution_ms([r.latency_s for r in ok]),
        spec_decode=spec_decode,
        incomplete=bool(failed) or not records,
        errors=errors,
        requests=list(records),
    )
