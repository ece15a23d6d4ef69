"""Which units specadmin may write on a host: never the host's own plumbing, and never a
unit file someone else wrote unless an admin adopted it.

A deploy replaces `/etc/systemd/system/<name>.service` and reloads systemd. Pointed at
`sshd`, `systemd-journald` or `getty@`, that is a takeover of the host (or a lock-out of
its admins), approved by two people who may not have noticed the name. Two rules, asked at
request time (`deploys.services.deploy_requests`) and again by the job right before it
writes (`deploys.jobs.steps`):

1. a deny list of the names a base system runs (`DENIED_UNIT_PATTERNS`);
2. a unit file already on the host must carry specadmin's marker on its first line
   (`deploys.probe.MANAGED_MARKER`, written by templates/units/vllm.service), or an admin
   must have adopted exactly that file (its sha256): `UnitAdoption`, audited;
3. so must every other file systemd loads under that name (a vendor unit in
   `/lib/systemd/system` that the push would shadow, drop-ins in `NAME.service.d/`), as
   systemd itself reports them (`deploys.existing_units`): adopted together, by their
   fingerprint.
"""

from __future__ import annotations

import fnmatch

from django.core.exceptions import ValidationError

from deploys.existing_units import ExistingUnit
from deploys.models import Host, UnitAdoption
from deploys.probe import MANAGED_MARKER
from hostops.channel.push import sha256_hex
from units.names import validate_unit_name

# fnmatch patterns of unit names (without ".service"). The base system's services: remote
# access, logins and consoles, the bus, systemd's own units, logging, time, networking,
# privilege and audit daemons, scheduling, and the GPU host's own NVIDIA daemons.
DENIED_UNIT_PATTERNS: tuple[str, ...] = (
    "ssh",
    "sshd",
    "ssh-*",
    "sshd-*",
    "openssh*",
    "dropbear*",
    "systemd-*",
    "getty*",
    "*-getty*",
    "autovt*",
    "console-*",
    "dbus",
    "dbus-*",
    "dbus.*",
    "polkit*",
    "init",
    "emergency",
    "rescue",
    "user",
    "user-*",
    "rsyslog",
    "syslog",
    "syslog-*",
    "auditd",
    "cron",
    "crond",
    "anacron",
    "atd",
    "chrony*",
    "ntp*",
    "networking",
    "network*",
    "NetworkManager*",
    "wpa_supplicant*",
    "ifup*",
    "firewalld",
    "nftables",
    "iptables",
    "ufw",
    "apparmor",
    "selinux*",
    "sudo*",
    "nvidia-persistenced",
    "nvidia-fabricmanager",
    "nvidia-*",
    "specadmin*",
)


def denied_unit_reason(unit_name: str) -> str | None:
    """Why `unit_name` (without ".service") is never written, or None. Case-sensitive,
    as systemd's unit names are."""
    for pattern in DENIED_UNIT_PATTERNS:
        if fnmatch.fnmatchcase(unit_name, pattern):
            return (
                f"{unit_name}.service belongs to the host's base system (it matches "
                f"“{pattern}” in specadmin's deny list): specadmin never writes it. "
                "Choose another unit name."
            )
    return None


def check_unit_name(unit_name: str) -> None:
    """A name a request may write a unit under: valid for systemd and not on the deny
    list. Otherwise a ValidationError on the `unit_name` field that says why."""
    try:
        validate_unit_name(unit_name)
    except ValidationError as exc:
        raise ValidationError({"unit_name": exc.messages}) from None
    denied = denied_unit_reason(unit_name)
    if denied:
        raise ValidationError({"unit_name": [denied]})


def is_managed(text: bytes) -> bool:
    """True when the file's first line starts with specadmin's marker (what the probe's
    `find … awk` also looks for)."""
    first_line = text.split(b"\n", 1)[0]
    return first_line.startswith(MANAGED_MARKER.encode("utf-8"))


def adoption_for(*, host: Host, unit_name: str, sha256: str) -> UnitAdoption | None:
    """The admin's adoption of exactly this file (same host, name and content), or None."""
    return (
        UnitAdoption.objects.filter(host=host, unit_name=unit_name, sha256=sha256)
        .select_related("adopted_by")
        .first()
    )


def _foreign_file_problem(host: Host, unit_name: str, current: bytes | None) -> list[str]:
    if current is None or is_managed(current):
        return []
    sha = sha256_hex(current)
    if adoption_for(host=host, unit_name=unit_name, sha256=sha) is not None:
        return []
    return [
        f"{host.name} already has a {unit_name}.service that specadmin did not write (its "
        f"first line lacks “{MANAGED_MARKER}”; sha256 {sha[:12]}…): it is not overwritten "
        "unless an admin adopts that file on the host page."
    ]


def loaded_elsewhere_problems(
    *, host: Host, unit_name: str, existing: ExistingUnit | None
) -> list[str]:
    """Why the files systemd loads for the unit outside the one specadmin writes (a vendor
    unit, drop-ins) block the write; empty when there are none or an admin adopted them."""
    if existing is None or not existing.others:
        return []
    if adoption_for(host=host, unit_name=unit_name, sha256=existing.fingerprint) is not None:
        return []
    listed = ", ".join(f"{f.path} ({f.kind})" for f in existing.others)
    return [
        f"systemd on {host.name} already loads {unit_name}.service from {listed}, which "
        f"specadmin did not write: a unit in {existing.own_path} would shadow it (or run "
        "with its drop-ins). It is not written unless an admin adopts these files on the "
        "host page."
    ]


def overwrite_problems(
    *,
    host: Host,
    unit_name: str,
    current: bytes | None,
    existing: ExistingUnit | None = None,
) -> list[str]:
    """Why writing `unit_name` over `current` (the host's file now; None: absent) is
    refused; empty when it may be written. `existing`: what systemd loads under that
    name (`deploys.existing_units`), when it was asked."""
    denied = denied_unit_reason(unit_name)
    if denied:
        return [denied]
    return _foreign_file_problem(host, unit_name, current) + loaded_elsewhere_problems(
        host=host, unit_name=unit_name, existing=existing
    )


__all__ = [
    "DENIED_UNIT_PATTERNS",
    "adoption_for",
    "denied_unit_reason",
    "is_managed",
    "loaded_elsewhere_problems",
    "overwrite_problems",
]
