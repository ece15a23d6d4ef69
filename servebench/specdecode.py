"""Speculative-decoding counters from vLLM's Prometheus `/metrics`, and their delta.

Source: vllm/benchmarks/serve.py `fetch_spec_decode_metrics` and the block after the run
(vllm-project/vllm): counters `vllm:spec_decode_num_drafts_total`,
`..._num_draft_tokens_total`, `..._num_accepted_tokens_total` and
`..._num_accepted_tokens_per_pos_total{position="i"}`, summed over label sets;
acceptance rate = accepted / draft tokens × 100, acceptance length = 1 + accepted / drafts,
per-position rate = accepted at position i / drafts.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from servebench.schema import SpecDecodeStats

_POSITION = re.compile(r'position="(\d+)"')


@dataclass
class SpecCounters:
    num_drafts: int = 0
    num_draft_tokens: int = 0
    num_accepted_tokens: int = 0
    accepted_per_pos: dict[int, int] = field(default_factory=dict)


def parse_spec_counters(text: str) -> SpecCounters | None:
    """The counters in a /metrics body; None when the server exports none (no spec config)."""
    counters = SpecCounters()
    found = False
    for raw in text.splitlines():
        line = raw.strip()
        if not line.startswith("vllm:spec_decode"):
            continue
        name_part, _, value_part = line.rpartition(" ")
        name = name_part.split("{", 1)[0]
        if not name.endswith("_total"):
            continue
        try:
            value = int(float(value_part))
        except ValueError:
            continue
        found = True
        if "num_drafts" in name:
            counters.num_drafts += value
        elif "num_draft_tokens" in name:
            counters.num_draft_tokens += value
        elif "num_accepted_tokens_per_pos" in name:
            if match := _POSITION.search(name_part):
                pos = int(match.group(1))
                counters.accepted_per_pos[pos] = counters.accepted_per_pos.get(pos, 0) + value
        elif "num_accepted_tokens" in name:
            counters.num_accepted_tokens += value
    return counters if found else None


def spec_delta(before: SpecCounters | None, after: SpecCounters | None) -> SpecDecodeStats | None:
    """What happened between two snapshots; None without spec decoding or without drafts."""
    if before is None or after is None:
        return None
    drafts = after.num_drafts - before.num_drafts
    draft_tokens = after.num_draft_tokens - before.num_draft_tokens
    accepted = after.num_accepted_tokens - before.num_accepted_tokens
    if draft_tokens <= 0:
        return None
    per_pos = []
    if drafts > 0:
        for pos in sorted(set(before.accepted_per_pos) | set(after.accepted_per_pos)):
            old = before.accepted_per_pos.get(pos, 0)
            per_pos.append((after.accepted_per_pos.get(pos, old) - old) / drafts)
    return SpecDecodeStats(
        num_drafts=drafts,
        draft_tokens=draft_tokens,
        accepted_tokens=accepted,
        acceptance_rate=accepted / draft_tokens * 100,
        acceptance_length=1 + accepted / drafts if drafts > 0 else 0.0,
        per_position_acceptance_rates=per_pos,
    )
