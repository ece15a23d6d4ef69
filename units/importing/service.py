"""`import_unit()`: a hand-written unit file → a profile whose rendered unit runs the same
commands (docs/unit-import.md). Keyword-only and typed so the pages, `manage.py
importunit` and an API call it alike; it checks the caller's permission itself."""

from __future__ import annotations

import hashlib
import posixpath
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from django.contrib.auth.base_user import AbstractBaseUser
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import IntegrityError, transaction

from audit.models import AuditKind
from linting.context import UnitContext
from linting.findings import Finding
from linting.options import LintOptions
from linting.vllm.catalog import UnknownVllmVersion, available_versions, load_catalog
from linting.vllm.version import version_in_path
from units.importing.commandline import CommandLine, NotImportable, parse_command
from units.importing.sameness import Sameness, compare_units, unit_context
from units.importing.settings import map_settings
from units.linting import lint_rendered, profile_lint_options
from units.models import PROFILE_FIELDS, ProfileVersion, ServiceProfile, UnitImport
from units.profile_data import default_data, normalize_profile_data
from units.rendering import MAX_UNIT_BYTES, render_unit
from units.schema import FIELDS
from units.selectors import profile_latest_version
from units.services import _append_version, _audit, _insert_profile, profile_update
from units.validation import field_errors, size_errors

ADD = "units.add_serviceprofile"
CHANGE = "units.change_serviceprofile"
DEFAULT_SYSTEMD = FIELDS["target_systemd_version"].default
DEFAULT_VLLM = FIELDS["target_vllm_version"].default
# Fields whose values come from the unit; the rest keep a new profile's defaults.
_FROM_UNIT = frozenset(
    {*PROFILE_FIELDS} - {"name", "target_vllm_version", "target_systemd_version"}
)
_ALWAYS_OURS = frozenset({"name", "vllm_executable", "model"})


@dataclass(frozen=True)
class ImportResult:
    record: UnitImport
    created: bool  # False: this text was imported before, nothing new was written
    sameness: Sameness
    findings: list[Finding] = field(default_factory=list)

    @property
    def profile(self) -> ServiceProfile:
        return self.record.profile

    @property
    def version(self) -> ProfileVersion:
        return self.record.version


def unit_name_of(filename: str) -> str:
    """The profile's name: the file's name without `.service` (the unit name is how
    `%n`, `%i` and hosts know it, so it is kept)."""
    base = posixpath.basename(filename.replace("\\", "/")).strip()
    return base.removesuffix(".service")


def _targets(text_exe: str, vllm_version: str | None, systemd_version: int | None) -> LintOptions:
    version = vllm_version or version_in_path(text_exe) or DEFAULT_VLLM
    if version not in available_versions():
        version = DEFAULT_VLLM
    return LintOptions(systemd_version=systemd_version or DEFAULT_SYSTEMD, vllm_version=version)


def _exec_start(ctx: UnitContext) -> Any:
    commands = [c for c in ctx.commands if c.key == "ExecStart"]
    if len(commands) != 1:
        raise NotImportable(
            f"The unit has {len(commands)} ExecStart= commands; a profile runs exactly one."
        )
    return commands[0]


def map_unit(
    text: str, name: str, options: LintOptions, refused: frozenset[str]
) -> tuple[dict[str, Any], list[str]]:
    """Profile data for the unit text (fields not in `refused`), and notes on what was
    kept verbatim."""
    unit_name = f"{name}.service"
    ctx = unit_context(text, unit_name, options)
    command = _exec_start(ctx)
    catalog = load_catalog(options.vllm_version or DEFAULT_VLLM)
    line: CommandLine = parse_command(command, catalog, refused)
    settings = map_settings(ctx.unit, ctx.version, ctx.specifiers, refused)
    data = default_data() | {
        "name": name,
        "gpu_free_wait": False,  # the unit's own ExecStartPre= lines are kept instead
        **settings.fields,
        **line.fields,
        "extra_args": line.extra_args,
        "extra_args_verbatim": line.verbatim,
        "command_layout": line.layout,
        "unit_extra": settings.extra,
        "target_vllm_version": options.vllm_version,
        "target_systemd_version": options.systemd_version,
    }
    return normalize_profile_data(data), line.notes + settings.notes


