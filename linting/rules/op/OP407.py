from __future__ import annotations

import re
from collections.abc import Iterator

from linting.commands import Command, shell_script
from linting.context import UnitContext
from linting.cuda import describe, devices, read_nvidia_smi_ids, read_visible_devices
from linting.findings import Hit, Severity
from linting.rules.registry import rule
from linting.spans import Traced, join

# `nvidia-smi … -i LIST` / `--id=LIST`: one word (indexes, UUIDs, PCI bus IDs).
_GPU_SELECT = re.compile(
    r"nvidia-smi\b[^|;&\n]*?(?:\s-i(?:\s+|(?=[0-9G]))|\s--id[= ])([^\s|;&'\")]+)"
)
# A per-GPU listing cut to its first lines in the same pipeline (`nvidia-smi --query-gpu=…
# | head -4`, filters in between allowed): one line per GPU, after a header line unless
# the format says `noheader` (nvidia-smi --help-query-gpu, "--format=csv,noheader").
_GPU_HEAD = re.compile(
    r"nvidia-smi\b(?P<opts>[^|;&\n]*)(?:\|[^|;&\n]*?)*?"
    r"\|\s*(?P<head>head\s+(?:-n\s*|--lines=|-)(?P<n>[0-9]+))\b"
)
_QUERY_GPU = re.compile(r"--query-gpu\b")
_LIST_GPUS = re.compile(r"\s(?:-L|--list-gpus)\b")  # one line per GPU, no header


def gpus_in_use(ctx: UnitContext) -> tuple[int | str, ...] | int | None:
    """The GPUs the unit uses: the devices CUDA_VISIBLE_DEVICES names as CUDA reads it
    (`linting.cuda`), else how many --tensor-parallel-size takes; None: cannot tell."""
    visible = ctx.environment.get("CUDA_VISIBLE_DEVICES")
    if visible is not None and visible.value.strip():
        return devices(read_visible_devices(visible.value))
    for vc in ctx.vllm_servers:
        size = vc.args.int_value("tensor_parallel_size")
        if size:
            return size
    return None


def _not_checked(used: tuple[int | str, ...] | int, ids: tuple[int | str, ...]) -> str | None:
    """What the check misses in words ("GPUs 2,3"), or None when it covers the service:
    compared GPU by GPU where both name indexes, else by how many (an index and a UUID
    may be one GPU)."""
    if isinstance(used, tuple) and all(isinstance(d, int) for d in used + ids):
        missing = [d for d in used if d not in ids]
        return describe([int(d) for d in missing]) if missing else None
    total = used if isinstance(used, int) else len(used)
    return None if len(ids) >= total else f"{total - len(ids)} of them"


def _command_line(cmd: Command) -> Traced:
    """The argv joined with blanks, like a shell line (`nvidia-smi -i 0,1 …`), every
    character still pointing into the file (a blank at the end of the word before it)."""
    parts: list[Traced] = []
    last = cmd.assignment.value.origins[0]
    for arg in cmd.args:
        if parts:
            parts.append(Traced(" ", (last,)))
        parts.append(arg.value)
        last = arg.value.origins[-1] if arg.value.origins else last
    return join(parts)


@rule("OP407", Severity.WARNING)
def gpu_check_covers_subset(ctx: UnitContext) -> Iterator[Hit]:
    """
    A GPU check that misses GPUs the service uses.

    What it does:
    Finds `nvidia-smi -i LIST` / `--id=LIST`, and a per-GPU listing cut short with
    `| head -N`, in `ExecStartPre=`, `ExecStartPost=`, `ExecStop=` and `ExecStopPost=`
    commands (run directly or inside `bash -c` scripts) and compares the GPUs checked
    with those `CUDA_VISIBLE_DEVICES` selects, read the way CUDA reads it (`01` is GPU 1,
    `0a` GPU 0, the list ends at the first entry without a number): GPU by GPU where both
    name indexes, else by how many (also with `--tensor-parallel-size` when
    `CUDA_VISIBLE_DEVICES` is unset).

    Why is this bad?
    The seed deployment's cleanup checked GPUs 0–3 of 8: leftovers on GPUs 4–7 went
    unnoticed and the next start failed out of memory after loading for half an hour.

    Example:
    ```ini
    Environment=CUDA_VISIBLE_DEVICES=0,1,2,3,4,5,6,7
    ExecStartPre=/bin/bash -c 'nvidia-smi -i 0,1,2,3 --query-gpu=memory.used --format=csv,noheader,nounits'
    ExecStartPre=/bin/bash -c 'nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits | head -4'
    ```

    Use instead:
    ```ini
    ExecStartPre=/bin/bash -c 'nvidia-smi -i 0,1,2,3,4,5,6,7 --query-gpu=memory.used --format=csv,noheader,nounits'
    ```
    (`-i` names every GPU the service uses, as specadmin's rendered wait does; without
    `-i` and `head` every GPU of the machine is listed, services on other GPUs included).
    """
    used = gpus_in_use(ctx)
    if not used:
        return
    total = used if isinstance(used, int) else len(used)
    named = "" if isinstance(used, int) else f" ({','.join(map(str, used))})"
    for cmd in ctx.commands:
        if cmd.key not in ("ExecStartPre", "ExecStopPost", "ExecStartPost", "ExecStop"):
            continue
        found = shell_script(cmd)
        traced = found[1].value if found else _command_line(cmd)
        for m in _GPU_SELECT.finditer(traced.text):
            ids = read_nvidia_smi_ids(m.group(1))
            missing = _not_checked(used, ids)
            if missing is None:
                continue
            yield Hit(
                traced.span(m.start(1), m.end(1)),
                f"this check looks at GPU(s) {m.group(1)} only, but the service uses "
                f"{total} GPUs{named}: leftovers on {missing} go unnoticed",
                path=cmd.assignment.path,
            )
        yield from _head_hits(traced, total, cmd)


def _head_hits(traced: Traced, total: int, cmd: Command) -> Iterator[Hit]:
    """`nvidia-smi --query-gpu=… | head -N` keeping fewer GPU lines than the service uses."""
    for m in _GPU_HEAD.finditer(traced.text):
        opts = " " + m.group("opts")
        listed = bool(_LIST_GPUS.search(opts))
        if not listed and not _QUERY_GPU.search(opts):
            continue
        header = 0 if listed or "noheader" in opts else 1
        kept = int(m.group("n")) - header
        if kept >= total:
            continue
        yield Hit(
            traced.span(m.start("head"), m.end("head")),
            f"this check reads only the first {kept} GPU(s) (`{m.group('head')}`), but the "
            f"service uses {total} GPUs: leftovers on the others go unnoticed",
            path=cmd.assignment.path,
        )
