"""Which GPUs a process uses for a `CUDA_VISIBLE_DEVICES` value, read the way CUDA reads it.

The one reading of the variable: the linter (VL324, VL332, OP407), the profile validation,
the deploy job's GPU-clean step and the unit's rendered GPU-free wait all ask this module.
CUDA's reading, measured with the driver on a GPU machine (docs/architecture.md,
"Operations", where each example is listed):

- the value is split at commas; each entry is read like C's `strtol(entry, &end, 10)`:
  white space, a sign, decimal digits, and whatever follows the number is ignored (`0a`,
  `0x1`, `0.5`, `0;1` are GPU 0, `01` is GPU 1); an entry without a number (`a`, the empty
  string, `+ 0`) or with a negative one (`-1`) ends the list; `-0` is GPU 0;
- `GPU-` and the start of a GPU's UUID selects that GPU (hex digits in either case);
  `GPU-` alone, or anything after the UUID, ends the list; `MIG-…` selects a MIG device;
- the list also ends at the first index the host does not have (`1,0` on one GPU: none);
  an index named twice empties the whole list (`0,0`, `0,00`: `cuInit` fails with
  CUDA_ERROR_INVALID_DEVICE) unless the list ended before the repeat (`0,5,0` on one GPU:
  GPU 0);
- numbers are cut to 32 bits (`4294967296` is GPU 0).

Where the value cannot be mapped to the host's GPUs for certain (a MIG device, a UUID the
host does not list, a number beyond 32 bits, a GPU named twice by UUID and index, GPUs of
different models whose order CUDA may not share with nvidia-smi), the answer is "every
GPU", with the reason: never fewer GPUs than CUDA uses.

Pure Python and stdlib only: the linter runs without Django, GPU-clean without the linter's
other parts (benchmarks/gpu_clean_real.py).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# C's isspace() in the "C" locale, which strtol() skips before the number.
_NUMBER = re.compile(r"[ \t\n\v\f\r]*([+-]?)([0-9]+)")
_FULL_UUID = re.compile(r"GPU-[0-9a-fA-F]{8}(-[0-9a-fA-F]{4}){3}-[0-9a-fA-F]{12}\Z")
INT_LIMIT = 2**31  # CUDA keeps 32 bits of the number (measured: 4294967296 is GPU 0)
PCI_BUS_ID = "PCI_BUS_ID"  # CUDA_DEVICE_ORDER that makes CUDA's order nvidia-smi's


@dataclass(frozen=True)
class Unset:
    """The variable is not set: CUDA uses every GPU."""


@dataclass(frozen=True)
class Indexes:
    """GPUs by index, as CUDA reads the entries; the host's GPUs may end the list sooner
    (`resolve`). A repeat is kept: whether it empties the list depends on the host."""

    value: str
    indexes: tuple[int, ...]
    stopped_at: str | None = None  # the entry at which CUDA stops reading, if any


@dataclass(frozen=True)
class WithUuids:
    """Indexes and UUID prefixes (`GPU-48825cad`), mapped with the host's UUIDs."""

    value: str
    entries: tuple[int | str, ...]
    stopped_at: str | None = None


@dataclass(frozen=True)
class CannotTell:
    """The value cannot be mapped to GPUs for certain; `why` says what is in the way."""

    value: str
    why: str


Reading = Unset | Indexes | WithUuids | CannotTell


@dataclass(frozen=True)
class HostGpus:
    """What is known of the host's GPUs, in nvidia-smi's (PCI bus) order."""

    count: int | None = None
    uuids: tuple[str, ...] | None = None
    models: tuple[str, ...] | None = None


@dataclass(frozen=True)
class Gpus:
    """The GPUs to check: `indexes` (nvidia-smi's), or every GPU (None); `why` is the
    sentence a log shows."""

    indexes: tuple[int, ...] | None
    why: str

    @property
    def every(self) -> bool:
        return self.indexes is None


def read_visible_devices(value: str | None) -> Reading:
    """The value as CUDA reads it, before anything about the host is known."""
    if value is None:
        return Unset()
    entries: list[int | str] = []
    stopped_at = None
    for raw in value.split(","):
        entry = _entry(raw)
        if isinstance(entry, CannotTell):
            return CannotTell(value, entry.why)
        if entry is None:
            stopped_at = raw
            break
        entries.append(entry)
    if all(isinstance(e, int) for e in entries):
        return Indexes(value, tuple(e for e in entries if isinstance(e, int)), stopped_at)
    return WithUuids(value, tuple(entries), stopped_at)


