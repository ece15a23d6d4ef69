"""Speculative decoding in a profile: which methods a vLLM version accepts, which profile
fields each method takes, and the JSON object written to `--speculative-config`.

The methods come from the generated catalog of the target version
(`speculative_config.methods_accepted`: what the code accepts, not only the `Literal`
type hint; docs/architecture.md, "vLLM"). What each method *takes* is ours: a field a
method does not use is an error rather than silently dropped, because vLLM ≥0.16 refuses
unknown keys and 0.11–0.15 ignore them (a different config would run than the one the
operator wrote).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from linting.vllm.catalog import UnknownVllmVersion, available_versions, load_catalog
from units.schema import FIELDS, Target, fields_writing

# Profile field -> key of vLLM's SpeculativeConfig (same names in 0.8.5 … 0.33), from the
# field table; the method's own key comes first there and is not one of these fields.
SPEC_METHOD_KEY = FIELDS["spec_method"].writes.name
SPEC_KEYS: dict[str, str] = {
    f.name: f.writes.name for f in fields_writing(Target.SPEC_KEY) if f.name != "spec_method"
}
SPEC_FIELDS: tuple[str, ...] = tuple(SPEC_KEYS)

FIELD_LABELS: dict[str, str] = {name: FIELDS[name].in_sentence for name in SPEC_FIELDS}


@dataclass(frozen=True)
class MethodShape:
    """The profile fields one speculative method takes, and which of them it needs."""

    takes: frozenset[str]
    requires: frozenset[str]
    summary: str


_NGRAM = MethodShape(
    frozenset({"spec_num_tokens", "spec_prompt_lookup_min", "spec_prompt_lookup_max"}),
    frozenset({"spec_num_tokens"}),
    "n-gram lookup in the prompt: no draft model",
)
_DRAFT = MethodShape(
    frozenset({"spec_draft_model", "spec_num_tokens", "spec_draft_tensor_parallel_size"}),
    frozenset({"spec_draft_model", "spec_num_tokens"}),
    "a separate draft model",
)
# Medusa / MLP speculator heads carry `n_predict` in their config: tokens are optional.
_HEADS = MethodShape(_DRAFT.takes, frozenset({"spec_draft_model"}), "speculator heads")
# MTP layers belong to the target model; vLLM defaults the tokens to its `n_predict`.
_MTP = MethodShape(frozenset({"spec_num_tokens"}), frozenset(), "the model's own MTP layers")
# Suffix decoding defaults the tokens to suffix_decoding_max_tree_depth.
_SUFFIX = MethodShape(frozenset({"spec_num_tokens"}), frozenset(), "suffix tree of past outputs")

_SHAPES: dict[str, MethodShape] = {
    "ngram": _NGRAM,
    "ngram_gpu": _NGRAM,
    "eagle": _DRAFT,
    "eagle3": _DRAFT,
    "draft_model": _DRAFT,
    "dflash": _DRAFT,
    "dspark": _DRAFT,
    "medusa": _HEADS,
    "mlp_speculator": _HEADS,
    "mtp": _MTP,
    "suffix": _SUFFIX,
}


def method_shape(method: str) -> MethodShape | None:
    """The shape of `method`; every `*_mtp` alias is shaped like `mtp`. None: a method
    profiles do not describe (e.g. `custom_class`; use extra arguments for those)."""
    if method in _SHAPES:
        return _SHAPES[method]
    if method.endswith("_mtp"):
        return _MTP
    return None


def spec_methods(vllm_version: str) -> list[str]:
    """Methods a profile can choose for this vLLM version, in the catalog's order."""
    try:
        accepted = load_catalog(vllm_version).speculative_config.methods_accepted
    except UnknownVllmVersion:
        return []
    return [m for m in accepted if method_shape(m) is not None]


def spec_config(data: dict[str, Any]) -> dict[str, Any] | None:
    """The `--speculative-config` object for normalised profile data (None: no method).

    `method` first, then the keys in a fixed order, so the rendered unit is deterministic
    and reads like the seed's hand-written `{"method": "ngram", …}`."""
    method = data.get("spec_method") or ""
    if not method:
        return None
    config: dict[str, Any] = {SPEC_METHOD_KEY: method}
    for field, key in SPEC_KEYS.items():
        value = data.get(field)
        if value not in (None, ""):
            config[key] = value
    return config