def build_profile_data(
    text: str, name: str, options: LintOptions, dropins: Sequence[tuple[str, str]] = ()
) -> tuple[dict[str, Any], Sameness, list[str]]:
    """Map, drop into verbatim whatever a field refuses, and check; when the check still
    finds a difference, map again with no field but the program and the model."""
    refused: frozenset[str] = frozenset()
    for _ in range(4):
        data, notes = map_unit(text, name, options, refused)
        errors = set(field_errors(data)) - refused
        if not errors:
            break
        if errors & _ALWAYS_OURS or "__all__" in errors:
            raise NotImportable(_describe(field_errors(data), errors & _ALWAYS_OURS or {"__all__"}))
        refused |= errors
    sameness = compare_units(text, render_unit(data), f"{name}.service", options, dropins)
    if not sameness.equal and refused != _FROM_UNIT - _ALWAYS_OURS:
        plain, notes = map_unit(text, name, options, _FROM_UNIT - _ALWAYS_OURS)
        retry = compare_units(text, render_unit(plain), f"{name}.service", options, dropins)
        if retry.equal and not field_errors(plain):
            return plain, retry, [*notes, "Mapped to fields it could not match: kept verbatim."]
    return data, sameness, notes


def _describe(errors: dict[str, list[str]], names: set[str]) -> str:
    return " ".join(
        f"{FIELDS[n].label if n in FIELDS else 'The unit'}: {' '.join(errors[n])}" for n in names
    )


def import_unit(
    *,
    text: str,
    filename: str,
    actor: AbstractBaseUser | None,
    host: str = "",
    vllm_version: str | None = None,
    systemd_version: int | None = None,
    dropins: Sequence[tuple[str, str]] = (),
) -> ImportResult:
    """Create a profile from unit `text` (`filename` gives its name), or return the
    import of the same text made before. `host`: the host it was read from (recorded;
    its versions, when given, are the lint targets). `dropins`: the unit's drop-ins
    `(path, text)` as read there; they stay on the host, the check compares with them
    on both sides, and the import keeps their text. ValidationError says what cannot be
    imported and why; nothing is written then."""
    if actor is not None and not actor.has_perm(ADD):
        raise PermissionDenied("Importing a unit creates a profile: you may not add profiles.")
    name = unit_name_of(filename)
    if len(text.encode("utf-8")) > MAX_UNIT_BYTES:
        raise ValidationError(f"The unit is larger than {MAX_UNIT_BYTES} bytes.")
    sha = hashlib.sha256(text.encode("utf-8")).hexdigest()
    earlier = UnitImport.objects.select_related("profile", "version").filter(
        unit_name=name, sha256=sha
    )
    if earlier.exists():
        record = earlier.get()
        return ImportResult(record, False, _verdict(record))
    options = _targets(_first_exe(text), vllm_version, systemd_version)
    try:
        data, sameness, notes = build_profile_data(text, name, options, dropins)
        notes += [
            f"Drop-in {path} (stays on the host, compared as is):\n{t}" for path, t in dropins
        ]
    except (NotImportable, UnknownVllmVersion) as exc:
        raise ValidationError(f"{name}.service cannot be imported: {exc}") from exc
    _check_savable(data)
    record = _save(data, text, sha, filename, host, sameness, notes, actor)
    findings = lint_rendered(
        record.version.unit_text,
        f"{name}.service",
        f"{name}.service",
        profile_lint_options(data),
    ).findings
    return ImportResult(record, True, sameness, findings)


