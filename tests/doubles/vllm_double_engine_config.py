"""TEST DOUBLE for `vllm serve`: engine-config validation (exit 1, after start-up has begun)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

# Package-relative: `doubles` in a test host (`python -m doubles.vllm_double`),
# `tests.doubles` in the checkout.
from . import gpu_state
from .cuda_visible import UNKNOWN, cuda_gpus
from .vllm_double_config import version_tuple

# --------------------------------------------------------------------------------------
# engine-config validation (exit 1, after start-up has begun)


class EngineConfigError(Exception):
    """Carries the exact lines vLLM would print (traceback tail) for a bad engine config."""


def _pydantic_error(model: str, errors: list[tuple[str, str, str, Any]]) -> EngineConfigError:
    """Format like pydantic-core 2.x: `N validation error(s) for Model` + one block each."""
    count = len(errors)
    lines = [
        "pydantic_core._pydantic_core.ValidationError: "
        f"{count} validation error{'s' if count != 1 else ''} for {model}"
    ]
    for loc, msg, etype, value in errors:
        lines.append(loc)
        lines.append(
            f"  {msg} [type={etype}, input_value={value!r}, input_type={type(value).__name__}]"
        )
        lines.append(
            f"    For further information visit https://errors.pydantic.dev/2.12/v/{etype}"
        )
    return EngineConfigError("\n".join(lines))


def _or_list(values: Sequence[str]) -> str:
    quoted = [f"'{v}'" for v in values]
    return quoted[0] if len(quoted) == 1 else ", ".join(quoted[:-1]) + " or " + quoted[-1]


# One pydantic error: location, message, error type, input value.
_FieldError = tuple[str, str, str, Any]


def validate_speculative_config(
    spec: dict[str, Any] | None, catalog: dict[str, Any], version: str
) -> dict[str, Any] | None:
    """Apply the version's SpeculativeConfig rules (docs/architecture.md, "vLLM")."""
    if spec is None:
        return None
    if not isinstance(spec, dict):
        raise EngineConfigError(
            f"TypeError: vllm.config.speculative.SpeculativeConfig() argument after ** must be "
            f"a mapping, not {type(spec).__name__}"
        )
    meta = catalog.get("speculative_config") or {}
    pydantic = meta.get("unknown_keys", "validation_error") == "validation_error"
    errors: list[_FieldError] = []
    spec = _drop_unknown_keys(spec, meta, errors)
    _check_method(spec.get("method"), meta.get("methods_accepted"), pydantic, errors)
    _check_token_count(spec.get("num_speculative_tokens"), pydantic, errors)
    if errors:
        raise _pydantic_error("SpeculativeConfig", errors)
    _check_post_init(spec)
    return spec


def _drop_unknown_keys(
    spec: dict[str, Any], meta: dict[str, Any], errors: list[_FieldError]
) -> dict[str, Any]:
    """Keys SpeculativeConfig does not have: a TypeError (0.8.x), a pydantic error each
    (≥0.16), or silently dropped (0.11-0.15: a different config runs than written)."""
    fields = meta.get("fields") or {}
    mode = meta.get("unknown_keys", "validation_error")
    unknown = [k for k in spec if fields and k not in fields]
    if not unknown:
        return spec
    if mode == "type_error":
        raise EngineConfigError(
            "TypeError: SpeculativeConfig.__init__() got an unexpected keyword argument "
            f"'{unknown[0]}'"
        )
    if mode == "validation_error":
        for key in unknown:
            errors.append(
                (key, "Unexpected keyword argument", "unexpected_keyword_argument", spec[key])
            )
    return {k: v for k, v in spec.items() if k not in unknown}


def _check_method(
    method: Any, accepted: list[str] | None, pydantic: bool, errors: list[_FieldError]
) -> None:
    if method is None or not accepted or method in accepted:
        return
    if not pydantic:
        raise EngineConfigError(f"ValueError: Unsupported speculative method: '{method}'")
    errors.append(("method", f"Input should be {_or_list(accepted)}", "literal_error", method))


def _check_token_count(n: Any, pydantic: bool, errors: list[_FieldError]) -> None:
    if n is None or (isinstance(n, int) and not isinstance(n, bool) and n > 0):
        return
    if pydantic and isinstance(n, int):
        errors.append(
            ("num_speculative_tokens", "Input should be greater than 0", "greater_than", n)
        )
    elif not pydantic:
        raise EngineConfigError(
            f"ValueError: Expected num_speculative_tokens to be greater than zero ({n})."
        )


def _check_post_init(spec: dict[str, Any]) -> None:
    """The checks SpeculativeConfig makes once its fields are set (`__post_init__`)."""
    if "tensor_parallel_size" in spec:
        raise EngineConfigError(
            "ValueError: tensor_parallel_size is not a valid speculative config key; "
            "use draft_tensor_parallel_size"
        )
    lo, hi = spec.get("prompt_lookup_min"), spec.get("prompt_lookup_max")
    if isinstance(lo, int) and isinstance(hi, int) and lo > hi:
        raise EngineConfigError(
            f"ValueError: prompt_lookup_min={lo} must be <= prompt_lookup_max={hi}"
        )
    for name, value in (("prompt_lookup_min", lo), ("prompt_lookup_max", hi)):
        if isinstance(value, int) and value < 1:
            raise EngineConfigError(f"ValueError: {name}={value} must be > 0")
    n = spec.get("num_speculative_tokens")
    if spec.get("method") is not None and n is None and spec.get("method") != "mtp":
        raise EngineConfigError(
            "ValueError: num_speculative_tokens must be provided with speculative model unless"
            " the draft model config contains an n_predict parameter."
        )


def validate_memory_utilization(value: float, version: str) -> None:
    if 0 < value <= 1:
        return
    if version_tuple(version) >= (0, 11):
        etype, msg = (
            ("greater_than", "Input should be greater than 0")
            if value <= 0
            else ("less_than_equal", "Input should be less than or equal to 1")
        )
        raise _pydantic_error("CacheConfig", [("gpu_memory_utilization", msg, etype, value)])
    raise EngineConfigError(
        f"ValueError: GPU memory utilization must be less than 1.0. Got {value}."
    )


def pick_gpus(visible: str | None, world_size: int, gpu: gpu_state.GpuConfig) -> list[int]:
    """GPU indices the engine will use: CUDA_VISIBLE_DEVICES as CUDA reads it (the model
    in cuda_visible.py, from measurements), then the first `world_size` of them."""
    chosen = cuda_gpus(visible, [gpu.uuid(i) for i in range(gpu.gpu_count)])
    if chosen == UNKNOWN:
        raise EngineConfigError(
            f"RuntimeError: the vLLM double does not know how CUDA reads "
            f"CUDA_VISIBLE_DEVICES={visible!r} (tests/doubles/cuda_visible.py)"
        )
    available = list(chosen)
    if not available:
        raise EngineConfigError("RuntimeError: No CUDA GPUs are available")
    if world_size > len(available):
        raise EngineConfigError(
            f"ValueError: World size ({world_size}) is larger than the number of available "
            f"GPUs ({len(available)}) in this node. If this is intentional and you are using "
            "Ray, ..."
        )
    return available[:world_size]
