"""The benchmark client on the host itself, as the unit's user (docs/benchmarks.md,
"Where the client runs").

Measured from the worker, a server on an SSH host is reached over the network or through
an SSH port forward, and the path adds to TTFT (+67% at 32 streams through the forward,
benchmarks/forward_overhead.py). servebench needs only Python and aiohttp, which every
vLLM install has (vLLM's own OpenAI server and `vllm bench serve` import it). So, on an
SSH host:

1. the Python that runs the service (`hostops.vllm_check.python_for`) and whom to run
   it as (`hostops.run_as.plan_run_as`: the unit's `User=` through `setpriv`, never
   root with code the service account controls);
2. a private temp dir (`mktemp -d`, mode 0755, owned by the login user, so the unit's user
   reads but cannot change it), the servebench package sent as one tar archive on the
   command's stdin (bounded: a few hundred KB), every file's sha256 read back on the host
   and compared with what was sent (nothing more, nothing less);
3. a probe: `python -I DIR/servebench/remote.py --probe` (servebench's own entry point for
   this; isolated mode: no PYTHON* variable, no user site) imports servebench and aiohttp;
4. one command per concurrency level and repeat (the job's cancel is seen between them,
   and the step shows progress): the settings, API key included, go on stdin (never in an
   argv the command log keeps); the result comes back on stdout, capped by the transport
   (`bounds.MAX_STDOUT_BYTES`), and is checked by `servebench.schema.validate_result`
   before anything reads it;
5. the temp dir is removed afterwards, whatever happened.

Where any of 1–3 cannot be done, `NotOnHost` says why and the caller measures from the
worker instead (`perf.reach`), recording the reason.
"""

from __future__ import annotations

import contextlib
import io
import json
import re
import tarfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import servebench
from hostops.channel.base import Transport, sha256_hex
from hostops.channel.bounds import clip_json
from hostops.channel.errors import CommandTimeout, TransportError
from hostops.run_as import plan_run_as
from hostops.service import VllmService
from hostops.vllm_check import python_for
from servebench.prompts import BUILTIN_SETS
from servebench.runner import CANCELLED, BenchError, Progress, RunSettings
from servebench.schema import BenchResult, LevelResult, validate_result

MARKER = "@@specadmin-servebench "
TEMP_PREFIX = "/tmp/specadmin-servebench."
_TEMP_DIR = re.compile(r"/tmp/specadmin-servebench\.[A-Za-z0-9]{10}")
SETUP_TIMEOUT_S = 60.0
# One level of one repeat: 32 requests × 256 tokens at 10 tok/s per stream is ~14 min.
LEVEL_TIMEOUT_S = 1800.0
SOURCE = Path(servebench.__file__).resolve().parent

REMOTE = "servebench/remote.py"  # servebench's own entry point for this, in the temp dir

ProgressFn = Callable[[Progress], None]
CancelFn = Callable[[], bool]


class NotOnHost(Exception):
    """The client cannot run on the host; the message says why (recorded with the run)."""


def package_files() -> dict[str, bytes]:
    """servebench's modules by their path in the temp dir (`servebench/runner.py`)."""
    return {f"servebench/{p.name}": p.read_bytes() for p in sorted(SOURCE.glob("*.py"))}


