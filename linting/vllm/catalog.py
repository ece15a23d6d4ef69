"""Per-version facts about `vllm serve` arguments, loaded from generated JSON.

The catalogs in ``linting/vllm/catalogs/`` are produced by
``tools/gen_vllm_catalog.py`` from the released wheels (read with ``ast``,
never imported) and must not be edited by hand.  This module is stdlib-only
so the linter runs without Django or vLLM installed.

Spelling rules encoded in :meth:`VllmCatalog.resolve_flag` follow what the
real parser does before and during ``argparse``:

* ``FlexibleArgumentParser.parse_args`` (``vllm/utils.py:1334`` in 0.8.5,
  ``vllm/utils/__init__.py:1848`` in 0.11, ``vllm/utils/argparse_utils.py``
  from 0.12) rewrites ``_`` to ``-`` in ``--`` options: the whole key in
  0.8.x, only the part before the first ``.`` from 0.11 on; ``--key=value``
  is split on the first ``=``.
* From 0.11, ``--json-arg.key value`` / ``--json-arg.key+ v`` are folded into
  ``--json-arg '{"key": ...}'``.
* ``-O3`` becomes ``-O.level=3`` (0.11) or ``--optimization-level 3`` (0.16+).
* ``argparse`` itself (``allow_abbrev`` is never disabled by vLLM) accepts a
  unique prefix of a long option, ``-x=value`` and ``-xVALUE`` for a
  two-character short option.
"""

from __future__ import annotations

import difflib
import json
import re
from bisect import bisect_left
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from functools import cache
from pathlib import Path
from types import MappingProxyType
from typing import Any

from linting.vllm.demo_server import ENGINE_SOURCE, OWN_OPTIONS, SOURCE

CATALOG_DIR = Path(__file__).resolve().parent / "catalogs"
_FILE_RE = re.compile(r"^vllm-(?P<version>\d+(?:\.\d+)*(?:\.post\d+)?)\.json$")


class UnknownVllmVersion(ValueError):
    """No generated catalog exists for the requested vLLM version."""


def _version_key(version: str) -> tuple[int, ...]:
    """Numeric sort key: 0.8.5 < 0.11.0 < 0.33.0 (strings would sort wrongly)."""
    return tuple(int(p.removeprefix("post")) for p in version.split("."))


def available_versions() -> list[str]:
    """Versions that have a generated catalog, oldest first."""
    found = []
    for path in CATALOG_DIR.glob("vllm-*.json"):
        m = _FILE_RE.match(path.name)
        if m:
            found.append(m.group("version"))
    return sorted(found, key=_version_key)


@dataclass(frozen=True)
class FlagSpec:
    """One argparse action of `vllm serve`, with every option string it accepts."""

    names: tuple[str, ...]
    dest: str
    kind: str  # value | store_true | store_false | boolean_optional
    type: str | None  # int | float | str | json | human_int | bool | None
    choices: tuple[str, ...] | None
    nargs: str | int | None
    deprecated: bool
    source: str
    also_accepts: tuple[str, ...] = ()

    @property
    def canonical(self) -> str:
        return self.names[0]

    @property
    def takes_value(self) -> bool:
        return self.kind == "value"

    def is_negative(self, name: str) -> bool:
        """True when `name` sets a boolean_optional flag to False.

        `--no-x` comes from argparse.BooleanOptionalAction; 0.33's
        EnableDisableAction (vllm/utils/argparse_utils.py) adds `--disable-x`
        for `--enable-x` (and the reverse).
        """
        if self.kind != "boolean_optional" or name not in self.names:
            return False
        if name.startswith("--no-"):
            return True
        positive = self.names[0]
        for prefix, inverse in (("--enable-", "--disable-"), ("--disable-", "--enable-")):
            if positive.startswith(prefix) and name == inverse + positive[len(prefix) :]:
                return True
        return False


