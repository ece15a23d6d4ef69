from __future__ import annotations

from collections.abc import Iterator

from linting.context import UnitContext
from linting.cuda import read_visible_devices, visible_count
from linting.findings import Hit, Severity
from linting.rules.registry import rule
from linting.rules.vl._commands import command_span
from linting.rules.vl._messages import AT_ENGINE, vllm_label


@rule("VL324", Severity.ERROR)
def tensor_parallel_exceeds_visible_gpus(ctx: UnitContext) -> Iterator[Hit]:
    """
    More GPUs requested (tensor × pipeline × local data parallel) than
    `CUDA_VISIBLE_DEVICES` makes visible.

    What it does:
    Multiplies `--tensor-parallel-size`, `--pipeline-parallel-size` and the local data
    parallel size (`--data-parallel-size-local`, else `--data-parallel-size`) and compares
    with the number of devices the unit's `CUDA_VISIBLE_DEVICES` makes visible, read the
    way CUDA reads it (indices or UUID prefixes; the list ends at the first entry without
    a number, `01` is GPU 1, a GPU named twice leaves none; only when the unit sets it).

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
    """
    var = ctx.environment.get("CUDA_VISIBLE_DEVICES")
    if var is None:
        return
    visible = visible_count(read_visible_devices(var.value))
    if visible is None:
        return  # a MIG device, a UUID named twice: how many CUDA shows is not known
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
        span = anchor.span() if anchor is not None else command_span(vc)
        if tp * pp > visible:
            what = (
                f'"World size ({tp * pp}) is larger than the number of available GPUs '
                f'({visible}) in this node"'
            )
        else:
            what = f"the data parallel ranks need {needed} GPUs"
        yield Hit(
            span,
            f"{' × '.join(parts)} needs {needed} GPUs but CUDA_VISIBLE_DEVICES="
            f"{var.value!r} makes {visible} visible: {vllm_label(args.catalog)} refuses to start "
            f"{AT_ENGINE} ({what})",
            {"needed": needed, "visible": visible},
            path=vc.path,
        )
