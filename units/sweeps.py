"""Sweeps: the variants of one profile version over a grid of speculative-decoding settings
and other vLLM flags, each rendered and validated for one vLLM release before anything
runs (docs/sweeps.md).

Pure reads: nothing here writes; `units.sweep_services` saves the accepted points as
versions of a cloned profile. A point goes through the same checks as a profile save
(`units.validation.validate_profile_data`: each field, then the rendered unit linted for
the release, ShellCheck included), so a point a trial would run is a point a person could
have saved by hand. Rejected points keep their reasons and are never run.

Axes apply to the methods that take them (`units.speculative.method_shape`): n-gram is
crossed with the prompt lookup bounds, a draft-model method gets the draft model path,
suffix and MTP only the token count. A method the release does not accept is one rejected
point, not one per combination.
"""

from __future__ import annotations

import hashlib
import itertools
import re
from dataclasses import dataclass, field
from typing import Any

from linting.vllm.catalog import available_versions, load_catalog
from units.profile_data import normalize_profile_data
from units.rendering import render_unit
from units.schema import DEST_FIELDS, FIELDS
from units.speculative import SPEC_FIELDS, method_shape, spec_methods
from units.validation import validate_profile_data

# At most this many points per sweep unless settings say otherwise
# (SPECADMIN_SWEEP_MAX_POINTS): each accepted point is one load and one benchmark on a
# host whose production is stopped meanwhile.
DEFAULT_MAX_POINTS = 16
NO_SPECULATION = ""  # the method value of a point without a speculative config
_FLAG = re.compile(r"--[a-z0-9][a-z0-9-]*\Z")
# Axes of the speculative config: grid key → profile field.
SPEC_AXES = (
    ("num_speculative_tokens", "spec_num_tokens"),
    ("prompt_lookup_max", "spec_prompt_lookup_max"),
    ("prompt_lookup_min", "spec_prompt_lookup_min"),
)


class SweepError(ValueError):
    """A grid that cannot be swept (too many points, a flag that is not one): the message
    says what to change."""


@dataclass(frozen=True)
class FlagAxis:
    """A vLLM flag and the values the sweep tries (`--max-num-seqs`: "32", "64")."""

    flag: str
    values: tuple[str, ...]


@dataclass(frozen=True)
class Grid:
    """What the user picked. Empty lists: the axis is not swept (the method's default)."""

    methods: tuple[str, ...]
    num_speculative_tokens: tuple[int, ...] = ()
    prompt_lookup_max: tuple[int, ...] = ()
    prompt_lookup_min: tuple[int, ...] = ()
    draft_model: str = ""
    flags: tuple[FlagAxis, ...] = ()

    def spec_values(self, key: str) -> tuple[int, ...]:
        values: tuple[int, ...] = getattr(self, key)
        return values


@dataclass(frozen=True)
class SweepPoint:
    """One variant: the settings it changes, the profile data and unit it renders to, and
    why it is rejected (empty: accepted)."""

    index: int
    label: str
    changes: dict[str, Any]
    data: dict[str, Any]
    unit_text: str
    reasons: tuple[str, ...] = ()

    @property
    def accepted(self) -> bool:
        return not self.reasons

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.unit_text.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class SweepPlan:
    """The grid expanded for one vLLM release: every point, accepted or not."""

    vllm_version: str
    points: list[SweepPoint] = field(default_factory=list)
    max_points: int = DEFAULT_MAX_POINTS

    @property
    def accepted(self) -> list[SweepPoint]:
        return [p for p in self.points if p.accepted]

    @property
    def rejected(self) -> list[SweepPoint]:
        return [p for p in self.points if not p.accepted]


def parse_numbers(text: str, what: str) -> tuple[int, ...]:
    """ "3, 5 8" → (3, 5, 8), in order, duplicates dropped; SweepError names the bad word."""
    values: list[int] = []
    for word in re.split(r"[\s,]+", text.strip()):
        if not word:
            continue
        if not word.isascii() or not word.isdigit() or len(word) > 6:
            raise SweepError(f"{what}: “{word}” is not a whole number (write e.g. 3, 5, 8).")
        values.append(int(word))
    return tuple(dict.fromkeys(values))


