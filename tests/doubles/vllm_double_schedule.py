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


# The seed's n-gram experiment ran 9-26% slower than no speculation: reasoning output
# repeats little of the prompt, so n-gram lookup proposes drafts that are rarely accepted,
# and every draft token still costs the target model work in the verification step. The
# double's defaults reproduce that: 6% of draft tokens accepted, each draft token adding
# 10% to a decode step (k=3: 9% slower, k=5: 13%, k=8: 18%). Set `accepted_per_step` and
# `draft_overhead` (config file or VLLM_DOUBLE_*) for a speculative config that pays off.
DEFAULT_ACCEPTANCE_RATE = 0.06
DEFAULT_DRAFT_OVERHEAD = 0.1
_EPS = 1e-9


def accepted_tokens_per_step(
    num_speculative_tokens: int,
    accepted_per_step: float | None,
    acceptance_rate: float = DEFAULT_ACCEPTANCE_RATE,
) -> float:
    """Draft tokens accepted per step, on average: the configured count (at most N), by
    default `acceptance_rate` of the N draft tokens."""
    n = max(0, num_speculative_tokens)
    wanted = acceptance_rate * n if accepted_per_step is None else accepted_per_step
    return max(0.0, min(float(wanted), float(n)))


def accepted_at_step(step: int, mean: float) -> int:
    """Tokens accepted at decode step `step` (1-based) for a mean of `mean` per step: the
    running total rounded down, so whole means give that count every step and fractional
    ones spread the accepted tokens evenly (0.3: one every 3-4 steps)."""
    return int(step * mean + _EPS) - int((step - 1) * mean + _EPS)


def speculative_speedup(
    num_speculative_tokens: int,
    accepted_per_step: float | None = None,
    *,
    acceptance_rate: float = DEFAULT_ACCEPTANCE_RATE,
    draft_overhead: float = DEFAULT_DRAFT_OVERHEAD,
    spec_speed_factor: float = 1.0,
) -> float:
    """Output speed with the speculative config over the speed without (1.0: no config):
    (accepted + 1) tokens per step, each step (1 + overhead x N) times as long."""
    n = max(0, num_speculative_tokens)
    if n == 0:
        return 1.0
    accepted = accepted_tokens_per_step(n, accepted_per_step, acceptance_rate)
    return (accepted + 1) / (1 + draft_overhead * n) * spec_speed_factor


def step_interval_s(
    *,
    itl_ms: float,
    tokens_per_s: float,
    num_speculative_tokens: int,
    spec_speed_factor: float = 1.0,
    draft_overhead: float = DEFAULT_DRAFT_OVERHEAD,
) -> float:
    """Seconds between decode steps.

    Without a speculative config a step emits one token: `1 / tokens_per_s` apart when a
    rate is set, else `itl_ms`. With one, a step verifies N draft tokens, which makes it
    `1 + draft_overhead x N` times as long, and `spec_speed_factor` scales the speed on
    top (0.85 with no overhead and nothing accepted: "15% slower").
    """
    base = 1 / tokens_per_s if tokens_per_s > 0 else itl_ms / 1000
    n = max(0, num_speculative_tokens)
    if n == 0:
        return base
    return base * (1 + draft_overhead * n) / spec_speed_factor


def plan_chunks(
    max_tokens: int,
    *,
    ttft_s: float,
    itl_s: float,
    num_speculative_tokens: int = 0,
    accepted_per_step: float | None = None,
    acceptance_rate: float = DEFAULT_ACCEPTANCE_RATE,
) -> list[Chunk]:
    """The exact stream for a request.

    Prefill yields 1 token at ttft. Every later step is one draft of N proposed tokens, of
    which a (`accepted_at_step` of the mean) are accepted, so the step emits a + 1 tokens
    (the bonus token); steps are itl apart. Without spec decoding each step emits 1 token.
    The last step is cut short at max_tokens and then counts only the accepted tokens sent.
    """
    if max_tokens <= 0:
        return []
    n = max(0, num_speculative_tokens)
    mean = accepted_tokens_per_step(n, accepted_per_step, acceptance_rate)
    chunks = [Chunk(at_s=ttft_s, tokens=1, drafts=0, draft_tokens=0, accepted=0)]
    left = max_tokens - 1
    step = 0
    while left > 0:
        step += 1
        tokens = min(accepted_at_step(step, mean) + 1, left)
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