@dataclass(frozen=True)
class SpecFieldSpec:
    """One key accepted inside `--speculative-config`."""

    type: str
    default: Any
    nullable: bool
    source: str
    choices: tuple[Any, ...] | None = None


@dataclass(frozen=True)
class SpecConfigSpec:
    """What `SpeculativeConfig(**json.loads(value))` accepts in one version."""

    fields: Mapping[str, SpecFieldSpec]
    internal_keys: tuple[str, ...]
    methods_declared: tuple[str, ...]
    methods_accepted: tuple[str, ...]
    unknown_keys: str  # type_error | ignored | validation_error
    shorthand_flags: Mapping[str, str]
    dash_keys_normalised: bool
    source: str


@dataclass(frozen=True)
class ParserRules:
    """How FlexibleArgumentParser rewrites argv before argparse sees it."""

    underscore_to_dash: str  # whole_key | before_first_dot
    allow_abbrev: bool
    dotted_json_keys: bool
    model_option: str  # error | moved_to_positional | allowed
    dash_o_rewrite: str | None
    source: str
    # A dotted key's value that is not JSON goes through human_readable_int (0.33).
    dotted_values_human_int: bool = False


# How many resolved words a catalog remembers before it starts afresh.
_RESOLVED_LIMIT = 10_000


@dataclass(frozen=True)
class FlagMatch:
    """How one argv word resolved to a flag."""

    spec: FlagSpec
    name: str  # the option string argparse ends up matching
    spelling: str  # exact | normalised | abbreviation | short_concat | dash_o
    value: str | None = None  # inline value (`--x=1`, `-q=fp8`, `-O3`)
    json_path: tuple[str, ...] = ()  # `--speculative-config.method` -> ("method",)


