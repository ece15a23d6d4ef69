"""Stored benchmark runs without a server: results built from synthetic request records."""

from __future__ import annotations

import random
from typing import Any

from perf.models import BenchRun
from perf.services import compare_with_baseline, record_run
from servebench.metrics import summarize
from servebench.schema import BenchResult, RequestRecord, SpecDecodeStats

SETTINGS = {
    "endpoint": "completions",
    "prompts": "mix",
    "seed": 0,
    "max_tokens": 64,
    "concurrency": [1, 8],
    "num_requests": 12,
}


def synthetic_result(tok_s: float, *, accept: float | None = None, seed: int = 0) -> BenchResult:
    """Two repeats of concurrency 1 and 8 whose streams run at about `tok_s` each."""
    rng = random.Random(seed)
    levels = []
    for repeat in range(2):
        for conc in (1, 8):
            records = []
            for _ in range(12):
                tpot = 1 / (tok_s * rng.uniform(0.97, 1.03))
                ttft = rng.uniform(0.04, 0.09)
                records.append(
                    RequestRecord(
                        success=True,
                        prompt_tokens=50,
                        output_tokens=64,
                        ttft_s=ttft,
                        itl_s=[tpot] * 63,
                        latency_s=ttft + 63 * tpot,
                    )
                )
            duration = sum(r.latency_s for r in records) / conc
            spec = None
            if accept is not None:
                spec = SpecDecodeStats(
                    100, 300, int(300 * accept / 100), accept, 1 + 3 * accept / 100
                )
            level = summarize(
                records, duration, concurrency=conc, request_rate=None, spec_decode=spec
            )
            level.repeat = repeat
            levels.append(level)
    return BenchResult(engine="servebench", settings=dict(SETTINGS), levels=levels, model="m")


def stored_run(profile: Any, host: Any, tok_s: float, **kwargs: Any) -> BenchRun:
    run = record_run(
        result=synthetic_result(tok_s, **kwargs),
        profile=profile,
        host=host,
        profile_version=profile.versions.first(),
        url="http://127.0.0.1:8000",
    )
    compare_with_baseline(run, 5.0)
    run.refresh_from_db()
    return run
