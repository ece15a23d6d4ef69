"""A benchmark run: model lookup, probe and warm-up, then each concurrency level.

The order follows `vllm bench serve` (vllm/benchmarks/serve.py `benchmark`): one probe
request that must succeed, optional warm-up requests (not measured), then the measured
requests; the level's duration runs from its first send to its last completion, and the
spec-decode counters are read from /metrics right before and after the level.

Levels run closed-loop (`concurrency` streams, each sending its next request when the last
one ends) or, with a request rate, open-loop: sends follow a seeded Poisson process and at
most `concurrency` are in flight. A server that stops accepting connections ends the run
early; everything measured so far is kept and the result is marked incomplete.
"""

from __future__ import annotations

import asyncio
import json
import random
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from typing import Any

import aiohttp

from servebench.client import ENDPOINTS, UNREACHABLE, build_payload, send_streaming
from servebench.metrics import summarize
from servebench.prompts import Prompt, PromptError, select_prompts
from servebench.schema import ENGINE_SERVEBENCH, BenchResult, LevelResult, RequestRecord
from servebench.specdecode import SpecCounters, parse_spec_counters, spec_delta

CANCELLED = "cancelled"


class BenchError(Exception):
    """The run could not start: what was tried and what came back."""


@dataclass
class RunSettings:
    """Everything that decides what is measured; stored with the result (same settings →
    comparable results)."""

    url: str
    endpoint: str = "completions"
    model: str | None = None  # None: the first model the server lists
    prompts: str = "mix"  # a built-in set (prompts.BUILTIN_SETS) or a JSONL path
    seed: int = 0
    max_tokens: int = 256
    ignore_eos: bool = True
    concurrency: list[int | None] = field(default_factory=lambda: [1])
    num_requests: int | None = 32  # per level; None with a duration
    duration_s: float | None = None
    warmup: int = 2
    request_rate: float | None = None
    repeats: int = 1
    stall_timeout_s: float = 60.0
    api_key: str | None = None

    def __post_init__(self) -> None:
        self.url = self.url.rstrip("/")
        problems = [*self._request_problems(), *self._level_problems()]
        if self.repeats < 1 or self.warmup < 0 or self.stall_timeout_s <= 0:
            problems.append("repeats ≥ 1, warmup ≥ 0 and stall timeout > 0")
        if problems:
            raise ValueError("; ".join(problems))

    def _request_problems(self) -> list[str]:
        """What each request is and how many a level sends."""
        problems = []
        if self.endpoint not in ENDPOINTS:
            problems.append(f"endpoint must be one of {', '.join(ENDPOINTS)}")
        if (self.num_requests is None) == (self.duration_s is None):
            problems.append("give either a number of requests or a duration, not both")
        if self.num_requests is not None and self.num_requests < 1:
            problems.append("number of requests must be at least 1")
        if self.duration_s is not None and self.duration_s <= 0:
            problems.append("duration must be positive")
        if self.max_tokens < 1:
            problems.append("max_tokens must be at least 1")
        return problems

    def _level_problems(self) -> list[str]:
        """How requests are sent: the concurrency levels and the request rate."""
        problems = []
        if not self.concurrency or any(c is not None and c < 1 for c in self.concurrency):
            problems.append("concurrency levels must be positive integers")
        if None in self.concurrency and not self.request_rate:
            problems.append("an unlimited concurrency needs a request rate")
        if self.request_rate is not None and self.request_rate <= 0:
            problems.append("request rate must be positive")
        return problems

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data.pop("api_key")  # never stored with a result
        return data


@dataclass
class Progress:
    """Where a run is; handed to the progress callback after every request."""

    repeat: int
    repeats: int
    level_index: int
    levels: int
    concurrency: int | None
    done: int
    failed: int
    total: int | None
    elapsed_s: float
    duration_s: float | None


ProgressCallback = Callable[[Progress], None]


