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
    a = n // 2 if accepted_per_step is None else max(0, min(accepted_per_step, n))
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
