"""TEST DOUBLE: a GPU host as the watchdog reads it, in memory, behind the Transport
interface — units (`systemctl show`), unit files, /metrics (answered to the readiness
step's curl argv), GPUs with their processes and /proc facts; `latency_s` per operation
(an SSH round trip) and `down` (every operation fails). For the watchdog's tests and
`benchmarks/watchdog_scale.py`. Never imported by product code.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from hostops.channel.base import CommandResult, GpuInfo, GpuProcess, StagedFile, Transport
from hostops.channel.errors import GpuUnavailable, HostUnreachable
from hostops.processes import ProcessInfo

UNIT_DIR = "/etc/systemd/system"


@dataclass
class FakeUnit:
    active: str = "active"
    sub: str = "running"
    result: str = "success"
    restarts: int = 0
    main_pid: int = 1000
    user: str = "vllm"
    environment: str = ""
    loaded: bool = True


@dataclass
class FakeServer:
    """The counters a vLLM server's /metrics shows."""

    running: float = 0
    waiting: float = 0
    generated: float = 0
    draft_tokens: float | None = None
    accepted: float | None = None
    status: int = 200
    health: int = 200
    canary: str = "ok"  # the one-token request: "ok", "timeout" (no token), "error" (HTTP 500)
    canaries: int = 0  # how many were asked

    def text(self) -> str:
        lines = [
            "# TYPE vllm:num_requests_running gauge",
            f'vllm:num_requests_running{{engine="0",model_name="m"}} {self.running}',
            f'vllm:num_requests_waiting{{engine="0",model_name="m"}} {self.waiting}',
            "# TYPE vllm:generation_tokens_total counter",
            f'vllm:generation_tokens_total{{engine="0",model_name="m"}} {self.generated}',
        ]
        if self.draft_tokens is not None:
            lines += [
                f'vllm:spec_decode_num_draft_tokens_total{{engine="0"}} {self.draft_tokens}',
                f'vllm:spec_decode_num_accepted_tokens_total{{engine="0"}} {self.accepted}',
            ]
        return "\n".join(lines) + "\n"


@dataclass
class FakeHost:
    units: dict[str, FakeUnit] = field(default_factory=dict)
    files: dict[str, bytes] = field(default_factory=dict)
    servers: dict[int, FakeServer] = field(default_factory=dict)  # by port
    gpus: list[GpuInfo] = field(default_factory=list)
    procs: dict[int, ProcessInfo] = field(default_factory=dict)
    latency_s: float = 0.0
    down: bool = False
    gpu_error: str = ""
    journal: dict[str, list[str]] = field(default_factory=dict)  # unit → messages
    calls: int = 0

    def write_unit(self, name: str, text: str) -> None:
        self.files[f"{UNIT_DIR}/{name}.service"] = text.encode()

    def hold_gpu(self, pid: int, gpu: int, mib: int, info: ProcessInfo) -> None:
        """Put process `pid` on GPU `gpu` with `mib` of memory."""
        if not self.gpus:
            self.free_gpus()
        g = self.gpus[gpu]
        self.gpus[gpu] = GpuInfo(
            g.index,
            g.name,
            g.uuid,
            g.memory_used_mib + mib,
            g.memory_total_mib,
            (*g.processes, GpuProcess(pid, info.comm, mib, g.uuid)),
        )
        self.procs[pid] = info

    def free_gpus(self, count: int = 8) -> None:
        """Every GPU empty (8 H200s when there were none)."""
        self.gpus = [GpuInfo(i, "NVIDIA H200", f"GPU-{i}", 0, 143771) for i in range(count)]
        self.procs.clear()


def proc(
    pid: int, *, user: str = "vllm", cgroup: str = "/", title: str = "VLLM::EngineCore"
) -> ProcessInfo:
    return ProcessInfo(pid, 1, 999, user, pid * 10, "S", title[:15], cgroup, title)