async def run(
    settings: RunSettings,
    progress: ProgressCallback | None = None,
    should_stop: Callable[[], bool] | None = None,
) -> BenchResult:
    """Measure every level `settings.repeats` times; raises BenchError only before the start.

    `should_stop` is asked before each request: once it says True no request is sent, the
    ones in flight finish, and the result is incomplete with the error "cancelled".
    """
    headers = {"Authorization": f"Bearer {settings.api_key}"} if settings.api_key else None
    connector = aiohttp.TCPConnector(limit=0, enable_cleanup_closed=True)
    async with aiohttp.ClientSession(connector=connector, headers=headers) as session:
        return await _Run(settings, session, progress, should_stop).execute()


def run_sync(
    settings: RunSettings,
    progress: ProgressCallback | None = None,
    should_stop: Callable[[], bool] | None = None,
) -> BenchResult:
    return asyncio.run(run(settings, progress, should_stop))


class _Run:
    def __init__(
        self,
        settings: RunSettings,
        session: aiohttp.ClientSession,
        progress: ProgressCallback | None,
        should_stop: Callable[[], bool] | None = None,
    ) -> None:
        self.s = settings
        self.should_stop = should_stop
        self.session = session
        self.progress = progress
        self.url = settings.url + ENDPOINTS[settings.endpoint]
        self.ignore_eos = settings.ignore_eos
        self.model = settings.model or ""
        self.aborted = ""

    async def execute(self) -> BenchResult:
        s = self.s
        # timezone.utc, not datetime.UTC: the client also runs under a host's Python 3.10
        now = datetime.now(timezone.utc)  # noqa: UP017
        started_at = now.isoformat(timespec="seconds")
        self.model = s.model or await self._first_model()
        try:  # a duration-bound level cycles through 4,096 prompts
            prompts = select_prompts(s.prompts, s.num_requests or 4096, s.seed)
        except PromptError as exc:
            raise BenchError(str(exc)) from None
        await self._probe_and_warm_up(prompts)
        result = BenchResult(
            engine=ENGINE_SERVEBENCH,
            settings=s.to_dict() | {"ignore_eos": self.ignore_eos},
            started_at=started_at,
            model=self.model,
        )
        for repeat in range(s.repeats):
            for index, concurrency in enumerate(s.concurrency):
                level = await self._level(prompts, concurrency, repeat, index)
                result.levels.append(level)
                if self.aborted:
                    break
            if self.aborted:
                break
        result.error = self.aborted
        result.incomplete = bool(self.aborted) or any(lv.incomplete for lv in result.levels)
        return result

    async def _get(self, path: str) -> tuple[int, str]:
        timeout = aiohttp.ClientTimeout(total=30)
        async with self.session.get(self.s.url + path, timeout=timeout) as resp:
            return resp.status, await resp.text(errors="replace")

    async def _first_model(self) -> str:
        try:
            status, body = await self._get("/v1/models")
        except (aiohttp.ClientError, TimeoutError) as exc:
            raise BenchError(f"{UNREACHABLE} at {self.s.url}/v1/models ({exc})") from None
        if status != 200:
            raise BenchError(f"{self.s.url}/v1/models answered HTTP {status}: {body[:200]}")
        try:
            model: str = json.loads(body)["data"][0]["id"]
            return model
        except (ValueError, KeyError, IndexError, TypeError):
            raise BenchError(f"{self.s.url}/v1/models lists no model: {body[:200]}") from None

    async def _send(self, prompt: Prompt, started_at: float) -> RequestRecord:
        payload = build_payload(
            self.s.endpoint, self.model, prompt, self.s.max_tokens, ignore_eos=self.ignore_eos
        )
        return await send_streaming(
            self.session,
            self.url,
            payload,
            stall_timeout_s=self.s.stall_timeout_s,
            started_at=started_at,
        )

    async def _probe_and_warm_up(self, prompts: list[Prompt]) -> None:
        """One request must succeed before anything is measured (as vLLM's initial test run).

        A server that rejects vLLM's `ignore_eos` (HTTP 400 naming it) is asked again
        without it; the result's settings then say `ignore_eos: false`.
        """
        probe = await self._send(prompts[0], time.perf_counter())
        if not probe.success and probe.error.startswith("HTTP 400") and "ignore_eos" in probe.error:
            self.ignore_eos = False
            probe = await self._send(prompts[0], time.perf_counter())
        if not probe.success:
            raise BenchError(f"the first request to {self.url} failed: {probe.error}")
        if self.s.warmup:
            limit = asyncio.Semaphore(max(c or 1 for c in self.s.concurrency))

            async def one(prompt: Prompt) -> None:
                async with limit:
                    await self._send(prompt, 0.0)

            await asyncio.gather(*(one(prompts[i % len(prompts)]) for i in range(self.s.warmup)))

    async def _spec_counters(self) -> SpecCounters | None:
        try:
            status, body = await self._get("/metrics")
        except (aiohttp.ClientError, TimeoutError):
            return None
        return parse_spec_counters(body) if status == 200 else None

    async def _level(
        self, prompts: list[Prompt], concurrency: int | None, repeat: int, index: int
    ) -> LevelResult:
        before = await self._spec_counters()
        level_run = _LevelRun(self, prompts, concurrency, repeat, index)
        if self.s.request_rate is None:
            await level_run.closed_loop()
        else:
            await level_run.open_loop(self.s.request_rate)
        duration = time.perf_counter() - level_run.start
        after = await self._spec_counters()
        level = summarize(
            level_run.records,
            duration,
            concurrency=concurrency,
            request_rate=self.s.request_rate,
            spec_decode=spec_delta(before, after),
        )
        level.repeat = repeat
        return level


