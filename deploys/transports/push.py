"""Pushing a unit file: atomic replace, backup beside it, daemon-reload, verify.

Order matters for "an interrupted push leaves the host's unit exactly as it was": the
backup and the new file are each written to a temp file and renamed into place, and the
unit itself is replaced by the very last rename. Until that rename the old unit is intact;
after it the new one is complete. systemd only reads unit files on daemon-reload, so
nothing runs with the new text until the reload we do last.

The backup name `<unit>.specadmin-prev` has no unit-type suffix, so systemd's unit lookup
ignores it (unit_name_is_valid() rejects it).
"""

from __future__ import annotations

import hashlib
import posixpath
from dataclasses import dataclass, field

from .base import Transport, require_unit_name
from .errors import TransportError

DEFAULT_UNIT_DIR = "/etc/systemd/system"
BACKUP_SUFFIX = ".specadmin-prev"
MAX_UNIT_BYTES = 256 * 1024
VERIFY_PROPERTIES = ("LoadState", "FragmentPath", "NeedDaemonReload", "LoadError")


class UnitPushError(TransportError):
    """The push was refused or could not be verified; `result` is set once files moved."""

    def __init__(self, message: str, result: PushResult | None = None) -> None:
        super().__init__(message)
        self.result = result


@dataclass(frozen=True)
class PushResult:
    unit: str
    path: str
    sha256: str
    changed: bool
    previous: bytes | None  # what was there before (None: no unit file), for the database
    previous_sha256: str | None
    backup_path: str | None  # None when there was nothing to back up or nothing changed
    properties: dict[str, str] = field(default_factory=dict)
    # A brand-new unit: the `.specadmin-prev` of an earlier unit of that name, removed so
    # that no backup of something else lies beside it (a rollback would restore it).
    removed_stale_backup: str | None = None


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _encode(text: str | bytes, max_bytes: int) -> bytes:
    data = text.encode("utf-8") if isinstance(text, str) else bytes(text)
    if len(data) > max_bytes:
        raise UnitPushError(f"unit text is {len(data)} bytes; the limit is {max_bytes}")
    if b"\0" in data:
        raise UnitPushError("unit text contains a NUL byte")
    return data


def push_unit(
    transport: Transport,
    unit: str,
    text: str | bytes,
    *,
    unit_dir: str = DEFAULT_UNIT_DIR,
    expected_previous_sha256: str | None = None,
    max_bytes: int = MAX_UNIT_BYTES,
) -> PushResult:
    """Install `text` as `unit_dir/unit`, keep the old file as a backup, reload, verify.

    `expected_previous_sha256`: refuse if the host's current file is not the one the
    approver saw ("" means: expected absent). Raises UnitPushError (bad name/text, changed
    under us, verification failed) or other TransportErrors (connection).

    Temp files an interrupted earlier push left stay: removing them is only safe under the
    host lock, so the deploy job's push step does it (`Transport.remove_stale_temp_files`).
    """
    try:
        require_unit_name(unit)
    except ValueError as exc:
        raise UnitPushError(str(exc)) from None
    if not unit_dir.startswith("/"):
        raise UnitPushError(f"unit directory must be absolute: {unit_dir!r}")
    data = _encode(text, max_bytes)
    path = posixpath.join(unit_dir, unit)

    previous = transport.read_file(path)
    previous_sha = None if previous is None else sha256_hex(previous)
    if expected_previous_sha256 is not None and (previous_sha or "") != expected_previous_sha256:
        raise UnitPushError(
            f"{path} changed on the host since it was read (sha256 {previous_sha or 'absent'}, "
            f"expected {expected_previous_sha256 or 'absent'}); nothing was written"
        )
    changed = previous != data
    backup_path = None
    stale_backup = None
    if changed:
        if previous is not None:
            backup_path = path + BACKUP_SUFFIX
            transport.write_file_atomic(backup_path, previous, 0o644)
        elif transport.remove_file(path + BACKUP_SUFFIX):
            stale_backup = path + BACKUP_SUFFIX
        transport.write_file_atomic(path, data, 0o644)
    return _reload_and_verify(
        transport,
        unit,
        path,
        data,
        previous,
        backup_path,
        "pushed but not loaded as expected",
        removed_stale_backup=stale_backup,
    )


def _reload_and_verify(
    transport: Transport,
    unit: str,
    path: str,
    data: bytes,
    previous: bytes | None,
    backup_path: str | None,
    failure: str,
    *,
    removed_stale_backup: str | None = None,
) -> PushResult:
    """daemon-reload, read `systemctl show`, and raise UnitPushError (with the result:
    the files did move) when systemd did not load `path` as the unit."""
    transport.daemon_reload()
    props = transport.unit_properties(unit, VERIFY_PROPERTIES)
    result = PushResult(
        unit=unit,
        path=path,
        sha256=sha256_hex(data),
        changed=previous != data,
        previous=previous,
        previous_sha256=None if previous is None else sha256_hex(previous),
        backup_path=backup_path,
        properties=props,
        removed_stale_backup=removed_stale_backup,
    )
    problems = verify_problems(props, path)
    if problems:
        raise UnitPushError(f"{unit} {failure}: {'; '.join(problems)}", result)
    return result


def verify_problems(props: dict[str, str], path: str) -> list[str]:
    """What `systemctl show` says is wrong after the reload (empty: all good)."""
    problems = []
    if props.get("LoadState") != "loaded":
        detail = props.get("LoadError", "")
        problems.append(
            f"LoadState={props.get('LoadState')!s}" + (f" ({detail})" if detail else "")
        )
    if props.get("FragmentPath") != path:
        problems.append(
            f"FragmentPath={props.get('FragmentPath')!s} (another file or a mask takes precedence"
            f" over {path})"
        )
    if props.get("NeedDaemonReload") != "no":
        problems.append(f"NeedDaemonReload={props.get('NeedDaemonReload')!s}")
    return problems


def restore_backup(
    transport: Transport, unit: str, *, unit_dir: str = DEFAULT_UNIT_DIR
) -> PushResult:
    """Put `<unit>.specadmin-prev` back in place (rollback of the last push), reload, verify."""
    require_unit_name(unit)
    path = posixpath.join(unit_dir, unit)
    backup = transport.read_file(path + BACKUP_SUFFIX)
    if backup is None:
        raise UnitPushError(f"no backup {path + BACKUP_SUFFIX} on the host")
    current = transport.read_file(path)
    transport.write_file_atomic(path, backup, 0o644)
    return _reload_and_verify(
        transport, unit, path, backup, current, path + BACKUP_SUFFIX, "restored but not loaded"
    )


__all__ = [
    "BACKUP_SUFFIX",
    "DEFAULT_UNIT_DIR",
    "PushResult",
    "UnitPushError",
    "push_unit",
    "restore_backup",
    "sha256_hex",
    "verify_problems",
]