@dataclass(frozen=True)
class VllmCatalog:
    """Facts about one vLLM version's `vllm serve` command line."""

    version: str
    archive: str  # the sdist or wheel it was generated from
    archive_sha256: str
    positionals: tuple[str, ...]
    flags: tuple[FlagSpec, ...]
    speculative_config: SpecConfigSpec
    removed_flags: tuple[str, ...]
    parser: ParserRules
    runtime_choices: Mapping[str, tuple[str, ...]]
    notes: tuple[str, ...]
    # What `docker run vllm/vllm-openai:vX …` runs before the arguments after the image.
    image_entrypoint: tuple[str, ...] | None = None
    # Flags only `python -m vllm.entrypoints.openai.api_server` has: EngineArgs.add_cli_args
    # reads sys.argv (0.9.0 adds `--model` only without "serve").
    api_server_flags: tuple[FlagSpec, ...] = ()
    _by_name: Mapping[str, FlagSpec] = field(repr=False, compare=False, init=False)
    _sorted_names: tuple[str, ...] = field(repr=False, compare=False, init=False)
    _api_server: list[VllmCatalog] = field(repr=False, compare=False, init=False)
    _demo_server: list[VllmCatalog] = field(repr=False, compare=False, init=False)
    _resolved: dict[str, FlagMatch | None] = field(repr=False, compare=False, init=False)

    def __post_init__(self) -> None:
        index = {name: spec for spec in self.flags for name in spec.names}
        object.__setattr__(self, "_by_name", MappingProxyType(index))
        object.__setattr__(self, "_sorted_names", tuple(sorted(index)))
        object.__setattr__(self, "_api_server", [])
        object.__setattr__(self, "_demo_server", [])
        object.__setattr__(self, "_resolved", {})

    def for_demo_server(self) -> VllmCatalog:
        """This release's flags as `python -m vllm.entrypoints.api_server` has them: its
        own few and the engine's (linting/vllm/demo_server.py)."""
        if not self._demo_server:
            own = tuple(
                FlagSpec(
                    (name,), name[2:].replace("-", "_"), kind, kind_type, None, None, False, SOURCE
                )
                for name, kind, kind_type in OWN_OPTIONS
            )
            flags = own + tuple(f for f in self.flags if f.source.startswith(ENGINE_SOURCE))
            self._demo_server.append(
                replace(self, flags=flags, api_server_flags=(), positionals=())
            )
        return self._demo_server[0]

    def for_api_server(self) -> VllmCatalog:
        """This release's flags as the OpenAI api_server module's parser has them."""
        if not self.api_server_flags:
            return self
        if not self._api_server:
            flags = self.flags + self.api_server_flags
            self._api_server.append(replace(self, flags=flags, api_server_flags=()))
        return self._api_server[0]

    @property
    def all_names(self) -> tuple[str, ...]:
        return self._sorted_names

    def names_starting_with(self, prefix: str) -> list[str]:
        """Option strings that start with `prefix`, sorted (a bisect, not a scan)."""
        names = self._sorted_names
        found = []
        for i in range(bisect_left(names, prefix), len(names)):
            if not names[i].startswith(prefix):
                break
            found.append(names[i])
        return found

    def _normalise(self, key: str) -> str:
        """FlexibleArgumentParser's `_` -> `-` rewrite of a `--key`."""
        if not key.startswith("--"):
            return key
        body = key[2:]
        if self.parser.underscore_to_dash == "whole_key":
            return "--" + body.replace("_", "-")
        head, dot, tail = body.partition(".")
        return "--" + head.replace("_", "-") + dot + tail

    def _lookup(self, key: str) -> tuple[FlagSpec, str, str] | None:
        """Exact, then argparse unique-prefix match of an option string."""
        spec = self._by_name.get(key)
        if spec is not None:
            return spec, key, "exact"
        if self.parser.allow_abbrev and key.startswith("--") and len(key) > 2:
            hits = {n: self._by_name[n] for n in self.names_starting_with(key)}
            specs = {id(s): s for s in hits.values()}
            if len(specs) == 1:
                return next(iter(specs.values())), min(hits), "abbreviation"
        return None

    def resolve_flag(self, word: str) -> FlagMatch | None:
        """Resolve one argv word the way `vllm serve` would, or None if unknown.

        Remembered per catalog (a frozen answer for a word): the parser asks twice for
        every option word, and a run's units repeat the same options (16,000 lookups
        on 1,000 units, most of them the same few dozen words)."""
        try:
            return self._resolved[word]
        except KeyError:
            pass
        if len(self._resolved) >= _RESOLVED_LIMIT:  # a long-lived web worker
            self._resolved.clear()
        found = self._resolved[word] = self._resolve(word)
        return found

    def _resolve(self, word: str) -> FlagMatch | None:
        if not word.startswith("-") or word in ("-", "--"):
            return None
        if word.startswith("--"):
            return self._long_option(word)
        return self._dash_o(word) or self._short_option(word)

    def _long_option(self, word: str) -> FlagMatch | None:
        """`--x`, `--x=v`, `--x_y` (FlexibleArgumentParser's `_` → `-`), a unique prefix,
        `--json-arg.key` (from 0.11)."""
        key, eq, value = word.partition("=")
        inline = value if eq else None
        normalised = self._normalise(key)
        path: tuple[str, ...] = ()
        if self.parser.dotted_json_keys and "." in normalised:
            normalised, _, rest = normalised.partition(".")
            path = tuple(p for p in rest.removesuffix("+").split(".") if p)
        found = self._lookup(normalised)
        if found is None:
            return None
        spec, name, how = found
        if how == "exact" and normalised != key.partition(".")[0]:
            how = "normalised"
        return FlagMatch(spec, name, how, inline, path)

    def _dash_o(self, word: str) -> FlagMatch | None:
        """`-O3` → `-O.level=3` (0.11) or `--optimization-level 3` (0.16+)."""
        rewrite = self.parser.dash_o_rewrite
        if not word.startswith("-O") or self._by_name.get(word) or not rewrite:
            return None
        level = word[3:] if word[2:3] == "=" else word[2:]
        if word[2:3] == "." or not level:
            return None
        if rewrite == "-O.level":
            spec = self._by_name.get("-O")
            return FlagMatch(spec, "-O", "dash_o", level, ("level",)) if spec else None
        spec = self._by_name.get(rewrite)
        return FlagMatch(spec, spec.canonical, "dash_o", level) if spec else None

    def _short_option(self, word: str) -> FlagMatch | None:
        """`-x`, `-x=v`, `-xVALUE` (argparse), `-x.key` (dotted JSON keys)."""
        if self.parser.dotted_json_keys and "." in word:
            key, _, rest = word.partition(".")
            rest, eq, value = rest.partition("=")
            spec = self._by_name.get(key)
            if spec is not None:
                path = tuple(p for p in rest.removesuffix("+").split(".") if p)
                return FlagMatch(spec, key, "exact", value if eq else None, path)
        key, eq, value = word.partition("=")
        spec = self._by_name.get(key)
        if spec is not None:
            return FlagMatch(spec, key, "exact", value if eq else None)
        short = self._by_name.get(word[:2])
        if short is not None and short.takes_value and len(word) > 2:
            return FlagMatch(short, word[:2], "short_concat", word[2:])
        return None

    def flag(self, name: str) -> FlagSpec | None:
        """The flag an option string (any accepted spelling) refers to."""
        match = self.resolve_flag(name)
        return match.spec if match else None

    def suggest_flag(self, name: str) -> str | None:
        """Closest known option string, for "did you mean" messages."""
        key = self._normalise(name.partition("=")[0])
        if key.startswith("-") and not key.startswith("--") and len(key) > 3:
            key = "-" + key  # `-tensor-parallel-size` -> `--tensor-...`
        close = difflib.get_close_matches(key, self.all_names, n=1, cutoff=0.6)
        return close[0] if close else None


