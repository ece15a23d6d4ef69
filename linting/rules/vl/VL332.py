from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from linting.context import RunContext, UnitContext
from linting.cuda import devices, read_visible_devices, visible_count
from linting.execline.env_substitution import has_unknown
from linting.findings import Hit, Severity
from linting.rules.registry import rule
from linting.rules.vl._commands import command_span
from linting.rules.vl._machines import same_host_groups
from linting.servers import VllmCommand
from linting.spans import Span

# `--gpu-memory-utilization` when absent: EngineArgs/CacheConfig's `gpu_memory_utilization:
# float = 0.9` (vllm/engine/arg_utils.py, vllm/config/cache.py).
DEFAULT_UTILIZATION = 0.9


@dataclass(frozen=True)
class _Server:
    unit: UnitContext
    vc: VllmCommand
    gpus: frozenset[str] | None  # None: every GPU of the machine (no CUDA_VISIBLE_DEVICES)
    utilization: float
    span: Span


def _visible(ctx: UnitContext) -> frozenset[str] | bool | None:
    """The devices CUDA_VISIBLE_DEVICES names, read the way CUDA reads it (`linting.cuda`:
    indices, UUID prefixes); None when unset (every GPU); False when the linter cannot
    tell (a variable or file it cannot read, a MIG device)."""
    var = ctx.environment.get("CUDA_VISIBLE_DEVICES")
    if var is None:
        return False if ctx.has_unknown_environment else None
    if has_unknown(var.value):
        return False
    reading = read_visible_devices(var.value)
    named = devices(reading)
    if named is None:
        return False
    if visible_count(reading) == 0:
        return frozenset()  # a GPU named twice: CUDA shows none
    return frozenset(map(str, named))


def _servers(ctx: UnitContext) -> Iterator[_Server]:
    gpus = _visible(ctx)
    if gpus is False or gpus == frozenset():
        return
    for vc in ctx.vllm_servers:
        if vc.container is not None:
            continue  # a container's GPUs are `--gpus`/`--device`'s
        option = vc.args.last("gpu_memory_utilization")
        if option is None and vc.args.config_file:
            continue  # it may come from the --config file
        if option is not None and option.value is None:
            continue  # VL326
        value = _fraction(option.value.text if option and option.value else None)
        if value is None:
            continue  # unparsable or out of range: VL322 / VL323
        span = option.value.span() if option and option.value else command_span(vc)
        yield _Server(ctx, vc, gpus, value, span)


def _fraction(text: str | None) -> float | None:
    """The fraction an option value gives (the default when absent); None when not one."""
    if text is None:
        return DEFAULT_UTILIZATION
    try:
        value = float(text)
    except ValueError:
        return None
    return value if 0 < value <= 1 else None


def _shared(a: frozenset[str] | None, b: frozenset[str] | None) -> str | None:
    """The GPUs both see, in words; None when they share none (or cannot be compared: an
    index and a UUID may name one device, but the linter cannot tell)."""
    if a is None and b is None:
        return "every GPU"
    if a is None or b is None:
        return "GPU " + ",".join(sorted(b if a is None else a, key=_device_order))
    common = sorted(a & b, key=_device_order)
    return "GPU " + ",".join(common) if common else None


def _device_order(device: str) -> tuple[int, str]:
    """Indices in numeric order (2 before 10), then UUIDs."""
    return (int(device), "") if device.isdigit() else (1 << 30, device)


def _on_same_machine(servers: list[_Server]) -> Iterator[tuple[_Server, list[_Server]]]:
    """Each server with the servers of other units in one of its `--same-host` groups, in
    run order. Grouped first: comparing every pair would cost a million steps on a run of
    1,000 units that names no group at all (a third of the Python rules' time)."""
    where = [same_host_groups(server.unit) for server in servers]
    groups: dict[str, list[int]] = {}
    for index, names in enumerate(where):
        for group in names:
            groups.setdefault(group, []).append(index)
    for a, names in zip(servers, where, strict=True):
        near = sorted({i for group in names for i in groups[group]})
        yield a, [servers[i] for i in near if servers[i].unit is not a.unit]


@rule("VL332", Severity.WARNING, per_run=True)
def shared_gpu_memory(run: RunContext) -> Iterator[tuple[UnitContext, Hit]]:
    """
    Two vLLM units on one machine share a GPU and reserve more than all its memory.

    What it does:
    Compares the GPUs of the vLLM `ExecStart=` commands of units that run on one machine
    (`CUDA_VISIBLE_DEVICES`, indices or UUIDs; unset means every GPU) and, where they
    share one, adds their `--gpu-memory-utilization` (0.9 when absent). Only units named
    together by `--same-host` count as one machine (specadmin's deploy page names the
    host's deployed units so): unlike ports, a directory of alternative units that all
    use every GPU is common, and would be reported throughout. Units whose devices the
    linter cannot read (a variable, an unreadable `EnvironmentFile=`, a `--config`
    file, a container) are left out.

    Why is this bad?
    vLLM reserves that fraction of each GPU's *total* memory at start and refuses to start
    when less is free: "Free memory on device … on startup is less than desired GPU memory
    utilization" (`init_device` in vllm/v1/worker/gpu_worker.py). With both fractions
    summing to more than 1, whichever server starts second fails.

    Example:
    ```ini
    # vllm-a.service
    ExecStart=/opt/vllm/bin/vllm serve /models/a --port 8001
    # vllm-b.service
    ExecStart=/opt/vllm/bin/vllm serve /models/b --port 8002
    ```

    Use instead:
    ```ini
    # vllm-a.service
    Environment=CUDA_VISIBLE_DEVICES=0,1
    ExecStart=/opt/vllm/bin/vllm serve /models/a --port 8001
    # vllm-b.service
    Environment=CUDA_VISIBLE_DEVICES=2,3
    ExecStart=/opt/vllm/bin/vllm serve /models/b --port 8002
    ```
    """
    if not run.options.same_host:
        return  # no unit is said to share a machine with another (see above)
    servers = [item for unit in run.units for item in _servers(unit)]
    for a, others in _on_same_machine(servers):
        for b in others:
            shared = _shared(a.gpus, b.gpus)
            total = a.utilization + b.utilization
            if shared is None or total <= 1:
                continue
            yield (
                a.unit,
                Hit(
                    a.span,
                    f"{shared} also used by {b.unit.unit.name} (line {b.span.start.line}) on "
                    f"the same machine, which reserves {b.utilization:g} of its memory: with "
                    f"this unit's {a.utilization:g} that is {total:g} of the GPU, so the "
                    'second server to start refuses ("Free memory on device … is less than '
                    'desired GPU memory utilization"). Give them different '
                    "CUDA_VISIBLE_DEVICES, or fractions that sum to at most 1",
                    {"other_unit": b.unit.unit.path, "utilization": total},
                    path=a.vc.path,
                ),
            )
            break
