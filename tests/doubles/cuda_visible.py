"""TEST DOUBLE / REFERENCE MODEL: which GPUs CUDA uses for a `CUDA_VISIBLE_DEVICES` value.

Written straight from what was measured on a GPU machine (one H200, driver 580, PyTorch and
`cuInit` + `cuDeviceGetCount` through libcuda; docs/architecture.md, "Operations"), and
nothing else: where the measurements do not say, the answer is UNKNOWN. It is the oracle of
tests/deploys/test_cuda_visible_devices.py (product code has its own reading in
`linting.cuda`) and the vLLM double's way of picking its GPUs. Stdlib only; never imported
by product code.

Measured (one GPU; `count` = what CUDA made visible):
- an entry is read like strtol(…, 10): `0 00 000 " 0" "0 " +0 0a 0x1 0.5 0-1 0;1 -0 \\t0 \\n0
  " +0"` are GPU 0; `01 1a` GPU 1 (none on one GPU); `08` GPU 8; `-1 "" "+ 0" + "- 1"` no
  number: the list ends;
- numbers keep 32 bits of a C long: `4294967296` is GPU 0; `2147483648`, `4294967297`,
  `-4294967295`, `18446744073709551616` gave none on one GPU (as -2^31, 1, 1 and
  LONG_MAX → -1 would);
- the list ends at the first missing index (`1,0`: none; `00,1`, `0,5,0`, `0,1,0`, `0,`,
  `0,,0`, `0,a`: GPU 0); `,0` none; an index named twice empties it (`0,0`, `0,00`);
- `GPU-` + the start of a UUID selects it, hex in either case (`GPU-15ce1596`,
  `GPU-15CE1596`, `GPU-1`); `GPU-` alone, `gpu-…`, ` GPU-…`, `GPU-… ` and `GPU-…x` end
  the list; `GPU-<gpu 0>,0` and `0,GPU-<gpu 0>` gave one GPU (which rule: not known);
- `MIG-…`: a MIG device (on a GPU without MIG, `MIG-<its UUID>` selected it).
"""

from __future__ import annotations

from collections.abc import Sequence

UNKNOWN = "unknown"  # the measurements do not say
_STOP = -1
_SPACE = " \t\n\v\f\r"


def cuda_gpus(value: str | None, uuids: Sequence[str]) -> tuple[int, ...] | str:
    """The GPUs (indexes into `uuids`, the host's GPUs in order) CUDA uses, or UNKNOWN."""
    if value is None:
        return tuple(range(len(uuids)))
    chosen: list[int] = []
    named_by_uuid: set[int] = set()
    for entry in value.split(","):
        index = entry_index(entry, uuids)
        if index == UNKNOWN:
            return UNKNOWN
        assert isinstance(index, int)
        if index == _STOP or index >= len(uuids):
            break
        by_uuid = entry.startswith("GPU-")
        if index in chosen:  # named twice: measured by index only
            return UNKNOWN if by_uuid or index in named_by_uuid else ()
        if by_uuid:
            named_by_uuid.add(index)
        chosen.append(index)
    return tuple(chosen)


def entry_index(entry: str, uuids: Sequence[str]) -> int | str:
    """One entry: a GPU index (maybe one the host lacks), _STOP, or UNKNOWN."""
    if entry.startswith("MIG-"):
        return UNKNOWN
    if entry.startswith("GPU-"):
        want = entry[4:].lower()
        if not want:
            return _STOP
        matches = [i for i, u in enumerate(uuids) if u[4:].lower().startswith(want)]
        if len(matches) > 1:
            return UNKNOWN
        return matches[0] if matches else _STOP
    return _number(entry)


def _number(entry: str) -> int | str:
    """strtol(entry, 10) in a C long, then cut to a 32-bit int; negative: _STOP."""
    rest = entry.lstrip(_SPACE)
    sign = -1 if rest[:1] == "-" else 1
    if rest[:1] in ("+", "-"):
        rest = rest[1:]
    digits = ""
    for char in rest:
        if not ("0" <= char <= "9"):
            break
        digits += char
    if not digits:
        return _STOP
    if len(digits.lstrip("0")) > 19 or int(digits) >= 2**63:
        # LONG_MAX/LONG_MIN: measured only for a positive one (2^64: none)
        return _STOP if sign > 0 else UNKNOWN
    low = (sign * int(digits)) % 2**32
    as_int = low - 2**32 if low >= 2**31 else low
    return _STOP if as_int < 0 else as_int