class _LevelRun:
    """The requests of one concurrency level: which prompt goes next, when the level has
    sent enough, and the records of what came back."""

    def __init__(
        self,
        run: _Run,
        prompts: list[Prompt],
        concurrency: int | None,
        repeat: int,
        index: int,
    ) -> None:
        self.run = run
        self.prompts = prompts
        self.concurrency = concurrency
        self.repeat = repeat
        self.index = index
        self.records: list[RequestRecord] = []
        self.start = time.perf_counter()
        duration_s = run.s.duration_s
        self.deadline = self.start + duration_s if duration_s else None
        self.next_index = 0

    def report(self) -> None:
        if not self.run.progress:
            return
        s = self.run.s
        self.run.progress(
            Progress(
                repeat=self.repeat,
                repeats=s.repeats,
                level_index=self.index,
                levels=len(s.concurrency),
                concurrency=self.concurrency,
                done=len(self.records),
                failed=sum(1 for r in self.records if not r.success),
                total=s.num_requests,
                elapsed_s=time.perf_counter() - self.start,
                duration_s=s.duration_s,
            )
        )

    def take(self) -> Prompt | None:
        """The next request's prompt, or None when the level has sent enough."""
        run = self.run
        if not run.aborted and run.should_stop is not None and run.should_stop():
            run.aborted = CANCELLED
        total = run.s.num_requests
        if run.aborted or (total is not None and self.next_index >= total):
            return None
        if self.deadline is not None and time.perf_counter() >= self.deadline:
            return None
        prompt = self.prompts[self.next_index % len(self.prompts)]
        self.next_index += 1
        return prompt

    async def send(self, prompt: Prompt) -> None:
        record = await self.run._send(prompt, self.start)
        self.records.append(record)
        if record.error.startswith(UNREACHABLE) and not self.run.aborted:
            self.run.aborted = (
                f"server stopped answering at concurrency {self.concurrency}: {record.error}"
            )
        self.report()

    async def closed_loop(self) -> None:
        """`concurrency` streams, each sending its next request when its last one ends."""

        async def worker() -> None:
            while (prompt := self.take()) is not None:
                await self.send(prompt)

        await asyncio.gather(*(worker() for _ in range(self.concurrency or 1)))

    async def open_loop(self, request_rate: float) -> None:
        """Sends on a seeded Poisson process, at most `concurrency` in flight."""
        s = self.run.s
        rng = random.Random(f"servebench:arrivals:{s.seed}:{self.repeat}:{self.index}")
        limit = asyncio.Semaphore(self.concurrency) if self.concurrency else None
        tasks = []

        async def limited(prompt: Prompt) -> None:
            if limit is None:
                await self.send(prompt)
                return
            async with limit:
                await self.send(prompt)

        arrival = self.start
        while True:
            arrival += rng.expovariate(request_rate)
            await asyncio.sleep(max(0.0, arrival - time.perf_counter()))
            prompt = self.take()
            if prompt is None:
                break
            tasks.append(asyncio.create_task(limited(prompt)))
        await asyncio.gather(*tasks)
