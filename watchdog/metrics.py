"""vLLM's /metrics (Prometheus text format) reduced to the few series the checks use.

Names as vLLM v1 exports them (vllm/v1/metrics/loggers.py): `vllm:num_requests_running`
(gauge), `vllm:generation_tokens_total`, and, only with a speculative config,
`vllm:spec_decode_num_draft_tokens_total` and `vllm:spec_decode_num_accepted_tokens_total`
(counters). A server with several engines or models has one series per label set: the
sum is the server's figure. Pure: no I/O.
"""

from __future__ import annotations

import math
import re
from dataclasses import asdict, dataclass
from typing import Any

RUNNING = "vllm:num_requests_running"
WAITING = "vllm:num_requests_waiting"
GENERATED = "vllm:generation_tokens_total"
DRAFT_TOKENS = "vllm:spec_decode_num_draft_tokens_total"
ACCEPTED = "vllm:spec_decode_num_accepted_tokens_total"
WANTED = (RUNNING, WAITING, GENERATED, DRAFT_TOKENS, ACCEPTED)
# `name{labels} value [timestamp]`; label values may hold spaces and escaped quotes.
_SAMPLE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(?:[^"}]|"(?:[^"\\]|\\.)*")*\})?\s+(\S+)')


class MetricsUnreadable(ValueError):
    """Not vLLM's /metrics: the message says what was missing."""


@dataclass(frozen=True)
class Sample:
    """One reading of the server's counters at wall-clock time `at` (seconds)."""

    at: float
    running: float
    waiting: float
    generated: float
    draft_tokens: float | None  # None: no speculative decoding counters
    accepted: float | None

    def as_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Sample:
        return cls(
            at=float(data["at"]),
            running=float(data.get("running", 0)),
            waiting=float(data.get("waiting", 0)),
            generated=float(data.get("generated", 0)),
            draft_tokens=_opt(data.get("draft_tokens")),
            accepted=_opt(data.get("accepted")),
        )


def _opt(value: Any) -> float | None:
    return None if value is None else float(value)


def parse(text: str, at: float) -> Sample:
    """The sums of the wanted series; MetricsUnreadable without the generation counter."""
    sums: dict[str, float] = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        match = _SAMPLE.match(line)
        if not match or match.group(1) not in WANTED:
            continue
        try:
            value = float(match.group(3))
        except ValueError:
            continue
        if math.isnan(value) or math.isinf(value):
            continue
        sums[match.group(1)] = sums.get(match.group(1), 0.0) + value
    if GENERATED not in sums or RUNNING not in sums:
        raise MetricsUnreadable(f"no {GENERATED} or {RUNNING} series: not vLLM's /metrics")
    return Sample(
        at=at,
        running=sums[RUNNING],
        waiting=sums.get(WAITING, 0.0),
        generated=sums[GENERATED],
        draft_tokens=sums.get(DRAFT_TOKENS),
        accepted=sums.get(ACCEPTED),
    )


def tokens_per_second(older: Sample, newer: Sample) -> float | None:
    """Generation throughput between two samples; None across a restart (counter reset)."""
    span = newer.at - older.at
    grown = newer.generated - older.generated
    if span <= 0 or grown < 0:
        return None
    return grown / span


__all__ = ["MetricsUnreadable", "Sample", "parse", "tokens_per_second"]
