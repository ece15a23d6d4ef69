"""What goes into ShellCheck and what comes back: a script as the shell receives it, and a
finding at its place in the unit file. Shared by the runner (shellcheck.py) and the
position mapping (positions.py)."""

from __future__ import annotations

import os
from dataclasses import dataclass

from linting.spans import Span, Traced

# Dialects ShellCheck 0.11 can check (`--shell` / the `shell=` directive: "sh, bash, dash,
# ksh, busybox"). zsh is not supported (SC1071 "ShellCheck only supports sh/bash/dash/ksh
# scripts"), so zsh scripts are skipped rather than reported as one useless error.
SUPPORTED_DIALECTS = frozenset({"sh", "bash", "dash", "ksh", "busybox"})
SKIPPED_DIALECTS = frozenset({"zsh"})


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


@dataclass(frozen=True)
class RawComment:
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
    def from_json(cls, item: list) -> RawComment:
        reps = item[7]
        return cls(*item[:7], None if reps is None else tuple(tuple(r) for r in reps))


def dialect_for(argv0: str) -> str | None:
    """The ShellCheck dialect of a shell executable (`/usr/bin/bash` → `bash`), or None."""
    name = os.path.basename(argv0)
    if name in SUPPORTED_DIALECTS | SKIPPED_DIALECTS:
        return name
    return {"mksh": "ksh", "ksh93": "ksh", "pdksh": "ksh", "ash": "busybox"}.get(name)
