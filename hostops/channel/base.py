"""The transport interface: how job steps reach a host, independent of SSH vs. local.

Steps call `run(argv)` with argv lists (never shell strings) plus a few helpers built on top
of it (`systemctl`, `unit_properties`, `journal`, `gpu_status`). Implementations only decide
how bytes travel: `SSHTransport` (paramiko) or `LocalTransport` (subprocess, pystemd, NVML),
so the same step code runs on both.
"""

from __future__ import annotations

import abc
import contextlib
import hashlib
import json
import posixpath
import re
import stat as stat_mode
from collections.abc import Iterable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any

from ..programs import program
from .bounds import MAX_READ_BYTES, MAX_STDOUT_BYTES, clip_text
from .errors import GpuUnavailable, RemoteCommandFailed, TransportError, WriteFailed
from .records import READ, REMOVE, RENAME, RUN, WRITE, CommandLog

DEFAULT_COMMAND_TIMEOUT = 60.0
# write_file_atomic's temp files are ".<name>.specadmin-<random>" beside the target.
TEMP_INFIX = ".specadmin-"

# systemd unit_name_is_valid() (src/basic/unit-name.c): [A-Za-z0-9:_.\\-] plus "@" for
# templates/instances, a known type suffix, at most 255 bytes. We also refuse a leading "-"
# so a name can never be read as an option.
UNIT_TYPES = (
    "service",
    "socket",
    "target",
    "device",
    "mount",
    "automount",
    "swap",
    "timer",
    "path",
    "slice",
    "scope",
)
_UNIT_NAME_RE = re.compile(r"[A-Za-z0-9:_.\\@][A-Za-z0-9:_.\\@-]*\.(" + "|".join(UNIT_TYPES) + ")")


def is_valid_unit_name(name: str) -> bool:
    """True for a plain systemd unit name (no path, no shell metacharacters, no `..`)."""
    return (
        len(name.encode()) <= 255
        and _UNIT_NAME_RE.fullmatch(name) is not None
        and ".." not in name
        and name.count("@") <= 1
    )


def require_unit_name(name: str) -> str:
    if not is_valid_unit_name(name):
        raise ValueError(f"not a valid systemd unit name: {name!r}")
    return name


@dataclass(frozen=True)
class CommandResult:
    """Outcome of one command. Output is bytes: unit files and logs need not be UTF-8.

    Each stream was capped while it was read (`bounds`): `stdout` is the first
    MAX_STDOUT_BYTES as printed (parsers see a clean cut, never a marker), `stderr` its
    beginning and end with a marker line between; the `*_dropped` counts say how many
    bytes were left out.
    """

    exit_code: int
    stdout: bytes
    stderr: bytes
    duration: float
    stdout_dropped: int = 0
    stderr_dropped: int = 0

    @property
    def ok(self) -> bool:
        return self.exit_code == 0

    @property
    def stdout_complete(self) -> bool:
        """False when the command printed more than was kept."""
        return self.stdout_dropped == 0

    @property
    def stdout_text(self) -> str:
        return self.stdout.decode(errors="replace")

    @property
    def stderr_text(self) -> str:
        return self.stderr.decode(errors="replace")

    def check(self, argv: Sequence[str]) -> CommandResult:
        """Return self, or raise RemoteCommandFailed when the exit code is not 0."""
        if self.exit_code != 0:
            raise RemoteCommandFailed(list(argv), self.exit_code, self.stderr or self.stdout)
        return self


@dataclass(frozen=True)
class StagedFile:
    """A file written beside its target and confirmed, not yet renamed over it: every
    write, the close and the sync succeeded, and `size`/`sha256` are what the host read
    back from the temp file (never what was meant to be written)."""

    path: str
    temp: str
    size: int
    sha256: str


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def regular_file_problem(mode: int, size: int, limit: int, partial: bool) -> str | None:
    """Why a file of this `stat` mode and size is not read (None: read it)."""
    if not stat_mode.S_ISREG(mode):
        kinds = (
            (stat_mode.S_ISDIR, "a directory"),
            (stat_mode.S_ISCHR, "a character device (a masked unit is a link to /dev/null)"),
            (stat_mode.S_ISBLK, "a block device"),
            (stat_mode.S_ISFIFO, "a FIFO"),
            (stat_mode.S_ISSOCK, "a socket"),
        )
        what = next((name for test, name in kinds if test(mode)), "not a regular file")
        return f"it is {what}, not a regular file"
    if size > limit and not partial:
        return f"it is {size:,} bytes, more than the {limit:,} specadmin reads"
    return None


