"""`%` specifiers in unit files (src/shared/specifier.c `specifier_printf()` and the table in
src/core/unit-printf.c `unit_full_printf()`).

Resolved at load time, per word: `%%` → `%`; a known letter → its value; an unknown letter
or digit → the unit fails to load ("Invalid slot"); any other character after `%` (and a
trailing `%`) is kept literally. The known letters differ per systemd version; the tables
below were measured with `systemd-analyze verify` (see tools/gen_specifier_tables.py).
"""

from __future__ import annotations

import json
import platform
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cache, lru_cache
from pathlib import Path

from linting.spans import Pos, Traced, joined_origins
from linting.user_units import UserManager

POSSIBLE_SPECIFIERS = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"

_TABLES = json.loads(
    (Path(__file__).with_name("specifier_tables.json")).read_text(encoding="utf-8")
)
# Letters that resolve without error, and those that resolve but log "Specifier '%X' used
# in unit configuration, which is deprecated", per measured systemd version.
KNOWN_SPECIFIERS: dict[int, frozenset[str]] = {
    int(v): frozenset(t["known"]) for v, t in _TABLES.items() if v.isdigit()
}
DEPRECATED_SPECIFIERS: dict[int, frozenset[str]] = {
    int(v): frozenset(t["deprecated"]) for v, t in _TABLES.items() if v.isdigit()
}


@cache
def specifier_table(version: int) -> tuple[frozenset[str], frozenset[str]]:
    """(known, deprecated) letters for `version`: the highest measured table ≤ version."""
    candidates = [v for v in KNOWN_SPECIFIERS if v <= version] or [min(KNOWN_SPECIFIERS)]
    chosen = max(candidates)
    return KNOWN_SPECIFIERS[chosen], DEPRECATED_SPECIFIERS.get(chosen, frozenset())


def _read(path: str, default: str) -> str:
    try:
        return Path(path).read_text(encoding="utf-8").strip() or default
    except OSError:
        return default


def _os_release() -> dict[str, str]:
    result: dict[str, str] = {}
    for line in _read("/etc/os-release", "").splitlines():
        if "=" in line:
            key, _, value = line.partition("=")
            result[key.strip()] = value.strip().strip('"')
    return result


@dataclass
class HostFacts:
    """Values of the host-dependent specifiers. Defaults describe the machine running the
    linter; tests and deploys pass the target host's facts."""

    hostname: str = field(default_factory=lambda: platform.node() or "localhost")
    machine_id: str = field(default_factory=lambda: _read("/etc/machine-id", "0" * 32))
    boot_id: str = field(
        default_factory=lambda: _read("/proc/sys/kernel/random/boot_id", "0" * 36).replace("-", "")
    )
    kernel_release: str = field(default_factory=platform.release)
    architecture: str = field(
        default_factory=lambda: {"x86_64": "x86-64", "aarch64": "arm64"}.get(
            platform.machine(), platform.machine()
        )
    )
    os_release: dict[str, str] = field(default_factory=_os_release)
    pretty_hostname: str = ""
    # systemd's build option default-user-shell: root's shell (`%s`, $SHELL of User=root).
    # Upstream /bin/sh; Debian and Ubuntu build with /bin/bash (measured on Debian 12/13 by
    # tests/differential; read it from a host with `systemd-run -P -p User=root printenv SHELL`).
    # GPU hosts run Debian or Ubuntu far more often than anything else: default to theirs.
    root_shell: str = "/bin/bash"


@lru_cache(maxsize=1)
def local_host_facts() -> HostFacts:
    """The machine running the linter, read once per process."""
    return HostFacts()


@dataclass
class UnitFacts:
    """What the unit-level specifiers need: its name, fragment path and User=."""

    name: str
    fragment_path: str = ""
    user: str | None = None
    group: str | None = None
    # The user manager that runs a `systemctl --user` unit (linting/user_units.py); None
    # for the system manager.
    manager: UserManager | None = None


_HEX_ESCAPE = re.compile(r"\\x[0-9a-fA-F]{2}")


def _unescape_unit_part(text: str) -> str:
    """`unit_name_unescape()`: `-` → `/`, `\\xHH` → byte. systemd fails on a malformed
    escape (`\\xzz`); we keep it as written rather than guess."""
    if "\\" not in text:  # most names: only dashes to turn into slashes
        return text.replace("-", "/")
    out = []
    i = 0
    while i < len(text):
        if text[i] == "-":
            out.append("/")
        elif text[i] == "\\" and _HEX_ESCAPE.match(text, i):
            out.append(chr(int(text[i + 2 : i + 4], 16)))
            i += 3
        else:
            out.append(text[i])
        i += 1
    return "".join(out)


def _directory_of(path: str) -> str:
    """`str(Path(path).parent)`; pathlib's normalisation of the directory is cached, as the
    units of one run sit in a few directories."""
    head, _, name = path.rpartition("/")
    if name in ("", ".") or not head.strip("/"):  # `d/`, `d/.`, `/x`, `//x`, `x`: pathlib
        return str(Path(path).parent)
    return _normalized(head)


@lru_cache(maxsize=256)
def _normalized(path: str) -> str:
    return str(Path(path))


# %C %E %L %S %t: the system manager's directories, and a user manager's (systemd.unit(5):
# $XDG_CACHE_HOME, $XDG_CONFIG_HOME, $XDG_STATE_HOME/log, $XDG_STATE_HOME, $XDG_RUNTIME_DIR).
_SYSTEM_DIRECTORIES = {
    "C": "/var/cache",
    "E": "/etc",
    "L": "/var/log",
    "S": "/var/lib",
    "t": "/run",
}