def _entry(raw: str) -> int | str | CannotTell | None:
    """One entry: an index, a UUID prefix, or None where CUDA stops reading."""
    if raw.startswith("GPU-"):
        return raw if len(raw) > len("GPU-") else None
    if raw.startswith("MIG-"):
        return CannotTell(raw, f"“{raw}” names a MIG device, not a whole GPU")
    m = _NUMBER.match(raw)
    if m is None:
        return None
    sign, digits = m.groups()
    if len(digits.lstrip("0")) > 10 or int(digits) >= INT_LIMIT:
        return CannotTell(raw, f"“{raw}” is a number beyond 32 bits, which CUDA cuts short")
    number = int(digits)
    return None if sign == "-" and number else number


def resolve(reading: Reading, host: HostGpus = HostGpus(), device_order: str | None = None) -> Gpus:
    """The GPUs a process with this reading uses on `host`; every GPU where unsure."""
    if isinstance(reading, Unset):
        return Gpus(None, "CUDA_VISIBLE_DEVICES is unset: CUDA uses every GPU")
    if isinstance(reading, CannotTell):
        return _every(reading.value, reading.why)
    entries = reading.indexes if isinstance(reading, Indexes) else reading.entries
    if _order_unknown(entries, host, device_order):
        return _every(
            reading.value,
            "the host has GPUs of different models and CUDA_DEVICE_ORDER is not PCI_BUS_ID, "
            "so CUDA's indexes (fastest first) may not be nvidia-smi's",
        )
    mapped = _map_uuids(entries, host)
    if isinstance(mapped, str):
        return _every(reading.value, mapped)
    return _scan(reading.value, mapped, host.count, reading.stopped_at)


def _every(value: str, why: str) -> Gpus:
    return Gpus(None, f"CUDA_VISIBLE_DEVICES={value!r}: {why}; checking every GPU")


def _order_unknown(entries: tuple[int | str, ...], host: HostGpus, order: str | None) -> bool:
    """Indexes on a host of mixed GPU models whose order CUDA may not share: CUDA's
    default CUDA_DEVICE_ORDER is FASTEST_FIRST (CUDA C Programming Guide, "CUDA
    Environment Variables"), nvidia-smi lists by PCI bus."""
    mixed = host.models is not None and len(set(host.models)) > 1
    return mixed and order != PCI_BUS_ID and any(isinstance(e, int) for e in entries)


def _map_uuids(entries: tuple[int | str, ...], host: HostGpus) -> list[tuple[int, bool]] | str:
    """(index, named by UUID) per entry, or why a UUID cannot be mapped."""
    mapped: list[tuple[int, bool]] = []
    for entry in entries:
        if isinstance(entry, int):
            mapped.append((entry, False))
            continue
        if host.uuids is None:
            return f"the host's GPU UUIDs are not known, so “{entry}” cannot be mapped"
        wanted = entry.lower()
        matches = [i for i, uuid in enumerate(host.uuids) if uuid.lower().startswith(wanted)]
        if len(matches) != 1:
            which = "no GPU of this host" if not matches else f"{len(matches)} GPUs"
            return f"“{entry}” matches {which}"
        mapped.append((matches[0], True))
    return mapped


def _scan(
    value: str, mapped: list[tuple[int, bool]], count: int | None, stopped_at: str | None
) -> Gpus:
    """CUDA's enumeration: stop at the first index the host lacks; a repeat empties it."""
    chosen: list[int] = []
    by_uuid: set[int] = set()
    note = f"CUDA stops reading at “{stopped_at}”" if stopped_at is not None else ""
    for index, named_by_uuid in mapped:
        if count is not None and index >= count:
            note = f"the host has no GPU {index} ({count} GPUs), where CUDA stops"
            break
        if index in chosen:
            if named_by_uuid or index in by_uuid:
                return _every(
                    value, f"GPU {index} is named twice, once by UUID (CUDA's answer not measured)"
                )
            if count is None:
                return _every(
                    value,
                    f"GPU {index} is named twice and the host's GPUs are "
                    "not known (CUDA ends the list at a missing GPU before a repeat)",
                )
            return Gpus(
                (),
                f"CUDA_VISIBLE_DEVICES={value!r} names GPU {index} twice, so "
                "CUDA makes no GPU visible",
            )
        chosen.append(index)
        if named_by_uuid:
            by_uuid.add(index)
    which = describe(chosen) if chosen else "no GPU"
    return Gpus(
        tuple(chosen),
        f"CUDA_VISIBLE_DEVICES={value!r} selects {which}" + (f" ({note})" if note else ""),
    )