def _tuple_or_none(value: list[Any] | None) -> tuple[Any, ...] | None:
    return None if value is None else tuple(value)


def _flag(f: dict[str, Any]) -> FlagSpec:
    return FlagSpec(
        names=tuple(f["names"]),
        dest=f["dest"],
        kind=f["kind"],
        type=f["type"],
        choices=_tuple_or_none(f["choices"]),
        nargs=f["nargs"],
        deprecated=f["deprecated"],
        source=f["source"],
        also_accepts=tuple(f.get("also_accepts", ())),
    )


def _parse(data: dict[str, Any]) -> VllmCatalog:
    flags = tuple(_flag(f) for f in data["flags"])
    spec = data["speculative_config"]
    fields = {
        name: SpecFieldSpec(
            type=f["type"],
            default=f["default"],
            nullable=f.get("nullable", False),
            source=f["source"],
            choices=_tuple_or_none(f.get("choices")),
        )
        for name, f in spec["fields"].items()
    }
    spec_config = SpecConfigSpec(
        fields=MappingProxyType(fields),
        internal_keys=tuple(spec.get("internal_keys", ())),
        methods_declared=tuple(spec["methods_declared"]),
        methods_accepted=tuple(spec["methods_accepted"]),
        unknown_keys=spec["unknown_keys"],
        shorthand_flags=MappingProxyType(dict(spec["shorthand_flags"])),
        dash_keys_normalised=spec.get("dash_keys_normalised", False),
        source=spec.get("method_source", ""),
    )
    p = data["parser"]
    parser = ParserRules(
        underscore_to_dash=p["underscore_to_dash"],
        allow_abbrev=p["allow_abbrev"],
        dotted_json_keys=p["dotted_json_keys"],
        model_option=p["model_option"],
        dash_o_rewrite=p.get("dash_O_rewrite"),
        source=p["source"],
        dotted_values_human_int=p.get("dotted_values_human_int", False),
    )
    runtime = {k: tuple(v["values"]) for k, v in data.get("runtime_choices", {}).items()}
    return VllmCatalog(
        version=data["vllm_version"],
        archive=data["archive"],
        archive_sha256=data["archive_sha256"],
        positionals=tuple(data["positionals"]),
        flags=flags,
        speculative_config=spec_config,
        removed_flags=tuple(data["removed_flags"]),
        parser=parser,
        runtime_choices=MappingProxyType(runtime),
        notes=tuple(data.get("notes", ())),
        image_entrypoint=_tuple_or_none(data.get("image_entrypoint")),
        api_server_flags=tuple(_flag(f) for f in data.get("api_server_flags", ())),
    )


