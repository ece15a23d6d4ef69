"""Importing a unit that runs on a host into a profile (units.importing does the work;
docs/unit-import.md). The file is read live, with its drop-ins, linted for the host's
probed versions, and the import is in the audit history with the host and the file's
sha256. Importing never lets specadmin overwrite the file: that still takes an admin's
adoption of exactly this file (deploys.services.unit_adoptions) and an approved deploy
request of the profile."""

from __future__ import annotations

from typing import TYPE_CHECKING

from django.core.exceptions import ValidationError

from deploys.connect import transport_for
from deploys.models import Host
from deploys.services.hosts import transport_error
from deploys.unit_policy import check_unit_name, is_managed
from hostops.channel import Transport, TransportError
from hostops.channel.push import DEFAULT_UNIT_DIR
from units.importing.service import ImportResult, import_unit

if TYPE_CHECKING:
    from django.contrib.auth.models import AbstractBaseUser as User

MAX_DROPINS = 50


def _dropins(transport: Transport, unit_name: str) -> list[tuple[str, str]]:
    """(path, text) of `NAME.service.d/*.conf`, in the order systemd reads them."""
    directory = f"{DEFAULT_UNIT_DIR}/{unit_name}.service.d"
    found = transport.run(
        ["find", directory, "-maxdepth", "1", "-type", "f", "-name", "*.conf"], timeout=30
    )
    paths = sorted(p for p in found.stdout_text.splitlines() if p.endswith(".conf"))
    result = []
    for path in paths[:MAX_DROPINS]:
        data = transport.read_file(path)
        if data is not None:
            result.append((path, data.decode("utf-8", "replace")))
    return result


def import_host_unit(*, host: Host, unit_name: str, actor: User) -> ImportResult:
    """Create a profile from `<unit_name>.service` as it is on `host` now (see
    units.importing.service.import_unit); the drop-ins stay on the host and are part of
    what the check compares."""
    unit_name = unit_name.strip().removesuffix(".service")
    check_unit_name(unit_name)
    try:
        with transport_for(host) as transport:
            data = transport.read_file(f"{DEFAULT_UNIT_DIR}/{unit_name}.service")
            dropins = _dropins(transport, unit_name) if data is not None else []
    except TransportError as exc:
        raise transport_error(f"Cannot read {unit_name}.service on {host.name}", exc) from exc
    if data is None:
        raise ValidationError(f"{host.name} has no {unit_name}.service to import.")
    if is_managed(data):
        raise ValidationError(f"{unit_name}.service on {host.name} is specadmin's already.")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ValidationError(f"{unit_name}.service on {host.name} is not UTF-8 text.") from exc
    result = import_unit(
        text=text,
        filename=f"{unit_name}.service",
        actor=actor,
        host=host.name,
        vllm_version=host.vllm_version or None,
        systemd_version=host.systemd_version,
        dropins=dropins,
    )
    return result


__all__ = ["import_host_unit"]
