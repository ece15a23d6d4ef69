#!/usr/bin/env python3
"""Generate vLLM version catalogs for the linter from released sdists (or wheels).

Usage::

    python tools/gen_vllm_catalog.py --all          # every release from 0.8.0 on + decisions
    python tools/gen_vllm_catalog.py 0.16.0 0.33.0  # just these

For each release the sdist is fetched from PyPI (its sha256 checked against the index), or
the wheel with ``pip download --no-deps`` when there is no sdist, into a cache outside the
repository (``$VLLM_WHEEL_CACHE`` or ``/var/tmp/vllm-wheels``), and its sources are *read*
with :mod:`ast`. vLLM is never imported: it needs torch/CUDA. The output is
``linting/vllm/catalogs/vllm-<version>.json``; ``--all`` writes a catalog only for a release
whose content differs from the one before it, and ``decisions.json`` for every release.

Why a small abstract interpreter instead of a regex scrape: since ~0.9 vLLM
derives most flags from config dataclass fields (``get_kwargs`` /
``_compute_kwargs`` in ``vllm/engine/arg_utils.py``), so a flag's type,
choices and ``nargs`` only exist after evaluating type annotations (Literal
aliases, ``X | None`` unions, ``TYPE_CHECKING`` fallbacks such as
``QuantizationMethods = Any``) exactly the way that version's code does.  The
interpreter walks ``ServeSubcommand.subparser_init`` (``vllm/entrypoints/cli/
serve.py``) → ``make_arg_parser`` → ``FrontendArgs.add_cli_args`` →
``AsyncEngineArgs.add_cli_args`` → ``EngineArgs.add_cli_args`` statement by
statement, simulating ``sys.argv == ["vllm", "serve", "<model>"]``.

Anything it cannot evaluate statically is recorded in the catalog's
``notes`` rather than guessed silently; the generator fails loudly when a
construct it relies on is missing from a version.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parent.parent
if str(REPO_ROOT) not in sys.path:  # run as a script from a checkout
    sys.path.insert(0, str(REPO_ROOT))
from tools.vllm_catalog.flags import enable_disable_rule, finalize_flag  # noqa: E402
from tools.vllm_catalog.image import image_entrypoint  # noqa: E402
from tools.vllm_catalog.interpreter import (  # noqa: E402
    API_SERVER_ARGV,
    SIMULATED_ARGV,
    Interpreter,
)
from tools.vllm_catalog.kwargs_rules import KwargsRules  # noqa: E402
from tools.vllm_catalog.module_index import ModuleIndex  # noqa: E402
from tools.vllm_catalog.parser_rules import parser_rules  # noqa: E402
from tools.vllm_catalog.runtime_choices import runtime_choices  # noqa: E402
from tools.vllm_catalog.sources import (  # noqa: E402
    find_or_download_source,
    index_files,
    open_archive,
    sha256_of,
)
from tools.vllm_catalog.speculative import speculative_facts  # noqa: E402
from tools.vllm_catalog.symbolic import ClassRef, FuncRef, ParserVal, SubParsers  # noqa: E402
from tools.vllm_catalog.type_hints import TypeEvaluator  # noqa: E402

CATALOG_DIR = REPO_ROOT / "linting" / "vllm" / "catalogs"

DEFAULT_CACHE = Path(os.environ.get("VLLM_WHEEL_CACHE", "/var/tmp/vllm-wheels"))
DECISIONS_FILE = "decisions.json"
OLDEST = "0.8.0"  # the oldest release the linter models
RELEASE = r"\d+(?:\.\d+)+(?:\.post\d+)?"
# Keys that say where a fact comes from, not what it is.
NOT_CONTENT = frozenset(
    {
        "source",
        "notes",
        "archive",
        "archive_sha256",
        "vllm_version",
        "generated_by",
        "methods_accepted_reason",
        "unknown_keys_reason",
        "method_source",
    }
)

GENERATED_BY = "tools/gen_vllm_catalog.py"

# Legacy speculative-decoding flags (docs/architecture.md, "vLLM": "legacy flags
# `--speculative-model`, `--num-speculative-tokens`, `--ngram-prompt-lookup-*`
# are gone since 0.8").  Only those absent from a version are listed there.
LEGACY_SPEC_FLAGS = (
    "--speculative-model",
    "--num-speculative-tokens",
    "--ngram-prompt-lookup-max",
    "--ngram-prompt-lookup-min",
)


def build_catalog(version: str, wheel_path: Path) -> dict[str, Any]:
    """The catalog of one release from its sdist or wheel."""
    notes: list[str] = []
    with open_archive(wheel_path) as zf:
        index = ModuleIndex(zf)
        types = TypeEvaluator(index)
        rules = KwargsRules(index, types)
        inverse = enable_disable_rule(index)
        parser = serve_parser(index, rules, notes, SIMULATED_ARGV)
        flags = [
            finalize_flag(raw, inverse, notes) | {"origin": raw["origin"]} for raw in parser.flags
        ]
        # The same parser seen from `python -m vllm.entrypoints.openai.api_server`: flags
        # whose add_argument depends on sys.argv (0.9.0: `--model` only without "serve").
        module_parser = serve_parser(index, rules, [], API_SERVER_ARGV)
        serve_names = {n for raw in parser.flags for n in raw["names"]}
        api_server_flags = [
            finalize_flag(raw, inverse, [])
            for raw in module_parser.flags
            if not serve_names & set(raw["names"])
        ]
        serve_only = serve_names - {n for raw in module_parser.flags for n in raw["names"]}
        if serve_only:  # not modelled by the linter: fail loudly
            raise ValueError(f"flags only `vllm serve` has: {sorted(serve_only)}")
        seen: dict[str, str] = {}
        for f in flags:
            for n in f["names"]:
                if n in seen:
                    raise ValueError(f"duplicate option string {n}: {seen[n]} and {f['source']}")
                seen[n] = f["source"]
        spec = speculative_facts(index, types, flags, notes)
        runtime = runtime_choices(index, types, flags)
        prules = parser_rules(index)
        entrypoint = image_entrypoint(zf)
        notes.extend(rules.notes)
    for f in flags:
        f.pop("origin", None)
    notes.append(
        f"get_kwargs/_compute_kwargs reproduced from {rules.source_ref}; "
        f"human-readable int fields: {sorted(rules.human_int_names)}"
    )
    notes.append("argparse adds -h/--help, not listed in flags")
    notes.append("type 'human_int' with also_accepts ['auto','-1'] is human_readable_int_or_auto")
    notes.append("also_accepts ['', 'None'] = optional_type(): those strings parse to None")
    flags.sort(key=lambda f: f["names"][0])
    removed = [f for f in LEGACY_SPEC_FLAGS if f not in seen]
    # Only where they differ, so that every other catalog stays as it was.
    extra = {"api_server_flags": api_server_flags} if api_server_flags else {}
    return {
        "vllm_version": version,
        "generated_by": GENERATED_BY,
        "archive": wheel_path.name,
        "archive_sha256": sha256_of(wheel_path),
        "image_entrypoint": entrypoint,
        "parser": prules,
        "positionals": parser.positionals,
        "flags": flags,
        "runtime_choices": runtime,
        "speculative_config": spec,
        "removed_flags": removed,
        "notes": sorted(set(notes)),
        **extra,
    }


def serve_parser(
    index: ModuleIndex, rules: KwargsRules, notes: list[str], argv: tuple[str, ...]
) -> ParserVal:
    """The serve parser `ServeSubcommand.subparser_init` builds while sys.argv is `argv`."""
    interp = Interpreter(index, rules, notes, argv)
    serve = index.find_class("vllm.entrypoints.cli.serve", "ServeSubcommand")
    init = interp.class_member(serve, "subparser_init")
    assert isinstance(init, FuncRef)
    parser = ParserVal([], [])
    interp.parser = parser
    # `subparsers.add_parser(...)` (argparse._SubParsersAction) must yield the serve parser.
    result = interp.run_function(init.binding, [SubParsers(parser)], ClassRef(serve))
    if not isinstance(result, ParserVal):
        raise ValueError(f"subparser_init returned {result!r}")
    return parser


def iter_versions(args: list[str]) -> Iterator[str]:
    for v in args:
        if not re.fullmatch(RELEASE, v):
            raise SystemExit(f"not a version: {v}")
        yield v


def version_key(version: str) -> tuple[int, ...]:
    return tuple(int(p.removeprefix("post")) for p in version.split("."))


def index_releases(oldest: str) -> list[str]:
    """Every final release of vLLM on PyPI from `oldest` on (yanked ones left out)."""
    found = set()
    for name, entry in index_files().items():
        match = re.fullmatch(rf"vllm-({RELEASE})(?:\.tar\.gz|-.*\.whl)", name)
        if match and not entry.get("yanked"):
            found.add(match.group(1))
    return sorted((v for v in found if version_key(v) >= version_key(oldest)), key=version_key)


def content(catalog: dict[str, Any]) -> Any:
    """What the linter reads from a catalog: everything but source references, notes and
    where it came from. Two releases with the same content share one catalog."""
    if isinstance(catalog, dict):
        return {k: content(v) for k, v in catalog.items() if k not in NOT_CONTENT}
    if isinstance(catalog, list):
        return [content(v) for v in catalog]
    return catalog


def generate_all(cache: Path, out: Path, oldest: str) -> dict[str, Any]:
    """A catalog for every release whose content differs from the release before it, and
    the decision for every release (DECISIONS_FILE)."""
    decisions: dict[str, dict[str, str]] = {}
    kept: tuple[str, Any] | None = None
    for version in index_releases(oldest):
        try:
            catalog = build_catalog(version, find_or_download_source(version, cache))
        except (KeyError, StopIteration, ValueError) as exc:
            decisions[version] = {"decision": "no-catalog", "reason": _unreadable(exc)}
            continue
        if catalog["image_entrypoint"] is None and kept is not None:
            # a wheel has no Dockerfile: the image of the release before it stands in
            catalog["image_entrypoint"] = kept[1]["image_entrypoint"]
        if kept is not None and content(catalog) == kept[1]:
            decisions[version] = {"decision": "same-as", "catalog": kept[0]}
            continue
        _write(out / f"vllm-{version}.json", catalog)
        decisions[version] = {"decision": "catalog"}
        kept = (version, content(catalog))
    document = {
        "generated_by": GENERATED_BY,
        "oldest": oldest,
        "note": (
            "Every vLLM release on PyPI from `oldest` on: `catalog` has its own file, "
            "`same-as` is linted with the catalog it equals, `no-catalog` with the nearest "
            "catalog (the linter says so). tests/linting/test_vllm_catalog_decisions.py "
            "fails when PyPI has a release that is not listed here."
        ),
        "releases": decisions,
    }
    _write(out / DECISIONS_FILE, document)
    return document


def _unreadable(exc: Exception) -> str:
    return (
        f"the generator cannot read this release's command line ({type(exc).__name__}: "
        f"{str(exc)[:120] or 'no get_kwargs/_compute_kwargs'})"
    )


def _write(path: Path, data: dict[str, Any]) -> None:
    path.write_text(json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False) + "\n")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("versions", nargs="*", help="releases to generate (default with --all)")
    ap.add_argument(
        "--all",
        action="store_true",
        help=f"every release on PyPI from --oldest on, and {DECISIONS_FILE}",
    )
    ap.add_argument("--oldest", default=OLDEST)
    ap.add_argument("--cache", type=Path, default=DEFAULT_CACHE, help="sdist/wheel cache")
    ap.add_argument("--out", type=Path, default=CATALOG_DIR)
    ns = ap.parse_args(argv)
    ns.out.mkdir(parents=True, exist_ok=True)
    if ns.all:
        document = generate_all(ns.cache, ns.out, ns.oldest)
        own = [v for v, d in document["releases"].items() if d["decision"] == "catalog"]
        print(f"{len(document['releases'])} releases, {len(own)} catalogs: {', '.join(own)}")
        return 0
    for version in iter_versions(ns.versions):
        catalog = build_catalog(version, find_or_download_source(version, ns.cache))
        out = ns.out / f"vllm-{version}.json"
        _write(out, catalog)
        print(
            f"{out.relative_to(REPO_ROOT) if out.is_relative_to(REPO_ROOT) else out}: "
            f"{len(catalog['flags'])} flags"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