def parse_flags(text: str) -> tuple[FlagAxis, ...]:
    """One flag per line, its values after it: "--max-num-seqs 32, 64"."""
    axes: list[FlagAxis] = []
    seen: set[str] = set()
    for number, line in enumerate(text.splitlines(), start=1):
        words = [w for w in re.split(r"[\s,]+", line.strip()) if w]
        if not words:
            continue
        flag, values = words[0], tuple(dict.fromkeys(words[1:]))
        flag = flag.split("=", 1)[0] if "=" in flag else flag
        if "=" in words[0]:
            values = (words[0].split("=", 1)[1], *values)
        where = f"Other flags, line {number}"
        if not _FLAG.match(flag):
            raise SweepError(
                f"{where}: “{flag}” is not a vLLM flag (write e.g. --max-num-seqs 32, 64)."
            )
        if not values:
            raise SweepError(f"{where}: {flag} has no values to try.")
        if DEST_FIELDS.get(_dest(flag)) == "spec_method":
            raise SweepError(
                f"{where}: the speculative config is built from the method and its fields above."
            )
        if flag in seen:
            raise SweepError(f"{where}: {flag} is named twice; put all its values on one line.")
        seen.add(flag)
        axes.append(FlagAxis(flag, values))
    return tuple(axes)


def _dest(flag: str) -> str:
    return flag.removeprefix("--").replace("-", "_")


def _method_points(grid: Grid, method: str, accepted: list[str]) -> list[dict[str, Any]]:
    """The speculative settings of each point of `method` (profile field → value)."""
    if method == NO_SPECULATION:
        return [{"spec_method": ""}]
    shape = method_shape(method)
    if shape is None or (accepted and method not in accepted):
        return [{"spec_method": method}]  # one point, rejected by validation with the reason
    axes: list[list[tuple[str, Any]]] = []
    for key, field_name in SPEC_AXES:
        values = grid.spec_values(key)
        if field_name in shape.takes and values:
            axes.append([(field_name, v) for v in values])
    if "spec_draft_model" in shape.takes:
        axes.append([("spec_draft_model", grid.draft_model)])
    return [{"spec_method": method, **dict(combo)} for combo in itertools.product(*axes)]


def grid_size(grid: Grid, vllm_version: str) -> int:
    """How many points the grid expands to (before any is rendered)."""
    accepted = spec_methods(vllm_version)
    spec = sum(len(_method_points(grid, m, accepted)) for m in dict.fromkeys(grid.methods))
    for axis in grid.flags:
        spec *= len(axis.values)
    return spec


def _label(changes: dict[str, Any], flags: dict[str, str]) -> str:
    method = changes.get("spec_method") or ""
    parts = [method.replace("ngram", "n-gram") if method else "no speculation"]
    if changes.get("spec_num_tokens") is not None:
        parts.append(f"k={changes['spec_num_tokens']}")
    lo, hi = changes.get("spec_prompt_lookup_min"), changes.get("spec_prompt_lookup_max")
    if lo is not None or hi is not None:
        parts.append(f"lookup {lo if lo is not None else '·'}–{hi if hi is not None else '·'}")
    parts.extend(f"{flag} {value}" for flag, value in flags.items())
    return " ".join(parts)


def _without_flag(words: list[str], flag: str) -> list[str]:
    """Extra arguments without `flag` (as `--flag value` or `--flag=value`)."""
    out: list[str] = []
    skip = False
    for i, word in enumerate(words):
        if skip:
            skip = False
            continue
        if word == flag:
            nxt = words[i + 1] if i + 1 < len(words) else ""
            skip = bool(nxt) and not nxt.startswith("--")
            continue
        if word.startswith(flag + "="):
            continue
        out.append(word)
    return out


