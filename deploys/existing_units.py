"""What systemd already loads on a host under a unit name, wherever it comes from.

A deploy writes `/etc/systemd/system/NAME.service`, which shadows a unit of that name in
any lower directory (`/run/systemd/system`, `/usr/local/lib/systemd/system`,
`/usr/lib/systemd/system`, `/lib/systemd/system`: systemd.unit(5), "Unit File Load Path")
and keeps every drop-in of it (`NAME.service.d/*.conf`). Reading only the file in
`/etc/systemd/system` saw `logrotate.service` as absent and let a deploy shadow the
vendor's unit. So systemd itself is asked where the unit comes from
(`systemctl show -p FragmentPath -p DropInPaths -p LoadState NAME.service`, D-Bus for the
local transport), the unit directories are searched for drop-ins waiting for a unit file,
and those files are read (bounded), shown on the request page, and need
an admin's adoption like any unit file specadmin did not write (`deploys.unit_policy`).

A hostile host could name any path as its "fragment": only files in systemd's unit
directories, named after the unit, are read; anything else is reported by path only.
"""

from __future__ import annotations

import difflib
import hashlib
import posixpath
from dataclasses import dataclass, field
from typing import Any

from deploys.connect import transport_for
from deploys.models import Host
from hostops.channel import Transport
from hostops.channel.push import DEFAULT_UNIT_DIR, MAX_UNIT_BYTES, sha256_hex
from hostops.unit_paths import is_unit_path, waiting_drop_ins
from units.unicode_text import split_lines_keepends

PROPERTIES = ("LoadState", "FragmentPath", "DropInPaths")
SHOWN_BYTES = MAX_UNIT_BYTES  # text kept for the request page, per file


@dataclass(frozen=True)
class UnitFile:
    """One file systemd loads for the unit: its path, kind, hash and (bounded) text."""

    path: str
    kind: str  # "unit file" or "drop-in"
    sha256: str = ""
    size: int = 0
    text: str = ""
    truncated: bool = False
    note: str = ""  # why it was not read

    def as_json(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "kind": self.kind,
            "sha256": self.sha256,
            "size": self.size,
            "text": self.text,
            "truncated": self.truncated,
            "note": self.note,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> UnitFile:
        return cls(**{k: data[k] for k in cls.__dataclass_fields__ if k in data})


@dataclass(frozen=True)
class ExistingUnit:
    """What systemd loads as `unit_name`.service on the host now (files: its unit file
    if it has one, then its drop-ins, in systemd's order)."""

    unit_name: str  # without ".service"
    load_state: str = ""
    files: list[UnitFile] = field(default_factory=list)

    @property
    def own_path(self) -> str:
        return f"{DEFAULT_UNIT_DIR}/{self.unit_name}.service"

    @property
    def others(self) -> list[UnitFile]:
        """The files a deploy would shadow or combine with: all but the one it writes
        (that one is judged by its marker, `deploys.unit_policy.is_managed`)."""
        return [f for f in self.files if f.path != self.own_path]

    @property
    def fingerprint(self) -> str:
        """The sha256 an adoption of these files covers: of each path and its content's
        hash, in order; a file changed, added or removed afterwards is not covered."""
        manifest = "".join(f"{f.path}\0{f.sha256}\n" for f in self.others)
        return hashlib.sha256(manifest.encode("utf-8")).hexdigest()

    def as_json(self) -> dict[str, Any]:
        return {
            "unit_name": self.unit_name,
            "load_state": self.load_state,
            "files": [f.as_json() for f in self.files],
        }

    @classmethod
    def from_json(cls, data: dict[str, Any] | None) -> ExistingUnit | None:
        if not data:
            return None
        files = [UnitFile.from_json(f) for f in data.get("files") or []]
        return cls(str(data.get("unit_name", "")), str(data.get("load_state", "")), files)


def _read(transport: Transport, path: str, unit: str, kind: str) -> UnitFile:
    if not is_unit_path(path, unit):
        return UnitFile(path, kind, note=f"not read: not a {unit} file in a unit directory")
    data = transport.read_file(path)
    if data is None:
        return UnitFile(path, kind, note="systemd names it, but it is gone")
    text = data[:SHOWN_BYTES].decode("utf-8", "replace").replace("\0", "\ufffd")
    return UnitFile(
        path, kind, sha256_hex(data), len(data), text, truncated=len(data) > SHOWN_BYTES
    )


def _drop_ins(transport: Transport, unit: str, reported: str) -> list[str]:
    """This unit's own drop-ins: what systemd reports, then those waiting for a unit file,
    one per file name. Directory-wide drop-ins (service.d/, prefix drop-ins such as
    vllm-.service.d/) belong to the host, not to this unit, and are not adopted per unit."""
    own = [p for p in reported.split() if posixpath.basename(posixpath.dirname(p)) == f"{unit}.d"]
    chosen: dict[str, str] = {}
    for path in own + waiting_drop_ins(transport, unit):
        chosen.setdefault(posixpath.basename(path), path)
    return list(chosen.values())


def existing_unit(transport: Transport, unit_name: str) -> ExistingUnit:
    """Ask systemd where `unit_name`.service comes from, and read those files."""
    unit = f"{unit_name}.service"
    props = transport.unit_properties(unit, PROPERTIES)
    files = []
    fragment = props.get("FragmentPath", "").strip()
    if fragment:
        files.append(_read(transport, fragment, unit, "unit file"))
    for path in _drop_ins(transport, unit, props.get("DropInPaths", "")):
        files.append(_read(transport, path, unit, "drop-in"))
    return ExistingUnit(unit_name, props.get("LoadState", ""), files)


def shadowed_diff(existing: ExistingUnit | None, new: str, host_name: str) -> str:
    """Unified diff from the unit file systemd loads now, when it is not the one a push
    writes (a vendor unit the push shadows), to the pushed text; "" when there is none."""
    if existing is None:
        return ""
    fragment = next((f for f in existing.others if f.kind == "unit file" and f.sha256), None)
    if fragment is None:
        return ""
    return "".join(
        difflib.unified_diff(
            split_lines_keepends(fragment.text),
            split_lines_keepends(new),
            fromfile=f"{host_name}:{fragment.path} (loaded now; the push shadows it)",
            tofile=f"{existing.own_path} (to be pushed)",
        )
    )


def read_existing_unit(*, host: Host, unit_name: str) -> ExistingUnit:
    """`existing_unit` over a new connection to `host` (raises TransportError)."""
    with transport_for(host) as transport:
        return existing_unit(transport, unit_name)


__all__ = [
    "ExistingUnit",
    "UnitFile",
    "existing_unit",
    "read_existing_unit",
    "shadowed_diff",
]
