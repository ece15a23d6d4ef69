"""An imported unit's other lines → profile fields or verbatim unit lines.

A setting goes into its field when the unit sets it once, plainly (no specifier, no
variable); Environment=/EnvironmentFile= only when every such line does. Everything else
is kept as written (`unit_extra`), in the unit's order, after the lines the profile
writes, so a setting the unit gives again (Type=, KillMode=) still has the unit's value.
A setting a profile always writes and the unit leaves out gets systemd's default where a
field can hold it (Restart=no, 90 s timeouts)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from linting.execline.env_assignments import parse_environment
from linting.unitfile import Assignment, UnitFile
from units.models import RESTART_CHOICES

_SIMPLE_FIELDS = {
    ("Unit", "Description"): "description",
    ("Service", "User"): "user",
    ("Service", "Group"): "group",
    ("Service", "WorkingDirectory"): "working_directory",
    ("Service", "Restart"): "restart",
}
_SECONDS_FIELDS = {
    ("Service", "RestartSec"): "restart_sec",
    ("Service", "TimeoutStartSec"): "timeout_start_sec",
    ("Service", "TimeoutStopSec"): "timeout_stop_sec",
}
# systemd's defaults (systemd.service(5), systemd-system.conf(5) DefaultTimeoutStartSec=)
# for the settings a profile always writes.
SYSTEMD_DEFAULTS = {"restart": "no", "timeout_start_sec": 90, "timeout_stop_sec": 90}
# Lines the profile's template writes itself: the unit's own copy is not repeated.
_TEMPLATE_LINES = frozenset(
    {
        ("Unit", "After=network-online.target"),
        ("Unit", "Wants=network-online.target"),
        ("Service", "Type=exec"),
        ("Service", "KillMode=control-group"),
        ("Install", "WantedBy=multi-user.target"),
    }
)
_SPAN = re.compile(r"(\d{1,7})\s*(s|sec|min|m|h)?\Z")
_UNIT_SECONDS = {None: 1, "s": 1, "sec": 1, "min": 60, "m": 60, "h": 3600}


@dataclass
class UnitSettings:
    fields: dict[str, Any] = field(default_factory=dict)
    extra: list[list[str]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def seconds(text: str) -> int | None:
    """A plain systemd time span in whole seconds (`30`, `30s`, `30min`, `2h`), or None."""
    match = _SPAN.match(text.strip())
    return int(match[1]) * _UNIT_SECONDS[match[2]] if match else None


def _plain(a: Assignment) -> bool:
    return "%" not in a.value.text and "$" not in a.value.text and a.value.text != ""


def _line(a: Assignment) -> list[str]:
    return [a.section, f"{a.key.text}={a.value.text}"]


def map_settings(
    unit: UnitFile, version: int, specifiers: dict[str, str], refused: frozenset[str]
) -> UnitSettings:
    """Every assignment but ExecStart= (the command line's own) placed."""
    result = UnitSettings(fields=dict(SYSTEMD_DEFAULTS))
    taken = _environment(unit, version, specifiers, refused, result)
    taken |= _singles(unit, refused, result)
    for a in unit.assignments:
        if id(a) in taken or (a.section, a.name) == ("Service", "ExecStart"):
            continue
        if (a.section, f"{a.name}={a.value.text}") not in _TEMPLATE_LINES:
            result.extra.append(_line(a))
    return result


def _singles(unit: UnitFile, refused: frozenset[str], result: UnitSettings) -> set[int]:
    taken: set[int] = set()
    for (section, key), name in {**_SIMPLE_FIELDS, **_SECONDS_FIELDS}.items():
        found = unit.get_all(section, key)
        if len(found) != 1 or not _plain(found[0]) or name in refused:
            continue
        text = found[0].value.text
        value: Any = seconds(text) if name in _SECONDS_FIELDS.values() else text
        if name == "restart" and text not in dict(RESTART_CHOICES):
            value = None
        if value is not None:
            result.fields[name] = value
            taken.add(id(found[0]))
    return taken


def _environment(
    unit: UnitFile,
    version: int,
    specifiers: dict[str, str],
    refused: frozenset[str],
    result: UnitSettings,
) -> set[int]:
    """Environment= into the environment (and CUDA_VISIBLE_DEVICES into the GPU list) and
    one plain EnvironmentFile= into its field, each only when all such lines are plain."""
    taken: set[int] = set()
    assignments = unit.get_all("Service", "Environment")
    if assignments and all(map(_plain, assignments)) and "environment" not in refused:
        variables, problems = parse_environment(assignments, version, specifiers)
        env = {name: var.value for name, var in variables.items()}
        gpus = env.pop("CUDA_VISIBLE_DEVICES", None)
        if not problems and (gpus is None or "gpu_devices" not in refused):
            result.fields["environment"] = env
            if gpus is not None:
                result.fields["gpu_devices"] = gpus
            taken |= {id(a) for a in assignments}
    files = unit.get_all("Service", "EnvironmentFile")
    if (
        len(files) == 1
        and _plain(files[0])
        and not files[0].value.text.startswith("-")
        and "environment_file" not in refused
    ):
        result.fields["environment_file"] = files[0].value.text
        taken.add(id(files[0]))
    return taken