# `Transport.stage_file` over a shell (hostops/programs/file_digest.sh).
_DIGEST_SCRIPT = program("file_digest.sh")


def parse_digest(argv: Sequence[str], result: CommandResult) -> tuple[int, str]:
    """(size, sha256) from `_DIGEST_SCRIPT`'s output; WriteFailed naming the path else."""
    lines = result.stdout_text.split()
    if result.exit_code != 0 or len(lines) < 2 or not lines[0].isdigit():
        why = {3: "sync (fsync) failed", 4: "stat failed", 5: "reading it back failed"}
        reason = why.get(result.exit_code, f"reading it back exited {result.exit_code}")
        detail = result.stderr_text.strip()[-300:]
        raise WriteFailed(argv[-1], reason + (f": {detail}" if detail else ""))
    return int(lines[0]), lines[1]


@dataclass(frozen=True)
class JournalEntry:
    """One journal record (`journalctl -o json`); `cursor` resumes reading after it."""

    cursor: str
    realtime_usec: int
    message: str
    priority: int | None
    pid: int | None
    fields: dict[str, Any] = field(repr=False)


@dataclass(frozen=True)
class GpuProcess:
    """A compute process on a GPU. `pid` is a *host* PID (NVML/nvidia-smi report those)."""

    pid: int
    name: str
    used_mib: int | None  # None where the driver reports "[N/A]"
    gpu_uuid: str


@dataclass(frozen=True)
class GpuInfo:
    index: int
    name: str
    uuid: str
    memory_used_mib: int
    memory_total_mib: int
    processes: tuple[GpuProcess, ...] = ()


# --------------------------------------------------------------------------------------
# parsers shared by the implementations


def parse_show(text: str) -> dict[str, str]:
    """`systemctl show` output (KEY=VALUE lines; values may contain '=')."""
    props: dict[str, str] = {}
    for line in text.splitlines():
        key, sep, value = line.partition("=")
        if sep:
            props[key] = value
    return props


def _journal_value(value: Any) -> Any:
    # journalctl -o json encodes non-UTF-8/binary field values as arrays of byte values
    # (systemd journal-fields/JSON docs); a field repeated in one entry becomes an array.
    if isinstance(value, list) and all(isinstance(b, int) for b in value):
        return bytes(value).decode(errors="replace")
    return value


def parse_journal_json(text: str | bytes) -> list[JournalEntry]:
    """One JSON object per line, as `journalctl -o json` prints them."""
    if isinstance(text, bytes):
        text = text.decode(errors="replace")
    entries: list[JournalEntry] = []
    for line in text.splitlines():
        line = line.strip()
        if not line.startswith("{"):
            continue
        raw = json.loads(line)
        fields = {k: _journal_value(v) for k, v in raw.items()}
        message = fields.get("MESSAGE")
        if isinstance(message, list):  # repeated field
            message = "\n".join(str(_journal_value(m)) for m in message)
        entries.append(
            JournalEntry(
                cursor=str(fields.get("__CURSOR", "")),
                realtime_usec=_int_or_none(fields.get("__REALTIME_TIMESTAMP")) or 0,
                message="" if message is None else str(message),
                priority=_int_or_none(fields.get("PRIORITY")),
                pid=_int_or_none(fields.get("_PID")),
                fields=fields,
            )
        )
    return entries


def _int_or_none(value: Any) -> int | None:
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


NVIDIA_SMI_GPU_QUERY = "index,name,uuid,memory.used,memory.total"
MAX_NAME_CHARS = 4096  # a process name is its executable's path (PATH_MAX)
NVIDIA_SMI_APP_QUERY = "gpu_uuid,pid,used_memory,process_name"


