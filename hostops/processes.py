"""Processes on a host, read and signalled through a transport (SSH or local).

Stdlib only, and no Django: the GPU clean-up (`hostops.gpu_clean`) runs these on real
GPU machines without the web application. Facts come from /proc (proc(5)) with small
constant shell scripts that take the PIDs as arguments (argv, never a built string):
- `/proc/PID/stat`: state (field 3) and start time (field 22, clock ticks since boot; a
  PID that was reused has another one), read after the last ")" since the command name
  may contain anything;
- `/proc/PID/status`: PPid and the real Uid;
- `/proc/PID/cgroup`: the unit a process belongs to (cgroup v2 line "0::/system.slice/x";
  on v1 the "name=systemd" line);
- `/proc/PID/cmdline`: argv, which setproctitle rewrites (vLLM's `VLLM::EngineCore`).
A zombie ("Z") has released its GPU memory already and counts as gone.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from hostops.channel.base import Transport
from hostops.channel.errors import CommandTimeout, RemoteCommandFailed
from hostops.programs import program

# The programs (hostops/programs/, each says what it prints).
_INFO_SCRIPT = program("proc_info.sh")
_WAIT_GONE_SCRIPT = program("wait_gone.sh")
_TABLE_SCRIPT = program("proc_table.sh")
_CGROUP_PROCS_SCRIPT = program("cgroup_procs.sh")
_SIGNAL_SCRIPT = program("send_signal.sh")
SIGNALS = ("TERM", "KILL")


@dataclass(frozen=True)
class ProcessInfo:
    pid: int
    ppid: int
    uid: int
    user: str
    start_ticks: int  # /proc/PID/stat field 22: tells a reused PID apart
    state: str
    comm: str
    cgroup: str  # "/system.slice/vllm-a.service", "/init.scope", "/" …
    cmdline: str

    @property
    def title(self) -> str:
        """What `ps` shows: argv (rewritten by setproctitle), else the kernel's name."""
        return self.cmdline.strip() or self.comm

    @property
    def name(self) -> str:
        """The program's short name: argv[0]'s base name ("python3", "VLLM::EngineCore")."""
        first = self.title.split(" ", 1)[0]
        return first.rsplit("/", 1)[-1] or self.comm

    @property
    def key(self) -> tuple[int, int]:
        return (self.pid, self.start_ticks)


def _int(text: str, default: int = -1) -> int:
    try:
        return int(text)
    except ValueError:
        return default


def read_processes(transport: Transport, pids: Iterable[int]) -> dict[int, ProcessInfo]:
    """Facts about the PIDs that are alive (zombies included, with state "Z")."""
    pids = sorted({int(p) for p in pids if int(p) > 0})
    if not pids:
        return {}
    result = transport.run(["sh", "-c", _INFO_SCRIPT, "sh", *map(str, pids)], timeout=30)
    if result.exit_code != 0 and not result.stdout:
        raise RemoteCommandFailed(["sh", "-c", "<read /proc>"], result.exit_code, result.stderr)
    infos: dict[int, ProcessInfo] = {}
    for line in result.stdout_text.splitlines():
        parts = line.split("\t", 8)
        if len(parts) != 9:
            continue
        pid, ppid, uid, user, start, state, comm, cgroup, cmdline = parts
        info = ProcessInfo(
            pid=_int(pid),
            ppid=_int(ppid),
            uid=_int(uid),
            user=user,
            start_ticks=_int(start),
            state=state,
            comm=comm,
            cgroup=cgroup or "/",
            cmdline=cmdline.strip(),
        )
        infos[info.pid] = info
    return infos


def process_table(transport: Transport) -> dict[int, int]:
    """pid → ppid of every process on the host."""
    argv = ["sh", "-c", _TABLE_SCRIPT]
    result = transport.run(argv, timeout=30).check(argv)
    table: dict[int, int] = {}
    for line in result.stdout_text.splitlines():
        parts = line.split()
        if len(parts) == 2:
            table[_int(parts[0])] = _int(parts[1])
    return table


def descendants(table: dict[int, int], roots: Iterable[int]) -> set[int]:
    """The roots and every process whose parent chain reaches one of them."""
    children: dict[int, list[int]] = {}
    for pid, ppid in table.items():
        children.setdefault(ppid, []).append(pid)
    found: set[int] = set()
    todo = [r for r in roots if r > 0]
    while todo:
        pid = todo.pop()
        if pid in found:
            continue
        found.add(pid)
        todo.extend(children.get(pid, ()))
    return found


def cgroup_members(transport: Transport, cgroup: str) -> set[int]:
    """Every PID in a cgroup and its sub-cgroups (cgroup v2 under /sys/fs/cgroup; on v1
    the systemd hierarchy)."""
    if not cgroup or cgroup == "/" or ".." in cgroup.split("/"):
        return set()
    result = transport.run(["sh", "-c", _CGROUP_PROCS_SCRIPT, "sh", cgroup], timeout=30)
    return {_int(p) for p in result.stdout_text.split() if p.isdigit()}


def send_signal(transport: Transport, pids: Sequence[int], signal: str) -> dict[int, bool]:
    """`kill -SIGNAL` each PID; PID → whether it was delivered (False: already gone)."""
    if signal not in SIGNALS:
        raise ValueError(f"unsupported signal {signal!r}")
    argv = ["sh", "-c", _SIGNAL_SCRIPT, "sh", signal, *map(str, pids)]
    result = transport.run(argv, timeout=30)
    delivered = {_int(p) for p in result.stdout_text.split()}
    return {pid: pid in delivered for pid in pids}


def wait_gone(transport: Transport, pids: Sequence[int], timeout: float) -> bool:
    """Wait until none of the PIDs is alive (True), or `timeout` passes (False)."""
    if not pids:
        return True
    if timeout <= 0:
        return not alive(transport, pids)
    try:
        result = transport.run(
            ["sh", "-c", _WAIT_GONE_SCRIPT, "sh", *map(str, pids)], timeout=timeout
        )
    except CommandTimeout:
        return False
    return result.exit_code == 0


def alive(transport: Transport, pids: Sequence[int]) -> list[int]:
    """The PIDs that are alive and not zombies."""
    infos = read_processes(transport, pids).values()
    return [p.pid for p in infos if p.state not in ("Z", "X")]


__all__ = [
    "ProcessInfo",
    "alive",
    "cgroup_members",
    "descendants",
    "process_table",
    "read_processes",
    "send_signal",
    "wait_gone",
]
