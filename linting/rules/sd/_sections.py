"""What the target systemd version accepts in a unit of this type (SD101, SD102, SD104,
SD115 read it)."""

from __future__ import annotations

from linting.context import UnitContext
from linting.systemd.catalog import UNIT_TYPES, SystemdCatalog, load_catalog


def catalog_for(ctx: UnitContext) -> SystemdCatalog:
    return load_catalog(ctx.version)


def allowed_sections(ctx: UnitContext) -> set[str]:
    """The sections of the unit's type; empty for a type the catalog does not know."""
    unit_type = ctx.unit.unit_type
    if unit_type not in UNIT_TYPES:
        return set()
    return catalog_for(ctx).sections_for_unit_type(unit_type)
