"""TEST DOUBLE: `SpeculativeConfig(**dict)` applies the double's engine-config rules of the
configured version (what `vllm serve` of the double rejects at engine start, exit 1)."""

from __future__ import annotations

from typing import Any

from doubles.vllm_double import EngineConfigError, validate_speculative_config

from vllm import _double


class SpeculativeConfig:
    def __init__(self, **spec: Any) -> None:
        catalog, version = _double()
        try:
            validate_speculative_config(spec, catalog, version)
        except EngineConfigError as exc:
            raise ValueError(str(exc)) from None
        self.__dict__.update(spec)
