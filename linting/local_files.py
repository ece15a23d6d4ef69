"""Where the linter finds a file that a unit names on its own host (an `EnvironmentFile=`,
a wrapper script in `ExecStart=`): the unit runs elsewhere, so `/etc/vllm/vllm.env` on the
machine that lints is usually not that file.

In this order: a mapping the user gave (`--env-file HOST_PATH=LOCAL_PATH`); the path under
a `--script-root` (a directory that mirrors the host's `/`); the same path inside the linted
tree (the unit's directory and its parents up to the directory given to lintunits, trying
`etc/vllm/vllm.env`, then `vllm/vllm.env`, then `vllm.env`); and, for a unit installed on
this machine (under a systemd unit directory), the path itself. Anything else is not found:
the rules then treat what it would provide as unknown.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass

# Units here run on this machine, so the files they name are this machine's files.
SYSTEM_UNIT_DIRS = (
    "/etc/systemd/",
    "/run/systemd/",
    "/lib/systemd/",
    "/usr/lib/systemd/",
    "/usr/local/lib/systemd/",
)
MAX_BYTES = 1 << 20  # env files and wrapper scripts are small; anything larger is not one


@dataclass(frozen=True)
class FileFinder:
    mapping: Mapping[str, str]  # host path -> local path
    roots: Sequence[str] = ()  # mirrors of the host's `/` (--script-root)
    trees: Sequence[str] = ()  # the directories lintunits was given (or a file's directory)

    def find(self, host_path: str, unit_path: str) -> str | None:
        """The local file that stands for `host_path` as seen by the unit at `unit_path`."""
        for candidate in self._candidates(host_path, unit_path):
            if os.path.isfile(candidate):
                return candidate
        return None

    def read(
        self, host_path: str, unit_path: str, *, starts_with: bytes = b""
    ) -> tuple[str, str] | None:
        """(local path, text) of the file, or None when there is no readable UTF-8 copy
        (or, with `starts_with`, when the file does not begin with those bytes: a program
        is not read to find out that it is no script)."""
        local = self.find(host_path, unit_path)
        if local is None:
            return None
        try:
            if os.path.getsize(local) > MAX_BYTES:
                return None
            with open(local, "rb") as fh:
                data = fh.read(MAX_BYTES) if not starts_with else fh.read(len(starts_with))
                if starts_with and data != starts_with:
                    return None
                data += fh.read(MAX_BYTES)
            return local, data.decode("utf-8")
        except (OSError, UnicodeDecodeError):
            return None

    def _candidates(self, host_path: str, unit_path: str) -> Iterator[str]:
        if host_path in self.mapping:
            yield self.mapping[host_path]
            return
        relative = host_path.lstrip("/")
        for root in self.roots:
            yield os.path.join(root, relative)
        yield from self._in_tree(relative, unit_path)
        if os.path.abspath(unit_path).startswith(SYSTEM_UNIT_DIRS):
            yield host_path

    def _in_tree(self, relative: str, unit_path: str) -> Iterator[str]:
        # The path's components as PurePosixPath(relative).parts has them (no empty or
        # `.` ones), joined with plain strings: this runs for every command of every unit.
        parts = [part for part in relative.split("/") if part not in ("", ".")]
        tails = ["/".join(parts[i:]) for i in range(len(parts))]
        for directory in self._ancestors(unit_path):
            for tail in tails:
                yield os.path.join(directory, tail)

    def _ancestors(self, unit_path: str) -> Iterator[str]:
        """The unit's directory and its parents, nearest first, inside a linted tree."""
        if not os.path.isfile(unit_path):
            return
        trees = [os.path.abspath(t) for t in self.trees]
        directory = os.path.dirname(os.path.abspath(unit_path))
        while any(_within(directory, tree) for tree in trees):
            yield directory
            parent = os.path.dirname(directory)
            if parent == directory:
                return
            directory = parent


def _within(path: str, tree: str) -> bool:
    return path == tree or path.startswith(tree.rstrip("/") + "/")