def parse_nvidia_smi(gpu_csv: str, apps_csv: str) -> list[GpuInfo]:
    """Parse `--format=csv,noheader,nounits` output of the two queries above.

    nvidia-smi separates fields with ", " and does not quote; only the process name can
    contain that separator, so it is queried last and re-joined.
    """
    procs: dict[str, list[GpuProcess]] = {}
    for line in apps_csv.splitlines():
        if not line.strip():
            continue
        parts = [p.strip() for p in line.split(", ")]
        if len(parts) < 4 or not parts[1].isdecimal():
            raise GpuUnavailable(f"unexpected nvidia-smi compute-apps line: {_shown(line)}")
        uuid, pid, used, name = parts[0], parts[1], parts[2], ", ".join(parts[3:])
        procs.setdefault(uuid, []).append(
            GpuProcess(
                pid=int(pid),
                name=clip_text(name, MAX_NAME_CHARS),
                used_mib=_int_or_none(used),
                gpu_uuid=uuid,
            )
        )
    gpus: list[GpuInfo] = []
    for line in gpu_csv.splitlines():
        if not line.strip():
            continue
        parts = [p.strip() for p in line.split(", ")]
        if len(parts) != 5:
            raise GpuUnavailable(f"unexpected nvidia-smi line: {_shown(line)}")
        index, name, uuid, used, total = parts
        try:
            gpus.append(
                GpuInfo(
                    index=int(index),
                    name=clip_text(name, MAX_NAME_CHARS),
                    uuid=uuid,
                    memory_used_mib=int(used),
                    memory_total_mib=int(total),
                    processes=tuple(procs.get(uuid, ())),
                )
            )
        except ValueError as exc:
            raise GpuUnavailable(f"unexpected nvidia-smi line: {_shown(line)}") from exc
    return gpus


def _shown(line: str, limit: int = 200) -> str:
    """A line of a host's output quoted in a message, at most `limit` characters of it."""
    more = len(line) - limit
    return repr(line[:limit]) + (f" (+{more:,} characters)" if more > 0 else "")


# --------------------------------------------------------------------------------------


