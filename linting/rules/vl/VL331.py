from __future__ import annotations

from collections.abc import Iterator

from linting.context import UnitContext
from linting.findings import Hit, Severity
from linting.rules.registry import rule
from linting.rules.vl._messages import AT_ENGINE, vllm_label
from linting.vllm.container import ALL


@rule("VL331", Severity.ERROR)
def container_gpus_fewer_than_parallel_size(ctx: UnitContext) -> Iterator[Hit]:
    """
    A vLLM container that gets fewer GPUs than its tensor × pipeline parallel size.

    What it does:
    For `docker run` / `podman run` of the vLLM image, counts the GPUs the container gets
    (`--gpus all|N|"device=0,1"`, CDI `--device nvidia.com/gpu=…`, `-e
    NVIDIA_VISIBLE_DEVICES=…`; none of these: no GPU) and compares with
    `--tensor-parallel-size` × `--pipeline-parallel-size` after the image.

    Why is this bad?
    Inside the container only those GPUs exist: vLLM refuses to start when the world size
    is larger than the number of GPUs it sees ("World size (N) is larger than the number
    of available GPUs (M) in this node", vllm/config/parallel.py), and with no GPU option
    at all it finds no CUDA device.

    Example:
    ```ini
    ExecStart=/usr/bin/docker run --rm --gpus 2 vllm/vllm-openai:v0.16.0 --model /models/m --tensor-parallel-size 4
    ```

    Use instead:
    ```ini
    ExecStart=/usr/bin/docker run --rm --gpus 4 vllm/vllm-openai:v0.16.0 --model /models/m --tensor-parallel-size 4
    ```
    """
    for vc in ctx.vllm_servers:
        run = vc.container
        if run is None or run.gpus == ALL:
            continue
        tp = vc.args.int_value("tensor_parallel_size") or 1
        pp = vc.args.int_value("pipeline_parallel_size") or 1
        given = run.gpus or 0
        if tp * pp <= given:
            continue
        option = vc.args.last("tensor_parallel_size") or vc.args.last("pipeline_parallel_size")
        span = option.span() if option is not None else run.image.span()
        if run.gpus is None:
            what = f"no GPU option: the container sees no GPU and {vllm_label(vc.args.catalog)}"
            what += " finds no CUDA device at start-up"
        else:
            what = (
                f"{run.engine} gives the container {given} GPU{'s' if given != 1 else ''}: "
                f'{vllm_label(vc.args.catalog)} refuses to start {AT_ENGINE} ("World size '
                f'({tp * pp}) is larger than the number of available GPUs ({given})")'
            )
        yield Hit(
            span,
            f"tensor × pipeline parallel needs {tp * pp} GPU{'s' if tp * pp != 1 else ''} but {what}",
            {"needed": tp * pp, "given": run.gpus},
            path=vc.path,
        )
