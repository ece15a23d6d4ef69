"""Prompt sets: the seed deployment's mix built in, or the user's JSONL; same seed → same prompts.

Built-in kinds (the workload the seed measured by hand):
- `chat`: a short question;
- `code`: a coding task whose answer is long;
- `summary`: a long document (~2,000 words) to summarise, i.e. a long prefill.
`mix` interleaves the three in a seeded order. Prompts are made from word lists with a
`random.Random(seed)`, so no data set is downloaded and every machine builds the same ones.

JSONL: one object per line, `{"prompt": "..."}` or `{"messages": [{"role": ..., "content":
...}, ...]}`, optionally `"max_tokens": N` (otherwise the run's fixed max_tokens applies).
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any

BUILTIN_SETS = ("mix", "chat", "code", "summary")

_TOPICS = (
    "systemd unit files",
    "GPU memory fragmentation",
    "speculative decoding",
    "rolling restarts",
    "tensor parallelism",
    "KV cache sizing",
    "request batching",
    "prefix caching",
    "journald rate limits",
    "SSH host keys",
    "load balancers",
    "health checks",
    "quantisation",
    "NCCL timeouts",
    "CUDA graphs",
)
_CHAT = (
    "In two sentences, what is {topic}?",
    "Give me one practical tip about {topic}.",
    "Why would an operator care about {topic}?",
    "What is a common mistake with {topic}?",
)
_CODE_TASKS = (
    "Write a Python module that parses {thing} and reports every error with its line number. "
    "Include type hints, docstrings and a full pytest test suite covering edge cases.",
    "Implement a thread-safe {thing} in Python with a bounded size, expiry and statistics. "
    "Explain each design decision, then give the complete code and unit tests.",
    "Write a command-line tool in Python that watches {thing} and restarts a service when it "
    "changes. Show the complete program, its argument parser and tests.",
)
_THINGS = (
    "INI-style configuration files",
    "an LRU cache",
    "Prometheus text metrics",
    "CSV exports",
    "log files",
    "JSON Lines records",
    "a rate limiter",
    "cron expressions",
)
_FILLER = (
    "the operator restarted the service after the model finished loading and checked the "
    "latency dashboards while the queue drained slowly because every replica had to warm "
    "its cache before traffic returned to normal levels across the cluster during the "
    "evening peak when users asked longer questions about deployments budgets incidents "
    "and plans for the next quarter including hardware upgrades new regions and tests"
)
_WORDS = tuple(_FILLER.split())


@dataclass(frozen=True)
class Prompt:
    """One request's input: chat messages (also sent flattened to /v1/completions)."""

    kind: str
    messages: tuple[dict[str, str], ...]
    max_tokens: int | None = None

    @property
    def text(self) -> str:
        """The prompt for /v1/completions: the message contents in order."""
        return "\n\n".join(m["content"] for m in self.messages)


class PromptError(ValueError):
    """A prompt set that cannot be used, with where and why."""


def _user(text: str) -> tuple[dict[str, str], ...]:
    return ({"role": "user", "content": text},)


def _chat(rng: random.Random) -> Prompt:
    return Prompt("chat", _user(rng.choice(_CHAT).format(topic=rng.choice(_TOPICS))))


def _code(rng: random.Random) -> Prompt:
    return Prompt("code", _user(rng.choice(_CODE_TASKS).format(thing=rng.choice(_THINGS))))


def _summary(rng: random.Random, words: int = 2000) -> Prompt:
    sentences = []
    count = 0
    while count < words:
        length = rng.randint(8, 20)
        sentence = " ".join(rng.choice(_WORDS) for _ in range(length))
        sentences.append(sentence.capitalize() + ".")
        count += length
    topic = rng.choice(_TOPICS)
    text = (
        f"Here is an incident report about {topic}.\n\n" + " ".join(sentences) + "\n\n"
        "Summarise the report in five bullet points for an engineer who was not there."
    )
    return Prompt("summary", _user(text))


_MAKERS = {"chat": _chat, "code": _code, "summary": _summary}


def builtin_prompts(name: str, count: int, seed: int) -> list[Prompt]:
    """`count` prompts of a built-in set; the same (name, count, seed) gives the same list."""
    if name not in BUILTIN_SETS:
        raise PromptError(f"unknown prompt set {name!r}; built in: {', '.join(BUILTIN_SETS)}")
    rng = random.Random(f"servebench:{name}:{seed}")
    kinds: list[str] = []
    while len(kinds) < count:
        if name == "mix":  # a seeded shuffle of each round keeps one third of each kind
            round_kinds = ["chat", "code", "summary"]
            rng.shuffle(round_kinds)
            kinds += round_kinds
        else:
            kinds.append(name)
    return [_MAKERS[kind](rng) for kind in kinds[:count]]


def load_jsonl(path: str | Path) -> list[Prompt]:
    """User prompts; every bad line is reported with its number."""
    prompts = []
    try:
        lines = Path(path).read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise PromptError(f"{path}: cannot read prompts: {exc}") from None
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            item = json.loads(line)
        except json.JSONDecodeError as exc:
            raise PromptError(f"{path}:{number}: not JSON ({exc.msg})") from None
        prompts.append(_prompt_from_item(item, f"{path}:{number}"))
    if not prompts:
        raise PromptError(f"{path}: no prompts")
    return prompts


def _prompt_from_item(item: Any, where: str) -> Prompt:
    if not isinstance(item, dict):
        raise PromptError(f"{where}: expected an object with 'prompt' or 'messages'")
    max_tokens = item.get("max_tokens")
    if max_tokens is not None and (not isinstance(max_tokens, int) or max_tokens < 1):
        raise PromptError(f"{where}: max_tokens must be a positive integer")
    if isinstance(item.get("prompt"), str):
        return Prompt("jsonl", _user(item["prompt"]), max_tokens)
    messages = item.get("messages")
    if (
        isinstance(messages, list)
        and messages
        and all(
            isinstance(m, dict)
            and isinstance(m.get("role"), str)
            and isinstance(m.get("content"), str)
            for m in messages
        )
    ):
        return Prompt(
            "jsonl",
            tuple({"role": m["role"], "content": m["content"]} for m in messages),
            max_tokens,
        )
    raise PromptError(f"{where}: expected 'prompt' (string) or 'messages' (list of role/content)")


def select_prompts(source: str, count: int, seed: int) -> list[Prompt]:
    """A built-in set by name, or a JSONL file (shuffled with the seed, cycled to `count`)."""
    if source in BUILTIN_SETS:
        return builtin_prompts(source, count, seed)
    pool = load_jsonl(source)
    rng = random.Random(f"servebench:jsonl:{seed}")
    order = pool[:]
    rng.shuffle(order)
    return [order[i % len(order)] for i in range(count)]
