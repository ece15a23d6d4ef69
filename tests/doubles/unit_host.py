"""A GPU host's unit directory and systemd's view of it, in memory, behind the Transport
interface; and doubles of the service's own steps (stop, GPU-clean, start, journal check,
readiness, benchmark) that do on it what a test scripts.

For tests of what the pipeline *records* (which text is on the host, which job wrote or
read it), fast and deterministic: the real preflight, push, daemon-reload, restore and
remove steps run against `UnitHostTransport`; the service steps, which need a real
systemd, GPUs and a vLLM (tests/deploys/test_pipeline.py runs those on a test host), are
replaced by `service_step_doubles(script)`. Never imported by product code.
"""

from __future__ import annotations

import dataclasses
import posixpath
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

from deploys.jobs.context import JobContext
from deploys.jobs.flow import Step
from deploys.jobs.recorder import Recorder
from deploys.jobs.results import Started, Stopped, Watched
from deploys.jobs.steps import StepResult
from hostops.channel.base import TEMP_INFIX, CommandResult, GpuInfo, StagedFile, Transport
from hostops.channel.push import DEFAULT_UNIT_DIR, sha256_hex
from hostops.gpu_clean import ServiceIdentity


@dataclass
class UnitHost:
    """Files by absolute path; per unit, the text systemd loaded at the last daemon-reload
    and whether it runs."""

    files: dict[str, bytes] = field(default_factory=dict)
    loaded: dict[str, bytes] = field(default_factory=dict)
    active: set[str] = field(default_factory=set)
    unit_dir: str = DEFAULT_UNIT_DIR

    def path(self, unit: str) -> str:
        return posixpath.join(self.unit_dir, unit)

    def unit_file(self, unit_name: str) -> bytes | None:
        return self.files.get(self.path(f"{unit_name}.service"))

    def reload(self) -> None:
        self.loaded = {
            posixpath.basename(p): data
            for p, data in self.files.items()
            if posixpath.dirname(p) == self.unit_dir and p.endswith(".service")
        }


class UnitHostTransport(Transport):
    """`UnitHost` reached as a host: files, `systemctl` start/stop/disable, `systemctl
    show`'s load state, daemon-reload, `sha256sum` (the probe), no GPUs."""

    def __init__(self, host: UnitHost) -> None:
        self.host = host

    def __repr__(self) -> str:
        return "UnitHostTransport()"

    def close(self) -> None:
        pass

    def _read_file(self, path: str, limit: int, partial: bool) -> bytes | None:
        data = self.host.files.get(path)
        return None if data is None else data[:limit] if partial else data

    def _stage_file(self, path: str, data: bytes, mode: int) -> StagedFile:
        directory, name = posixpath.split(path)
        temp = posixpath.join(directory, f".{name}{TEMP_INFIX}double")
        self.host.files[temp] = bytes(data)
        return StagedFile(path, temp, len(data), sha256_hex(data))

    def _commit_file(self, staged: StagedFile) -> None:
        self.host.files[staged.path] = self.host.files.pop(staged.temp)

    def _remove_file(self, path: str) -> bool:
        return self.host.files.pop(path, None) is not None

    def _run(
        self, argv: Sequence[str], *, timeout: float | None = None, input: bytes | None = None
    ) -> CommandResult:
        words = [str(w) for w in argv]
        if words[0] == "find":  # remove_stale_temp_files, the probe's marked units: none
            return CommandResult(0, b"", b"", 0.0)
        if words[0] == "systemctl":
            return self._systemctl([w for w in words[1:] if not w.startswith("--")])
        if words[0] == "sha256sum":
            return self._sha256sum(words[2:])
        return CommandResult(127, b"", f"{words[0]}: command not found\n".encode(), 0.0)

    def _systemctl(self, args: list[str]) -> CommandResult:
        if not args:  # `systemctl --version` (the probe)
            return CommandResult(0, b"systemd 252 (252.39-1~deb12u1)\n", b"", 0.0)
        verb, units = args[0], args[1:]
        for unit in units:
            if verb == "start":
                if unit not in self.host.loaded:
                    return CommandResult(5, b"", f"Unit {unit} not found.\n".encode(), 0.0)
                self.host.active.add(unit)
            elif verb in ("stop", "disable"):
                self.host.active.discard(unit)
        return CommandResult(0, b"", b"", 0.0)

    def _sha256sum(self, paths: Iterable[str]) -> CommandResult:
        out, err = [], []
        for path in paths:
            data = self.host.files.get(path)
            if data is None:
                err.append(f"sha256sum: {path}: No such file or directory")
            else:
                out.append(f"{sha256_hex(data)}  {path}")
        code = 1 if err else 0
        return CommandResult(code, "\n".join(out).encode(), "\n".join(err).encode(), 0.0)

    def daemon_reload(self) -> None:
        self.host.reload()

    def unit_properties(self, unit: str, names: Iterable[str]) -> dict[str, str]:
        path = self.host.path(unit)
        loaded = unit in self.host.loaded
        active = unit in self.host.active
        props = {
            "LoadState": "loaded" if loaded else "not-found",
            "FragmentPath": path if loaded else "",
            "NeedDaemonReload": "no"
            if self.host.loaded.get(unit) == self.host.files.get(path)
            else "yes",
            "LoadError": "",
            "ActiveState": "active" if active else "inactive",
            "SubState": "running" if active else "dead",
        }
        return {n: props[n] for n in names if n in props}

    def gpu_status(self) -> list[GpuInfo]:
        return []