def validate_spec(data: dict[str, Any], errors: dict[str, list[str]]) -> None:
    """Method against the target version, then the fields the method takes and needs."""
    method = data.get("spec_method") or ""
    given = [f for f in SPEC_FIELDS if data.get(f) not in (None, "")]
    if not method:
        _refuse_fields_without_method(given, errors)
        return
    shape = _accepted_shape(method, data.get("target_vllm_version") or "", errors)
    if shape is None:
        return
    _check_fields_the_method_takes(method, shape, given, errors)
    _check_token_count(data, errors)
    if "spec_prompt_lookup_min" in shape.takes:
        # vLLM checks min ≤ max (and fills in the other from one) only for the n-gram
        # methods: `if self.method in ("ngram", "ngram_gpu")` in SpeculativeConfig.
        # __post_init__ (vllm/config/speculative.py); other methods do not take them.
        _check_prompt_lookup(data, errors)
    _check_draft_tensor_parallel(data, shape, errors)
    _check_draft_model_text(data, shape, errors)


def _add(errors: dict[str, list[str]], field: str, message: str) -> None:
    errors.setdefault(field, []).append(message)


def _refuse_fields_without_method(given: list[str], errors: dict[str, list[str]]) -> None:
    for field in given:
        _add(
            errors,
            field,
            f"The {FIELD_LABELS[field]} is only used with a speculative method; "
            "choose a method or clear this field.",
        )


def _accepted_shape(method: str, version: str, errors: dict[str, list[str]]) -> MethodShape | None:
    """The method's shape when the target version accepts it; else an error and None."""
    accepted = spec_methods(version)
    shape = method_shape(method)
    if shape is not None and (not accepted or method in accepted):
        return shape
    where = f"vLLM {version}" if version else "the target vLLM version"
    hint = f" Choose one of: {', '.join(accepted)}." if accepted else ""
    what = (
        "is not a speculative method"
        if shape is None and method not in _all_known_methods()
        else f"is not accepted by {where}"
    )
    _add(errors, "spec_method", f"“{method}” {what}.{hint}")
    return None


def _check_fields_the_method_takes(
    method: str, shape: MethodShape, given: list[str], errors: dict[str, list[str]]
) -> None:
    for field in given:
        if field not in shape.takes:
            _add(
                errors,
                field,
                f"The {method} method does not take a {FIELD_LABELS[field]} "
                f"({shape.summary}); clear this field.",
            )
    for field in sorted(shape.requires - set(given)):
        _add(
            errors,
            field,
            f"The {method} method needs a {FIELD_LABELS[field]} ({SPEC_KEYS[field]}).",
        )


def _check_token_count(data: dict[str, Any], errors: dict[str, list[str]]) -> None:
    tokens = data.get("spec_num_tokens")
    if isinstance(tokens, int) and tokens < 1:
        _add(errors, "spec_num_tokens", "Speculative tokens must be at least 1 (vLLM refuses 0).")


def _check_prompt_lookup(data: dict[str, Any], errors: dict[str, list[str]]) -> None:
    lo, hi = data.get("spec_prompt_lookup_min"), data.get("spec_prompt_lookup_max")
    for field, value in (("spec_prompt_lookup_min", lo), ("spec_prompt_lookup_max", hi)):
        if isinstance(value, int) and value < 1:
            _add(errors, field, f"The {FIELD_LABELS[field]} must be at least 1 (vLLM refuses 0).")
    if isinstance(lo, int) and isinstance(hi, int) and lo > hi:
        _add(
            errors,
            "spec_prompt_lookup_min",
            f"Prompt lookup min ({lo}) is larger than max ({hi}): vLLM refuses to start.",
        )


def _check_draft_tensor_parallel(
    data: dict[str, Any], shape: MethodShape, errors: dict[str, list[str]]
) -> None:
    draft_tp, tp = data.get("spec_draft_tensor_parallel_size"), data.get("tensor_parallel_size")
    if not isinstance(draft_tp, int) or "spec_draft_tensor_parallel_size" not in shape.takes:
        return
    if draft_tp < 1:
        _add(
            errors,
            "spec_draft_tensor_parallel_size",
            "The draft tensor parallel size must be at least 1.",
        )
    elif isinstance(tp, int) and draft_tp > tp:
        _add(
            errors,
            "spec_draft_tensor_parallel_size",
            f"The draft model cannot use more GPUs ({draft_tp}) than the target model's "
            f"tensor parallel size ({tp}).",
        )


def _check_draft_model_text(
    data: dict[str, Any], shape: MethodShape, errors: dict[str, list[str]]
) -> None:
    draft = data.get("spec_draft_model")
    if (
        isinstance(draft, str)
        and "spec_draft_model" in shape.takes
        and any(ord(c) < 0x20 or c == "\x7f" for c in draft)
    ):
        _add(
            errors,
            "spec_draft_model",
            "The draft model cannot contain control characters (tabs, newlines).",
        )


def _all_known_methods() -> set[str]:
    known: set[str] = set()
    for version in available_versions():
        known.update(load_catalog(version).speculative_config.methods_accepted)
    return known
