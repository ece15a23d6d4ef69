"""VL: what `vllm serve` does with the arguments a unit gives it, per vLLM version.

Each check reads the argv the program actually receives (after systemd's unquoting and
`$` substitution), parsed against the generated catalog of the target vLLM version
(`--vllm-version`), and says whether vLLM exits at argument parsing, fails at engine
start, or silently runs something other than what was written.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from linting.context import RunContext, UnitContext, VllmCommand
from linting.findings import Finding, Severity
from linting.rules.gpu_ops import visible_gpu_count
from linting.rules.registry import register
from linting.spans import Span, Traced
from linting.vllm.catalog import (
    VllmCatalog,
    available_versions,
    load_catalog,
)
from linting.vllm.invocation import (
    ALL_INTERFACES,
    DEFAULT_PORT,
    ArgProblem,
    SpecEntry,
    SpecView,
    load_json,
    point,
)

# When each kind of mistake hits (DESIGN.md "vLLM"): argparse errors exit with status 2
# before anything is loaded; the SpeculativeConfig / ModelConfig / ParallelConfig objects
# are built by EngineArgs.create_engine_config() at engine start.
AT_PARSE = "at argument parsing (exit status 2, before anything is loaded)"
AT_ENGINE = "when it builds the engine config (after argument parsing)"
NGRAM_DEFAULT_LOOKUP = 5  # vllm/config/speculative.py:251 in 0.11.0 (same in 0.8.5..0.33)


def _problems(ctx: UnitContext, *kinds: str) -> Iterator[tuple[VllmCommand, ArgProblem]]:
    for vc in ctx.vllm_commands:
        for problem in vc.args.problems:
            if problem.kind in kinds:
                yield vc, problem


def _v(catalog: VllmCatalog) -> str:
    return f"vLLM {catalog.version}"


def _shown(value: Any) -> str:
    import json

    text = value if isinstance(value, str) else json.dumps(value)
    return text if len(text) <= 80 else text[:79] + "…"


# -- the effective speculative config ----------------------------------------------------


def _known_fields(catalog: VllmCatalog) -> list[str]:
    spec = catalog.speculative_config
    return [f for f in spec.fields if f not in spec.internal_keys]


def _effective_method(view: SpecView) -> Any:
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


def _effective_value(view: SpecView, catalog: VllmCatalog, field: str) -> Any:
    d = view.as_dict
    if _effective_method(view) == "ngram" and field in ("prompt_lookup_min", "prompt_lookup_max"):
        lo, hi = _ngram_lookup(d)
        return lo if field == "prompt_lookup_min" else hi
    spec = catalog.speculative_config.fields.get(field)
    return d.get(field, spec.default if spec else None)


def _spec_data(view: SpecView) -> dict[str, Any]:
    return {"speculative_config": view.as_dict}


# -- VL301 -------------------------------------------------------------------------------


@register(
    "VL301",
    "speculative-config-invalid-json",
    Severity.ERROR,
    doc="""
    The `--speculative-config` value vLLM receives is not a JSON object.

    What it does:
    Runs `json.loads` on the argument exactly as vLLM receives it (after systemd removed
    the quotes) and points at the character where parsing stops.

    Why is this bad?
    `--speculative-config` is parsed with `json.loads` by argparse
    (vllm/engine/arg_utils.py:749 in 0.8.5, `optional_type(json.loads)` at :1193 in 0.16.0):
    invalid JSON makes `vllm serve` exit with status 2 before anything is loaded. Valid
    JSON that is not an object (`5`, `[...]`) passes argparse and fails at engine start
    (`SpeculativeConfig(**value)`). Nested double quotes are the usual cause: systemd ends
    the outer quote at the inner `"`, so vLLM receives `{method: ngram}`.

    Example:
    ```ini
    ExecStart=/opt/vllm/bin/vllm serve /models/m --speculative-config "{"method": "ngram"}"
    ```

    Use instead:
    ```ini
    ExecStart=/opt/vllm/bin/vllm serve /models/m --speculative-config '{"method": "ngram", "num_speculative_tokens": 5}'
    ```
    """,
)
def check_spec_json(ctx: UnitContext) -> Iterator[Finding]:
    for vc in ctx.vllm_commands:
        for source in vc.args.speculative_sources:
            option = source.option
            if option is None or option.value is None:
                continue
            value = option.value
            if source.error is not None:
                exc = source.error
                hint = _quote_hint(ctx, vc, value)
                ctx.add(
                    "VL301",
                    point(value, exc.pos),
                    f"{_v(vc.args.catalog)} refuses to start {AT_PARSE}: `json.loads` fails "
                    f'on --speculative-config with "{exc.msg}" at character {exc.pos + 1} '
                    f"of the argument it receives: `{_shown(value.text)}`{hint}",
                    path=vc.path,
                    data={"received": value.text, "json_error": exc.msg, "json_pos": exc.pos},
                )
            elif source.not_object:
                ctx.add(
                    "VL301",
                    value.span(),
                    f"--speculative-config is valid JSON but not an object: "
                    f"{_v(vc.args.catalog)} passes argument parsing and then fails {AT_ENGINE} "
                    "(`SpeculativeConfig(**value)` needs a mapping)",
                    path=vc.path,
                    data={"received": value.text},
                )
    return iter(())


def _quote_hint(ctx: UnitContext, vc: VllmCommand, value: Traced) -> str:
    """Explain nested double quotes when the file shows more `"` than vLLM received."""
    written = ctx.unit.text_at(vc.path, value.span())
    if written is not None and written.count('"') > value.text.count('"'):
        return (
            "; systemd treated the inner double quotes as the end and start of quoting and "
            "removed them: put the JSON in single quotes"
        )
    return ""


# -- VL302 -------------------------------------------------------------------------------


@register(
    "VL302",
    "speculative-config-unknown-key",
    Severity.ERROR,
    doc="""
    A key in `--speculative-config` that this vLLM version's SpeculativeConfig lacks.

    What it does:
    Compares every key of the speculative config (JSON, dotted `--speculative-config.key`
    form) with the fields of SpeculativeConfig in the target version, and suggests the
    closest field.

    Why is this bad?
    What happens depends on the version: 0.8.x raises `TypeError: unexpected keyword
    argument` at engine start; 0.11–0.15 use a pydantic dataclass with `extra='ignore'`
    and **silently drop the key**, so a different config runs than the one written
    (a misspelt `prompt_lookup_max` leaves ngram at its default 5); 0.16 and later forbid
    extra keys and refuse to start with pydantic's "Unexpected keyword argument".

    Example:
    ```ini
    ExecStart=/opt/vllm/bin/vllm serve /models/m --speculative-config '{"method": "ngram", "num_speculative_tokens": 5, "promt_lookup_max": 4}'
    ```

    Use instead:
    ```ini
    ExecStart=/opt/vllm/bin/vllm serve /models/m --speculative-config '{"method": "ngram", "num_speculative_tokens": 5, "prompt_lookup_max": 4}'
    ```
    """,
)
def check_spec_unknown_keys(ctx: UnitContext) -> Iterator[Finding]:
    for vc in ctx.vllm_commands:
        view = vc.args.spec_view
        if view is None:
            continue
        catalog = vc.args.catalog
        spec = catalog.speculative_config
        fields = _known_fields(catalog)
        for key, entry in view.entries.items():
            if key in spec.fields or key == "tensor_parallel_size":  # VL305
                continue
            close = difflib.get_close_matches(key, fields, n=1, cutoff=0.6)
            suggestion = close[0] if close else None
            did_you_mean = f"; did you mean `{suggestion}`?" if suggestion else ""
            where = _where(entry)
            if spec.unknown_keys == "ignored":
                effect = ""
                if suggestion and suggestion not in view.entries:
                    runs = _effective_value(view, catalog, suggestion)
                    method = _effective_method(view) or "speculative decoding"
                    effect = f": {method} runs with {suggestion}={_shown(runs)}"
                message = (
                    f"{_v(catalog)} silently ignores {where}`{entry.key}` (SpeculativeConfig "
                    f"drops unknown keys){effect}, not the config written{did_you_mean}"
                )
            elif spec.unknown_keys == "type_error":
                message = (
                    f'{_v(catalog)} refuses to start {AT_ENGINE}: "TypeError: '
                    f"SpeculativeConfig.__init__() got an unexpected keyword argument "
                    f"'{entry.key}'\"{did_you_mean}"
                )
            else:
                message = (
                    f'{_v(catalog)} refuses to start {AT_ENGINE}: pydantic "Unexpected '
                    f'keyword argument" for {where}`{entry.key}`{did_you_mean}'
                )
            ctx.add(
                "VL302",
                entry.key_text.span(),
                message,
                path=vc.path,
                data={
                    **_spec_data(view),
                    "key": entry.key,
                    "suggestion": suggestion,
                    "unknown_keys": spec.unknown_keys,
                },
            )
    return iter(())


def _where(entry: SpecEntry) -> str:
    return "the key " if entry.origin == "json" else "the dotted key "


# -- VL303 / VL308 -----------------------------------------------------------------------


def _versions_accepting(method: str) -> list[str]:
    found = []
    for version in available_versions():
        if method in load_catalog(version).speculative_config.methods_accepted:
            found.append(version)
    return found


@register(
    "VL303",
    "speculative-method-unsupported",
    Severity.ERROR,
    doc="""
    A speculative decoding `method` that the target vLLM version does not accept.

    What it does:
    Checks `method` (from `--speculative-config`, `--speculative-config.method` or 0.33's
    `--spec-method`) against the methods the version accepts, and names the versions that
    do accept it.

    Why is this bad?
    From 0.11 SpeculativeConfig is a pydantic dataclass that validates `method` against a
    `Literal` and refuses to start at engine start. Methods come and go: `eagle3` already
    works in 0.8.5 (its code handles it although the type hint omits it), `suffix` arrives
    in 0.14, and 0.33 drops `medusa` and `mlp_speculator`.

    Example:
    ```ini
    # with vLLM 0.33
    ExecStart=/opt/vllm/bin/vllm serve /models/m --speculative-config '{"method": "medusa", "model": "/models/medusa", "num_speculative_tokens": 3}'
    ```

    Use instead:
    ```ini
    ExecStart=/opt/vllm/bin/vllm serve /models/m --speculative-config '{"method": "eagle3", "model": "/models/eagle3", "num_speculative_tokens": 3}'
    ```
    """,
)
def check_spec_method(ctx: UnitContext) -> Iterator[Finding]:
    for vc in ctx.vllm_commands:
        view = vc.args.spec_view
        if view is None or "method" not in view.entries:
            continue
        entry = view.entries["method"]
        method = entry.value
        catalog = vc.args.catalog
        accepted = catalog.speculative_config.methods_accepted
        if method is None or not isinstance(method, str) or method in accepted:
            continue
        if entry.origin == "shorthand" and catalog.flag("--spec-method"):
            spec = catalog.flag("--spec-method")
            if spec is not None and spec.choices:
                continue  # argparse choices: reported by VL321
        others = _versions_accepting(method)
        if others:
            also = f"; accepted by vLLM {', '.join(others)}"
        else:
            also = "; no known vLLM version accepts it"
        close = difflib.get_close_matches(method, accepted, n=1, cutoff=0.6)
        did_you_mean = f"; did you mean `{close[0]}`?" if close else ""
        if catalog.speculative_config.unknown_keys == "type_error":
            what = f"{_v(catalog)} has no speculative method {method!r}: it fails {AT_ENGINE}"
        else:
            what = (
                f"{_v(catalog)} refuses to start {AT_ENGINE}: pydantic rejects method "
                f"{method!r} (not one of its {len(accepted)} methods)"
            )
        ctx.add(
            "VL303",
            entry.value_text.span(),
            what + also + did_you_mean,
            path=vc.path,
            data={
                **_spec_data(view),
                "method": method,
                "accepted_by": others,
                "methods_accepted": list(accepted),
            },
        )
    return iter(())


@register(
    "VL308",
    "speculative-method-deprecated",
    Severity.WARNING,
    doc="""
    A model-specific `*_mtp` speculative method that vLLM rewrites to `mtp`.

    What it does:
    Finds `method` values such as `deepseek_mtp` or `qwen3_next_mtp` that the target
    version still accepts but logs as deprecated.

    Why is this bad?
    vLLM logs "method `deepseek_mtp` is deprecated and replaced with mtp" and runs `mtp`
    (vllm/config/speculative.py:214 in 0.11.0, :294 in 0.16.0, :1248 in 0.33.0). The
    aliases are kept for compatibility and may be removed; the profile should say `mtp`.

    Example:
    ```ini
    ExecStart=/opt/vllm/bin/vllm serve /models/m --speculative-config '{"method": "deepseek_mtp", "num_speculative_tokens": 1}'
    ```

    Use instead:
    ```ini
    ExecStart=/opt/vllm/bin/vllm serve /models/m --speculative-config '{"method": "mtp", "num_speculative_tokens": 1}'
    ```
    """,
)
def check_spec_method_deprecated(ctx: UnitContext) -> Iterator[Finding]:
    for vc in ctx.vllm_commands:
        view = vc.args.spec_view
        catalog = vc.args.catalog
        if view is None or catalog.speculative_config.unknown_keys == "type_error":
            continue  # 0.8.5 has no `mtp` method to rewrite to
        entry = view.entries.get("method")
        if entry is None or not isinstance(entry.value, str):
            continue
        method = entry.value
        if method.endswith("_mtp") and method in catalog.speculative_config.methods_accepted:
            ctx.add(
                "VL308",
                entry.value_text.span(),
                f'{_v(catalog)} logs "method `{method}` is deprecated and replaced with '
                'mtp" and runs method \'mtp\'; write "mtp"',
                path=vc.path,
                data=_spec_data(view),
            )
    return iter(())


# -- VL304 -------------------------------------------------------------------------------


@register(
    "VL304",
    "speculative-value-out-of-range",
    Severity.ERROR,
    doc="""
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
    """,
)
def check_spec_values(ctx: UnitContext) -> Iterator[Finding]:
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
                ctx.add(
                    "VL304",
                    entry.value_text.span(),
                    f"`{key}` must be {problem}: {_v(catalog)} refuses to start {AT_ENGINE}",
                    path=vc.path,
                    data=_spec_data(view),
                )
        _check_ranges(ctx, vc, view, bad_type)
    return iter(())


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


def _check_ranges(ctx: UnitContext, vc: VllmCommand, view: SpecView, bad: set[str]) -> None:
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
        ctx.add(
            "VL304",
            entry.value_text.span(),
            f"num_speculative_tokens must be > 0: {_v(catalog)} refuses to start {AT_ENGINE}: "
            f"{why}",
            path=vc.path,
            data=_spec_data(view),
        )
    is_ngram = _effective_method(view) == "ngram"
    for key in ("prompt_lookup_min", "prompt_lookup_max"):
        value = number(key)
        # 0.16+: Field(ge=1) for every method; before: checked only for ngram.
        if value is not None and value < 1 and (pydantic_bounds or is_ngram):
            ctx.add(
                "VL304",
                view.entries[key].value_text.span(),
                f"{key} must be >= 1: {_v(catalog)} refuses to start {AT_ENGINE}",
                path=vc.path,
                data=_spec_data(view),
            )
    lo, hi = number("prompt_lookup_min"), number("prompt_lookup_max")
    if is_ngram and lo is not None and hi is not None and lo > hi:
        entry = view.entries["prompt_lookup_min"]
        ctx.add(
            "VL304",
            entry.value_text.span(),
            f"prompt_lookup_min={_shown(entry.value)} is larger than prompt_lookup_max="
            f"{_shown(view.get('prompt_lookup_max'))}: {_v(catalog)} refuses to start "
            f'{AT_ENGINE} ("prompt_lookup_min=… must be <= prompt_lookup_max=…")',
            path=vc.path,
            data=_spec_data(view),
        )


# -- VL305 -------------------------------------------------------------------------------


@register(
    "VL305",
    "speculative-tensor-parallel-size",
    Severity.ERROR,
    doc="""
    `tensor_parallel_size` inside `--speculative-config`.

    What it does:
    Finds the key `tensor_parallel_size` in the speculative config.

    Why is this bad?
    The draft model's parallelism is `draft_tensor_parallel_size`. 0.16+ refuse to start
    with "'tensor_parallel_size' is not a valid argument in the speculative_config"
    (vllm/config/speculative.py:658 in 0.16.0); 0.11 silently ignores it, so the draft runs
    with vLLM's default; 0.8.5 raises TypeError.

    Example:
    ```ini
    ExecStart=/opt/vllm/bin/vllm serve /models/m -tp 4 --speculative-config '{"model": "/models/draft", "num_speculative_tokens": 4, "tensor_parallel_size": 1}'
    ```

    Use instead:
    ```ini
    ExecStart=/opt/vllm/bin/vllm serve /models/m -tp 4 --speculative-config '{"model": "/models/draft", "num_speculative_tokens": 4, "draft_tensor_parallel_size": 1}'
    ```
    """,
)
def check_spec_tp(ctx: UnitContext) -> Iterator[Finding]:
    for vc in ctx.vllm_commands:
        view = vc.args.spec_view
        if view is None or "tensor_parallel_size" not in view.entries:
            continue
        entry = view.entries["tensor_parallel_size"]
        catalog = vc.args.catalog
        mode = catalog.speculative_config.unknown_keys
        if "tensor_parallel_size" in catalog.speculative_config.fields:
            what = (
                f"{_v(catalog)} refuses to start {AT_ENGINE}: \"'tensor_parallel_size' is not "
                "a valid argument in the speculative_config. Please pass "
                "'draft_tensor_parallel_size' instead.\""
            )
        elif mode == "ignored":
            what = (
                f"{_v(catalog)} silently ignores `tensor_parallel_size` in the speculative "
                "config: the draft model runs with the default draft_tensor_parallel_size, "
                "not the one written; use `draft_tensor_parallel_size`"
            )
        else:
            what = (
                f'{_v(catalog)} refuses to start {AT_ENGINE}: "TypeError: unexpected keyword '
                "argument 'tensor_parallel_size'\"; use `draft_tensor_parallel_size`"
            )
        ctx.add("VL305", entry.key_text.span(), what, path=vc.path, data=_spec_data(view))
    return iter(())


# -- VL306 / VL320 / VL321 / VL323 / VL326 ... argument problems ------------------------

_LEGACY_KEYS = {
    "--speculative-model": "model",
    "--num-speculative-tokens": "num_speculative_tokens",
    "--ngram-prompt-lookup-max": "prompt_lookup_max",
    "--ngram-prompt-lookup-min": "prompt_lookup_min",
}


@register(
    "VL306",
    "removed-speculative-flag",
    Severity.ERROR,
    doc="""
    A speculative decoding flag that vLLM removed (`--speculative-model`, …).

    What it does:
    Finds the pre-0.8 flags `--speculative-model`, `--num-speculative-tokens`,
    `--ngram-prompt-lookup-max`, `--ngram-prompt-lookup-min`.

    Why is this bad?
    They no longer exist; argparse exits with "unrecognized arguments" before anything
    is loaded. Their settings are keys of `--speculative-config` now.

    Example:
    ```ini
    ExecStart=/opt/vllm/bin/vllm serve /models/m --speculative-model "[ngram]" --num-speculative-tokens 5
    ```

    Use instead:
    ```ini
    ExecStart=/opt/vllm/bin/vllm serve /models/m --speculative-config '{"method": "ngram", "num_speculative_tokens": 5}'
    ```
    """,
)
def check_removed_flags(ctx: UnitContext) -> Iterator[Finding]:
    for vc, problem in _problems(ctx, "removed_flag"):
        key = problem.data["flag"]
        new = _LEGACY_KEYS.get(key)
        instead = f'; write it as the key "{new}" of --speculative-config' if new else ""
        ctx.add(
            "VL306",
            problem.text.span(),
            f"`{key}` was removed from vLLM: {_v(vc.args.catalog)} refuses to start "
            f'{AT_PARSE} ("unrecognized arguments"){instead}',
            path=vc.path,
        )
    return iter(())


@register(
    "VL307",
    "spec-shorthand-conflict",
    Severity.ERROR,
    doc="""
    `--spec-method/--spec-model/--spec-tokens` together with the same key in
    `--speculative-config` (vLLM 0.33+).

    What it does:
    Finds a shorthand flag whose key is also set in the speculative config JSON.

    Why is this bad?
    vLLM raises "ValueError: --spec-tokens and --speculative-config['num_speculative_tokens']
    are mutually exclusive" at engine start (vllm/engine/arg_utils.py:2116 in 0.33.0).

    Example:
    ```ini
    ExecStart=/opt/vllm/bin/vllm serve /models/m --spec-tokens 4 --speculative-config '{"method": "ngram", "num_speculative_tokens": 5}'
    ```

    Use instead:
    ```ini
    ExecStart=/opt/vllm/bin/vllm serve /models/m --speculative-config '{"method": "ngram", "num_speculative_tokens": 5}'
    ```
    """,
)
def check_shorthand_conflict(ctx: UnitContext) -> Iterator[Finding]:
    for vc in ctx.vllm_commands:
        view = vc.args.spec_view
        if view is None:
            continue
        # The check uses the keys as written, before 0.33's `-`→`_` rewrite
        # (vllm/engine/arg_utils.py:2116 vs :2126 in 0.33.0).
        written = {e.key for e in view.source.entries}
        for entry, flag in view.shorthand:
            if entry.key not in written:
                continue
            other = next(e for e in view.source.entries if e.key == entry.key)
            ctx.add(
                "VL307",
                entry.key_text.span(),
                f'{_v(vc.args.catalog)} refuses to start {AT_ENGINE}: "ValueError: {flag} '
                f"and --speculative-config['{entry.key}'] are mutually exclusive\" "
                f"(--speculative-config sets it to {_shown(other.value)})",
                path=vc.path,
                data=_spec_data(view),
            )
    return iter(())


@register(
    "VL309",
    "speculative-config-overridden",
    Severity.ERROR,
    doc="""
    A `--speculative-config` that a later one (or the dotted form) replaces entirely.

    What it does:
    Finds several `--speculative-config` values in one command, including
    `--speculative-config.KEY VALUE` next to a JSON `--speculative-config`.

    Why is this bad?
    argparse keeps only the last value; the values are not merged. From 0.11 the dotted
    keys are folded into one JSON argument appended at the END of argv
    (FlexibleArgumentParser.parse_args, vllm/utils/argparse_utils.py:497 in 0.33.0), so
    `--speculative-config.num_speculative_tokens 3` silently discards a JSON config
    written before or after it.

    Example:
    ```ini
    ExecStart=/opt/vllm/bin/vllm serve /models/m --speculative-config '{"method": "ngram", "prompt_lookup_max": 4}' --speculative-config.num_speculative_tokens 5
    ```

    Use instead:
    ```ini
    ExecStart=/opt/vllm/bin/vllm serve /models/m --speculative-config '{"method": "ngram", "prompt_lookup_max": 4, "num_speculative_tokens": 5}'
    ```
    """,
)
def check_spec_overridden(ctx: UnitContext) -> Iterator[Finding]:
    for vc in ctx.vllm_commands:
        sources = vc.args.speculative_sources
        if len(sources) < 2:
            continue
        winner = sources[-1]
        kept = (
            "the dotted --speculative-config.* keys"
            if winner.kind == "dotted"
            else ("the last --speculative-config")
        )
        for source in sources[:-1]:
            if source.option is None or source.option.value is None:
                continue
            ctx.add(
                "VL309",
                source.option.span(),
                f"{_v(vc.args.catalog)} ignores this --speculative-config: argparse keeps only "
                f"{kept} ({_shown(winner.as_dict)}); values are not merged",
                path=vc.path,
                data={"ignored": source.as_dict, "used": winner.as_dict},
            )
    return iter(())


@register(
    "VL320",
    "unknown-flag",
    Severity.ERROR,
    doc="""
    An option the target vLLM version does not have.

    What it does:
    Resolves every option word the way `vllm serve` does (`_`→`-`, `--x=v`, unique
    abbreviations, `-O3`, dotted JSON keys) against the version's catalog; reports
    unknown and ambiguous ones with the closest known option.

    Why is this bad?
    argparse exits with "unrecognized arguments" (or "ambiguous option") before anything
    is loaded. Options are renamed between versions, so a unit that worked on one vLLM
    fails on the next.

    Example:
    ```ini
    ExecStart=/opt/vllm/bin/vllm serve /models/m --gpu-memory-utilisation 0.9
    ```

    Use instead:
    ```ini
    ExecStart=/opt/vllm/bin/vllm serve /models/m --gpu-memory-utilization 0.9
    ```
    """,
)
def check_unknown_flags(ctx: UnitContext) -> Iterator[Finding]:
    for vc, problem in _problems(ctx, "unknown_flag", "ambiguous_flag"):
        catalog = vc.args.catalog
        word = problem.text.text.partition("=")[0]
        if problem.kind == "ambiguous_flag":
            message = f"{_v(catalog)} refuses to start {AT_PARSE}: {problem.message}"
        else:
            hint = f"; did you mean `{problem.suggestion}`?" if problem.suggestion else ""
            message = (
                f"{_v(catalog)} refuses to start {AT_PARSE}: argparse reports "
                f'"unrecognized arguments: {word}"{hint}'
            )
        ctx.add(
            "VL320",
            problem.text[: len(word)].span(),
            message,
            path=vc.path,
            data={"suggestion": problem.suggestion, **problem.data},
        )
    return iter(())


@register(
    "VL321",
    "invalid-choice",
    Severity.ERROR,
    doc="""
    A value outside the choices of an option (e.g. `--dtype`, `--kv-cache-dtype`,
    `--quantization`).

    What it does:
    Checks values against argparse `choices` of the target version; for `--quantization`,
    which has no argparse choices from 0.11 on, against vLLM's list of quantization methods.

    Why is this bad?
    With argparse choices `vllm serve` exits with "invalid choice" before anything is
    loaded. Without them (quantization in 0.11+) the value passes argument parsing and vLLM
    fails at engine start with "Unknown quantization method" (ModelConfig).

    Example:
    ```ini
    ExecStart=/opt/vllm/bin/vllm serve /models/m --kv-cache-dtype fp8-e4m3
    ```

    Use instead:
    ```ini
    ExecStart=/opt/vllm/bin/vllm serve /models/m --kv-cache-dtype fp8_e4m3
    ```
    """,
)
def check_choices(ctx: UnitContext) -> Iterator[Finding]:
    for vc, problem in _problems(ctx, "invalid_choice", "runtime_choice"):
        catalog = vc.args.catalog
        hint = f"; did you mean `{problem.suggestion}`?" if problem.suggestion else ""
        if problem.kind == "invalid_choice":
            message = f"{_v(catalog)} refuses to start {AT_PARSE}: {problem.message}{hint}"
        else:
            message = (
                f"{problem.message}: argparse accepts it, then vLLM refuses to start when it "
                "builds the engine config, with "
                f'"Unknown quantization method: {problem.text.text}"{hint}'
            )
        ctx.add("VL321", problem.text.span(), message, path=vc.path, data=problem.data)
    return iter(())


@register(
    "VL322",
    "gpu-memory-utilization-range",
    Severity.ERROR,
    doc="""
    `--gpu-memory-utilization` outside (0, 1].

    What it does:
    Checks that the fraction of GPU memory vLLM may use is above 0 and at most 1.

    Why is this bad?
    It is a fraction, not a percentage. Above 1, vLLM refuses to start at engine start
    ("GPU memory utilization must be less than 1.0", CacheConfig in 0.8.5/0.11; pydantic
    `Field(gt=0, le=1)` at vllm/config/cache.py:49 in 0.16.0). 0 or less leaves no memory
    for the KV cache (0.16+ reject it when the config is built).

    Example:
    ```ini
    ExecStart=/opt/vllm/bin/vllm serve /models/m --gpu-memory-utilization 90
    ```

    Use instead:
    ```ini
    ExecStart=/opt/vllm/bin/vllm serve /models/m --gpu-memory-utilization 0.90
    ```
    """,
)
def check_gpu_memory(ctx: UnitContext) -> Iterator[Finding]:
    for vc in ctx.vllm_commands:
        for option in vc.args.all("gpu_memory_utilization"):
            if option.value is None:
                continue
            try:
                value = float(option.value.text)
            except ValueError:
                continue  # VL323
            if 0 < value <= 1:
                continue
            hint = f"; did you mean {value / 100:g}?" if 1 < value <= 100 else ""
            ctx.add(
                "VL322",
                option.value.span(),
                f"--gpu-memory-utilization is a fraction in (0, 1]; {_v(vc.args.catalog)} "
                f"refuses to start {AT_ENGINE} with {option.value.text}{hint}",
                path=vc.path,
            )
    return iter(())


@register(
    "VL323",
    "invalid-number",
    Severity.ERROR,
    doc="""
    A value that an int, float or human-readable int option cannot parse.

    What it does:
    Applies the option's argparse `type` of the target version: `int`, `float`, and
    vLLM's `human_readable_int` (`32k` = 32000, `32K` = 32768; `auto`/`-1` where the
    option also accepts them).

    Why is this bad?
    argparse exits with "invalid int value" (or similar) before anything is loaded.
    `--max-model-len 32q` or `--max-num-seqs 8,` look harmless in a profile form.

    Example:
    ```ini
    ExecStart=/opt/vllm/bin/vllm serve /models/m --max-model-len 32q
    ```

    Use instead:
    ```ini
    ExecStart=/opt/vllm/bin/vllm serve /models/m --max-model-len 32k
    ```
    """,
)
def check_numbers(ctx: UnitContext) -> Iterator[Finding]:
    for vc, problem in _problems(ctx, "wrong_type"):
        option = problem.option
        name = option.key.text if option else "the option"
        ctx.add(
            "VL323",
            problem.text.span(fallback=option.word.span() if option else None),
            f"{_v(vc.args.catalog)} refuses to start {AT_PARSE}: {name}: {problem.message}",
            path=vc.path,
            data=problem.data,
        )
    return iter(())


@register(
    "VL330",
    "invalid-json-argument",
    Severity.ERROR,
    doc="""
    A JSON-typed option (other than --speculative-config, see VL301) whose value is not
    valid JSON.

    What it does:
    Runs `json.loads` on values of JSON options such as `--compilation-config` or
    `--hf-overrides` that start with `{` or `[`.

    Why is this bad?
    argparse converts them with `json.loads`; invalid JSON exits with "Value … cannot be
    converted" before anything is loaded.

    Example:
    ```ini
    ExecStart=/opt/vllm/bin/vllm serve /models/m --compilation-config '{"level": 3,}'
    ```

    Use instead:
    ```ini
    ExecStart=/opt/vllm/bin/vllm serve /models/m --compilation-config '{"level": 3}'
    ```
    """,
)
def check_other_json(ctx: UnitContext) -> Iterator[Finding]:
    import json

    for vc, problem in _problems(ctx, "invalid_json"):
        option = problem.option
        if option is None or option.dest == "speculative_config":
            continue  # VL301
        try:
            load_json(problem.text.text)
            continue
        except json.JSONDecodeError as exc:
            ctx.add(
                "VL330",
                point(problem.text, exc.pos),
                f"{_v(vc.args.catalog)} refuses to start {AT_PARSE}: {option.key.text} is not "
                f'valid JSON ("{exc.msg}" at character {exc.pos + 1})',
                path=vc.path,
            )
    return iter(())


@register(
    "VL326",
    "missing-flag-value",
    Severity.ERROR,
    doc="""
    An option that needs a value is last or followed by another option.

    What it does:
    Finds value-taking options with no value after them in the argv vLLM receives.

    Why is this bad?
    argparse exits with "expected one argument". It often follows from an unset `$VAR`
    that systemd removed (see EX202).

    Example:
    ```ini
    ExecStart=/opt/vllm/bin/vllm serve /models/m --served-model-name --port 8001
    ```

    Use instead:
    ```ini
    ExecStart=/opt/vllm/bin/vllm serve /models/m --served-model-name kimi --port 8001
    ```
    """,
)
def check_missing_values(ctx: UnitContext) -> Iterator[Finding]:
    for vc, problem in _problems(ctx, "missing_value"):
        ctx.add(
            "VL326",
            problem.text.span(),
            f"{_v(vc.args.catalog)} refuses to start {AT_PARSE}: {problem.message}",
            path=vc.path,
        )
    return iter(())


@register(
    "VL327",
    "serve-model-option",
    Severity.ERROR,
    doc="""
    `vllm serve … --model X` on vLLM versions that refuse it (0.8.x–0.11).

    What it does:
    Finds the exact word `--model` in a `vllm serve` command when the target version's
    parser rejects it.

    Why is this bad?
    FlexibleArgumentParser raises "With `vllm serve`, you should provide the model as a
    positional argument…" before argparse runs (vllm/utils/__init__.py:1856 in 0.11.0).
    0.16+ move `--model X` to the positional with a deprecation warning.

    Example:
    ```ini
    ExecStart=/opt/vllm/bin/vllm serve --model /models/m
    ```

    Use instead:
    ```ini
    ExecStart=/opt/vllm/bin/vllm serve /models/m
    ```
    """,
)
def check_model_option(ctx: UnitContext) -> Iterator[Finding]:
    for vc, problem in _problems(ctx, "model_option"):
        ctx.add("VL327", problem.text.span(), problem.message, path=vc.path)
    return iter(())


@register(
    "VL328",
    "unrecognized-argument",
    Severity.ERROR,
    doc="""
    A stray positional argument (or a flag value that is not consumed) in a vLLM command.

    What it does:
    Finds words that are neither an option, an option's value, nor the model.

    Why is this bad?
    argparse exits with "unrecognized arguments". Typical causes: a second model path, a
    value given to a flag that takes none, or a `${VAR}` holding several words passed as
    one argument.

    Example:
    ```ini
    ExecStart=/opt/vllm/bin/vllm serve /models/m /models/draft --port 8001
    ```

    Use instead:
    ```ini
    ExecStart=/opt/vllm/bin/vllm serve /models/m --port 8001
    ```
    """,
)
def check_extra_positionals(ctx: UnitContext) -> Iterator[Finding]:
    for vc, problem in _problems(ctx, "extra_positional", "unexpected_value"):
        ctx.add(
            "VL328",
            problem.text.span(),
            f"{_v(vc.args.catalog)} refuses to start {AT_PARSE}: {problem.message}",
            path=vc.path,
        )
    return iter(())


# -- VL324 -------------------------------------------------------------------------------


@register(
    "VL324",
    "tensor-parallel-exceeds-visible-gpus",
    Severity.ERROR,
    doc="""
    More GPUs requested (tensor × pipeline × local data parallel) than
    `CUDA_VISIBLE_DEVICES` makes visible.

    What it does:
    Multiplies `--tensor-parallel-size`, `--pipeline-parallel-size` and the local data
    parallel size (`--data-parallel-size-local`, else `--data-parallel-size`) and compares
    with the number of devices in the unit's `CUDA_VISIBLE_DEVICES` (indices or UUIDs;
    only when the unit sets it).

    Why is this bad?
    vLLM refuses to start: "World size (N) is larger than the number of available GPUs (M)
    in this node" (vllm/config/parallel.py:614 in 0.16.0); extra data parallel ranks find
    no device. Usually the profile's GPU list and `-tp` disagree.

    Example:
    ```ini
    Environment=CUDA_VISIBLE_DEVICES=0,1
    ExecStart=/opt/vllm/bin/vllm serve /models/m --tensor-parallel-size 4
    ```

    Use instead:
    ```ini
    Environment=CUDA_VISIBLE_DEVICES=0,1,2,3
    ExecStart=/opt/vllm/bin/vllm serve /models/m --tensor-parallel-size 4
    ```
    """,
)
def check_visible_gpus(ctx: UnitContext) -> Iterator[Finding]:
    var = ctx.environment.get("CUDA_VISIBLE_DEVICES")
    if var is None:
        return iter(())
    visible = visible_gpu_count(var.value)
    for vc in ctx.vllm_commands:
        args = vc.args
        tp = args.int_value("tensor_parallel_size") or 1
        pp = args.int_value("pipeline_parallel_size") or 1
        dp = args.int_value("data_parallel_size_local") or args.int_value("data_parallel_size")
        dp = dp or 1
        needed = tp * pp * dp
        if needed <= visible:
            continue
        parts = [f"tensor {tp}"]
        if pp > 1:
            parts.append(f"pipeline {pp}")
        if dp > 1:
            parts.append(f"data parallel {dp}")
        anchor = next(
            (
                args.last(d)
                for d in (
                    "tensor_parallel_size",
                    "pipeline_parallel_size",
                    "data_parallel_size_local",
                    "data_parallel_size",
                )
                if args.last(d) is not None
            ),
            None,
        )
        span = anchor.span() if anchor is not None else _command_span(vc)
        if tp * pp > visible:
            what = (
                f'"World size ({tp * pp}) is larger than the number of available GPUs '
                f'({visible}) in this node"'
            )
        else:
            what = f"the data parallel ranks need {needed} GPUs"
        ctx.add(
            "VL324",
            span,
            f"{' × '.join(parts)} needs {needed} GPUs but CUDA_VISIBLE_DEVICES="
            f"{var.value!r} makes {visible} visible: {_v(args.catalog)} refuses to start "
            f"{AT_ENGINE} ({what})",
            path=vc.path,
            data={"needed": needed, "visible": visible},
        )
    return iter(())


def _command_span(vc: VllmCommand) -> Span:
    start = vc.args.argv[0].span()
    end = vc.args.argv[max(vc.args.invocation.args_start - 1, 0)].span()
    return start.union(end)


# -- VL325 -------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Listener:
    unit: UnitContext
    vc: VllmCommand
    host: str | None
    port: int
    span: Span
    explicit: bool


def _listeners(ctx: UnitContext) -> Iterator[_Listener]:
    for vc in ctx.vllm_commands:
        if vc.command.key != "ExecStart":
            continue
        args = vc.args
        option = args.last("port")
        host_opt = args.last("host")
        host = host_opt.value.text if host_opt and host_opt.value else None
        if option is None:
            if args.config_file:
                continue  # the port may come from the --config file
            yield _Listener(ctx, vc, host, DEFAULT_PORT, _command_span(vc), False)
            continue
        port = args.int_value("port")
        if port is not None and option.value is not None:
            yield _Listener(ctx, vc, host, port, option.value.span(), True)


def _overlap(a: str | None, b: str | None) -> bool:
    """Two binds collide when equal or when either is every interface (`--host` unset or
    empty binds all: uvicorn gets host=None)."""
    if a is None or b is None or a in ALL_INTERFACES or b in ALL_INTERFACES:
        return True
    return a == b


@register(
    "VL325",
    "duplicate-port",
    Severity.ERROR,
    per_run=True,
    doc="""
    Two vLLM units of one lint run listen on the same port.

    What it does:
    Compares `--port` (default 8000 when absent) and `--host` (absent, empty or `0.0.0.0`
    means every interface) of the vLLM `ExecStart=` commands of all units linted
    together, and reports both units.

    Why is this bad?
    The second server to start loads its model (minutes, GPU memory) and then fails to
    bind with "address already in use" — or, with one port left at the default 8000,
    health checks and the benchmark talk to the wrong model.

    Example:
    ```ini
    # vllm-a.service
    ExecStart=/opt/vllm/bin/vllm serve /models/a
    # vllm-b.service
    ExecStart=/opt/vllm/bin/vllm serve /models/b
    ```

    Use instead:
    ```ini
    # vllm-a.service
    ExecStart=/opt/vllm/bin/vllm serve /models/a --port 8001
    # vllm-b.service
    ExecStart=/opt/vllm/bin/vllm serve /models/b --port 8002
    ```
    """,
)
def check_duplicate_ports(run: RunContext) -> Iterator[Finding]:
    listeners = [item for unit in run.units for item in _listeners(unit)]
    for a in listeners:
        for b in listeners:
            if a is b or a.unit is b.unit or a.port != b.port or not _overlap(a.host, b.host):
                continue
            default = "" if a.explicit else f" (no --port: vLLM's default {DEFAULT_PORT})"
            run.add(
                a.unit,
                "VL325",
                a.span,
                f"port {a.port}{default} is also used by {b.unit.unit.name} "
                f"(line {b.span.start.line}): the second server to start fails to bind "
                '("address already in use") after loading its model',
                path=a.vc.path,
                data={"port": a.port, "other_unit": b.unit.unit.path},
            )
            break
    return iter(())
