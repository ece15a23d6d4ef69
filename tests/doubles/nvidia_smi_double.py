"""TEST DOUBLE for `nvidia-smi`: answers the queries specadmin makes, byte-for-byte like real.

Formats verified on an NVIDIA H200 (driver 570-series):

    $ nvidia-smi -L
    GPU 0: NVIDIA H200 (UUID: GPU-2eb6f7e6-d050-65b0-231b-13f31e8c9ac4)
    $ nvidia-smi --query-gpu=index,name,uuid,memory.used,memory.total --format=csv
    index, name, uuid, memory.used [MiB], memory.total [MiB]
    0, NVIDIA H200, GPU-2eb6f7e6-d050-65b0-231b-13f31e8c9ac4, 3599 MiB, 143771 MiB
    $ nvidia-smi --query-compute-apps=pid,process_name,used_memory --format=csv
    pid, process_name, used_gpu_memory [MiB]
    415, python3, 3590 MiB
    (no processes: header only for csv, nothing at all for csv,noheader)
    $ nvidia-smi --query-gpu=index,bogus --format=csv      -> rc 2, stdout:
    Field "bogus" is not a valid field to query.<blank line>
    $ nvidia-smi -i 5 --query-gpu=index --format=csv      -> rc 6, "No devices were found"

`-i` (`--id=`), measured with nvidia-smi 580.159.04 on one H200: `select_gpus`.

State comes from gpu_state (registrations under /run/gpu-double). Never used by product code.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass

try:  # installed in a test host as package `doubles`; in the checkout as `tests.doubles`
    from . import gpu_state
except ImportError:  # pragma: no cover - run as a plain script
    import gpu_state  # type: ignore[no-redef]

from typing import Any


@dataclass(frozen=True)
class Field:
    header: str
    unit: str  # "" (none), "MiB" or "%"
    value: Callable[[Any], object]


def _gpu_fields(config: gpu_state.GpuConfig, used: dict[int, int]) -> dict[str, Field]:
    total = config.memory_total_mib
    fields = {
        "index": Field("index", "", lambda i: i),
        "name": Field("name", "", lambda i: config.name),
        "uuid": Field("uuid", "", config.uuid),
        "memory.used": Field("memory.used [MiB]", "MiB", lambda i: used[i]),
        "memory.total": Field("memory.total [MiB]", "MiB", lambda i: total),
        "memory.free": Field("memory.free [MiB]", "MiB", lambda i: total - used[i]),
        "memory.reserved": Field("memory.reserved [MiB]", "MiB", lambda i: 0),
        "utilization.gpu": Field("utilization.gpu [%]", "%", lambda i: 0),
        "utilization.memory": Field("utilization.memory [%]", "%", lambda i: 0),
        "driver_version": Field("driver_version", "", lambda i: config.driver_version),
        "count": Field("count", "", lambda i: config.gpu_count),
        "pci.bus_id": Field("pci.bus_id", "", _bus_id),
        "temperature.gpu": Field("temperature.gpu", "", lambda i: 30),
    }
    aliases = {"gpu_name": "name", "gpu_uuid": "uuid", "gpu_bus_id": "pci.bus_id"}
    return fields | {alias: fields[target] for alias, target in aliases.items()}


def _app_fields(config: gpu_state.GpuConfig) -> dict[str, Field]:
    fields = {
        "pid": Field("pid", "", lambda r: r.pid),
        "process_name": Field("process_name", "", lambda r: gpu_state.process_name(r.pid)),
        "used_gpu_memory": Field("used_gpu_memory [MiB]", "MiB", lambda r: r.mib),
        "gpu_uuid": Field("gpu_uuid", "", lambda r: config.uuid(r.gpu)),
        "gpu_name": Field("gpu_name", "", lambda r: config.name),
        "gpu_bus_id": Field("gpu_bus_id", "", lambda r: _bus_id(r.gpu)),
    }
    aliases = {"name": "process_name", "used_memory": "used_gpu_memory"}
    return fields | {alias: fields[target] for alias, target in aliases.items()}


def format_csv(
    fields: Sequence[Field], rows: Sequence[object], *, header: bool, units: bool
) -> str:
    """Render like nvidia-smi: ', ' separated; the header keeps its unit even with nounits."""
    lines = []
    if header:
        lines.append(", ".join(f.header for f in fields))
    for row in rows:
        cells = []
        for f in fields:
            value = f.value(row)
            if units and f.unit:
                cells.append(f"{value} {f.unit}")
            else:
                cells.append(str(value))
        lines.append(", ".join(cells))
    return "".join(line + "\n" for line in lines)


@dataclass
class _Args:
    list_gpus: bool = False
    query_gpu: str | None = None
    query_apps: str | None = None
    fmt: str | None = None
    ids: str | None = None


def _parse(argv: Sequence[str]) -> _Args:
    args = _Args()
    it = iter(argv)
    for arg in it:
        if arg in ("-L", "--list-gpus"):
            args.list_gpus = True
        elif arg.startswith("--query-gpu="):
            args.query_gpu = arg.split("=", 1)[1]
        elif arg.startswith("--query-compute-apps="):
            args.query_apps = arg.split("=", 1)[1]
        elif arg.startswith("--format="):
            args.fmt = arg.split("=", 1)[1]
        elif arg in ("-i", "--id"):
            args.ids = next(it, "")
        elif arg.startswith("--id="):
            args.ids = arg.split("=", 1)[1]
        elif arg.startswith("-i") and len(arg) > 2:
            args.ids = arg[2:]
        else:
            raise SystemExit(_usage_error(arg))
    return args


def _usage_error(arg: str) -> int:
    sys.stdout.write(
        "Invalid combination of input arguments. Please run 'nvidia-smi -h' for help.\n\n"
    )
    sys.stderr.write(f"(nvidia-smi double: unsupported argument {arg!r})\n")
    return 2


PARSE_ERROR = "parse error"


def select_gpus(config: gpu_state.GpuConfig, ids: str | None) -> list[int] | str:
    """The GPUs `-i IDS` names, in index order, each once; PARSE_ERROR for an empty `-i`.

    As measured (nvidia-smi 580, one GPU): the list is comma-separated; an entry is an index
    (leading blanks allowed: ` 0`, `00`; not `0 `, `0a`, `-1`), a whole UUID or a PCI bus
    ID (a UUID prefix is not found); entries not found are skipped (`0,1` and `1,0` list
    GPU 0 alone), a GPU named twice is listed once (`0,0`). Not measured: the order of a
    multi-GPU answer (index order here) and case-insensitive UUIDs (exact here).
    """
    if ids is None:
        return list(range(config.gpu_count))
    if ids == "":
        return PARSE_ERROR
    wanted = {_find(config, item) for item in ids.split(",")}
    return [i for i in range(config.gpu_count) if i in wanted]


def _find(config: gpu_state.GpuConfig, item: str) -> int | None:
    index = item.lstrip(" \t")
    if index.isascii() and index.isdigit():
        return int(index) if int(index) < config.gpu_count else None
    for i in range(config.gpu_count):
        if item in (config.uuid(i), _bus_id(i)):
            return i
    return None


def _bus_id(index: int) -> str:
    return f"00000000:{0x18 + index * 0x10:02X}:00.0"


def _summary(config: gpu_state.GpuConfig, gpus: list[int]) -> str:
    """A much simplified default table: enough for humans reading test logs."""
    regs = gpu_state.live_registrations(config)
    used = gpu_state.used_mib(config, regs)
    out = [f"| NVIDIA-SMI (double)   Driver Version: {config.driver_version} |"]
    for i in gpus:
        out.append(f"|   {i}  {config.name}  {used[i]}MiB / {config.memory_total_mib}MiB |")
    out.append("| Processes:  GPU  PID  Process name  GPU Memory Usage |")
    for r in regs:
        if r.gpu in gpus:
            name = gpu_state.process_name(r.pid)
            out.append(f"|  {r.gpu}  {r.pid}  C  {name}  {r.mib}MiB |")
    return "\n".join(out) + "\n"


def main(argv: Sequence[str] | None = None, config: gpu_state.GpuConfig | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    config = config or gpu_state.load_config()
    try:
        args = _parse(argv)
    except SystemExit as exc:
        return int(exc.code or 2)
    gpus = select_gpus(config, args.ids)
    if isinstance(gpus, str):  # PARSE_ERROR
        sys.stdout.write("Failed to parse device string on command line")  # no newline
        return 255
    if not gpus:
        sys.stdout.write("No devices were found\n")
        return 6
    if args.list_gpus:
        for i in gpus:
            sys.stdout.write(f"GPU {i}: {config.name} (UUID: {config.uuid(i)})\n")
        return 0
    query = args.query_gpu if args.query_gpu is not None else args.query_apps
    if query is None:
        sys.stdout.write(_summary(config, gpus))
        return 0
    return _answer_query(config, args, query, gpus)


def _answer_query(config: gpu_state.GpuConfig, args: _Args, query: str, gpus: list[int]) -> int:
    """`--query-gpu=…` or `--query-compute-apps=…` with `--format=csv[,noheader][,nounits]`."""
    if args.fmt is None:
        # Not verified against the real binary: real product code always passes --format.
        sys.stdout.write('"--format" must be specified with "--query-*" options.\n\n')
        return 2
    opts = {o.strip() for o in args.fmt.split(",")}
    if "csv" not in opts or not opts <= {"csv", "noheader", "nounits"}:
        sys.stdout.write(f'"{args.fmt}" is not a valid format.\n\n')
        return 2
    regs = gpu_state.live_registrations(config)
    if args.query_gpu is not None:
        table = _gpu_fields(config, gpu_state.used_mib(config, regs))
        rows: list[object] = list(gpus)
    else:
        table = _app_fields(config)
        rows = [r for r in regs if r.gpu in gpus]
    fields = []
    for name in query.split(","):
        name = name.strip()
        if name not in table:
            sys.stdout.write(f'Field "{name}" is not a valid field to query.\n\n')
            return 2
        fields.append(table[name])
    sys.stdout.write(
        format_csv(fields, rows, header="noheader" not in opts, units="nounits" not in opts)
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
