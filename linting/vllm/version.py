"""Which vLLM release a command runs, so that its arguments are checked against the right
catalog: said on the command line, visible in the unit (a container image tag, a versioned
virtualenv path), configured, pinned by the project, or — only when nothing says — assumed
to be the newest release with a catalog, which the report then says.

Order: `--vllm-version` (or a profile's target version) > what the command shows > the
`vllm-version` of `[tool.lintunits]` > a `vllm==X` pin in the nearest pyproject.toml or
requirements*.txt of the linted tree > the newest catalog.
"""

from __future__ import annotations

import os
import re
import tomllib
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from linting.vllm.catalog import (
    DEFAULT_VLLM_VERSION,
    VllmCatalog,
    choose_catalog,
    is_release,
)

# `/opt/vllm-0.13.0/bin/vllm`, `/opt/venvs/vllm0.8.5/bin/python`, `/srv/vllm_v0.16/…`
_VENV = re.compile(r"vllm[-_]?v?(\d+\.\d+(?:\.\d+)?(?:\.post\d+)?)(?![\d.])", re.I)
# `vllm/vllm-openai:v0.16.0`, `docker.io/vllm/vllm-openai:0.11.0-cu128`
_TAG = re.compile(r":v?(\d+\.\d+(?:\.\d+)?(?:\.post\d+)?)(?:[-+][\w.]*)?$")
_PIN = re.compile(r"^\s*vllm(?:\[[^\]]*\])?\s*==\s*(\d+(?:\.\d+)+(?:\.post\d+)?)\s*(?:[;#].*)?$")


@dataclass(frozen=True)
class VllmVersion:
    """The release a command is linted as, where that came from, and the catalog used."""

    requested: str
    source: str  # "--vllm-version", "the image tag vllm/vllm-openai:v0.16.0", …
    catalog: VllmCatalog
    note: str | None = None  # the catalog is not this release's own
    assumed: bool = False  # nothing said which release runs


def version_in_path(executable: str) -> str | None:
    """A release number in the path of a virtualenv (`vllm-0.13.0`, `vllm0.8.5`)."""
    match = _VENV.search(executable)
    return _full(match.group(1)) if match else None


_UNIT_PIN = re.compile(r"(?<![\w.-])vllm(?:\[[^\]\s]*\])?==(\d+(?:\.\d+)+(?:\.post\d+)?)\b")


def version_in_text(text: str) -> str | None:
    """A `vllm==X.Y.Z` pin in an Exec line (`pip install vllm==0.11.0`, `uv run --with
    vllm==0.11.0 …`, `pipx run --spec vllm==…`): the release that command installs."""
    match = _UNIT_PIN.search(text)
    return _full(match.group(1)) if match else None


def version_in_image(image: str) -> str | None:
    """The release of a `vllm/vllm-openai:vX.Y.Z` image (None for `latest`, `nightly`)."""
    match = _TAG.search(image)
    return _full(match.group(1)) if match else None


def project_pin(unit_path: str, trees: Sequence[str]) -> tuple[str, str] | None:
    """`vllm==X` in the nearest pyproject.toml or requirements*.txt, from the unit's
    directory up to the linted tree: (release, where)."""
    if not os.path.isfile(unit_path):
        return None
    roots = [os.path.abspath(t) for t in trees]
    directory = os.path.dirname(os.path.abspath(unit_path))
    while any(directory == r or directory.startswith(r.rstrip("/") + "/") for r in roots):
        found = _pin_in(directory)
        if found:
            return found
        parent = os.path.dirname(directory)
        if parent == directory:
            break
        directory = parent
    return None


def resolve_version(
    *,
    explicit: str | None,
    shown: tuple[str, str] | None,
    configured: str | None,
    pinned: tuple[str, str] | None,
) -> VllmVersion:
    """The release to lint a command as. `shown`/`pinned` are (release, where)."""
    if explicit:
        requested, source = explicit, "--vllm-version"
    elif shown:
        requested, source = shown
    elif configured:
        requested, source = configured, "[tool.lintunits] vllm-version"
    elif pinned:
        requested, source = pinned
    else:
        choice = choose_catalog(DEFAULT_VLLM_VERSION)
        return VllmVersion(
            DEFAULT_VLLM_VERSION,
            "assumed: the newest release with a catalog (nothing in the unit says which)",
            choice.catalog,
            assumed=True,
        )
    choice = choose_catalog(requested)
    return VllmVersion(requested, source, choice.catalog, choice.note)


def _full(version: str) -> str:
    """`0.16` → `0.16.0`: a minor release without its patch number means the .0."""
    return version if version.count(".") >= 2 else version + ".0"


@lru_cache(maxsize=1024)
def _pin_in(directory: str) -> tuple[str, str] | None:
    """The pin one directory holds (read once per process: a run lints many units of a
    directory)."""
    return _pyproject_pin(Path(directory)) or _requirements_pin(Path(directory))


def _pyproject_pin(directory: Path) -> tuple[str, str] | None:
    path = directory / "pyproject.toml"
    if not path.is_file():
        return None
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return None
    project = data.get("project", {})
    deps = project.get("dependencies", []) if isinstance(project, dict) else []
    for dep in deps if isinstance(deps, list) else []:
        match = _PIN.match(str(dep))
        if match and is_release(match.group(1)):
            return match.group(1), f"{path} ({dep})"
    return None


def _requirements_pin(directory: Path) -> tuple[str, str] | None:
    for path in sorted(directory.glob("requirements*.txt")):
        try:
            lines = path.read_text(encoding="utf-8").splitlines()
        except (OSError, UnicodeDecodeError):
            continue
        for line in lines:
            match = _PIN.match(line)
            if match and is_release(match.group(1)):
                return match.group(1), f"{path} ({line.strip()})"
    return None
