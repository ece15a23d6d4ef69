"""`[tool.lintunits]` in the nearest pyproject.toml: defaults that the command line overrides."""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from pathlib import Path

KNOWN_KEYS = {
    "systemd-version",
    "vllm-version",
    "select",
    "ignore",
    "fail-on",
    "format",
    "shellcheck",
    "env-files",
    "script-roots",
    "same-host",
    "preview",
    "user-units",
}


# What the list settings hold, for their error messages.
_WHAT = {"script-roots": "directories", "user-units": "unit files, directories or globs"}


class ConfigError(ValueError):
    pass


@dataclass
class FileConfig:
    path: Path | None = None
    values: dict = field(default_factory=dict)


def find_pyproject(start: Path) -> Path | None:
    for directory in (start, *start.parents):
        candidate = directory / "pyproject.toml"
        if candidate.is_file():
            return candidate
    return None


def load_config(explicit: str | None = None, start: Path | None = None) -> FileConfig:
    path = Path(explicit) if explicit else find_pyproject(start or Path.cwd())
    if path is None:
        return FileConfig()
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read: {exc.strerror}") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: invalid TOML: {exc}") from None
    section = data.get("tool", {}).get("lintunits", {})
    if not isinstance(section, dict):
        raise ConfigError(f"{path}: [tool.lintunits] must be a table")
    unknown = sorted(set(section) - KNOWN_KEYS)
    if unknown:
        raise ConfigError(
            f"{path}: [tool.lintunits]: unknown key(s) {', '.join(unknown)} "
            f"(known: {', '.join(sorted(KNOWN_KEYS))})"
        )
    for key in ("select", "ignore", "script-roots", "user-units"):
        if key in section and not _strings(section[key]):
            what = _WHAT.get(key, "rule codes")
            raise ConfigError(f"{path}: [tool.lintunits] {key} must be a list of {what}")
    env_files = section.get("env-files", {})
    if not (isinstance(env_files, dict) and all(isinstance(v, str) for v in env_files.values())):
        raise ConfigError(
            f"{path}: [tool.lintunits] env-files must be a table of "
            '"/path/on/host" = "local/path" entries'
        )
    same_host = section.get("same-host", [])
    if not (isinstance(same_host, list) and all(_strings(group) for group in same_host)):
        raise ConfigError(
            f"{path}: [tool.lintunits] same-host must be a list of lists of unit files, "
            "directories or globs"
        )
    # Paths in the file are relative to the file, wherever lintunits is run from.
    base = path.parent
    section = dict(section)
    section["env-files"] = {k: str(base / v) for k, v in env_files.items()}
    section["script-roots"] = [str(base / d) for d in section.get("script-roots", [])]
    section["same-host"] = [[str(base / p) for p in group] for group in same_host]
    section["user-units"] = [
        p if p == "*" else str(base / p) for p in section.get("user-units", [])
    ]
    return FileConfig(path, section)


def _strings(value: object) -> bool:
    return isinstance(value, list) and all(isinstance(x, str) for x in value)