def import_unit_version(
    *, profile: ServiceProfile, text: str, actor: AbstractBaseUser | None
) -> ImportResult:
    """A new version of `profile` from unit `text` (a repository's unit, pushed again by
    CI), mapped as `import_unit` maps it, for the profile's target versions. The same
    text again returns its earlier import (nothing written). Refused unless the rendered
    unit runs the same commands: a version CI pushes must mean what its file says."""
    if actor is not None and not actor.has_perm(CHANGE):
        raise PermissionDenied("You may not change profiles.")
    if len(text.encode("utf-8")) > MAX_UNIT_BYTES:
        raise ValidationError(f"The unit is larger than {MAX_UNIT_BYTES} bytes.")
    sha = hashlib.sha256(text.encode("utf-8")).hexdigest()
    earlier = UnitImport.objects.filter(unit_name=profile.name, sha256=sha).first()
    if earlier is not None:
        return ImportResult(earlier, False, _verdict(earlier))
    options = LintOptions(
        systemd_version=profile.target_systemd_version, vllm_version=profile.target_vllm_version
    )
    try:
        data, sameness, notes = build_profile_data(text, profile.name, options)
    except (NotImportable, UnknownVllmVersion) as exc:
        raise ValidationError(f"{profile.name}.service cannot be imported: {exc}") from exc
    if not sameness.equal:
        raise ValidationError(
            f"{profile.name}.service would not run the same commands as a profile: "
            + "; ".join(sameness.argv_differences + sameness.environment_differences)
        )
    with transaction.atomic():
        version = profile_update(
            profile=profile,
            data=data,
            updated_by=actor,
            comment=f"Imported {profile.name}.service",
        ) or profile_latest_version(profile=profile)
        assert version is not None  # a profile always has version 1
        record = UnitImport.objects.create(
            unit_name=profile.name,
            sha256=sha,
            original_text=text,
            source=f"{profile.name}.service",
            profile=profile,
            version=version,
            argv_equal=True,
            environment_equal=True,
            differences=[],
            notes=notes,
            setting_differences=sameness.setting_differences,
            created_by=actor,
        )
    return ImportResult(record, True, sameness)


def _first_exe(text: str) -> str:
    for line in text.splitlines():
        if line.strip().startswith("ExecStart="):
            return line.split("=", 1)[1].split(" ", 1)[0]
    return ""


def _check_savable(data: dict[str, Any]) -> None:
    """The fields pass their checks and the unit fits; lint findings do not block an
    import (the original had them; they are shown, and block the next edit's save)."""
    errors = field_errors(data) or size_errors(data)
    if errors:
        raise ValidationError(errors)


def _verdict(record: UnitImport) -> Sameness:
    argv = [d for d in record.differences if d.startswith("Exec")]
    env = [d for d in record.differences if not d.startswith("Exec")]
    return Sameness(record.argv_equal, record.environment_equal, 0, argv, env)


def _save(
    data: dict[str, Any],
    text: str,
    sha: str,
    source: str,
    host: str,
    sameness: Sameness,
    notes: list[str],
    actor: AbstractBaseUser | None,
) -> UnitImport:
    where = f" from {host}" if host else ""
    try:
        with transaction.atomic():
            profile = _insert_profile(data)
            version = _append_version(
                profile=profile,
                data=data,
                changed=PROFILE_FIELDS,
                created_by=actor,
                comment=f"Imported {data['name']}.service{where}",
            )
            record = UnitImport.objects.create(
                unit_name=data["name"],
                sha256=sha,
                original_text=text,
                source=source[:300],
                host_name=host[:100],
                profile=profile,
                version=version,
                argv_equal=sameness.argv_equal,
                environment_equal=sameness.environment_equal,
                differences=sameness.argv_differences + sameness.environment_differences,
                notes=notes,
                setting_differences=sameness.setting_differences,
                created_by=actor,
            )
            _audit(
                AuditKind.PROFILE_CREATED,
                actor,
                profile,
                {
                    "version": version.number,
                    "imported": f"{data['name']}.service",
                    "host": host,
                    "sha256": sha,
                    "argv_equal": sameness.argv_equal,
                    "environment_equal": sameness.environment_equal,
                },
            )
    except IntegrityError:
        found = UnitImport.objects.filter(unit_name=data["name"], sha256=sha).first()
        if found is None:
            raise
        return found
    return record
