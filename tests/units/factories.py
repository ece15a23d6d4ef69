"""Profile data for tests: the seed's baseline, overridable field by field."""

from __future__ import annotations

from typing import Any

from units.management.commands.loaddemo import BASELINE, NGRAM_CHANGES

NGRAM: dict[str, Any] = {**BASELINE, "name": "vllm-kimi-k25-int4-ngram", **NGRAM_CHANGES}


def baseline(**overrides: Any) -> dict[str, Any]:
    """The seed's Kimi-K2.5 INT4 baseline (valid), with `overrides` applied."""
    return {**BASELINE, **overrides}


def ngram(**overrides: Any) -> dict[str, Any]:
    """The seed's n-gram variant (valid), with `overrides` applied."""
    return {**NGRAM, **overrides}
