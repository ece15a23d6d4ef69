"""Import a `vllm bench serve --save-result` JSON file into the servebench schema.

Source of the file's keys: vllm/benchmarks/serve.py `benchmark` (the `result` dict) and
`main` (adds `date`, `backend`, `model_id`, `num_prompts`, `request_rate`,
`max_concurrency`, ...). With the raw per-request lists (`ttfts`, `itls`, `latencies`,
`output_lens`, `errors`) — always written by `--save-result` unless `--save-detailed` is
off in newer versions — the summary is recomputed with servebench's own code, so both
engines' numbers come from one definition. Without them the file's own summary is used
(p90 then stays 0 when vLLM did not compute it).
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from servebench.metrics import summarize
from servebench.schema import (
    ENGINE_VLLM,
    BenchResult,
    Distribution,
    LevelResult,
    RequestRecord,
    SpecDecodeStats,
)


class VllmResultError(ValueError):
    """The file is not a `vllm bench serve` result; says what is missing."""


def load_vllm_result(path: str | Path) -> BenchResult:
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise VllmResultError(f"{path}: cannot read a vllm bench serve result: {exc}") from None
    return from_vllm_dict(data, source=str(path))


def from_vllm_dict(data: Any, source: str = "vllm result") -> BenchResult:
    if not isinstance(data, dict):
        raise VllmResultError(f"{source}: expected a JSON object")
    missing = [k for k in ("duration", "completed") if k not in data]
    if missing:
        raise VllmResultError(f"{source}: not a vllm bench serve result (no {', '.join(missing)})")
    concurrency = data.get("max_concurrency")
    rate = _rate(data.get("request_rate"))
    spec = _spec(data)
    if isinstance(data.get("ttfts"), list) and isinstance(data.get("latencies"), list):
        level = summarize(
            _records(data),
            float(data["duration"]),
            concurrency=concurrency,
            request_rate=rate,
            spec_decode=spec,
        )
    else:
        level = _from_summary(data, concurrency, rate, spec)
    settings = {
        key: data.get(key)
        for key in (
            "backend",
            "endpoint_type",
            "model_id",
            "tokenizer_id",
            "num_prompts",
            "request_rate",
            "burstiness",
            "max_concurrency",
        )
        if key in data
    }
    rate = settings.get("request_rate")
    if isinstance(rate, float) and math.isinf(rate):
        settings["request_rate"] = None  # JSON has no infinity
    return BenchResult(
        engine=ENGINE_VLLM,
        settings=settings,
        levels=[level],
        started_at=str(data.get("date", "")),
        model=str(data.get("model_id", "")),
        incomplete=level.incomplete,
    )


def _rate(value: Any) -> float | None:
    try:
        rate = float(value)
    except (TypeError, ValueError):
        return None
    return None if math.isinf(rate) else rate


def _records(data: dict[str, Any]) -> list[RequestRecord]:
    n = len(data["ttfts"])
    errors = data.get("errors") or [""] * n
    output_lens = data.get("output_lens") or [0] * n
    input_lens = data.get("input_lens") or [0] * n
    itls = data.get("itls") or [[] for _ in range(n)]
    starts = data.get("start_times") or [0.0] * n
    first_start = min(starts) if starts else 0.0
    records = []
    for i in range(n):
        error = errors[i] or ""
        records.append(
            RequestRecord(
                success=not error,
                prompt_tokens=int(input_lens[i] or 0),
                output_tokens=int(output_lens[i] or 0),
                ttft_s=float(data["ttfts"][i] or 0.0),
                itl_s=[float(x) for x in itls[i] or []],
                latency_s=float(data["latencies"][i] or 0.0),
                start_s=float(starts[i] or 0.0) - first_start,
                error=error.strip().splitlines()[-1] if error else "",
            )
        )
    return records


def _dist(data: dict[str, Any], metric: str) -> Distribution:
    return Distribution(
        mean=float(data.get(f"mean_{metric}_ms") or 0.0),
        median=float(data.get(f"median_{metric}_ms") or 0.0),
        std=float(data.get(f"std_{metric}_ms") or 0.0),
        p90=float(data.get(f"p90_{metric}_ms") or 0.0),
        p99=float(data.get(f"p99_{metric}_ms") or 0.0),
        count=int(data.get("completed") or 0),
    )


def _from_summary(
    data: dict[str, Any], concurrency: int | None, rate: float | None, spec: SpecDecodeStats | None
) -> LevelResult:
    failed = int(data.get("failed") or 0)
    return LevelResult(
        concurrency=concurrency,
        request_rate=rate,
        duration_s=float(data["duration"]),
        completed=int(data["completed"]),
        failed=failed,
        total_input_tokens=int(data.get("total_input_tokens") or 0),
        total_output_tokens=int(data.get("total_output_tokens") or 0),
        request_throughput=float(data.get("request_throughput") or 0.0),
        output_throughput=float(data.get("output_throughput") or 0.0),
        ttft_ms=_dist(data, "ttft"),
        tpot_ms=_dist(data, "tpot"),
        itl_ms=_dist(data, "itl"),
        e2el_ms=_dist(data, "e2el"),
        spec_decode=spec,
        incomplete=failed > 0,
    )


def _spec(data: dict[str, Any]) -> SpecDecodeStats | None:
    if "spec_decode_acceptance_rate" not in data:
        return None
    return SpecDecodeStats(
        num_drafts=int(data.get("spec_decode_num_drafts") or 0),
        draft_tokens=int(data.get("spec_decode_draft_tokens") or 0),
        accepted_tokens=int(data.get("spec_decode_accepted_tokens") or 0),
        acceptance_rate=float(data["spec_decode_acceptance_rate"]),
        acceptance_length=float(data.get("spec_decode_acceptance_length") or 0.0),
        per_position_acceptance_rates=list(
            data.get("spec_decode_per_position_acceptance_rates") or []
        ),
    )
