"""TEST DOUBLE for `vllm serve`: argument parsing from the generated flag catalogs."""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

# Package-relative: `doubles` in a test host (`python -m doubles.vllm_double`),
# `tests.doubles` in the checkout.
from .vllm_double_config import version_tuple
from .vllm_double_engine_config import EngineConfigError
from .vllm_double_log import log

# --------------------------------------------------------------------------------------
# catalog-driven argument parsing


class CatalogMissing(RuntimeError):
    pass


def find_catalog(version: str, dirs: Sequence[str]) -> Path:
    for d in dirs:
        path = Path(d) / f"vllm-{version}.json"
        if path.is_file():
            return path
    raise CatalogMissing(f"no flag catalog vllm-{version}.json in {list(dirs)}")


def load_catalog(version: str, dirs: Sequence[str]) -> dict[str, Any]:
    with open(find_catalog(version, dirs)) as f:
        return json.load(f)


def human_readable_int(value: str) -> int:
    """vLLM's --max-model-len parser: 32k = 32000, 32K = 32768 (decimal vs binary suffix)."""
    match = re.fullmatch(r"(\d+(?:\.\d+)?)([kKmMgGtT]?)", value.strip())
    if not match:
        raise ValueError(f"Invalid number: {value}")
    number, suffix = match.groups()
    if not suffix:
        return int(number)
    power = "kmgt".index(suffix.lower()) + 1
    base = 1000 if suffix.islower() else 1024
    if suffix.isupper() and "." in number:
        raise ValueError(f"Decimals are not allowed with binary suffixes: {value}")
    return int(float(number) * base**power)


def _parse_bool(value: str) -> bool:
    lowered = value.lower()
    if lowered in ("true", "1", "yes"):
        return True
    if lowered in ("false", "0", "no"):
        return False
    raise ValueError(value)


_BASE_TYPES: dict[str, Callable[[str], Any]] = {
    "int": int,
    "float": float,
    "str": str,
    "json": json.loads,
    "human_int": human_readable_int,
    "bool": _parse_bool,
}


def _type_func(flag: dict[str, Any], version: tuple[int, ...]) -> Callable[[str], Any] | None:
    """The argparse `type=` that the targeted vLLM uses, so error texts match.

    vllm/engine/arg_utils.py: plain `int`/`float`/`json.loads` give argparse's
    "invalid int value: 'x'"; `optional_type` (fields that may be None, catalog
    also_accepts '' / 'None') and, from 0.10, `parse_type(json.loads)` raise
    "Value x cannot be converted to <class 'int'>." Both are argparse errors: exit 2.
    """
    kind = flag.get("type")
    if kind in (None, "null", "bool") and flag.get("kind") != "value":
        return None
    base = _BASE_TYPES.get(kind or "str", str)
    also = [str(v) for v in flag.get("also_accepts") or []]
    optional = "None" in also or "" in also
    wrapped = optional or (kind == "json" and version >= (0, 10))
    specials = [v for v in also if v not in ("", "None")]  # e.g. max_model_len: -1, auto
    if not wrapped and not specials:
        return base

    def converted(val: str) -> Any:
        if optional and val in ("", "None"):
            return None
        if val in specials:
            return val
        if not wrapped:
            return base(val)
        try:
            return base(val)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(f"Value {val} cannot be converted to {base}.") from exc

    converted.__name__ = getattr(base, "__name__", str(kind))
    return converted


SERVE_USAGE = "vllm serve [model_tag] [options]"
TOP_USAGE = "usage: vllm [-h] [-v] {chat,complete,serve,bench,collect-env,run-batch} ..."


class _ServeParser(argparse.ArgumentParser):
    def error(self, message: str) -> Any:  # argparse's own format: usage + "prog: error:"
        self.print_usage(sys.stderr)
        sys.stderr.write(f"{self.prog}: error: {message}\n")
        raise SystemExit(2)


def build_parser(catalog: dict[str, Any], version: str) -> argparse.ArgumentParser:
    meta = catalog.get("parser") or {}
    parser = _ServeParser(
        prog="vllm serve",
        usage=SERVE_USAGE,
        add_help=False,
        allow_abbrev=bool(meta.get("allow_abbrev", True)),
    )
    for positional in catalog.get("positionals") or ["model_tag"]:
        parser.add_argument(positional, nargs="?", default=None)
    vt = version_tuple(version)
    seen: set[str] = set()
    for flag in catalog.get("flags", []):
        _add_flag(parser, flag, vt, seen)
    # A catalog without the frontend's --host/--port could not be served at all.
    for name, kw in (("--host", {}), ("--port", {"type": int})):
        if name not in seen:
            parser.add_argument(name, **kw)
    parser.add_argument("-h", "--help", action="store_true")
    return parser


_DEPRECATED: set[str] = set()


