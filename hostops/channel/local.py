"""Local transport: the worker runs on the GPU host itself.

Unit state and control go over D-Bus to systemd's Manager (pystemd; the API is in
org.freedesktop.systemd1(5)): `GetAll` on the unit object for properties, `StartUnit` /
`StopUnit` / `RestartUnit` with mode "replace" and a wait for the job's `JobRemoved` signal
(what `systemctl start` waits for), `Reload` for daemon-reload (its reply is sent after the
reload finished). pystemd has no journal reader, so the journal comes from
`journalctl -o json` like over SSH. GPUs come from NVML (`pynvml`, package nvidia-ml-py),
which reports host PIDs.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import signal
import stat as stat_mode
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterable, Iterator, Sequence
from types import ModuleType
from typing import IO, Any

from .base import (
    DEFAULT_COMMAND_TIMEOUT,
    TEMP_INFIX,
    CommandResult,
    GpuInfo,
    GpuProcess,
    StagedFile,
    Transport,
    regular_file_problem,
    require_unit_name,
)
from .bounds import CappedBuffer, output_buffers
from .errors import (
    CommandTimeout,
    DiskFull,
    FileRefused,
    GpuUnavailable,
    RemoteCommandFailed,
    TransportError,
    WriteFailed,
)
from .records import DBUS, NVML

SYSTEMD = b"org.freedesktop.systemd1"
MANAGER_PATH = b"/org/freedesktop/systemd1"
MANAGER_IFACE = b"org.freedesktop.systemd1.Manager"
UNIT_IFACE = b"org.freedesktop.systemd1.Unit"
PROPS_IFACE = b"org.freedesktop.DBus.Properties"
PRIVATE_BUS = b"unix:path=/run/systemd/private"
USEC_INFINITY = 2**64 - 1
MIB = 1024 * 1024
# After the process group was killed, how long the readers wait for the pipes to close: a
# process that left the group (setsid) may hold them open for ever.
PIPE_GRACE_S = 2.0
_CHUNK = 1 << 16


def _pystemd() -> tuple[Any, Any]:
    """(pystemd.dbuslib, pystemd.systemd1), or a TransportError naming the package."""
    try:
        from pystemd import dbuslib, systemd1  # noqa: PLC0415 (optional: only local hosts)
    except ImportError as exc:
        raise TransportError(
            "LocalTransport needs the package 'pystemd' (built against libsystemd: "
            f"apt-get install libsystemd-dev pkg-config; pip install pystemd): {exc}"
        ) from exc
    return dbuslib, systemd1


def format_property(name: str, value: Any) -> str:
    """A D-Bus property value as `systemctl show` prints it, for scalar properties.

    bools are yes/no, strings and numbers as is, string arrays space-separated, wall-clock
    `*Timestamp` values as local time ("" when never set). Time spans (`*USec`) stay in
    microseconds and structured values (ExecStart…) are only approximated.
    """
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, bytes):
        return value.decode(errors="replace")
    if isinstance(value, int):
        if name.endswith("Timestamp"):
            if value in (0, USEC_INFINITY):
                return ""
            return time.strftime("%a %Y-%m-%d %H:%M:%S %Z", time.localtime(value / 1e6))
        if value == USEC_INFINITY and name.endswith("USec"):
            return "infinity"
        return str(value)
    if isinstance(value, (list, tuple)):
        return " ".join(format_property(name, v) for v in value)
    return str(value)


class LocalTransport(Transport):
    """This machine: subprocess, local files, pystemd (D-Bus) and NVML.

    `nvml`: a module object with pynvml's API (tests inject a double); default: `pynvml`.
    """

    def __init__(
        self,
        *,
        command_timeout: float = DEFAULT_COMMAND_TIMEOUT,
        nvml: ModuleType | Any | None = None,
    ) -> None:
        self.command_timeout = command_timeout
        self._nvml_module = nvml
        self._nvml_ready = False
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return "LocalTransport()"

    def close(self) -> None:
        with self._lock:
            if self._nvml_ready and self._nvml_module is not None:
                with contextlib.suppress(Exception):
                    self._nvml_module.nvmlShutdown()
            self._nvml_ready = False

    # -- commands ------------------------------------------------------------------------
    def _run(
        self, argv: Sequence[str], *, timeout: float | None = None, input: bytes | None = None
    ) -> CommandResult:
        """A child in its own session: at the deadline its whole process group is killed,
        so nothing outlives the bound (the local counterpart of SSH's `timeout(1)`)."""
        argv = list(argv)
        if not argv:
            raise ValueError("empty argv")
        timeout = self.command_timeout if timeout is None else timeout
        started = time.monotonic()
        try:
            proc = subprocess.Popen(
                argv,
                stdin=subprocess.PIPE if input is not None else subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                start_new_session=True,  # its own process group: a timeout kills all of it
            )
        except FileNotFoundError:
            # What a shell over SSH reports, so callers see the same result on both.
            msg = f"{argv[0]}: command not found\n".encode()
            return CommandResult(127, b"", msg, time.monotonic() - started)
        except PermissionError as exc:
            return CommandResult(126, b"", f"{exc}\n".encode(), time.monotonic() - started)
        out, err = output_buffers()
        timed_out = _communicate(proc, input, timeout, out, err)
        if timed_out:
            raise CommandTimeout(argv, timeout, out.head(), err.value(stream="stderr"))
        return CommandResult(
            proc.returncode,
            out.head(),
            err.value(stream="stderr"),
            time.monotonic() - started,
            stdout_dropped=out.dropped,
            stderr_dropped=err.dropped,
        )

    # -- files ---------------------------------------------------------------------------
    def _read_file(self, path: str, limit: int, partial: bool) -> bytes | None:
        """`stat` first (a FIFO or device is never opened), then open without blocking or
        taking a terminal, `fstat` the same file again, and read at most `limit` (+1)."""
        try:
            before = os.stat(path)
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise TransportError(f"cannot read {path}: {exc}") from exc
        _refuse_unless_regular(path, before, limit, partial)
        flags = os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC
        try:
            fd = os.open(path, flags)
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise TransportError(f"cannot read {path}: {exc}") from exc
        try:
            opened = os.fstat(fd)
            if (opened.st_dev, opened.st_ino) != (before.st_dev, before.st_ino):
                raise FileRefused(path, "it was replaced while it was being opened")
            _refuse_unless_regular(path, opened, limit, partial)
            data = _read_at_most(fd, limit if partial else limit + 1)
        except OSError as exc:
            raise TransportError(f"cannot read {path}: {exc}") from exc
        finally:
            os.close(fd)
        if len(data) > limit:
            raise FileRefused(path, f"it grew past the {limit:,} bytes specadmin reads")
        return data

    def _remove_file(self, path: str) -> bool:
        try:
            os.unlink(path)
        except FileNotFoundError:
            return False
        except OSError as exc:
            raise TransportError(f"cannot remove {path}: {exc}") from exc
        return True

    def _stage_file(self, path: str, data: bytes, mode: int) -> StagedFile:
        """mkstemp beside the target, write, fchmod, fsync, close (each checked), then the
        file read back from the disk for its size and sha256."""
        directory, name = os.path.split(os.path.abspath(path))
        try:
            fd, tmp = tempfile.mkstemp(prefix=f".{name}{TEMP_INFIX}", dir=directory)
        except OSError as exc:
            raise _write_error(path, exc) from exc
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(data)
                f.flush()
                os.fchmod(f.fileno(), mode)
                os.fsync(f.fileno())
            size, sha = _digest(tmp)
        except BaseException as exc:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            if isinstance(exc, OSError):
                raise _write_error(path, exc) from exc
            raise
        return StagedFile(os.path.abspath(path), tmp, size, sha)

    def _commit_file(self, staged: StagedFile) -> None:
        """os.replace, then fsync the directory: that makes the rename itself durable
        (rename(2), fsync(2))."""
        try:
            os.replace(staged.temp, staged.path)
            dir_fd = os.open(os.path.dirname(staged.path), os.O_RDONLY | os.O_DIRECTORY)
            try:
                os.fsync(dir_fd)
            finally:
                os.close(dir_fd)
        except OSError as exc:
            raise TransportError(f"cannot rename into {staged.path}: {exc}") from exc

    # -- systemd over D-Bus --------------------------------------------------------------
    @contextlib.contextmanager
    def _bus(self) -> Iterator[Any]:
        """The system bus; as root, systemd's private socket when no bus daemon runs."""
        dbuslib, _ = _pystemd()
        bus = dbuslib.DBus()
        try:
            bus.open()
        except Exception as exc:
            if os.geteuid() != 0 or not os.path.exists(PRIVATE_BUS[len(b"unix:path=") :]):
                raise TransportError(f"cannot connect to the system D-Bus: {exc}") from exc
            bus = dbuslib.DBusAddress(PRIVATE_BUS, peer_to_peer=True)
            try:
                bus.open()
            except Exception as exc2:
                raise TransportError(f"cannot connect to systemd over D-Bus: {exc2}") from exc2
        try:
            yield bus
        finally:
            bus.close()

    def _get_all(self, bus: Any, path: bytes, iface: bytes) -> dict[bytes, Any]:
        dbuslib, _ = _pystemd()
        args = dbuslib.apply_signature(b"s", [iface])
        return dict(bus.call_method(SYSTEMD, path, PROPS_IFACE, b"GetAll", args).body)

    def unit_properties(self, unit: str, names: Iterable[str]) -> dict[str, str]:
        """Unit properties over D-Bus, formatted like `systemctl show` (see format_property).

        Reading the unit's object path makes systemd load it on demand, so an unknown unit
        answers LoadState=not-found as with systemctl.
        """
        require_unit_name(unit)
        _, systemd1 = _pystemd()
        wanted = list(names)
        values: dict[bytes, Any] = {}
        try:
            with self.command_log.recording(DBUS, ["GetAll", unit]), self._bus() as bus:
                path = systemd1.Unit(unit.encode(), bus=bus).path
                values.update(self._get_all(bus, path, UNIT_IFACE))
                type_iface = b"org.freedesktop.systemd1." + unit.rsplit(".", 1)[1].title().encode()
                with contextlib.suppress(Exception):  # some types have no own interface
                    values.update(self._get_all(bus, path, type_iface))
        except TransportError:
            raise
        except Exception as exc:
            raise RemoteCommandFailed(["GetAll", unit], 1, str(exc)) from exc
        return {n: format_property(n, values[n.encode()]) for n in wanted if n.encode() in values}

    def daemon_reload(self) -> None:
        try:
            with self.command_log.recording(DBUS, ["Reload"]), self._bus() as bus:
                bus.call_method(SYSTEMD, MANAGER_PATH, MANAGER_IFACE, b"Reload", [])
        except TransportError:
            raise
        except Exception as exc:
            raise RemoteCommandFailed(["Reload"], 1, str(exc)) from exc

    def _job(self, method: bytes, unit: str, timeout: float | None = None) -> None:
        """Queue a start/stop/restart job and wait for its JobRemoved signal.

        Like `systemctl start`, success means the job's result is "done" (for Type=simple
        that is right after the fork).
        """
        require_unit_name(unit)
        dbuslib, _ = _pystemd()
        deadline = time.monotonic() + (self.command_timeout if timeout is None else timeout)
        results: dict[bytes, bytes] = {}

        def on_job_removed(msg: Any, error: Any = None, userdata: Any = None) -> None:
            msg.process_reply(False)
            _id, job_path, _unit, result = msg.body
            results[job_path] = result

        what = [method.decode(), unit, "replace"]
        try:
            with self.command_log.recording(DBUS, what), self._bus() as bus:
                # Subscribe and match before queueing, so the signal cannot be missed.
                bus.call_method(SYSTEMD, MANAGER_PATH, MANAGER_IFACE, b"Subscribe", [])
                bus.match_signal(
                    SYSTEMD, MANAGER_PATH, MANAGER_IFACE, b"JobRemoved", on_job_removed
                )
                args = dbuslib.apply_signature(b"ss", [unit.encode(), b"replace"])
                job = bus.call_method(SYSTEMD, MANAGER_PATH, MANAGER_IFACE, method, args).body
                while job not in results:
                    remaining = deadline - time.monotonic()
                    if remaining <= 0:
                        raise CommandTimeout(what, timeout or self.command_timeout)
                    while not bus.process().is_empty():
                        pass
                    if job not in results:
                        bus.wait(int(min(remaining, 1.0) * 1e6))
        except TransportError:
            raise
        except Exception as exc:  # pystemd DBusError: unit not found, access denied…
            raise RemoteCommandFailed(what, 1, str(exc)) from exc
        if results[job] != b"done":
            raise RemoteCommandFailed(
                what,
                1,
                f"job for {unit} finished with result '{results[job].decode()}' "
                f"(see the unit's journal)",
            )

    def start(self, unit: str) -> None:
        self._job(b"StartUnit", unit)

    def stop(self, unit: str) -> None:
        self._job(b"StopUnit", unit)

    def restart(self, unit: str) -> None:
        self._job(b"RestartUnit", unit)

    # -- GPUs via NVML -------------------------------------------------------------------
    def _nvml(self) -> Any:
        with self._lock:
            if self._nvml_module is None:
                try:
                    import pynvml  # noqa: PLC0415 (optional: only GPU hosts)
                except ImportError as exc:
                    raise GpuUnavailable(
                        "NVML bindings missing: install the package nvidia-ml-py (module pynvml)"
                    ) from exc
                self._nvml_module = pynvml
            nvml = self._nvml_module
            if not self._nvml_ready:
                try:
                    nvml.nvmlInit()
                except nvml.NVMLError as exc:
                    raise GpuUnavailable(
                        f"NVML cannot initialise ({exc}): no NVIDIA driver on this host?"
                    ) from exc
                self._nvml_ready = True
            return nvml

    def gpu_status(self) -> list[GpuInfo]:
        with self.command_log.recording(NVML, ["memory and compute processes of every GPU"]):
            return self._gpu_status()

    def _gpu_status(self) -> list[GpuInfo]:
        nvml = self._nvml()
        try:
            gpus = []
            for index in range(nvml.nvmlDeviceGetCount()):
                handle = nvml.nvmlDeviceGetHandleByIndex(index)
                uuid = _text(nvml.nvmlDeviceGetUUID(handle))
                mem = _memory_info(nvml, handle)
                procs = tuple(
                    GpuProcess(
                        pid=int(p.pid),
                        name=_process_name(nvml, int(p.pid)),
                        used_mib=None if p.usedGpuMemory is None else _mib(p.usedGpuMemory),
                        gpu_uuid=uuid,
                    )
                    for p in nvml.nvmlDeviceGetComputeRunningProcesses(handle)
                )
                gpus.append(
                    GpuInfo(
                        index=index,
                        name=_text(nvml.nvmlDeviceGetName(handle)),
                        uuid=uuid,
                        memory_used_mib=_mib(mem.used),
                        memory_total_mib=_mib(mem.total),
                        processes=procs,
                    )
                )
            return gpus
        except nvml.NVMLError as exc:
            raise GpuUnavailable(f"NVML query failed: {exc}") from exc


def _communicate(
    proc: subprocess.Popen[bytes],
    input: bytes | None,
    timeout: float,
    out: CappedBuffer,
    err: CappedBuffer,
) -> bool:
    """`Popen.communicate`, but each stream capped while it is read (communicate keeps
    everything); True when the deadline passed and the process group was killed."""
    threads = [
        threading.Thread(target=_pump, args=(proc.stdout, out), daemon=True),
        threading.Thread(target=_pump, args=(proc.stderr, err), daemon=True),
    ]
    if proc.stdin is not None:
        threads.append(threading.Thread(target=_feed, args=(proc.stdin, input), daemon=True))
    for thread in threads:
        thread.start()
    deadline = time.monotonic() + timeout
    timed_out = False
    try:
        proc.wait(timeout)
    except subprocess.TimeoutExpired:
        timed_out = True
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    for thread in threads[:2]:  # the output is complete once both pipes closed
        thread.join(max(0.0, deadline - time.monotonic()) + PIPE_GRACE_S)
    return timed_out


def _pump(pipe: IO[bytes] | None, into: CappedBuffer) -> None:
    if pipe is None:
        return
    with pipe:
        while chunk := os.read(pipe.fileno(), _CHUNK):
            into.feed(chunk)


def _feed(pipe: IO[bytes], data: bytes | None) -> None:
    # OSError: the command exited without reading all of it.
    with contextlib.suppress(OSError), pipe:
        if data:
            pipe.write(data)


def _refuse_unless_regular(path: str, st: os.stat_result, limit: int, partial: bool) -> None:
    problem = regular_file_problem(st.st_mode, st.st_size, limit, partial)
    if problem:
        raise FileRefused(path, problem, size=st.st_size)


def _read_at_most(fd: int, count: int) -> bytes:
    parts: list[bytes] = []
    left = count
    while left > 0:
        chunk = os.read(fd, min(left, _CHUNK))
        if not chunk:
            break
        parts.append(chunk)
        left -= len(chunk)
    return b"".join(parts)


def _digest(path: str) -> tuple[int, str]:
    """Size and sha256 of a file as the disk serves it now (the write, read back)."""
    digest = hashlib.sha256()
    size = 0
    with open(path, "rb") as f:
        if not stat_mode.S_ISREG(os.fstat(f.fileno()).st_mode):
            raise OSError(errno.EINVAL, "not a regular file")
        while chunk := f.read(_CHUNK):
            digest.update(chunk)
            size += len(chunk)
    return size, digest.hexdigest()


def _write_error(path: str, exc: OSError) -> WriteFailed:
    if exc.errno in (errno.ENOSPC, errno.EDQUOT):
        return DiskFull(path, f"disk full: {os.path.dirname(path)}: {exc.strerror}")
    return WriteFailed(path, str(exc))


def _memory_info(nvml: Any, handle: Any) -> Any:
    """Memory info v2 where available: its `used` excludes driver-reserved memory, as
    `nvidia-smi --query-gpu=memory.used` does. v1 counts the reserved part as used (seen on
    an H200, driver 570: v1 2165 MiB vs nvidia-smi 1551 MiB with one 1.5 GiB process), which
    would make the two transports disagree about a "clean" GPU.
    """
    version = getattr(nvml, "nvmlMemory_v2", None)
    if version is not None:
        try:
            return nvml.nvmlDeviceGetMemoryInfo(handle, version=version)
        except (TypeError, nvml.NVMLError):
            pass  # old bindings or driver (NVML_ERROR_FUNCTION_NOT_FOUND): fall back to v1
    return nvml.nvmlDeviceGetMemoryInfo(handle)


def _mib(n_bytes: int) -> int:
    """Bytes to MiB rounded up, as nvidia-smi prints them (H200: 1562.81 MiB used -> 1563,
    615.06 MiB reserved -> 616), so NVML and nvidia-smi readings compare equal."""
    return -(-int(n_bytes) // MIB)


def _text(value: str | bytes) -> str:
    return value.decode(errors="replace") if isinstance(value, bytes) else str(value)


def _process_name(nvml: Any, pid: int) -> str:
    """NVML's name for the process (its executable path), else argv[0] from /proc."""
    try:
        return _text(nvml.nvmlSystemGetProcessName(pid))
    except Exception:
        pass
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().split(b"\0", 1)[0].decode(errors="replace") or "[Not Found]"
    except OSError:
        return "[Not Found]"


__all__ = ["LocalTransport", "format_property"]
