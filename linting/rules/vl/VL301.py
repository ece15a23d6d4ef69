from __future__ import annotations

import json
from collections.abc import Iterator

from linting.context import UnitContext
from linting.findings import Hit, Severity
from linting.rules.registry import rule
from linting.rules.vl._messages import AT_ENGINE, AT_PARSE, shown, vllm_label
from linting.servers import VllmCommand
from linting.spans import Traced
from linting.vllm.invocation import (
    point,
)


def _quote_hint(ctx: UnitContext, vc: VllmCommand, value: Traced) -> str:
    """Explain nested double quotes when the file shows more `"` than vLLM received, and
    single quotes that reached vLLM (written inside "…", or pasted from a shell command
    into a profile's Extra arguments, which take the value as written)."""
    if _kept_shell_quotes(value.text):
        return (
            "; the ' quotes around it are part of the value vLLM receives (no shell removes "
            "them): drop them"
        )
    written = ctx.unit.text_at(vc.path, value.span())
    if written is not None and written.count('"') > value.text.count('"'):
        return (
            "; systemd treated the inner double quotes as the end and start of quoting and "
            "removed them: put the JSON in single quotes"
        )
    return ""


def _kept_shell_quotes(text: str) -> bool:
    """`'{…}'`: valid JSON once the outer single quotes are gone."""
    if len(text) < 2 or text[0] != "'" or text[-1] != "'":
        return False
    try:
        json.loads(text[1:-1])
    except ValueError:
        return False
    return True


@rule("VL301", Severity.ERROR)
def speculative_config_invalid_json(ctx: UnitContext) -> Iterator[Hit]:
    """
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
    """
    for vc in ctx.vllm_commands:
        for source in vc.args.speculative_sources:
            option = source.option
            if option is None or option.value is None:
                continue
            value = option.value
            if source.error is not None:
                exc = source.error
                hint = _quote_hint(ctx, vc, value)
                yield Hit(
                    point(value, exc.pos),
                    f"{vllm_label(vc.args.catalog)} refuses to start {AT_PARSE}: `json.loads` fails "
                    f'on --speculative-config with "{exc.msg}" at character {exc.pos + 1} '
                    f"of the argument it receives: `{shown(value.text)}`{hint}",
                    {"received": value.text, "json_error": exc.msg, "json_pos": exc.pos},
                    path=vc.path,
                )
            elif source.not_object:
                yield Hit(
                    value.span(),
                    f"--speculative-config is valid JSON but not an object: "
                    f"{vllm_label(vc.args.catalog)} passes argument parsing and then fails {AT_ENGINE} "
                    "(`SpeculativeConfig(**value)` needs a mapping)",
                    {"received": value.text},
                    path=vc.path,
                )
