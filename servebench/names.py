"""The names a person reads for each metric, in one place.

Code, stored JSON and the gate keep the short keys (`tpot_p50_ms`); every page, chart,
export header, step header and gate sentence shows the name and unit here. Keys of a
level (servebench.gate.METRICS) and of a stored run's summary (perf.BenchRun columns)
both appear, so either can be named.
"""

from __future__ import annotations

from typing import NamedTuple


class MetricName(NamedTuple):
    name: str  # "TTFT p50"
    unit: str  # "ms"
    higher_is_better: bool


METRIC_NAMES: dict[str, MetricName] = {
    "output_throughput": MetricName("Output tokens/s", "tok/s", True),
    "output_tok_s": MetricName("Output tokens/s", "tok/s", True),
    "request_throughput": MetricName("Requests/s", "req/s", True),
    "ttft_p50_ms": MetricName("TTFT p50", "ms", False),
    "ttft_p99_ms": MetricName("TTFT p99", "ms", False),
    "tpot_p50_ms": MetricName("TPOT p50", "ms", False),
    "tpot_p99_ms": MetricName("TPOT p99", "ms", False),
    "itl_p50_ms": MetricName("ITL p50", "ms", False),
    "e2el_p50_ms": MetricName("Latency p50", "ms", False),
    "acceptance_rate": MetricName("Acceptance rate", "%", True),
    "acceptance_length": MetricName("Acceptance length", "tokens/step", True),
}


def metric_name(key: str) -> str:
    """ "TTFT p50" for `ttft_p50_ms`; an unknown key is shown as it is."""
    known = METRIC_NAMES.get(key)
    return known.name if known else key


def metric_unit(key: str) -> str:
    known = METRIC_NAMES.get(key)
    return known.unit if known else ""


def metric_label(key: str) -> str:
    """ "TTFT p50 (ms)": a column header or an axis title."""
    unit = metric_unit(key)
    return f"{metric_name(key)} ({unit})" if unit else metric_name(key)


def streams(concurrency: int | None) -> str:
    """ "1 stream", "32 streams", "unlimited streams" (a concurrency level in words)."""
    if concurrency is None:
        return "unlimited streams"
    return f"{concurrency} stream" + ("" if concurrency == 1 else "s")


__all__ = ["METRIC_NAMES", "MetricName", "metric_label", "metric_name", "metric_unit", "streams"]
