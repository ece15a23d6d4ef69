#!/usr/bin/env python3
"""Generate vLLM version catalogs for the linter from released wheels.

Usage::

    python tools/gen_vllm_catalog.py 0.8.5 0.11.0 0.16.0 0.33.0

For each version the wheel is fetched with ``pip download --no-deps vllm==X``
into a cache outside the repository (``$VLLM_WHEEL_CACHE`` or
``/var/tmp/vllm-wheels``), opened as a zip file and its sources are *read*
with :mod:`ast`.  vLLM is never imported: it needs torch/CUDA.  The output is
``linting/vllm/catalogs/vllm-<version>.json``.

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
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parent.parent
if str(REPO_ROOT) not in sys.path:  # run as a script from a checkout
    sys.path.insert(0, str(REPO_ROOT))
from tools.vllm_catalog.flags import enable_disable_rule, finalize_flag  # noqa: E402
from tools.vllm_catalog.interpreter import Interpreter  # noqa: E402
from tools.vllm_catalog.kwargs_rules import KwargsRules  # noqa: E402
from tools.vllm_catalog.module_index import ModuleIndex  # noqa: E402
from tools.vllm_catalog.parser_rules import parser_rules  # noqa: E402
from tools.vllm_catalog.runtime_choices import runtime_choices  # noqa: E402
from tools.vllm_catalog.sources import find_or_download_wheel, open_archive, sha256_of  # noqa: E402
from tools.vllm_catalog.speculative import speculative_facts  # noqa: E402
from tools.vllm_catalog.symbolic import ClassRef, FuncRef, ParserVal, SubParsers  # noqa: E402
from tools.vllm_catalog.type_hints import TypeEvaluator  # noqa: E402

CATALOG_DIR = REPO_ROOT / "linting" / "vllm" / "catalogs"

DEFAULT_CACHE = Path("/var/tmp/vllm-wheels")

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
    notes: list[str] = []
    with open_archive(wheel_path) as zf:
        index = ModuleIndex(zf)
        types = TypeEvaluator(index)
        rules = KwargsRules(index, types)
        interp = Interpreter(index, rules, notes)
        serve = index.find_class("vllm.entrypoints.cli.serve", "ServeSubcommand")
        init = interp.class_member(serve, "subparser_init")
        assert isinstance(init, FuncRef)
        parser = ParserVal([], [])
        interp.parser = parser
        # `subparsers.add_parser(...)` (argparse._SubParsersAction) must
        # yield the serve parser.
        result = interp.run_function(init.binding, [SubParsers(parser)], ClassRef(serve))
        if not isinstance(result, ParserVal):
            raise ValueError(f"subparser_init returned {result!r}")
        inverse = enable_disable_rule(index)
        flags = [
            finalize_flag(raw, inverse, notes) | {"origin": raw["origin"]} for raw in parser.flags
        ]
        seen: dict[str, str] = {}
        for f in flags:
            for n in f["names"]:
                if n in seen:
                    raise ValueError(f"duplicate option string {n}: {seen[n]} and {f['source']}")
                seen[n] = f["source"]
        spec = speculative_facts(index, types, flags, notes)
        runtime = runtime_choices(index, types, flags)
        prules = parser_rules(index)
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
    return {
        "vllm_version": version,
        "generated_by": GENERATED_BY,
        "wheel": wheel_path.name,
        "wheel_sha256": sha256_of(wheel_path),
        "parser": prules,
        "positionals": parser.positionals,
        "flags": flags,
        "runtime_choices": runtime,
        "speculative_config": spec,
        "removed_flags": removed,
        "notes": sorted(set(notes)),
    }


def iter_versions(args: list[str]) -> Iterator[str]:
    for v in args:
        if not re.fullmatch(r"\d+(\.\d+)+(\.post\d+)?", v):
            raise SystemExit(f"not a version: {v}")
        yield v


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("versions", nargs="+")
    ap.add_argument("--cache", type=Path, default=DEFAULT_CACHE, help="wheel cache directory")
    ap.add_argument("--out", type=Path, default=CATALOG_DIR)
    ns = ap.parse_args(argv)
    ns.out.mkdir(parents=True, exist_ok=True)
    for version in iter_versions(ns.versions):
        wheel = find_or_download_wheel(version, ns.cache)
        catalog = build_catalog(version, wheel)
        out = ns.out / f"vllm-{version}.json"
        out.write_text(json.dumps(catalog, indent=2, sort_keys=True, ensure_ascii=False) + "\n")
        print(
            f"{out.relative_to(REPO_ROOT) if out.is_relative_to(REPO_ROOT) else out}: "
            f"{len(catalog['flags'])} flags"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
