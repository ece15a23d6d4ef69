from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from linting.context import UnitContext
from linting.findings import Hit, Severity
from linting.rules.registry import rule
from linting.rules.vl._messages import AT_ENGINE, shown, vllm_label
from linting.rules.vl._spec import effective_method, spec_data
from linting.servers import VllmCommand
from linting.vllm.catalog import VllmCatalog
from linting.vllm.invocation import (
    SpecView,
)


def _skips_validation(catalog: VllmCatalog, key: str) -> bool:
    """0.11 declares `num_speculative_tokens: SkipValidation[int]`
    (vllm/config/speculative.py:47 in 0.11.0): a JSON string is not converted."""
    return catalog.version == "0.11.0" and key == "num_speculative_tokens"


def _json_type_problem(
    value: Any, kind: str, nullable: bool, pydantic: bool, *, skip_validation: bool
) -> str | None:
    """Why a JSON value does not fit a numeric field, or None."""
    if value is None or kind not in ("int", "float"):
        return None
    if isinstance(value, bool):
        return None if pydantic and not skip_validation else f"a JSON number, not {value!r}"
    if isinstance(value, int):
        return None
    if isinstance(value, float):
        if kind == "float" or value.is_integer():
            return None
        return "a whole number"
    if isinstance(value, str):
        if pydantic and not skip_validation:
            try:
                int(value) if kind == "int" else float(value)
                return None  # pydantic's lax mode converts numeric strings
            except ValueError:
                pass
        return f"a JSON number, not the string {value!r}"
    return f"a JSON number, not {type(value).__name__}"


def _range_hits(vc: VllmCommand, view: SpecView, bad: set[str]) -> Iterator[Hit]:
    """Values of the right type that vLLM still refuses (`bad`: keys already reported for
    their type)."""
    catalog = vc.args.catalog
    pydantic_bounds = catalog.speculative_config.unknown_keys == "validation_error"

    def number(key: str) -> float | None:
        value = view.get(key)
        if key in bad or isinstance(value, bool):
            return None
        try:
            return float(value) if value is not None else None
        except (TypeError, ValueError):
            return None

    n = number("num_speculative_tokens")
    if n is not None and n <= 0:
        entry = view.entries["num_speculative_tokens"]
        why = (
            'pydantic "Input should be greater than 0"'
            if pydantic_bounds
            else f'"Expected num_speculative_tokens to be greater than zero ({entry.value})"'
        )
        yield Hit(
            entry.value_text.span(),
            f"num_speculative_tokens must be > 0: {vllm_label(catalog)} refuses to start {AT_ENGINE}: "
            f"{why}",
            path=vc.path,
            data=spec_data(view),
        )
    is_ngram = effective_method(view) == "ngram"
    for key in ("prompt_lookup_min", "prompt_lookup_max"):
        value = number(key)
        # 0.16+: Field(ge=1) for every method; before: checked only for ngram.
        if value is not None and value < 1 and (pydantic_bounds or is_ngram):
            yield Hit(
                view.entries[key].value_text.span(),
                f"{key} must be >= 1: {vllm_label(catalog)} refuses to start {AT_ENGINE}",
                path=vc.path,
                data=spec_data(view),
            )
    lo, hi = number("prompt_lookup_min"), number("prompt_lookup_max")
    if is_ngram and lo is not None and hi is not None and lo > hi:
        entry = view.entries["prompt_lookup_min"]
        yield Hit(
            entry.value_text.span(),
            f"prompt_lookup_min={shown(entry.value)} is larger than prompt_lookup_max="
            f"{shown(view.get('prompt_lookup_max'))}: {vllm_label(catalog)} refuses to start "
            f'{AT_ENGINE} ("prompt_lookup_min=… must be <= prompt_lookup_max=…")',
            path=vc.path,
            data=spec_data(view),
        )


@rule("VL304", Severity.ERROR)
def speculative_value_out_of_range(ctx: UnitContext) -> Iterator[Hit]:
    """
    A speculative config value that vLLM rejects: wrong JSON type or out of range.

    What it does:
    Checks `num_speculative_tokens > 0`, `prompt_lookup_min >= 1`,
    `prompt_lookup_max >= 1`, `prompt_lookup_min <= prompt_lookup_max` (with vLLM's own
    defaults when only one is given), and that numeric fields hold JSON numbers.

    Why is this bad?
    vLLM raises at engine start: "Expected num_speculative_tokens to be greater than zero"
    (0.8.5/0.11) or pydantic "Input should be greater than 0" (0.16+);
    "prompt_lookup_min=… must be <= prompt_lookup_max=…" (ngram). A JSON string such as
    `"5"` is not a number: 0.8.5 stores the string and fails when comparing it; pydantic
    versions reject strings that are not numbers.

    Example:
    ```ini
    ExecStart=/opt/vllm/bin/vllm serve /models/m --speculative-config '{"method": "ngram", "num_speculative_tokens": 5, "prompt_lookup_min": 6, "prompt_lookup_max": 4}'
    ```

    Use instead:
    ```ini
    ExecStart=/opt/vllm/bin/vllm serve /models/m --speculative-config '{"method": "ngram", "num_speculative_tokens": 5, "prompt_lookup_min": 2, "prompt_lookup_max": 4}'
    ```
    """
    for vc in ctx.vllm_commands:
        view = vc.args.spec_view
        if view is None:
            continue
        catalog = vc.args.catalog
        fields = catalog.speculative_config.fields
        pydantic = catalog.speculative_config.unknown_keys != "type_error"
        bad_type: set[str] = set()
        for key, entry in view.entries.items():
            field = fields.get(key)
            if field is None or entry.origin == "shorthand":
                continue
            problem = _json_type_problem(
                entry.value,
                field.type,
                field.nullable,
                pydantic,
                skip_validation=_skips_validation(catalog, key),
            )
            if problem:
                bad_type.add(key)
                yield Hit(
                    entry.value_text.span(),
                    f"`{key}` must be {problem}: {vllm_label(catalog)} refuses to start {AT_ENGINE}",
                    spec_data(view),
                    path=vc.path,
                )
        yield from _range_hits(vc, view, bad_type)