class Transport(abc.ABC):
    """One host, reached somehow. Use as a context manager; `close()` is idempotent.

    The public operations (`run`, `read_file`, `write_file_atomic`, `remove_file`) record
    themselves in `command_log` and call the implementation's `_run`, `_read_file`, …:
    a job step's record of what it did on the host is complete without the step's help.
    """

    command_timeout: float = DEFAULT_COMMAND_TIMEOUT
    nvidia_smi: str = "nvidia-smi"  # resolved through the login shell's PATH on the host

    @property
    def command_log(self) -> CommandLog:
        """Everything done through this transport since the last `command_log.take()`."""
        log = self.__dict__.get("_command_log")
        if log is None:
            log = self.__dict__["_command_log"] = CommandLog()
        return log

    # -- recorded operations ------------------------------------------------------------
    def run(
        self, argv: Sequence[str], *, timeout: float | None = None, input: bytes | None = None
    ) -> CommandResult:
        """Run argv (no shell) and return its exit code and complete output.

        Raises CommandTimeout past `timeout` (default: the transport's command timeout).
        A non-zero exit code is a result, not an exception (see CommandResult.check).
        """
        words = [a if isinstance(a, str) else a.decode(errors="replace") for a in argv]
        with self.command_log.recording(RUN, words, bound_s=self.host_bound(timeout)) as out:
            result = self._run(argv, timeout=timeout, input=input)
            out["exit_code"] = result.exit_code
            out["stdout_bytes"] = len(result.stdout) + result.stdout_dropped
            out["dropped_bytes"] = result.stdout_dropped + result.stderr_dropped
            if result.exit_code != 0:
                out["stderr"] = result.stderr_text.strip()
        return result

    def read_file(
        self, path: str, *, limit: int = MAX_READ_BYTES, partial: bool = False
    ) -> bytes | None:
        """The file's bytes, or None when it does not exist.

        Bounded (`bounds`): the path is `stat`ed first and only a regular file is opened
        (never a device or a FIFO: FileRefused), and at most `limit` bytes are read. A
        larger file is refused (FileRefused with its size), or with `partial` its first
        `limit` bytes are returned (a `#!` line).
        """
        with self.command_log.recording(READ, [path]) as out:
            data = self._read_file(path, limit, partial)
            out["exit_code"] = 0 if data is not None else 1
            out["stdout_bytes"] = len(data or b"")
        return data

    def stage_file(self, path: str, data: bytes, mode: int = 0o644) -> StagedFile:
        """Write `data` to a new temp file beside `path` (same filesystem, so the rename
        that follows is atomic), every write and the close confirmed, synced to disk, its
        size and sha256 read back on the host and compared with `data`.

        Raises WriteFailed (DiskFull when the host has no room) with the temp file removed
        where the connection still allows it; `path` itself is never touched here.
        """
        argv = [path, f"{len(data)} bytes", f"mode {mode:o}"]
        with self.command_log.recording(WRITE, argv) as out:
            staged = self._stage_file(path, data, mode)
            expected = sha256_hex(data)
            if (staged.size, staged.sha256) != (len(data), expected):
                self.discard_file(staged)
                raise WriteFailed(
                    path,
                    f"the host holds {staged.size} bytes (sha256 {staged.sha256}) where "
                    f"{len(data)} bytes (sha256 {expected}) were sent",
                )
            out["stdout_bytes"] = staged.size
            out["note"] = f"read back on the host: {staged.size} bytes, sha256 {staged.sha256}"
        return staged

    def commit_file(self, staged: StagedFile) -> None:
        """Rename a staged file over its target (atomic: readers see the old or the new)."""
        temp = posixpath.basename(staged.temp)
        with self.command_log.recording(RENAME, [staged.path, f"from {temp}"]):
            self._commit_file(staged)

    def discard_file(self, staged: StagedFile) -> None:
        """Remove a staged temp file, where the connection still allows it."""
        # Else left for `remove_stale_temp_files` (the next push, under the host lock).
        with contextlib.suppress(TransportError, OSError):
            self._remove_file(staged.temp)

    def write_file_atomic(self, path: str, data: bytes, mode: int = 0o644) -> StagedFile:
        """Replace `path` atomically with `data`, verified (`stage_file`) before the rename:
        on failure the old file is untouched. Returns what the host read back."""
        staged = self.stage_file(path, data, mode)
        try:
            self.commit_file(staged)
        except BaseException:
            self.discard_file(staged)
            raise
        return staged

    def reconnect(self) -> None:  # noqa: B027 (a no-op unless there is a connection)
        """Forget the connection, so the next operation opens a fresh one (after a
        connection was cut mid-operation). Nothing to do for a transport without one."""

    def _digest_on_host(self, temp: str) -> tuple[int, str]:
        """Sync `temp` and read its size and sha256 back on the host (a shell command,
        part of the write's own record)."""
        argv = ["sh", "-c", _DIGEST_SCRIPT, "sh", temp]
        return parse_digest(argv, self._run(argv, timeout=self.command_timeout))

    def remove_file(self, path: str) -> bool:
        """Remove a file; False when it did not exist."""
        with self.command_log.recording(REMOVE, [path]) as out:
            removed = self._remove_file(path)
            out["exit_code"] = 0 if removed else 1
        return removed

    def forward_local(self, address: str, port: int) -> AbstractContextManager[tuple[str, int]]:
        """`ssh -L` for a with-block: a (host, port) of this process leading to
        `address:port` as the host sees it (SSHTransport). A transport that runs on the
        host itself needs none: the address is reached directly."""
        raise TransportError(f"{self!r} does not forward ports; connect to {address}:{port}")

    def host_bound(self, timeout: float | None) -> float | None:
        """Seconds after which the host itself ends a command (None: not bounded there)."""
        return None

    # -- primitives (implementation-specific) -------------------------------------------
    @abc.abstractmethod
    def _run(
        self, argv: Sequence[str], *, timeout: float | None = None, input: bytes | None = None
    ) -> CommandResult: ...

    @abc.abstractmethod
    def _read_file(self, path: str, limit: int, partial: bool) -> bytes | None: ...

    @abc.abstractmethod
    def _stage_file(self, path: str, data: bytes, mode: int) -> StagedFile: ...

    @abc.abstractmethod
    def _commit_file(self, staged: StagedFile) -> None: ...

    @abc.abstractmethod
    def _remove_file(self, path: str) -> bool: ...

    @abc.abstractmethod
    def close(self) -> None: ...

    def remove_stale_temp_files(self, path: str) -> list[str]:
        """Remove temp files an interrupted `write_file_atomic(path)` left beside `path`.

        Only call while holding the host lock: a concurrent writer's temp file would go too.
        """
        directory, name = posixpath.split(path)
        pattern = "." + re.sub(r"([*?\[\\])", r"\\\1", name) + TEMP_INFIX + "*"
        argv = ["find", directory or "/", "-maxdepth", "1", "-type", "f", "-name", pattern]
        result = self.run_checked([*argv, "-print", "-delete"])
        return result.stdout_text.splitlines()

    def __enter__(self) -> Transport:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    # -- helpers (argv over run(); LocalTransport overrides some with D-Bus/NVML) --------
    def run_checked(
        self, argv: Sequence[str], *, timeout: float | None = None, input: bytes | None = None
    ) -> CommandResult:
        return self.run(argv, timeout=timeout, input=input).check(argv)

    def systemctl(
        self, *args: str, check: bool = True, timeout: float | None = None
    ) -> CommandResult:
        """`systemctl --no-pager --no-ask-password ARGS…`; raises on failure when check."""
        argv = ["systemctl", "--no-pager", "--no-ask-password", *args]
        result = self.run(argv, timeout=timeout)
        return result.check(argv) if check else result

    def unit_properties(self, unit: str, names: Iterable[str]) -> dict[str, str]:
        """Properties as `systemctl show -p` prints them (yes/no, numbers, strings).

        A unit that is not loaded still answers (LoadState=not-found), like systemctl.
        """
        require_unit_name(unit)
        names = list(names)
        result = self.systemctl("show", "--property=" + ",".join(names), "--", unit)
        props = parse_show(result.stdout_text)
        return {k: v for k, v in props.items() if k in names}

    def daemon_reload(self) -> None:
        self.systemctl("daemon-reload")

    def start(self, unit: str) -> None:
        self.systemctl("start", "--", require_unit_name(unit))

    def stop(self, unit: str) -> None:
        self.systemctl("stop", "--", require_unit_name(unit))

    def restart(self, unit: str) -> None:
        self.systemctl("restart", "--", require_unit_name(unit))

    def journal(
        self,
        unit: str,
        since: str | None = None,
        lines: int | None = 200,
        *,
        timeout: float | None = None,
    ) -> list[JournalEntry]:
        """The unit's journal, oldest first; `since`=a previous entry's cursor reads only newer.

        `--all` because -o json otherwise turns fields over 4096 bytes into null
        (journalctl(1)); `-u` also matches systemd's own messages about the unit.
        """
        require_unit_name(unit)
        argv = ["journalctl", "--no-pager", "--all", "-o", "json", "-u", unit]
        if since:
            argv.append("--after-cursor=" + since)
        if lines is not None:
            argv += ["-n", str(int(lines))]
        result = self.run(argv, timeout=timeout)
        if result.exit_code != 0 and not result.stdout.strip():
            raise RemoteCommandFailed(argv, result.exit_code, result.stderr)
        out = result.stdout
        if not result.stdout_complete:
            # Capped mid-entry: parse the whole entries; the next read resumes after the
            # last one's cursor.
            out = out[: out.rfind(b"\n") + 1]
        return parse_journal_json(out)

    def gpu_status(self) -> list[GpuInfo]:
        """All GPUs with memory and compute processes, via `nvidia-smi` on the host.

        Both queries run in one command (one SSH round trip per reading: the GPU-clean
        step reads in a loop); each one's exit status is printed after its output.
        """
        result = self.run(
            [
                "sh",
                "-c",
                _NVIDIA_SMI_SCRIPT,
                "sh",
                self.nvidia_smi,
                NVIDIA_SMI_GPU_QUERY,
                NVIDIA_SMI_APP_QUERY,
            ]
        )
        if not result.stdout_complete:
            raise GpuUnavailable(
                f"nvidia-smi printed more than {MAX_STDOUT_BYTES:,} bytes "
                f"({result.stdout_dropped:,} more not kept): not a GPU listing"
            )
        parts = _SMI_MARKER.split(result.stdout_text)
        outputs, codes = parts[0::2], [int(c) for c in parts[1::2]]
        error = (result.stderr_text or result.stdout_text).strip()[-500:]
        if not codes or codes[0] != 0:
            code = codes[0] if codes else result.exit_code
            raise GpuUnavailable(f"nvidia-smi failed (exit {code}): " + error)
        if len(codes) < 2 or codes[1] != 0:
            code = codes[1] if len(codes) > 1 else result.exit_code
            raise GpuUnavailable(f"nvidia-smi --query-compute-apps failed (exit {code}): " + error)
        return parse_nvidia_smi(outputs[0], outputs[1])


# The two nvidia-smi queries of `gpu_status` (hostops/programs/nvidia_smi.sh).
_NVIDIA_SMI_SCRIPT = program("nvidia_smi.sh")
_SMI_MARKER = re.compile(r"\n?@@specadmin-exit (\d+)\n")


__all__ = [
    "DEFAULT_COMMAND_TIMEOUT",
    "CommandResult",
    "GpuInfo",
    "GpuProcess",
    "JournalEntry",
    "StagedFile",
    "Transport",
    "TransportError",
    "is_valid_unit_name",
    "parse_journal_json",
    "parse_nvidia_smi",
    "parse_show",
    "regular_file_problem",
    "require_unit_name",
    "sha256_hex",
]
