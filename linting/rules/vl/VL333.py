from __future__ import annotations

from collections.abc import Iterator

from linting.context import UnitContext
from linting.execline.env_substitution import has_unknown
from linting.findings import Hit, Severity
from linting.rules.registry import rule
from linting.rules.vl._commands import command_span


@rule("VL333", Severity.ERROR)
def server_without_model(ctx: UnitContext) -> Iterator[Hit]:
    """
    A vLLM server started without a model.

    What it does:
    Reports `vllm serve` (and `python -m vllm.entrypoints…` servers) of `ExecStart=` that
    name no model: no positional model, no `--model`, no `--config` file that could hold
    one, and no word the linter cannot read (an unset `$ARGS` may hold it).

    Why is this bad?
    vLLM does not refuse: the model is optional and defaults to EngineArgs' `model`
    (vllm/engine/arg_utils.py: `facebook/opt-125m` in older releases, `Qwen/Qwen3-0.6B`
    in newer ones), which it downloads from Hugging Face and serves. The unit looks
    healthy and answers requests, with a model nobody chose.

    Example:
    ```ini
    ExecStart=/opt/vllm/bin/vllm serve --port 8000 --gpu-memory-utilization 0.9
    ```

    Use instead:
    ```ini
    ExecStart=/opt/vllm/bin/vllm serve /models/Qwen2.5-7B-Instruct --port 8000 --gpu-memory-utilization 0.9
    ```
    """
    for vc in ctx.vllm_servers:
        args = vc.args
        if args.model is not None or args.config_file:
            continue
        if any(has_unknown(word.text) for word in args.argv):
            continue
        yield Hit(
            command_span(vc),
            f"no model: vLLM {vc.version.catalog.version} does not refuse, it downloads and "
            "serves EngineArgs' default model; give the model as the first argument",
            path=vc.path,
        )
