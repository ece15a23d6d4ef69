"""Which unit-file sections and keys a given systemd version knows, and how it parses them.

The tables are generated (tools/gen_systemd_catalog.py) from each release's
``src/core/load-fragment-gperf.gperf.in`` and cross-checked against
``systemd --dump-configuration-items`` of a real binary of that release; never edit
``catalogs/systemd-<N>.json`` by hand.  Stdlib only: the linter must run without Django.
"""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

__all__ = [
    "DEFAULT_SYSTEMD_VERSION",
    "SystemdCatalog",
    "UnknownSystemdVersion",
    "available_versions",
    "load_catalog",
]

CATALOG_DIR = Path(__file__).resolve().parent / "catalogs"

#: The default target is the systemd of Debian 12 (252), the version installed on the
#: machines this project was built on and the one whose dump is captured from a real,
#: locally installed binary.  Linting against the oldest supported table is also the
#: safe choice: a key or value that 252 lacks is flagged instead of silently trusted.
DEFAULT_SYSTEMD_VERSION = 252

# Unit types whose files systemd loads, as in the `.sections` string of each unit vtable
# (src/core/service.c, socket.c, ... : "Unit\0<Type>\0Install\0").  target and device have
# a type section of their own that has no keys.
UNIT_TYPES = (
    "service",
    "socket",
    "device",
    "mount",
    "automount",
    "swap",
    "target",
    "path",
    "timer",
    "slice",
    "scope",
)

_CATALOG_NAME = re.compile(r"^systemd-(\d+)\.json$")


class UnknownSystemdVersion(ValueError):
    """Raised for a version older than every generated table (no honest answer exists)."""


@dataclass(frozen=True)
class SystemdCatalog:
    """Sections → keys → ``config_parse_*`` function for one systemd table.

    ``version`` is the version asked for; ``table_version`` the table actually used (the
    highest generated one not newer than ``version``).
    """

    version: int
    table_version: int
    sections: dict[str, dict[str, str]]
    types: dict[str, dict[str, str]] = field(default_factory=dict)
    removed_ignored: dict[str, frozenset[str]] = field(default_factory=dict)
    source: str = ""

    def has_section(self, section: str) -> bool:
        """True if some unit type of this version has ``[section]`` (case-sensitive, as systemd)."""
        return section in self.sections or section in {t.capitalize() for t in UNIT_TYPES}

    def sections_for_unit_type(self, unit_type: str) -> set[str]:
        """Sections a unit of ``unit_type`` ("service", ".service", "foo.service") may use.

        Always ``Unit`` and ``Install`` plus the type's own section, mirroring the
        ``.sections`` list of each unit vtable.  Raises ``ValueError`` for unknown types.
        """
        name = unit_type.rsplit(".", 1)[-1].lower()
        if name not in UNIT_TYPES:
            raise ValueError(f"unknown unit type: {unit_type!r}")
        return {"Unit", name.capitalize(), "Install"}

    def keys(self, section: str) -> dict[str, str]:
        """``{key: parser}`` of ``section`` (empty if the section has no keys)."""
        return self.sections.get(section, {})

    def parser(self, section: str, key: str) -> str | None:
        """The ``config_parse_*`` function systemd uses for ``section.key``, or None if unknown."""
        return self.sections.get(section, {}).get(key)

    def value_type(self, section: str, key: str) -> str | None:
        """The type word ``--dump-configuration-items`` prints (e.g. ``SECONDS``), if any."""
        return self.types.get(section, {}).get(key)

    def is_removed(self, section: str, key: str) -> bool:
        """True for legacy keys systemd still accepts but ignores with a warning."""
        return key in self.removed_ignored.get(section, frozenset())

    @staticmethod
    def suggest(name: str, candidates: Iterable[str]) -> str | None:
        """Closest candidate to a misspelt ``name``, case-insensitive (Enviroment → Environment).

        Why case-insensitive: systemd keys are case-sensitive, so ``execstart`` is as unknown
        as ``ExecStrat`` and both deserve the correctly cased suggestion.
        """
        by_lower: dict[str, str] = {}
        for candidate in candidates:
            by_lower.setdefault(candidate.lower(), candidate)
        if name.lower() in by_lower and by_lower[name.lower()] != name:
            return by_lower[name.lower()]
        matches = difflib.get_close_matches(name.lower(), list(by_lower), n=1, cutoff=0.75)
        return by_lower[matches[0]] if matches else None


def available_versions() -> tuple[int, ...]:
    """Versions with a generated table, ascending."""
    found = []
    for path in CATALOG_DIR.iterdir():
        m = _CATALOG_NAME.match(path.name)
        if m:
            found.append(int(m.group(1)))
    return tuple(sorted(found))


@cache
def _load_table(table_version: int) -> dict:
    with (CATALOG_DIR / f"systemd-{table_version}.json").open(encoding="utf-8") as fh:
        data = json.load(fh)
    if data.get("systemd_version") != table_version:
        raise ValueError(f"catalog systemd-{table_version}.json names another version")
    return data


@cache
def load_catalog(version: int = DEFAULT_SYSTEMD_VERSION) -> SystemdCatalog:
    """The catalog for ``version``: its own table, else the highest older one.

    Why fall back: systemd only adds keys between minor releases far more often than it
    removes them, so an older table under-approximates (it may flag a new key as unknown,
    never accept a key the version lacks).  Below the oldest table there is nothing to
    fall back to, hence ``UnknownSystemdVersion``.
    """
    versions = available_versions()
    usable = [v for v in versions if v <= version]
    if not usable:
        raise UnknownSystemdVersion(
            f"no systemd catalog for version {version}; oldest available is "
            f"{versions[0] if versions else 'none'}"
        )
    data = _load_table(usable[-1])
    return SystemdCatalog(
        version=version,
        table_version=usable[-1],
        sections=data["sections"],
        types=data.get("types", {}),
        removed_ignored={s: frozenset(k) for s, k in data.get("removed_ignored", {}).items()},
        source=data.get("source", ""),
    )
