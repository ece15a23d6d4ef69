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


@dataclass(frozen=True)
class VersionInfo:
    """The vLLM release a unit's command was linted as, and why (linting/vllm/version.py)."""

    version: str
    catalog: str  # the catalog used (another release's when `note` says so)
    source: str
    note: str | None = None
    assumed: bool = False

    def to_json(self) -> dict:
        return {
            "version": self.version,
            "catalog": self.catalog,
            "source": self.source,
            "note": self.note,
            "assumed": self.assumed,
        }


@dataclass
class FileReport:
    path: str
    findings: list[Finding] = field(default_factory=list)
    commands: list[CommandInfo] = field(default_factory=list)
    sources: dict[str, SourceFile] = field(default_factory=dict)
    vllm: list[VersionInfo] = field(default_factory=list)

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

    def notes(self) -> list[str]:
        """What people must know to read the findings: a vLLM release that was assumed
        or linted with another release's catalog (one line each, units named)."""
        assumed: dict[str, list[str]] = {}
        other: dict[str, list[str]] = {}
        for fr in self.files:
            name = fr.path.rsplit("/", 1)[-1]
            for info in fr.vllm:
                if info.assumed:
                    assumed.setdefault(info.version, []).append(name)
                elif info.note:
                    other.setdefault(info.note, []).append(name)
        lines = [
            f"vLLM {version} assumed (the newest release with a catalog) for "
            f"{_names(units)}: nothing shows which release they run; say it with "
            "--vllm-version or [tool.lintunits] vllm-version"
            for version, units in assumed.items()
        ]
        lines += [f"{note} ({_names(units)})" for note, units in other.items()]
        return lines

    def exit_code(self, fail_on: Severity) -> int:
        if self.input_errors:
            return 2
        return 1 if any(f.severity >= fail_on for f in self.findings) else 0


def _names(units: list[str]) -> str:
    unique = list(dict.fromkeys(units))
    shown = ", ".join(unique[:5])
    return shown + (f" and {len(unique) - 5} more" if len(unique) > 5 else "")