def _apply(
    base: dict[str, Any], spec: dict[str, Any], flags: dict[str, str], vllm_version: str
) -> tuple[dict[str, Any], dict[str, Any]]:
    """(profile data of the point, the fields it changes against `base`)."""
    data = dict(base)
    for name in ("spec_method", *SPEC_FIELDS):
        data[name] = spec.get(name, "" if name in ("spec_method", "spec_draft_model") else None)
    extra = list(base.get("extra_args") or [])
    for flag, value in flags.items():
        field_name = DEST_FIELDS.get(_dest(flag))
        if field_name is not None and field_name in FIELDS:
            data[field_name] = value
        else:
            extra = [*_without_flag(extra, flag), flag, value]
    data["extra_args"] = extra
    if vllm_version:
        data["target_vllm_version"] = vllm_version
    data = normalize_profile_data(data)
    changes = {k: v for k, v in data.items() if base.get(k) != v and k != "target_vllm_version"}
    return data, changes


def _reasons(errors: dict[str, list[str]]) -> tuple[str, ...]:
    out = []
    for name, messages in errors.items():
        where = FIELDS[name].label if name in FIELDS else ""
        for message in messages:
            named = not where or message.lower().startswith(where.lower())
            out.append(message if named else f"{where}: {message}")
    return tuple(out)


def build_sweep(
    base_data: dict[str, Any],
    grid: Grid,
    *,
    vllm_version: str,
    max_points: int = DEFAULT_MAX_POINTS,
) -> SweepPlan:
    """Every point of `grid` applied to `base_data` (a version's data), validated for
    `vllm_version` (the host's release; the version's own target when empty). SweepError
    when the grid has no point or more than `max_points`, before anything is rendered."""
    base = normalize_profile_data(base_data)
    version = vllm_version or base.get("target_vllm_version") or ""
    if not grid.methods:
        raise SweepError("Choose at least one method (or “no speculative decoding”).")
    size = grid_size(grid, version)
    if size > max_points:
        raise SweepError(
            f"This grid has {size} points; a sweep has at most {max_points}. "
            "Remove some values or methods."
        )
    accepted = spec_methods(version)
    base_text = render_unit(base)
    seen: dict[str, int] = {}
    points: list[SweepPoint] = []
    spec_points = [
        p for m in dict.fromkeys(grid.methods) for p in _method_points(grid, m, accepted)
    ]
    flag_combos = itertools.product(*([(a.flag, v) for v in a.values] for a in grid.flags))
    for spec, combo in itertools.product(spec_points, list(flag_combos)):
        flags = dict(combo)
        data, changes = _apply(base, spec, flags, version)
        index = len(points) + 1
        label = _label(spec, flags)
        reasons = _reasons(validate_profile_data(data))
        text = render_unit(data) if not reasons else ""
        if not reasons and text == base_text:
            reasons = ("The same unit as the version the sweep starts from.",)
        elif not reasons:
            digest = hashlib.sha256(text.encode("utf-8")).hexdigest()
            if digest in seen:
                reasons = (f"The same unit as point {seen[digest]}.",)
            else:
                seen[digest] = index
        points.append(SweepPoint(index, label, changes, data, text, reasons))
    return SweepPlan(version, points, max_points)


def method_choices() -> list[tuple[str, str]]:
    """Every method a profile can describe in any known release, in the newest release's
    order, after "no speculative decoding"; whether the chosen host's release accepts one
    is checked per point. The per-model MTP aliases (`deepseek_mtp`, …) are left out:
    vLLM maps them to `mtp`, which is offered."""
    seen: dict[str, None] = {}
    for version in reversed(available_versions()):
        for method in load_catalog(version).speculative_config.methods_accepted:
            if method_shape(method) is not None and not method.endswith("_mtp"):
                seen.setdefault(method)
    return [(NO_SPECULATION, "no speculative decoding"), *((m, m) for m in seen)]


__all__ = [
    "DEFAULT_MAX_POINTS",
    "NO_SPECULATION",
    "FlagAxis",
    "Grid",
    "SweepError",
    "SweepPlan",
    "SweepPoint",
    "build_sweep",
    "grid_size",
    "method_choices",
    "parse_flags",
    "parse_numbers",
]