@cache
def load_catalog(version: str) -> VllmCatalog:
    """Load the catalog for `version` (e.g. "0.16.0")."""
    # Only a listed version becomes a file name: a 5,000-character one would make the
    # file system answer ENAMETOOLONG (found by tests/specadmin/test_fuzz_pages.py).
    path = CATALOG_DIR / f"vllm-{version[:64]}.json"
    if version not in available_versions() or not _FILE_RE.match(path.name) or not path.is_file():
        available = ", ".join(available_versions()) or "none"
        raise UnknownVllmVersion(f"no vLLM catalog for version {version!r}; available: {available}")
    with path.open(encoding="utf-8") as fh:
        return _parse(json.load(fh))


def _default_version() -> str:
    versions = available_versions()
    return versions[-1] if versions else ""


DEFAULT_VLLM_VERSION: str = _default_version()
"""Newest version with a catalog: what an unpinned unit is linted against."""

DECISIONS_FILE = CATALOG_DIR / "decisions.json"
_RELEASE = re.compile(r"\d+(?:\.\d+)+(?:\.post\d+)?")


@dataclass(frozen=True)
class CatalogChoice:
    """Which catalog lints a requested vLLM version, and the note to show when it is not
    that version's own (or an identical one)."""

    requested: str
    catalog: VllmCatalog
    note: str | None = None


@cache
def decisions() -> Mapping[str, Mapping[str, str]]:
    """The generator's decision for every release it saw (tools/gen_vllm_catalog.py --all):
    `catalog`, `same-as` (an identical catalog), or `no-catalog`."""
    if not DECISIONS_FILE.is_file():
        return MappingProxyType({})
    data = json.loads(DECISIONS_FILE.read_text(encoding="utf-8"))
    return MappingProxyType({k: MappingProxyType(v) for k, v in data["releases"].items()})


def is_release(version: str) -> bool:
    """A version string of the form vLLM releases have (`0.16.0`, `0.8.5.post1`)."""
    return len(version) <= 32 and _RELEASE.fullmatch(version) is not None


@cache
def choose_catalog(version: str) -> CatalogChoice:
    """The catalog for `version`: its own, the identical one the decisions name, else the
    nearest older one (the oldest for a release older than all) with a note saying so.
    Raises UnknownVllmVersion only for a string that is not a release number."""
    if not is_release(version):
        raise UnknownVllmVersion(
            f"no vLLM catalog for version {version[:40]!r}: not a release number (like "
            f"0.16.0); catalogs: {', '.join(available_versions())}"
        )
    versions = available_versions()
    if version in versions:
        return CatalogChoice(version, load_catalog(version))
    decision = decisions().get(version, {})
    if decision.get("decision") == "same-as" and decision.get("catalog") in versions:
        return CatalogChoice(version, load_catalog(decision["catalog"]))
    older = [v for v in versions if _version_key(v) < _version_key(version)]
    nearest = older[-1] if older else versions[0]
    if decision.get("decision") == "no-catalog":
        why = f"vLLM {version} has no catalog ({decision.get('reason', 'not generated')})"
    elif (
        older and version not in decisions() and _version_key(version) > _version_key(versions[-1])
    ):
        why = f"vLLM {version} is newer than every catalog"
    else:
        why = f"vLLM {version} has no catalog of its own"
    where = "the nearest older one" if older else "the oldest one"
    return CatalogChoice(version, load_catalog(nearest), f"{why}; linted with {nearest}'s, {where}")
