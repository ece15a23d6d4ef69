"""The result of a lint run, independent of how it is printed."""

from __future__ import annotations

from dataclasses import dataclass, field

from linting.execline.cunescape import to_bytes
from linting.findings import Finding, Severity
from linting.unitfile import SourceFile


def printable(arg: str) -> str:
    """An argv element as text; raw non-UTF-8 bytes appear as `\\xHH`."""
    return to_bytes(arg).decode("utf-8", "backslashreplace")


@dataclass(frozen=True)
class CommandInfo:
    """One command of an Exec line and the exact argv systemd passes (`--show-argv`)."""

    section: str
    key: str
    line: int
    prefixes: str
    path: str
    argv: tuple[str, ...]
    file: str

    def to_json(self) -> dict:
        return {
            "section": self.section,
            "key": self.key,
            "line": self.line,
            "prefixes": self.prefixes,
            "path": self.path,
            "argv": [printable(a) for a in self.argv],
        }


@dataclass
class FileReport:
    path: str
    findings: list[Finding] = field(default_factory=list)
    commands: list[CommandInfo] = field(default_factory=list)
    sources: dict[str, SourceFile] = field(default_factory=dict)

    def source_line(self, path: str, line: int) -> str:
        source = self.sources.get(path)
        return source.line(line) if source else ""


@dataclass
class InputError:
    """Input that could not be read at all (exit code 2)."""

    path: str
    message: str


@dataclass
class Report:
    files: list[FileReport] = field(default_factory=list)
    input_errors: list[InputError] = field(default_factory=list)

    @property
    def findings(self) -> list[Finding]:
        return [f for fr in self.files for f in fr.findings]

    def counts(self) -> dict[str, int]:
        result = {str(s): 0 for s in (Severity.ERROR, Severity.WARNING, Severity.INFO)}
        for f in self.findings:
            result[str(f.severity)] += 1
        return result

    def exit_code(self, fail_on: Severity) -> int:
        if self.input_errors:
            return 2
        return 1 if any(f.severity >= fail_on for f in self.findings) else 0
