"""TEST DOUBLE: `make_arg_parser` returns a parser that parses exactly like the double's
`vllm serve` (flag catalog of the configured version, argparse errors on stderr, exit 2)."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import Any

from doubles.vllm_double import EngineConfigError, parse_serve_args

from vllm import _double


class _CatalogParser:
    def __init__(self, catalog: dict[str, Any], version: str) -> None:
        self.catalog, self.version = catalog, version

    def parse_args(self, args: Sequence[str] | None = None) -> argparse.Namespace:
        try:
            return parse_serve_args(self.catalog, self.version, list(args or []))
        except EngineConfigError as exc:  # e.g. `--model` where vLLM wants a positional
            raise ValueError(str(exc)) from None


def make_arg_parser(parser: argparse.ArgumentParser) -> _CatalogParser:
    catalog, version = _double()
    return _CatalogParser(catalog, version)