@dataclass
class Script:
    """What the doubled service steps do in the next job.

    `fault`: "" (all goes well), "crash" (the service dies while loading: readiness fails
    and asks for a rollback), "regress" (the benchmark says slower than the baseline),
    "cancel" (someone cancels the job during `cancel_at`; `on_cancel` asks for it the way
    the page does). A rollback's own steps always succeed.
    """

    fault: str = ""
    cancel_at: str = "readiness"
    on_cancel: object = None

    def take(self) -> tuple[str, str]:
        fault, at = self.fault, self.cancel_at
        self.fault = ""
        return fault, at


class _ServiceDoubles:
    """The doubled service steps of one script; each job takes the script's fault once.
    Each double keeps the real step's name, needs, result type and guards (the rollback's
    "left stopped" and "unit removed" skips), so the pipeline's data flow is the real one.

    A scripted cancel is asked for while the step named `cancel_at` runs, whichever step
    that is: a step that waits (`WAITS`) returns early, as the real one does when it sees
    the cancel; any other (a real one too: preflight, push, daemon-reload) runs to its end,
    and the runner sees the cancel at the next step boundary."""

    def __init__(self, script: Script) -> None:
        self.script = script
        self.job: int | None = None
        self.fault = ""
        self.cancel_at = ""

    def step(self, real: Step) -> Step:
        body = getattr(self, real.name, None)

        def run(ctx: JobContext, rec: Recorder, *needs: object) -> StepResult:
            if self.job != ctx.request.pk:
                self.job = ctx.request.pk
                self.fault, self.cancel_at = self.script.take()
            if self._cancelled_here(ctx, real.name) and real.name in WAITS:
                return StepResult.cancelled(f"cancelled during {real.name}")
            result: StepResult = body(ctx, rec) if body else real.run(ctx, rec, *needs)
            return result

        run.__name__ = real.name
        return dataclasses.replace(real, run=run)

    def _cancelled_here(self, ctx: JobContext, name: str) -> bool:
        if ctx.phase != "main" or self.fault != "cancel" or self.cancel_at != name:
            return False
        if callable(self.script.on_cancel):
            self.script.on_cancel(ctx.request)
        return True

    def vllm_check(self, ctx: JobContext, rec: Recorder) -> StepResult:
        return StepResult.skipped("the double has no vLLM to ask")

    def stop(self, ctx: JobContext, rec: Recorder) -> StepResult:
        rec.provide(Stopped(ServiceIdentity(unit=ctx.unit)))
        ctx.transport.systemctl("stop", "--", ctx.unit, check=False)
        return StepResult.success(active_state="inactive")

    def gpu_clean(self, ctx: JobContext, rec: Recorder) -> StepResult:
        return StepResult.success(clean=True)

    def start(self, ctx: JobContext, rec: Recorder) -> StepResult:
        rec.provide(Started(cursor="", started_at=time.monotonic(), restarts=0))
        ctx.transport.systemctl("start", "--", ctx.unit, check=False)
        return StepResult.success()

    def journal_check(self, ctx: JobContext, rec: Recorder) -> StepResult:
        rec.provide(Watched(cursor="", journal_lines=(), healthy=False))
        return StepResult.success(fatal=[])

    def readiness(self, ctx: JobContext, rec: Recorder) -> StepResult:
        if ctx.phase == "main" and self.fault == "crash":
            rec.provide(Watched(cursor="", journal_lines=(), healthy=False))
            ctx.transport.systemctl("stop", "--", ctx.unit, check=False)
            return StepResult.failed(
                f"{ctx.unit} exited while loading the model (status 1)", rollback=True
            )
        rec.provide(Watched(cursor="", journal_lines=(), healthy=True))
        return StepResult.success(ready=True)

    def benchmark(self, ctx: JobContext, rec: Recorder) -> StepResult:
        if self.fault == "regress":
            return StepResult.regressed("14.8% slower than the baseline", output_tok_s=61.2)
        return StepResult.skipped("no baseline on this host yet")


# The service steps whose real versions wait and return early on a cancel.
WAITS = frozenset({"gpu_clean", "journal_check", "readiness", "benchmark"})
SERVICE_STEPS = (
    "vllm_check",
    "stop",
    "gpu_clean",
    "start",
    "journal_check",
    "readiness",
    "benchmark",
)


def service_step_doubles(script: Script) -> Callable[[Step], Step]:
    """Replaces a service step (`deploys.jobs.pipelines` names) by its double; any other
    step runs as it is (where the script may ask for a cancel while it runs)."""
    doubles = _ServiceDoubles(script)
    return doubles.step


def with_doubles(steps: Iterable[Step], doubles: Callable[[Step], Step]) -> tuple[Step, ...]:
    """A pipeline with its service steps replaced by name; the others are the real ones."""
    return tuple(doubles(s) for s in steps)


__all__ = [
    "SERVICE_STEPS",
    "WAITS",
    "Script",
    "UnitHost",
    "UnitHostTransport",
    "service_step_doubles",
    "with_doubles",
]
