"""TEST DOUBLE for `vllm serve`: the exactly known token schedule and spec-decode accounting.

Pure functions, tested without a server: the benchmark accuracy tests compare what a client
measures with what these functions say was sent.
"""

from __future__ import annotations

from dataclasses import dataclass

# --------------------------------------------------------------------------------------
# token schedule and spec-decode accounting (pure: tested without a host)


@dataclass(frozen=True)
class Chunk:
    """One streamed chunk: when it is sent (seconds after the request) and what it counts."""

    at_s: float
    tokens: int
    drafts: int
    draft_tokens: int
    accepted: int


def accepted_tokens_per_step(num_speculative_tokens: int, accepted_per_step: int | None) -> int:
    """Draft tokens accepted per step: the configured count (at most N), by default N // 2."""
    n = max(0, num_speculative_tokens)
    return n // 2 if accepted_per_step is None else max(0, min(accepted_per_step, n))


def step_interval_s(
    *,
    itl_ms: float,
    tokens_per_s: float,
    num_speculative_tokens: int,
    accepted_per_step: int | None = None,
    spec_speed_factor: float = 1.0,
) -> float:
    """Seconds between decode steps.

    With `tokens_per_s` set, a stream emits exactly that many tokens per second after its
    first token (a step carries `accepted + 1` tokens); otherwise a step takes `itl_ms`.
    `spec_speed_factor` scales the speed of a server with a speculative config (the seed's
    n-gram experiment ran 9-26% slower: a factor of 0.85 reproduces "15% slower").
    """
    factor = spec_speed_factor if num_speculative_tokens > 0 else 1.0
    if tokens_per_s > 0:
        per_step = accepted_tokens_per_step(num_speculative_tokens, accepted_per_step) + 1
        return per_step / (tokens_per_s * factor)
    return itl_ms / 1000 / factor


def plan_chunks(
    max_tokens: int,
    *,
    ttft_s: float,
    itl_s: float,
    num_speculative_tokens: int = 0,
    accepted_per_step: int | None = None,
) -> list[Chunk]:
    """The exact stream for a request.

    Prefill yields 1 token at ttft. Every later step is one draft of N proposed tokens, of
    which `accepted_per_step` (a) are accepted, so the step emits a + 1 tokens (the bonus
    token); steps are itl apart. Without spec decoding each step emits 1 token.
    The last step is cut short at max_tokens and then counts only the accepted tokens sent.
    """
    if max_tokens <= 0:
        return []
    n = max(0, num_speculative_tokens)
    a = accepted_tokens_per_step(n, accepted_per_step)
    chunks = [Chunk(at_s=ttft_s, tokens=1, drafts=0, draft_tokens=0, accepted=0)]
    left = max_tokens - 1
    step = 0
    while left > 0:
        step += 1
        tokens = min(a + 1, left)
        if n:
            chunk = Chunk(ttft_s + step * itl_s, tokens, 1, n, tokens - 1)
        else:
            chunk = Chunk(ttft_s + step * itl_s, tokens, 0, 0, 0)
        chunks.append(chunk)
        left -= tokens
    return chunks


def count_prompt_tokens(text: str) -> int:
    """Whitespace words: a deterministic stand-in for a tokenizer."""
    return len(text.split())


def token_text(index: int) -> str:
    return f" tok{index}"


@dataclass(frozen=True)
class TrueTimings:
    """What a perfect client would measure for one planned stream (vLLM's definitions)."""

    ttft_s: float
    tpot_s: float
    e2el_s: float
    output_tokens: int
    chunks: int


def true_timings(chunks: list[Chunk]) -> TrueTimings:
    """TTFT = first chunk; E2EL = last chunk; TPOT = (E2EL - TTFT) / (tokens - 1)."""
    tokens = sum(c.tokens for c in chunks)
    ttft, e2el = chunks[0].at_s, chunks[-1].at_s
    tpot = (e2el - ttft) / (tokens - 1) if tokens > 1 else 0.0
    return TrueTimings(ttft, tpot, e2el, tokens, len(chunks))
