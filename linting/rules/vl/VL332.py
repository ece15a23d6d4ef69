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


def _device_order(device: str) -> tuple[int, str]:
    """Indices in numeric order (2 before 10), then UUIDs."""
    return (int(device), "") if device.isdigit() else (1 << 30, device)


# [Unit] dependencies that start units together (systemd.unit(5)): units tied by them run
# on one machine at one time, whatever directory the run found them in.
TIES = ("Requires", "Wants", "BindsTo", "PartOf", "Requisite", "Upholds")


def _machines(servers: list[_Server], run: RunContext) -> list[list[_Server]]:
    """The servers of each machine, in run order: the units of a `--same-host` group, and
    units tied by Requires=/Wants=/BindsTo=/PartOf= (a union-find over both). Grouped
    first: comparing every pair would cost a million steps on a run of 1,000 units."""
    parent = list(range(len(servers)))

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    linked: set[int] = set()
    for members in _links(servers):
        linked.update(members)
        for other in members[1:]:
            parent[root(other)] = root(members[0])
    groups: dict[int, list[_Server]] = {}
    for index in sorted(linked):
        groups.setdefault(root(index), []).append(servers[index])
    return [group for group in groups.values() if len({s.unit.unit.path for s in group}) > 1]


def _links(servers: list[_Server]) -> list[list[int]]:
    """Sets of servers said to share a machine: each `--same-host` group, and each unit
    with the units its [Unit] ties name."""
    by_group: dict[str, list[int]] = {}
    by_name: dict[str, list[int]] = {}
    for index, server in enumerate(servers):
        by_name.setdefault(server.unit.unit.name, []).append(index)
        for group in same_host_groups(server.unit):
            by_group.setdefault(group, []).append(index)
    links = list(by_group.values())
    for index, server in enumerate(servers):
        unit = server.unit.unit
        names = {n for key in TIES for a in unit.get_all("Unit", key) for n in a.value.text.split()}
        tied = [i for name in names - {unit.name} for i in by_name.get(name, [])]
        if tied:
            links.append([index, *tied])
    return links


def _overbooked(machine: list[_Server]) -> list[tuple[str, list[_Server]]]:
    """(the GPUs in words, the servers that reserve more than all of them together), once
    per set of servers: the largest set on any GPU, every GPU they share named."""
    devices = sorted({d for s in machine if s.gpus for d in s.gpus}, key=_device_order)
    on: dict[frozenset[int], list[str]] = {}
    candidates: list[str | None] = list(devices) or [None]
    for device in candidates:
        members = frozenset(i for i, s in enumerate(machine) if s.gpus is None or device in s.gpus)
        on.setdefault(members, []).append(device if device is not None else "")
    found = []
    for members, where in on.items():
        servers = [machine[i] for i in sorted(members)]
        if len({s.unit.unit.path for s in servers}) < 2:
            continue
        if sum(s.utilization for s in servers) <= 1 + 1e-9:
            continue
        if any(members < other for other in on if _over(other, machine)):
            continue  # a larger set on another GPU is reported instead
        words = "every GPU" if where == [""] else "GPU " + ",".join(where)
        found.append((words, servers))
    return found


def _over(members: frozenset[int], machine: list[_Server]) -> bool:
    servers = [machine[i] for i in members]
    return (
        len({s.unit.unit.path for s in servers}) > 1
        and sum(s.utilization for s in servers) > 1 + 1e-9
    )


@rule("VL332", Severity.WARNING, per_run=True)
def shared_gpu_memory(run: RunContext) -> Iterator[tuple[UnitContext, Hit]]:
    """
    Two vLLM units on one machine share a GPU and reserve more than all its memory.

    What it does:
    Compares the GPUs of the vLLM `ExecStart=` commands of units that run on one machine
    (`CUDA_VISIBLE_DEVICES`, indices or UUIDs; unset means every GPU) and, where two or
    more share one, adds their `--gpu-memory-utilization` (0.9 when absent); a sum above
    1 is reported once, on the first of them, naming all the others. Units named together
    by `--same-host` count as one machine (specadmin's deploy page names the host's
    deployed units so), and so do units tied by `Requires=`, `Wants=`, `BindsTo=`,
    `PartOf=` (started together); unlike ports, a directory of alternative units that all
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
    [Unit]
    Wants=vllm-b.service
    [Service]
    ExecStart=/opt/vllm/bin/vllm serve /models/a --port 8001
    # vllm-b.service
    [Service]
    ExecStart=/opt/vllm/bin/vllm serve /models/b --port 8002
    ```

    Use instead:
    ```ini
    # vllm-a.service
    [Unit]
    Wants=vllm-b.service
    [Service]
    Environment=CUDA_VISIBLE_DEVICES=0,1
    ExecStart=/opt/vllm/bin/vllm serve /models/a --port 8001
    # vllm-b.service
    [Service]
    Environment=CUDA_VISIBLE_DEVICES=2,3
    ExecStart=/opt/vllm/bin/vllm serve /models/b --port 8002
    ```
    """
    if not run.options.same_host and not _any_ties(run):
        return  # no unit is said to share a machine with another (see above)
    servers = [item for unit in run.units for item in _servers(unit)]
    for machine in _machines(servers, run):
        for shared, group in _overbooked(machine):
            yield group[0].unit, _hit(shared, group)


def _any_ties(run: RunContext) -> bool:
    return any(unit.unit.get_all("Unit", key) for unit in run.units for key in TIES)


def _hit(shared: str, group: list[_Server]) -> Hit:
    """One finding for the whole set, on its first server (the unit a deploy adds)."""
    first, others = group[0], group[1:]
    total = sum(s.utilization for s in group)
    named = _and([f"{s.unit.unit.name} (line {s.span.start.line})" for s in others])
    fractions = _and([f"{s.utilization:g}" for s in others])
    verb = "reserves" if len(others) == 1 else "reserve"
    who = "second server" if len(group) == 2 else "last servers"
    return Hit(
        first.span,
        f"{shared} also used by {named} on the same machine, which {verb} {fractions} "
        f"of its memory: with this unit's {first.utilization:g} that is {total:g} of the "
        f"GPU, so the {who} to start refuse"
        + ("s" if len(group) == 2 else "")
        + ' ("Free memory on device … is less than desired GPU memory utilization"). Give '
        "them different CUDA_VISIBLE_DEVICES, or fractions that sum to at most 1",
        {
            "other_unit": others[0].unit.unit.path,
            "other_units": [s.unit.unit.path for s in others],
            "utilization": total,
        },
        path=first.vc.path,
    )


def _and(items: list[str]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]