class FakeHostTransport(Transport):
    def __init__(self, host: FakeHost) -> None:
        self.host = host

    def __repr__(self) -> str:
        return "FakeHostTransport()"

    def close(self) -> None:
        pass

    def _tick(self) -> None:
        self.host.calls += 1
        if self.host.down:
            raise HostUnreachable("cannot connect to the fake host: it is down")
        if self.host.latency_s:
            time.sleep(self.host.latency_s)

    def unit_properties(self, unit: str, names: Iterable[str]) -> dict[str, str]:
        self._tick()
        u = self.host.units.get(unit.removesuffix(".service"))
        if u is None or not u.loaded:
            props = {"LoadState": "not-found", "ActiveState": "inactive", "SubState": "dead"}
        else:
            props = {
                "LoadState": "loaded",
                "ActiveState": u.active,
                "SubState": u.sub,
                "Result": u.result,
                "NRestarts": str(u.restarts),
                "MainPID": str(u.main_pid if u.active == "active" else 0),
                "ControlGroup": f"/system.slice/{unit}" if u.active == "active" else "",
                "User": u.user,
                "Environment": u.environment,
                # systemd lists the drop-ins it loaded; the fake loads every one at once.
                "DropInPaths": " ".join(
                    sorted(p for p in self.host.files if p.startswith(f"{UNIT_DIR}/{unit}.d/"))
                ),
            }
        return {n: props[n] for n in names if n in props}

    def _read_file(self, path: str, limit: int, partial: bool) -> bytes | None:
        self._tick()
        return self.host.files.get(path)

    def _run(
        self, argv: Sequence[str], *, timeout: float | None = None, input: bytes | None = None
    ) -> CommandResult:
        self._tick()
        words = [str(w) for w in argv]
        if words[0] == "curl":
            url = words[-1]
            port = int(url.split(":")[2].split("/")[0])
            server = self.host.servers.get(port)
            if server is None:
                return CommandResult(7, b"\n000", b"curl: (7) Failed to connect", 0.0)
            if url.endswith("/health"):
                return CommandResult(0, f"\n{server.health}".encode(), b"", 0.0)
            if url.endswith("/v1/completions"):
                server.canaries += 1
                if server.canary == "timeout":
                    return CommandResult(28, b"\n000", b"curl: (28) Operation timed out", 0.0)
                if server.canary == "error":
                    return CommandResult(0, b'{"message": "EngineCore died"}\n500', b"", 0.0)
                return CommandResult(0, b'{"choices": [{"text": "x"}]}\n200', b"", 0.0)
            body = server.text() if server.status == 200 else "error"
            return CommandResult(0, f"{body}\n{server.status}".encode(), b"", 0.0)
        if words[0] == "journalctl":
            unit = words[words.index("-u") + 1].removesuffix(".service")
            lines = int(words[words.index("-n") + 1]) if "-n" in words else 200
            messages = self.host.journal.get(unit, [])[-lines:]
            out = "".join(
                json.dumps({"__CURSOR": f"c{i}", "__REALTIME_TIMESTAMP": str(i), "MESSAGE": m})
                + "\n"
                for i, m in enumerate(messages)
            )
            return CommandResult(0, out.encode(), b"", 0.0)
        if words[0] == "find":  # the drop-in directories: `find DIR… -maxdepth 1 -name *.conf`
            dirs = [w for w in words[1:] if w.startswith("/")]
            out = "".join(
                f"{p}\n"
                for p in sorted(self.host.files)
                if p.rsplit("/", 1)[0] in dirs and p.endswith(".conf")
            )
            return CommandResult(1 if out == "" else 0, out.encode(), b"", 0.0)
        if words[:2] == ["sh", "-c"] and "/proc/$p/stat" in words[2]:
            out = "".join(
                f"{i.pid}\t{i.ppid}\t{i.uid}\t{i.user}\t{i.start_ticks}\t{i.state}\t{i.comm}"
                f"\t{i.cgroup}\t{i.cmdline}\n"
                for pid in words[4:]
                if (i := self.host.procs.get(int(pid)))
            )
            return CommandResult(0, out.encode(), b"", 0.0)
        return CommandResult(127, b"", f"{words[0]}: command not found\n".encode(), 0.0)

    def gpu_status(self) -> list[GpuInfo]:
        self._tick()
        if self.host.gpu_error:
            raise GpuUnavailable(self.host.gpu_error)
        return list(self.host.gpus)

    def _stage_file(self, path: str, data: bytes, mode: int) -> StagedFile:
        raise NotImplementedError("the watchdog never writes")

    def _commit_file(self, staged: StagedFile) -> None:
        raise NotImplementedError("the watchdog never writes")

    def _remove_file(self, path: str) -> bool:
        raise NotImplementedError("the watchdog never writes")
