"""Which vLLM executables the probe may run on a host, and whether a path is safe to run.

The probe runs `<executable> --version` as the SSH user (usually root) without anyone's
approval, so the executable must not be an operator's choice: only the executables of
units that two people approved and the job pushed (`PushedUnit`), or those an admin listed
on the host (`Host.probe_executables`, audited). And even those are run only when no one
but root (or the login user) can change what the path leads to: every component of the
path, and of the path its symlinks resolve to, is checked on the host with `stat`, and a
directory or file that others may write (such as `/tmp`) refuses the run. Bounded: at
most `MAX_COMPONENTS` components and one short command each for `realpath`, `id`, `stat`.
"""

from __future__ import annotations

import posixpath
import stat as stat_mode
from dataclasses import dataclass

from hostops.channel import Transport
from hostops.channel.errors import CommandTimeout

CHECK_TIMEOUT = 15.0
MAX_COMPONENTS = 64


def path_components(path: str) -> list[str]:
    """`/opt/vllm/bin/vllm` → `/`, `/opt`, `/opt/vllm`, `/opt/vllm/bin`, `/opt/vllm/bin/vllm`."""
    parts = [p for p in path.split("/") if p]
    return ["/"] + ["/" + "/".join(parts[: i + 1]) for i in range(len(parts))]


def plain_path_problem(path: str) -> str | None:
    """Why `path` is not a plain absolute path the checks below can reason about."""
    if not path.startswith("/"):
        return "not an absolute path"
    if any(ord(c) < 0x20 or c == "\x7f" for c in path):
        return "the path contains a control character"
    if posixpath.normpath(path) != path or path.startswith("//"):
        return f"write it plainly as {posixpath.normpath(path)!r}"
    if len(path_components(path)) > MAX_COMPONENTS:
        return f"more than {MAX_COMPONENTS} path components"
    return None


@dataclass(frozen=True)
class _Stat:
    mode: int
    uid: int
    gid: int
    path: str


def _run(transport: Transport, argv: list[str]) -> tuple[int, str, str]:
    result = transport.run(argv, timeout=CHECK_TIMEOUT)
    return result.exit_code, result.stdout_text, result.stderr_text.strip()


def _stats(transport: Transport, paths: list[str]) -> list[_Stat] | str:
    # %f: raw mode in hex; %n last, so a space in a name cannot shift the fields. lstat
    # (no -L): a symlink's target is checked through the resolved path's components.
    code, out, err = _run(transport, ["stat", "-c", "%f %u %g %n", "--", *paths])
    if code != 0:
        return f"`stat` failed (exit {code}): {err[:200]}"
    stats = []
    for line in out.splitlines():
        mode, uid, gid, name = line.split(" ", 3)
        stats.append(_Stat(int(mode, 16), int(uid), int(gid), name))
    if len(stats) != len(paths):
        return "`stat` did not describe every path component"
    return stats


def _component_problem(entry: _Stat, trusted_uids: set[int]) -> str | None:
    if stat_mode.S_ISLNK(entry.mode):
        return None  # a link's own mode means nothing; its directory and target are checked
    what = "directory" if stat_mode.S_ISDIR(entry.mode) else "file"
    shown = f"{entry.path} ({what}, mode {stat_mode.S_IMODE(entry.mode):04o})"
    if entry.mode & stat_mode.S_IWOTH:
        return f"{shown} is writable by everyone"
    if entry.mode & stat_mode.S_IWGRP and entry.gid != 0:
        return f"{shown} is writable by group {entry.gid}"
    if entry.uid not in trusted_uids:
        return f"{shown} belongs to uid {entry.uid}, not to root or the login user"
    return None


def executable_problem(transport: Transport, path: str) -> str | None:
    """Why running `path` on the host would let someone other than root (or the login
    user) choose what runs, or why it cannot be checked; None when it is safe to run."""
    plain = plain_path_problem(path)
    if plain:
        return plain
    try:
        code, out, err = _run(transport, ["realpath", "-e", "--", path])
        if code != 0:
            return f"not found on the host ({err[:200] or f'realpath exit {code}'})"
        resolved = out.rstrip("\n")
        if "\n" in resolved or plain_path_problem(resolved):
            return f"it resolves to an unusual path {resolved!r}"
        code, out, _ = _run(transport, ["id", "-u"])
        trusted = {0} | ({int(out.strip())} if code == 0 and out.strip().isdigit() else set())
        components = list(dict.fromkeys(path_components(path) + path_components(resolved)))
        stats = _stats(transport, components)
    except CommandTimeout as exc:
        return f"checking the path timed out: {exc}"
    if isinstance(stats, str):
        return stats
    for entry in stats:
        problem = _component_problem(entry, trusted)
        if problem:
            return problem
    resolved_entry = stats[components.index(resolved)]
    if not stat_mode.S_ISREG(resolved_entry.mode):
        return f"{resolved} is not a regular file"
    return None


__all__ = ["MAX_COMPONENTS", "executable_problem", "path_components", "plain_path_problem"]