def _user_directories(home: str, runtime: str) -> dict[str, str]:
    return {
        "C": f"{home}/.cache",
        "E": f"{home}/.config",
        "L": f"{home}/.local/state/log",
        "S": f"{home}/.local/state",
        "t": runtime,
    }


def specifier_values(unit: UnitFacts, host: HostFacts) -> dict[str, str]:
    """The value of each letter (those a linter can know; others resolve to themselves)."""
    name = unit.name
    base, _, _suffix = name.rpartition(".")
    prefix, at, instance = base.partition("@")
    # %u %U %g %G %h %s describe the user running the service manager, not User=/Group=
    # (src/shared/specifier.c specifier_user_name() & co.): root for system units. Measured
    # with User=nobody, Group=nogroup on systemd 252 and 257 (tests/differential).
    user, uid, home, shell, group = "root", "0", "/root", host.root_shell, "root"
    dirs = _SYSTEM_DIRECTORIES
    if unit.manager is not None:
        manager = unit.manager
        user, uid, home, shell, group = (
            manager.name,
            manager.uid,
            manager.home,
            manager.shell,
            manager.name,
        )
        dirs = _user_directories(home, manager.runtime_dir)
    osr = host.os_release
    last = prefix.rsplit("-", 1)[-1]
    unescaped_path = "/" + _unescape_unit_part(instance if at else prefix).lstrip("/")
    return {
        "a": host.architecture,
        "A": osr.get("IMAGE_VERSION", ""),
        "b": host.boot_id,
        "B": osr.get("BUILD_ID", ""),
        "C": dirs["C"],
        "d": f"{dirs['t']}/credentials/{name}",
        "D": "/usr/share",
        "E": dirs["E"],
        "f": unescaped_path,
        "g": group,
        "G": "0" if group == "root" else group,
        "h": home,
        "H": host.hostname,
        "i": instance,
        "I": _unescape_unit_part(instance),
        "j": last,
        "J": _unescape_unit_part(last),
        "l": host.hostname.split(".", 1)[0],
        "L": dirs["L"],
        "m": host.machine_id,
        "M": osr.get("IMAGE_ID", ""),
        "n": name,
        "N": base,
        "o": osr.get("ID", ""),
        "p": prefix,
        "P": _unescape_unit_part(prefix),
        "q": host.pretty_hostname or host.hostname,
        "s": shell,
        "S": dirs["S"],
        "t": dirs["t"],
        "T": "/tmp",
        "u": user,
        "U": uid,
        "v": host.kernel_release,
        "V": "/var/tmp",
        "w": osr.get("VERSION_ID", ""),
        "W": osr.get("VARIANT_ID", ""),
        "y": unit.fragment_path,
        "Y": _directory_of(unit.fragment_path) if unit.fragment_path else "",
        # Deprecated ("does not work as intended"): resolved while the fragment is parsed,
        # before the unit has its slice, relative to the manager's cgroup root ("" for a host's
        # or a container's PID 1). Measured on 252 and 257: `/diff-0065.service`, "", "".
        "c": f"/{name}",
        "r": "",
        "R": "",
    }


@dataclass(frozen=True)
class SpecifierUse:
    letter: str
    offset: int  # offset of the `%` in the word
    known: bool
    deprecated: bool


class SpecifierError(Exception):
    def __init__(self, use: SpecifierUse) -> None:
        super().__init__(f"unknown specifier %{use.letter}")
        self.use = use


def find_specifiers(word: str, version: int) -> list[SpecifierUse]:
    """Every `%X` in a word (not `%%`), classified for `version`."""
    if "%" not in word:
        return []
    known, deprecated = specifier_table(version)
    uses: list[SpecifierUse] = []
    i = word.find("%")
    while 0 <= i < len(word) - 1:  # a `%` at the very end is no specifier
        letter = word[i + 1]
        if letter != "%" and letter in POSSIBLE_SPECIFIERS:
            uses.append(SpecifierUse(letter, i, letter in known, letter in deprecated))
        i = word.find("%", i + 2)  # the character after a `%` is never the next `%`
    return uses


def resolve(word: Traced, version: int, values: dict[str, str]) -> Traced:
    """`specifier_printf()` on one word; raises SpecifierError for an unknown letter.
    The text between specifiers is copied as slices (text and positions); a specifier's
    value takes the position of its `%`."""
    s = word.text
    if "%" not in s:
        return word
    known, deprecated = specifier_table(version)
    out: list[str] = []
    pieces: list[Sequence[Pos]] = []
    start = 0  # the text from `start` on is kept as written, up to the next specifier
    i = s.find("%")
    while 0 <= i < len(s) - 1:  # a `%` at the very end stays as written
        letter = s[i + 1]
        if letter == "%" or letter in known:
            value = "%" if letter == "%" else values.get(letter, f"%{letter}")
            out.append(s[start:i])
            pieces.append(word.origins[start:i])
            out.append(value)
            pieces.append((word.origins[i],) * len(value))
            start = i + 2
        elif letter in POSSIBLE_SPECIFIERS:
            raise SpecifierError(SpecifierUse(letter, i, False, letter in deprecated))
        # any other character: `%` and it stay as written
        i = s.find("%", i + 2)
    out.append(s[start:])
    pieces.append(word.origins[start:])
    return Traced("".join(out), joined_origins(pieces))
