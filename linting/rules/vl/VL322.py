from __future__ import annotations

from collections.abc import Iterator

from linting.context import UnitContext
from linting.findings import Hit, Severity
from linting.rules.registry import rule
from linting.rules.vl._messages import AT_ENGINE, vllm_label


@rule("VL322", Severity.ERROR)
def gpu_memory_utilization_range(ctx: UnitContext) -> Iterator[Hit]:
    """
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
    """
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
            yield Hit(
                option.value.span(),
                f"--gpu-memory-utilization is a fraction in (0, 1]; {vllm_label(vc.args.catalog)} "
                f"refuses to start {AT_ENGINE} with {option.value.text}{hint}",
                path=vc.path,
            )
