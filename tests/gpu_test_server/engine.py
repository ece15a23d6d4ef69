"""One generation at a time on the device (batch 1), FIFO, for baseline and variant alike.

transformers' assisted generation (prompt lookup included) only supports batch size 1, so
the baseline runs the same way: the two servers differ only in `prompt_lookup_num_tokens`.
Concurrent requests queue (their TTFT includes the wait), as on a server with
max_num_seqs=1.

Speculative counts: transformers does not report them, so the prompt-lookup candidate
generator is wrapped (in this test process only) to count, per decoding step, the drafted
tokens (`get_candidates`) and the accepted ones (`update_candidate_strategy(num_matches)`,
called by `GenerationMixin._assisted_decoding` after each verification) — exported under
vLLM's counter names.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch
from transformers.generation.candidate_generator import PromptLookupCandidateGenerator
from transformers.generation.streamers import BaseStreamer


@dataclass
class Counters:
    prompt_tokens: int = 0
    generation_tokens: int = 0
    requests: int = 0
    drafts: int = 0
    draft_tokens: int = 0
    accepted: int = 0
    accepted_per_pos: dict[int, int] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)


COUNTERS = Counters()


def _install_spec_counting() -> None:
    original_get = PromptLookupCandidateGenerator.get_candidates
    original_update = PromptLookupCandidateGenerator.update_candidate_strategy

    def get_candidates(self: Any, input_ids: torch.Tensor, **kwargs: Any) -> Any:
        candidates, logits = original_get(self, input_ids, **kwargs)
        self._drafted = candidates.shape[1] - input_ids.shape[1]
        return candidates, logits

    def update_candidate_strategy(self: Any, input_ids: Any, scores: Any, num_matches: Any) -> None:
        drafted = getattr(self, "_drafted", 0)
        if drafted > 0:  # a step without an n-gram match proposes nothing (not a draft)
            accepted = int(num_matches)
            with COUNTERS.lock:
                COUNTERS.drafts += 1
                COUNTERS.draft_tokens += drafted
                COUNTERS.accepted += accepted
                for pos in range(accepted):
                    COUNTERS.accepted_per_pos[pos] = COUNTERS.accepted_per_pos.get(pos, 0) + 1
        original_update(self, input_ids, scores, num_matches)

    PromptLookupCandidateGenerator.get_candidates = get_candidates  # type: ignore[method-assign]
    PromptLookupCandidateGenerator.update_candidate_strategy = update_candidate_strategy  # type: ignore[method-assign]


class _CallbackStreamer(BaseStreamer):
    """Hands each step's new tokens to `on_tokens` (the first put is the prompt: skipped)."""

    def __init__(self, on_tokens: Callable[[list[int]], None]) -> None:
        self.on_tokens = on_tokens
        self.prompt_seen = False

    def put(self, value: torch.Tensor) -> None:
        if not self.prompt_seen:
            self.prompt_seen = True
            return
        self.on_tokens([int(t) for t in value.reshape(-1).tolist()])

    def end(self) -> None:
        pass


@dataclass
class Job:
    prompt_ids: list[int]
    max_tokens: int
    on_tokens: Callable[[list[int]], None]
    on_done: Callable[[BaseException | None], None]


class Engine:
    def __init__(self, model: torch.nn.Module, device: str, prompt_lookup_tokens: int) -> None:
        self.model = model
        self.device = device
        self.prompt_lookup_tokens = prompt_lookup_tokens
        self.jobs: queue.Queue[Job] = queue.Queue()
        if prompt_lookup_tokens:
            _install_spec_counting()
        threading.Thread(target=self._loop, name="engine", daemon=True).start()

    def submit(self, job: Job) -> None:
        self.jobs.put(job)

    def _loop(self) -> None:
        while True:
            job = self.jobs.get()
            try:
                self._generate(job)
                job.on_done(None)
            except BaseException as exc:  # reported to the request, the engine goes on
                job.on_done(exc)

    @torch.inference_mode()
    def _generate(self, job: Job) -> None:
        ids = torch.tensor([job.prompt_ids], device=self.device)
        extra: dict[str, Any] = {}
        if self.prompt_lookup_tokens:
            extra["prompt_lookup_num_tokens"] = self.prompt_lookup_tokens
        with COUNTERS.lock:
            COUNTERS.requests += 1
            COUNTERS.prompt_tokens += len(job.prompt_ids)

        def on_tokens(tokens: list[int]) -> None:
            with COUNTERS.lock:
                COUNTERS.generation_tokens += len(tokens)
            job.on_tokens(tokens)

        self.model.generate(
            input_ids=ids,
            attention_mask=torch.ones_like(ids),
            max_new_tokens=job.max_tokens,
            do_sample=False,
            streamer=_CallbackStreamer(on_tokens),
            **extra,
        )
