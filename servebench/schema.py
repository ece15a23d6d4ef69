"""The result schema shared by servebench runs and imported `vllm bench serve` results.

Plain dataclasses with `to_dict`/`from_dict` so a result travels as JSON (CLI `--json`, the
Django app's database, the GPU machine's `$OUT`) and reads back into the same objects.
Times inside the schema are milliseconds (like `vllm bench serve --save-result`), except
the raw per-request samples, which keep seconds as measured.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field, fields, replace
from typing import Any

SCHEMA_VERSION = 1
ENGINE_SERVEBENCH = "servebench"
ENGINE_VLLM = "vllm-bench-serve"


@dataclass
class RequestRecord:
    """One request as the client saw it (vLLM's `RequestFuncOutput`, plus why it failed)."""

    success: bool = False
    prompt_tokens: int = 0
    output_tokens: int = 0  # usage.completion_tokens
    ttft_s: float = 0.0  # request sent → first chunk carrying `choices`
    itl_s: list[float] = field(default_factory=list)  # gap before each later chunk
    latency_s: float = 0.0  # E2EL: request sent → last chunk carrying `choices`
    start_s: float = 0.0  # when it was sent, seconds after its level started
    error: str = ""

    @property
    def tpot_s(self) -> float | None:
        """(E2EL - TTFT) / (output tokens - 1); None for answers of one token."""
        if self.output_tokens <= 1:
            return None
        return (self.latency_s - self.ttft_s) / (self.output_tokens - 1)


@dataclass
class Distribution:
    """Summary of one latency metric in milliseconds (numpy's linear percentiles)."""

    mean: float = 0.0
    median: float = 0.0
    std: float = 0.0
    p90: float = 0.0
    p99: float = 0.0
    count: int = 0


@dataclass
class SpecDecodeStats:
    """Speculative decoding over one level: the delta of vLLM's /metrics counters."""

    num_drafts: int
    draft_tokens: int
    accepted_tokens: int
    acceptance_rate: float  # percent of draft tokens accepted
    acceptance_length: float  # 1 + accepted / drafts: tokens per target-model step
    per_position_acceptance_rates: list[float] = field(default_factory=list)


@dataclass
class LevelResult:
    """One concurrency level (or request rate) of a run."""

    concurrency: int | None  # None: no limit (with a request rate)
    request_rate: float | None  # None: as fast as the concurrency allows
    duration_s: float
    completed: int
    failed: int
    total_input_tokens: int
    total_output_tokens: int
    request_throughput: float  # completed requests / s
    output_throughput: float  # output tokens / s
    ttft_ms: Distribution
    tpot_ms: Distribution
    itl_ms: Distribution
    e2el_ms: Distribution
    spec_decode: SpecDecodeStats | None = None
    incomplete: bool = False
    errors: dict[str, int] = field(default_factory=dict)  # message → how many requests
    requests: list[RequestRecord] = field(default_factory=list)
    repeat: int = 0  # which repeat of the run's level list this is

    def samples_ms(self, metric: str) -> list[float]:
        """Per-request values of ttft/tpot/e2el in ms (for distribution plots)."""
        ok = [r for r in self.requests if r.success]
        if metric == "ttft":
            return [r.ttft_s * 1000 for r in ok]
        if metric == "e2el":
            return [r.latency_s * 1000 for r in ok]
        if metric == "tpot":
            return [t * 1000 for r in ok if (t := r.tpot_s) is not None]
        raise ValueError(f"no per-request samples for {metric!r}; use ttft, tpot or e2el")


@dataclass
class BenchResult:
    """A whole run: its settings, one result per level, and whether it is complete."""

    engine: str
    settings: dict[str, Any]
    levels: list[LevelResult] = field(default_factory=list)
    started_at: str = ""
    model: str = ""
    incomplete: bool = False
    error: str = ""  # why the run stopped early, if it did
    schema: int = SCHEMA_VERSION

    def level(self, concurrency: int | None, repeat: int = 0) -> LevelResult | None:
        return next(
            (lv for lv in self.levels if lv.concurrency == concurrency and lv.repeat == repeat),
            None,
        )

    def repeats_of(self, concurrency: int | None) -> list[LevelResult]:
        """Every repeat measured at one concurrency, in run order."""
        return [lv for lv in self.levels if lv.concurrency == concurrency]

    @property
    def concurrencies(self) -> list[int | None]:
        return list(dict.fromkeys(lv.concurrency for lv in self.levels))

    def to_dict(self, *, with_requests: bool = True) -> dict[str, Any]:
        data = asdict(self)
        if not with_requests:
            for level in data["levels"]:
                level["requests"] = []
        return data

    def with_more_repeats(self, more: BenchResult) -> BenchResult:
        """This run and `more` (further repeats of the same settings) as one run: the
        levels of `more` numbered after this run's repeats."""
        offset = max((lv.repeat for lv in self.levels), default=-1) + 1
        added = [replace(lv, repeat=lv.repeat + offset) for lv in more.levels]
        repeats = offset + max((lv.repeat for lv in more.levels), default=-1) + 1
        return replace(
            self,
            levels=[*self.levels, *added],
            settings=self.settings | {"repeats": repeats},
            incomplete=self.incomplete or more.incomplete,
            error=self.error or more.error,
        )

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> BenchResult:
        """Read back what `to_dict` wrote; unknown keys are ignored (newer writers)."""
        if not isinstance(data, dict) or "levels" not in data:
            raise ValueError("not a servebench result: no 'levels'")
        levels = [_level_from_dict(lv) for lv in data["levels"]]
        return cls(**(_known(cls, data) | {"levels": levels}))


def _known(cls: type, data: dict[str, Any]) -> dict[str, Any]:
    names = {f.name for f in fields(cls)}
    return {k: v for k, v in data.items() if k in names}


def _level_from_dict(data: dict[str, Any]) -> LevelResult:
    values = _known(LevelResult, data)
    for name in ("ttft_ms", "tpot_ms", "itl_ms", "e2el_ms"):
        values[name] = Distribution(**_known(Distribution, data.get(name) or {}))
    spec = data.get("spec_decode")
    values["spec_decode"] = SpecDecodeStats(**_known(SpecDecodeStats, spec)) if spec else None
    values["requests"] = [
        RequestRecord(**_known(RequestRecord, r)) for r in data.get("requests") or []
    ]
    return LevelResult(**values)


# -- results from elsewhere ------------------------------------------------------------------
# A result that comes back from a host (the benchmark client run there) is data someone
# else printed: its shape and every number are checked before anything reads it.
MAX_LEVELS = 1_000
MAX_REQUESTS_PER_LEVEL = 100_000
MAX_ITL_PER_REQUEST = 100_000
_NUMBERS = {
    "duration_s",
    "request_throughput",
    "output_throughput",
}
_COUNTS = {"completed", "failed", "total_input_tokens", "total_output_tokens", "repeat"}
_DISTRIBUTIONS = ("ttft_ms", "tpot_ms", "itl_ms", "e2el_ms")


def validate_result(data: Any) -> BenchResult:
    """`data` as a BenchResult, or ValueError saying what is wrong and where
    ("levels[2].ttft_ms.median: expected a finite number, got 'NaN'")."""
    if not isinstance(data, dict):
        raise ValueError(f"result: expected an object, got {type(data).__name__}")
    levels = data.get("levels")
    if not isinstance(levels, list) or len(levels) > MAX_LEVELS:
        raise ValueError(f"result.levels: expected a list of at most {MAX_LEVELS:,} levels")
    for key in ("engine", "started_at", "model", "error"):
        if not isinstance(data.get(key, ""), str):
            raise ValueError(f"result.{key}: expected text")
    if not isinstance(data.get("settings", {}), dict):
        raise ValueError("result.settings: expected an object")
    for i, level in enumerate(levels):
        _check_level(level, f"levels[{i}]")
    return BenchResult.from_dict(data)


def _number(value: Any, where: str, *, whole: bool = False) -> None:
    kinds = (int,) if whole else (int, float)
    if isinstance(value, bool) or not isinstance(value, kinds) or not math.isfinite(value):
        what = "a whole number" if whole else "a finite number"
        raise ValueError(f"{where}: expected {what}, got {str(value)[:40]!r}")
    if value < 0:
        raise ValueError(f"{where}: expected no negative value, got {value}")


def _check_level(level: Any, where: str) -> None:
    if not isinstance(level, dict):
        raise ValueError(f"{where}: expected an object")
    for key in _NUMBERS:
        _number(level.get(key), f"{where}.{key}")
    for key in _COUNTS:
        _number(level.get(key, 0), f"{where}.{key}", whole=True)
    concurrency = level.get("concurrency")
    if concurrency is not None:
        _number(concurrency, f"{where}.concurrency", whole=True)
    for name in _DISTRIBUTIONS:
        dist = level.get(name)
        if not isinstance(dist, dict):
            raise ValueError(f"{where}.{name}: expected an object")
        for key, value in dist.items():
            _number(value, f"{where}.{name}.{key}", whole=key == "count")
    errors = level.get("errors", {})
    if not isinstance(errors, dict) or not all(isinstance(n, int) for n in errors.values()):
        raise ValueError(f"{where}.errors: expected message → count")
    _check_requests(level.get("requests", []), f"{where}.requests")


def _check_requests(requests: Any, where: str) -> None:
    if not isinstance(requests, list) or len(requests) > MAX_REQUESTS_PER_LEVEL:
        raise ValueError(f"{where}: expected a list of at most {MAX_REQUESTS_PER_LEVEL:,}")
    for i, record in enumerate(requests):
        if not isinstance(record, dict):
            raise ValueError(f"{where}[{i}]: expected an object")
        for key in ("ttft_s", "latency_s", "start_s"):
            _number(record.get(key, 0.0), f"{where}[{i}].{key}")
        for key in ("prompt_tokens", "output_tokens"):
            _number(record.get(key, 0), f"{where}[{i}].{key}", whole=True)
        itl = record.get("itl_s", [])
        if not isinstance(itl, list) or len(itl) > MAX_ITL_PER_REQUEST:
            raise ValueError(
                f"{where}[{i}].itl_s: expected a list of at most {MAX_ITL_PER_REQUEST:,}"
            )
        for j, gap in enumerate(itl):
            _number(gap, f"{where}[{i}].itl_s[{j}]")