def package_archive(files: dict[str, bytes]) -> bytes:
    """The files as a gzipped tar: directories 0755, files 0644, owned by nobody in
    particular (`tar --no-same-owner` makes them the login user's)."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        folders = sorted({name.rsplit("/", 1)[0] for name in files if "/" in name})
        for folder in folders:
            info = tarfile.TarInfo(folder)
            info.type, info.mode = tarfile.DIRTYPE, 0o755
            archive.addfile(info)
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size, info.mode = len(data), 0o644
            archive.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


@dataclass
class OnHostClient:
    """servebench installed in `directory` on the host, run by `python` as `user`."""

    transport: Transport
    python: str
    prefix: tuple[str, ...]
    user: str
    directory: str
    versions: str  # "Python 3.11.2, aiohttp 3.8.4"

    def _argv(self, *extra: str) -> list[str]:
        script = f"{self.directory}/{REMOTE}"
        return [*self.prefix, self.python, "-I", script, *extra]

    def _answer(self, argv: list[str], *, stdin: bytes | None, timeout: float) -> dict[str, Any]:
        try:
            done = self.transport.run(argv, input=stdin, timeout=timeout)
        except CommandTimeout:
            why = f"the client on the host did not finish within {timeout:g} s"
            raise BenchError(why) from None
        if not done.stdout_complete:
            raise BenchError(
                f"the client's result on the host was larger than the {len(done.stdout):,} "
                "bytes specadmin reads: measure fewer requests or levels"
            )
        lines = [ln for ln in done.stdout_text.splitlines() if ln.startswith(MARKER)]
        try:
            answer = json.loads(lines[-1][len(MARKER) :]) if lines else None
        except ValueError:
            answer = None
        if not isinstance(answer, dict):
            tail = (done.stderr_text or done.stdout_text).strip()[-600:]
            raise BenchError(f"the client on the host exited {done.exit_code}: {tail}")
        return answer

    def probe(self) -> None:
        answer = self._answer(self._argv("--probe"), stdin=None, timeout=SETUP_TIMEOUT_S)
        if answer.get("ok") is not True:
            why = str(answer.get("error", "the probe gave no answer"))[:600]
            raise NotOnHost(f"{self.python} {why}")
        python, aiohttp = str(answer.get("python"))[:20], str(answer.get("aiohttp"))[:20]
        self.versions = f"Python {python}, aiohttp {aiohttp}"

    def level(self, settings: RunSettings) -> BenchResult:
        """One run of `settings` on the host (BenchError: it could not start)."""
        payload = settings.to_dict() | {"api_key": settings.api_key}
        stdin = json.dumps(payload).encode()
        answer = self._answer(self._argv(), stdin=stdin, timeout=LEVEL_TIMEOUT_S)
        if answer.get("ok") is not True:
            raise BenchError(str(answer.get("error") or "no result")[:2000])
        try:
            return validate_result(clip_json(answer.get("result")))
        except ValueError as exc:
            why = f"the result from the host is not a servebench result: {exc}"
            raise BenchError(why) from None

    def measure(
        self,
        settings: RunSettings,
        progress: ProgressFn | None = None,
        cancel_requested: CancelFn | None = None,
    ) -> BenchResult:
        """Every repeat of every level, one command each (module doc, step 4): the same
        result `servebench.runner.run_sync` gives, warm-up before the first level only."""
        if settings.prompts not in BUILTIN_SETS:
            # A path would be read on the host, as the unit's user: never from stored data.
            raise BenchError(
                f"the client on the host sends only the built-in prompt sets "
                f"({', '.join(BUILTIN_SETS)}), not the file {settings.prompts!r}"
            )
        levels: list[LevelResult] = []
        first: BenchResult | None = None
        error = ""
        plan = [(r, c) for r in range(settings.repeats) for c in settings.concurrency]
        for index, (repeat, concurrency) in enumerate(plan):
            if cancel_requested is not None and cancel_requested():
                error = CANCELLED
                break
            warmup = 0 if index else settings.warmup
            one = replace(settings, concurrency=[concurrency], repeats=1, warmup=warmup)
            try:
                part = self.level(one)
            except BenchError as exc:
                if first is None:
                    raise
                error = str(exc)
                break
            first = first or part
            for level in part.levels:
                levels.append(replace(level, repeat=repeat))
            error = part.error
            if progress is not None:
                progress(_progress(settings, repeat, concurrency, levels[-1] if levels else None))
            if error:
                break
        assert first is not None  # the plan has at least one level (RunSettings checks)
        return BenchResult(
            engine=first.engine,
            settings=settings.to_dict() | {"ignore_eos": first.settings.get("ignore_eos", True)},
            levels=levels,
            started_at=first.started_at,
            model=first.model,
            incomplete=bool(error) or any(lv.incomplete for lv in levels),
            error=error,
        )


def _progress(
    settings: RunSettings, repeat: int, concurrency: int | None, level: LevelResult | None
) -> Progress:
    done = level.completed + level.failed if level else 0
    return Progress(
        repeat=repeat,
        repeats=settings.repeats,
        level_index=settings.concurrency.index(concurrency),
        levels=len(settings.concurrency),
        concurrency=concurrency,
        done=done,
        failed=level.failed if level else 0,
        total=settings.num_requests,
        elapsed_s=level.duration_s if level else 0.0,
        duration_s=settings.duration_s,
    )


def _make_dir(transport: Transport) -> str:
    made = transport.run(["mktemp", "-d", TEMP_PREFIX + "XXXXXXXXXX"], timeout=SETUP_TIMEOUT_S)
    directory = made.stdout_text.strip()
    if not made.ok or not _TEMP_DIR.fullmatch(directory):
        raise NotOnHost(f"mktemp -d on the host failed: {made.stderr_text.strip()[:300]}")
    return directory


def _install(transport: Transport, directory: str) -> None:
    """The package in `directory`, checked file by file (module doc, step 2)."""
    files = package_files()
    chmod = transport.run(["chmod", "0755", "--", directory], timeout=SETUP_TIMEOUT_S)
    unpack = transport.run(
        ["tar", "-x", "-z", "-f", "-", "--no-same-owner", "-C", directory],
        input=package_archive(files),
        timeout=SETUP_TIMEOUT_S,
    )
    if not chmod.ok or not unpack.ok:
        why = (chmod.stderr_text + unpack.stderr_text).strip()[:300]
        raise NotOnHost(f"could not unpack servebench into {directory}: {why}")
    listed = transport.run(
        ["find", directory, "-type", "f", "-exec", "sha256sum", "--", "{}", "+"],
        timeout=SETUP_TIMEOUT_S,
    )
    found = {}
    for line in listed.stdout_text.splitlines():
        digest, _, path = line.partition("  ")
        found[path.removeprefix(directory + "/")] = digest
    expected = {name: sha256_hex(data) for name, data in files.items()}
    if not listed.ok or found != expected:
        differ = sorted(set(found.items()) ^ set(expected.items()))[:3]
        raise NotOnHost(f"the copy of servebench on the host is not what was sent: {differ}")


def _remove(transport: Transport, directory: str) -> None:
    if _TEMP_DIR.fullmatch(directory):  # never anything else
        # where the host is gone, /tmp is cleaned at its next boot
        with contextlib.suppress(TransportError):
            transport.run(["rm", "-rf", "--", directory], timeout=SETUP_TIMEOUT_S)


@contextmanager
def client_on_host(
    transport: Transport, service: VllmService, unit_text: str
) -> Iterator[OnHostClient]:
    """servebench ready to run on the host for the with-block, removed afterwards.
    Raises NotOnHost (before the block) where it cannot run there."""
    try:
        python, why = python_for(transport, service)
        if not python:
            raise NotOnHost(why)
        run_as = plan_run_as(transport, unit_text, executables=[python], environment={})
        if run_as.skip:
            raise NotOnHost(run_as.skip)
        directory = _make_dir(transport)
    except TransportError as exc:
        raise NotOnHost(f"the host could not be asked: {exc}") from None
    try:
        client = OnHostClient(transport, python, run_as.prefix, run_as.user, directory, "")
        try:
            _install(transport, directory)
            client.probe()
        except (TransportError, BenchError) as exc:
            raise NotOnHost(str(exc)) from None
        yield client
    finally:
        _remove(transport, directory)


__all__ = ["REMOTE", "NotOnHost", "OnHostClient", "client_on_host", "package_files"]