def _add_flag(
    parser: argparse.ArgumentParser, flag: dict[str, Any], vt: tuple[int, ...], seen: set[str]
) -> None:
    """One catalog flag as vLLM declares it, under the names not declared before."""
    names = [n for n in flag.get("names", []) if n.startswith("-") and n not in seen]
    if not names:
        return
    kind = flag.get("kind", "value")
    if kind == "boolean_optional":
        names = [n for n in names if not n.startswith("--no-")]
    kwargs = _flag_kwargs(flag, kind, vt)
    try:
        action = parser.add_argument(*names, **kwargs)
    except argparse.ArgumentError:
        return  # a name generated twice: the first definition wins, like vLLM
    if flag.get("deprecated"):
        _DEPRECATED.add(action.dest)
    seen.update(names)
    if kind == "boolean_optional":
        seen.update("--no-" + n[2:] for n in names if n.startswith("--"))


def _flag_kwargs(flag: dict[str, Any], kind: str, vt: tuple[int, ...]) -> dict[str, Any]:
    """`add_argument`'s keywords for a flag: its action, or its type, choices and nargs."""
    kwargs: dict[str, Any] = {}
    if flag.get("dest"):
        kwargs["dest"] = flag["dest"]
    if kind == "store_true":
        kwargs["action"] = "store_true"
    elif kind == "store_false":
        kwargs["action"] = "store_false"
    elif kind == "boolean_optional":
        kwargs["action"] = argparse.BooleanOptionalAction
        kwargs["default"] = None
    else:
        kwargs.update(_value_kwargs(flag, vt))
    return kwargs


def _value_kwargs(flag: dict[str, Any], vt: tuple[int, ...]) -> dict[str, Any]:
    kwargs: dict[str, Any] = {}
    func = _type_func(flag, vt)
    if func is not None:
        kwargs["type"] = func
    if flag.get("choices"):
        choices = list(flag["choices"])
        if "None" in (flag.get("also_accepts") or []):
            choices.append(None)
        kwargs["choices"] = choices
    if flag.get("nargs") not in (None, "null"):
        kwargs["nargs"] = flag["nargs"]
    return kwargs


def normalize_args(args: Sequence[str], parser_meta: dict[str, Any]) -> list[str]:
    """FlexibleArgumentParser: `--max_model_len` == `--max-model-len`; `--model X` moved.

    0.8.5 turns every `_` of the key into `-`; later versions only those before the first
    `.` (dotted JSON keys such as `--speculative-config.num_speculative_tokens`).
    """
    whole_key = parser_meta.get("underscore_to_dash") == "whole_key"
    out: list[str] = []
    for arg in args:
        if arg.startswith("--"):
            key, eq, value = arg.partition("=")
            if whole_key:
                key = "--" + key[2:].replace("_", "-")
            else:
                head, dot, tail = key[2:].partition(".")
                key = "--" + head.replace("_", "-") + dot + tail
            out.append(key + eq + value)
        else:
            out.append(arg)
    model_at = [i for i, a in enumerate(out) if a == "--model" or a.startswith("--model=")]
    if model_at and parser_meta.get("model_option") == "moved_to_positional":
        i = model_at[0]
        if out[i] == "--model" and i + 1 < len(out):
            out = [out[i + 1], *out[:i], *out[i + 2 :]]
        elif out[i] != "--model":
            out = [out[i].removeprefix("--model="), *out[:i], *out[i + 1 :]]
    elif model_at and parser_meta.get("model_option") == "error":
        raise EngineConfigError(
            "ValueError: With `vllm serve`, you should provide the model as a positional "
            "argument or in a config file instead of via the `--model` option."
        )
    return out


def _expand_dotted(args: list[str], parser: argparse.ArgumentParser) -> list[str]:
    """`--speculative-config.method ngram` → merged into `--speculative-config` JSON."""
    merged: dict[str, dict[str, Any]] = {}
    out: list[str] = []
    i = 0
    while i < len(args):
        arg = args[i]
        key = arg.partition("=")[0]
        if arg.startswith("--") and "." in key:
            head, _, path = key[2:].partition(".")
            if "=" in arg:
                value = arg.partition("=")[2]
            elif i + 1 < len(args):
                i += 1
                value = args[i]
            else:
                value = ""
            try:
                parsed: Any = json.loads(value)
            except ValueError:
                parsed = value
            node = merged.setdefault(head, {})
            parts = path.split(".")
            for part in parts[:-1]:
                node = node.setdefault(part, {})
            node[parts[-1]] = parsed
        else:
            out.append(arg)
        i += 1
    for head, value in merged.items():
        out += [f"--{head}", json.dumps(value)]
    return out


def parse_serve_args(
    catalog: dict[str, Any], version: str, args: Sequence[str]
) -> argparse.Namespace:
    """Parse like `vllm serve`; raises SystemExit(2) after printing argparse-style errors."""
    parser = build_parser(catalog, version)
    meta = catalog.get("parser") or {}
    normalized = normalize_args(args, meta)
    if meta.get("dotted_json_keys"):
        normalized = _expand_dotted(normalized, parser)
    ns, extra = parser.parse_known_args(normalized)
    if extra:
        # Unknown options bubble up to the top-level `vllm` parser, hence its prog name.
        sys.stderr.write(f"{TOP_USAGE}\nvllm: error: unrecognized arguments: {' '.join(extra)}\n")
        raise SystemExit(2)
    for dest in sorted(_DEPRECATED):
        if getattr(ns, dest, None) not in (None, False):
            log("WARNING", "argparse_utils.py:80", f"argument '{dest}' is deprecated")
    return ns