def describe(indexes: tuple[int, ...] | list[int]) -> str:
    """`GPU 2`, `GPUs 0,1` in CUDA's order."""
    listed = ",".join(map(str, indexes))
    return f"GPU {listed}" if len(indexes) == 1 else f"GPUs {listed}"


# --------------------------------------------------------------------------------------
# the linter's questions (no host known)


def visible_count(reading: Reading) -> int | None:
    """How many GPUs CUDA makes visible when every index named exists; None when unset
    or unknown (a MIG device, a UUID named twice)."""
    if isinstance(reading, Unset | CannotTell):
        return None
    entries = reading.indexes if isinstance(reading, Indexes) else reading.entries
    ints = [e for e in entries if isinstance(e, int)]
    if len(set(ints)) < len(ints):
        return 0 if isinstance(reading, Indexes) else None
    uuids = [_uuid_key(e) for e in entries if isinstance(e, str)]
    if len(set(uuids)) < len(uuids):
        return None
    return len(entries)


def _uuid_key(entry: str) -> str:
    """`GPU-` and the hex in lower case, as nvidia-smi prints UUIDs (CUDA reads either)."""
    return entry[:4] + entry[4:].lower()


def devices(reading: Reading) -> tuple[int | str, ...] | None:
    """The devices named, as far as CUDA reads (indexes, UUID prefixes with lower-case hex),
    each once; None when unset or unknown."""
    if isinstance(reading, Unset | CannotTell):
        return None
    entries = reading.indexes if isinstance(reading, Indexes) else reading.entries
    seen: list[int | str] = []
    for entry in entries:
        key = _uuid_key(entry) if isinstance(entry, str) else entry
        if key not in seen:
            seen.append(key)
    return tuple(seen)


# --------------------------------------------------------------------------------------
# nvidia-smi's `-i` (measured with nvidia-smi 580: a comma-separated list of indexes, full
# UUIDs or PCI bus IDs; entries it does not find are skipped, "No devices were found" and
# exit 6 only when none is found; a UUID prefix is not found)


@dataclass(frozen=True)
class SmiSelection:
    """What the GPU-free wait passes to `nvidia-smi -i`, or None for every GPU (why)."""

    ids: str | None
    why: str = ""


def nvidia_smi_ids(reading: Reading) -> SmiSelection:
    """`-i` for the GPUs this reading may use (all it names, each once: the host's GPUs
    are not known when the unit is rendered), or every GPU where `-i` cannot name them."""
    named = devices(reading)
    if named is None:
        why = reading.why if isinstance(reading, CannotTell) else ""
        return SmiSelection(None, why)
    if not named:
        return SmiSelection(None, "it names no GPU")
    ids = []
    for device in named:
        if isinstance(device, str) and not _FULL_UUID.match(device):
            return SmiSelection(None, f"nvidia-smi -i takes whole UUIDs, not “{device}”")
        ids.append(str(device))
    return SmiSelection(",".join(ids))


def read_nvidia_smi_ids(text: str) -> tuple[int | str, ...]:
    """The GPUs an `nvidia-smi -i TEXT` names: indexes (leading blanks allowed, as
    measured), UUIDs and PCI bus IDs (kept as text, lower case)."""
    found: list[int | str] = []
    for raw in text.split(","):
        item = raw.lstrip(" \t")
        if item.isascii() and item.isdigit():
            found.append(int(item))
        elif item:
            found.append(item.lower())
    return tuple(found)


__all__ = [
    "CannotTell",
    "Gpus",
    "HostGpus",
    "Indexes",
    "Reading",
    "SmiSelection",
    "Unset",
    "WithUuids",
    "describe",
    "devices",
    "nvidia_smi_ids",
    "read_nvidia_smi_ids",
    "read_visible_devices",
    "resolve",
    "visible_count",
]
