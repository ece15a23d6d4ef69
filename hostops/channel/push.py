"""Pushing a unit file: atomic replace, backup beside it, daemon-reload, verify.

Order matters for "an interrupted push leaves the host's unit exactly as it was": the
backup and the new file are both staged first (written to temp files beside their
targets, every write and the close confirmed, synced, and their size and sha256 read back
on the host: `Transport.stage_file`), and only then renamed into place, the unit itself by
the very last rename. A write that fails (a full disk) therefore changes nothing on the
host; until the last rename the old unit is intact, after it the new one is complete.
systemd only reads unit files on daemon-reload, so nothing runs with the new text until
the reload we do last.

A connection cut once that rename may have happened leaves the outcome unknown to us, so
the host is asked again over a fresh connection and the file read back: the new text (the
push happened: reload, verify, and the caller records it), the old one (it did not), or
neither/unreadable (`PushInterrupted` says so). The history then matches the host.

The backup name `<unit>.specadmin-prev` has no unit-type suffix, so systemd's unit lookup
ignores it (unit_name_is_valid() rejects it).
"""

from __future__ import annotations

import dataclasses
import posixpath
from dataclasses import dataclass, field

from .base import StagedFile, Transport, require_unit_name, sha256_hex
from .errors import FileRefused, TransportError

DEFAULT_UNIT_DIR = "/etc/systemd/system"
BACKUP_SUFFIX = ".specadmin-prev"
MAX_UNIT_BYTES = 256 * 1024
VERIFY_PROPERTIES = ("LoadState", "FragmentPath", "NeedDaemonReload", "LoadError")


class UnitPushError(TransportError):
    """The push was refused or could not be verified; `result` is set once files moved."""

    headline = "push refused"

    def __init__(self, message: str, result: PushResult | None = None) -> None:
        super().__init__(message)
        self.result = result


class PushInterrupted(UnitPushError):
    """The connection failed once the unit's rename may have happened. `host_file` is what
    the host's file was read back as over a fresh connection: "new" (`result` is set: the
    push happened, but the reload or its check failed), "old" or "unknown"."""

    headline = "push interrupted"

    def __init__(self, message: str, host_file: str, result: PushResult | None = None) -> None:
        super().__init__(message, result)
        self.host_file = host_file


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
    # The backup's sha256 as the host read it back before its rename (never a hash of
    # what was meant to be written).
    backup_sha256: str | None = None
    # Set when the connection was lost after the rename and the host's file was read
    # back as the new text: what happened, for the job's log.
    recovered: str = ""


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

    previous = _read_unit(transport, path, max_bytes)
    previous_sha = None if previous is None else sha256_hex(previous)
    if expected_previous_sha256 is not None and (previous_sha or "") != expected_previous_sha256:
        raise UnitPushError(
            f"{path} changed on the host since it was read (sha256 {previous_sha or 'absent'}, "
            f"expected {expected_previous_sha256 or 'absent'}); nothing was written"
        )
    if previous == data:
        return _reload_and_verify(
            transport, unit, path, data, previous, None, "pushed but not loaded as expected"
        )
    backup, staged = _stage_both(transport, path, data, previous)
    stale_backup = None
    try:
        if backup is not None:
            transport.commit_file(backup)
        elif transport.remove_file(path + BACKUP_SUFFIX):
            stale_backup = path + BACKUP_SUFFIX
    except BaseException:
        transport.discard_file(staged)  # the unit itself was not touched
        raise
    done = PushResult(
        unit=unit,
        path=path,
        sha256=staged.sha256,
        changed=True,
        previous=previous,
        previous_sha256=previous_sha,
        backup_path=backup.path if backup else None,
        removed_stale_backup=stale_backup,
        backup_sha256=backup.sha256 if backup else None,
    )
    try:
        transport.commit_file(staged)
        return _reload_and_verify_push(transport, done)
    except UnitPushError:
        raise
    except TransportError as exc:  # the rename may have happened: ask the host
        return _after_cut(transport, done, staged, exc)


def _read_unit(transport: Transport, path: str, max_bytes: int) -> bytes | None:
    """The unit file on the host now, bounded: a file larger than a push may write, or
    not a regular file (a device, a link to /dev/null), refuses the push."""
    try:
        return transport.read_file(path, limit=max_bytes)
    except FileRefused as exc:
        raise UnitPushError(f"{exc}; nothing was written") from exc


