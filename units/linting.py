"""Linting profiles as rendered: the gate before a save, the live preview, and
`lintunits --profiles` for CI over a database of profiles.

The linter itself knows nothing of Django (`linting/` rule); this module feeds it the
rendered text and maps findings back to profile fields through the rendering's line map.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass
from typing import Any

from linting.engine import lint_units
from linting.findings import Finding, Severity
from linting.options import LintOptions
from linting.report import InputError, Report
from linting.unitfile import UnitFile, parse_text
from units.models import ServiceProfile
from units.profile_data import normalize_profile_data
from units.rendering import LineInfo, line_map, render_unit
from units.selectors import profile_latest_version

# Keys of the speculative config → the profile field a finding about them belongs to.
_SPEC_KEY_FIELDS = (
    ("prompt_lookup_min", "spec_prompt_lookup_min"),
    ("prompt_lookup_max", "spec_prompt_lookup_max"),
    ("num_speculative_tokens", "spec_num_tokens"),
    ("draft_tensor_parallel_size", "spec_draft_tensor_parallel_size"),
    ("model", "spec_draft_model"),
)


def profile_lint_options(data: dict[str, Any], base: LintOptions | None = None) -> LintOptions:
    """`base` (default: everything on, ShellCheck included) with the profile's target
    versions wherever `base` does not pin one."""
    base = base or LintOptions()
    return dataclasses.replace(
        base,
        systemd_version=base.systemd_version or data.get("target_systemd_version") or None,
        vllm_version=base.vllm_version or data.get("target_vllm_version") or None,
    )


def lint_rendered(text: str, path: str, unit_name: str, options: LintOptions) -> Report:
    """Lint unit text shown under `path`, with `unit_name` for specifiers like `%n`."""
    unit = parse_text(text, path, UnitFile(path=path, name=unit_name))
    return lint_units([unit], options)


def lint_beside(
    text: str, unit_name: str, neighbours: dict[str, str], options: LintOptions
) -> Report:
    """Lint unit text `unit_name` (e.g. "a.service") as one machine's unit beside
    `neighbours` (unit name → text of the units that already run there), so the
    cross-unit rules (VL325: one port twice) see them; only `unit_name`'s findings are
    returned, the neighbours' own findings are theirs."""
    names = [unit_name, *(name for name in neighbours if name != unit_name)]
    texts = {unit_name: text, **{name: neighbours[name] for name in names[1:]}}
    units = [parse_text(texts[name], name, UnitFile(path=name, name=name)) for name in names]
    # One --same-host group: the run then treats them as one machine whatever their paths.
    options = dataclasses.replace(options, same_host=(*options.same_host, tuple(names)))
    report = lint_units(units, options)
    return Report(
        files=[fr for fr in report.files if fr.path == unit_name],
        input_errors=report.input_errors,
    )


@dataclass(frozen=True)
class ProfileLint:
    """Profile data rendered once and linted once, with the line map that ties each finding
    to the form field that caused it. The save gate and the live preview both read it, so
    neither renders or lints a second time."""

    data: dict[str, Any]
    text: str
    report: Report
    lines: dict[int, LineInfo]

    def field_of(self, finding: Finding) -> str:
        """The profile field whose line holds the finding ("__all__" when none does), or
        the field that fixes it where that is another one (FIXED_AT)."""
        if finding.code in FIXED_AT:
            return FIXED_AT[finding.code]
        info = self.lines.get(finding.span.start.line)
        field = info.field if info else "__all__"
        return _spec_field(finding.message) if field == "spec_method" else field

    def by_field(self) -> dict[str, list[Finding]]:
        """Findings grouped by field, for showing them next to form fields."""
        result: dict[str, list[Finding]] = {}
        for finding in self.report.findings:
            result.setdefault(self.field_of(finding), []).append(finding)
        return result

    def describe(self, finding: Finding) -> str:
        """The finding worded for the form: which extra argument, then what happens."""
        info = self.lines.get(finding.span.start.line)
        prefix = f"“{' '.join(info.words)}”: " if info and info.field == "extra_args" else ""
        return prefix + finding.message


# Findings shown at the field that fixes them rather than at the line they point at:
# OP410 (vLLM as root on every interface) points at --host, but the profile's fix is a
# User= (docs/rules/OP410.md).
FIXED_AT: dict[str, str] = {"OP410": "user"}


def lint_profile(data: dict[str, Any], options: LintOptions | None = None) -> ProfileLint:
    """Render (valid) profile data and lint it against its target versions."""
    data = normalize_profile_data(data)
    text = render_unit(data)
    unit_name = f"{data['name'] or 'profile'}.service"
    report = lint_rendered(text, unit_name, unit_name, profile_lint_options(data, options))
    return ProfileLint(data, text, report, line_map(data, text))


def lint_profile_data(data: dict[str, Any], options: LintOptions | None = None) -> Report:
    """The lint report of the unit `data` renders to."""
    return lint_profile(data, options).report


def is_blocking(finding: Finding) -> bool:
    """Errors block a save: by the linter's convention an error means systemd or vLLM
    fails (load failure, argparse exit, engine refusing to start, a start-pre killed at
    its timeout) or runs something other than the profile says. Warnings never block."""
    return finding.severity >= Severity.ERROR


def _spec_field(message: str) -> str:
    for key, field in _SPEC_KEY_FIELDS:
        if re.search(rf"\b{key}\b", message):
            return field
    return "spec_method"


def lint_profiles(names: list[str] | None, options: LintOptions | None = None) -> Report:
    """Lint stored profiles as rendered by their latest version (all active profiles when
    `names` is None or empty); unknown names are input errors (exit status 2), as missing
    files are for `lintunits`. Each unit is shown as `profile:NAME@vN` and linted with its
    own target versions unless `options` pins them. Profiles are linted one by one: they
    run on different hosts, so cross-unit checks (duplicate ports) do not apply."""
    options = options or LintOptions()
    report = Report()
    if names:
        found = {p.name: p for p in ServiceProfile.objects.filter(name__in=names)}
        profiles = []
        for name in dict.fromkeys(names):
            if name in found:
                profiles.append(found[name])
            else:
                report.input_errors.append(InputError(f"profile:{name}", "no such profile"))
    else:
        profiles = list(ServiceProfile.objects.filter(archived=False).order_by("name"))
    for profile in profiles:
        version = profile_latest_version(profile=profile)
        if version is None:
            report.input_errors.append(
                InputError(f"profile:{profile.name}", "the profile has no saved version")
            )
            continue
        path = f"profile:{profile.name}@v{version.number}"
        single = lint_rendered(
            version.unit_text,
            path,
            profile.unit_name,
            profile_lint_options(version.data, options),
        )
        report.files.extend(single.files)
        report.input_errors.extend(single.input_errors)
    return report
