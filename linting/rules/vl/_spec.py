"""The speculative config vLLM actually runs with: its effective method and values."""

from __future__ import annotations

from typing import Any

from linting.vllm.catalog import VllmCatalog
from linting.vllm.invocation import SpecView

NGRAM_DEFAULT_LOOKUP = 5  # vllm/config/speculative.py:251 in 0.11.0 (same in 0.8.5..0.33)


def known_fields(catalog: VllmCatalog) -> list[str]:
    spec = catalog.speculative_config
    return [f for f in spec.fields if f not in spec.internal_keys]


def effective_method(view: SpecView) -> Any:
    """`"model": "ngram"` without a method means ngram (vllm/config/speculative.py:320 in
    0.16.0)."""
    method = view.get("method")
    if method is None and view.get("model") in ("ngram", "[ngram]"):
        return "ngram"
    return method


def _ngram_lookup(d: dict[str, Any]) -> tuple[Any, Any]:
    """What ngram runs with: both unset → 5/5; one set → the other copies it
    (vllm/config/speculative.py:251-261 in 0.11.0, :332-349 in 0.16.0)."""
    lo, hi = d.get("prompt_lookup_min"), d.get("prompt_lookup_max")
    if lo is None and hi is None:
        return NGRAM_DEFAULT_LOOKUP, NGRAM_DEFAULT_LOOKUP
    if lo is None:
        return hi, hi
    if hi is None:
        return lo, lo
    return lo, hi


def effective_value(view: SpecView, catalog: VllmCatalog, field: str) -> Any:
    d = view.as_dict
    if effective_method(view) == "ngram" and field in ("prompt_lookup_min", "prompt_lookup_max"):
        lo, hi = _ngram_lookup(d)
        return lo if field == "prompt_lookup_min" else hi
    spec = catalog.speculative_config.fields.get(field)
    return d.get(field, spec.default if spec else None)


def spec_data(view: SpecView) -> dict[str, Any]:
    """The config as vLLM builds it, for JSON consumers of a finding."""
    return {"speculative_config": view.as_dict}