def _stage_both(
    transport: Transport, path: str, data: bytes, previous: bytes | None
) -> tuple[StagedFile | None, StagedFile]:
    """The backup (of `previous`) and the new unit staged beside their targets, both
    confirmed before either is renamed: a failed write (a full disk) changes nothing."""
    backup = None
    if previous is not None:
        backup = transport.stage_file(path + BACKUP_SUFFIX, previous, 0o644)
    try:
        return backup, transport.stage_file(path, data, 0o644)
    except BaseException:
        if backup is not None:
            transport.discard_file(backup)
        raise


def _reload_and_verify_push(transport: Transport, done: PushResult) -> PushResult:
    return _reload_and_verify(
        transport,
        done.unit,
        done.path,
        b"",
        done.previous,
        done.backup_path,
        "pushed but not loaded as expected",
        removed_stale_backup=done.removed_stale_backup,
        pushed=done,
    )


def host_file_state(
    transport: Transport, path: str, new_sha256: str, previous_sha256: str | None
) -> tuple[str, str]:
    """("new" | "old" | "unknown", what the host's file is), read over a fresh connection
    after one was cut: which text the host really has."""
    transport.reconnect()
    try:
        text = transport.read_file(path, limit=MAX_UNIT_BYTES)
    except TransportError as exc:
        return "unknown", f"{path} could not be read back ({type(exc).__name__}: {exc})"
    sha = "" if text is None else sha256_hex(text)
    if sha == new_sha256:
        return "new", f"{path} is the new unit (sha256 {sha}, read back)"
    if sha == (previous_sha256 or ""):
        was = f"the previous unit (sha256 {sha})" if sha else "absent, as before"
        return "old", f"{path} is {was}: the new unit was not put in place"
    return "unknown", f"{path} holds another text (sha256 {sha}), neither the new nor the old"


def _after_cut(
    transport: Transport, done: PushResult, staged: StagedFile, cut: TransportError
) -> PushResult:
    """The connection failed during or after the unit's rename: read the file back, and
    when it is the new text finish the push (reload, verify) on the fresh connection."""
    state, seen = host_file_state(transport, done.path, done.sha256, done.previous_sha256)
    lost = f"the connection failed after the rename of {done.path} may have happened ({cut})"
    if state != "new":
        if state == "old":
            transport.discard_file(staged)  # not renamed: its temp file is still there
        raise PushInterrupted(f"{lost}; {seen}", state) from cut
    recovered = dataclasses.replace(done, recovered=f"{lost}; reconnected: {seen}")
    try:
        return _reload_and_verify_push(transport, recovered)
    except UnitPushError:
        raise
    except TransportError as exc:
        raise PushInterrupted(
            f"{lost}; {seen}, but daemon-reload failed on the new connection too ({exc})",
            state,
            recovered,
        ) from exc


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
    pushed: PushResult | None = None,
) -> PushResult:
    """daemon-reload, read `systemctl show`, and raise UnitPushError (with the result:
    the files did move) when systemd did not load `path` as the unit. `pushed`: the
    result of the writes (its hashes read back on the host), else one is made from
    `data` and `previous`."""
    transport.daemon_reload()
    props = transport.unit_properties(unit, VERIFY_PROPERTIES)
    if pushed is not None:
        result = dataclasses.replace(pushed, properties=props)
    else:
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
    backup = _read_unit(transport, path + BACKUP_SUFFIX, MAX_UNIT_BYTES)
    if backup is None:
        raise UnitPushError(f"no backup {path + BACKUP_SUFFIX} on the host")
    current = _read_unit(transport, path, MAX_UNIT_BYTES)
    written = transport.write_file_atomic(path, backup, 0o644)
    result = _reload_and_verify(
        transport, unit, path, backup, current, path + BACKUP_SUFFIX, "restored but not loaded"
    )
    return dataclasses.replace(result, sha256=written.sha256)


__all__ = [
    "BACKUP_SUFFIX",
    "DEFAULT_UNIT_DIR",
    "PushInterrupted",
    "PushResult",
    "UnitPushError",
    "host_file_state",
    "push_unit",
    "restore_backup",
    "sha256_hex",
    "verify_problems",
]
