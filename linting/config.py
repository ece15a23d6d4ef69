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
}


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
    for key in ("select", "ignore"):
        if key in section and not (
            isinstance(section[key], list) and all(isinstance(x, str) for x in section[key])
        ):
            raise ConfigError(f"{path}: [tool.lintunits] {key} must be a list of rule codes")
    return FileConfig(path, section)
