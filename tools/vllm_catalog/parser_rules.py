"""FlexibleArgumentParser spelling rules: how vLLM rewrites argv before argparse sees it."""

from __future__ import annotations

import ast
from typing import Any

from tools.vllm_catalog.module_index import ModuleIndex


def parser_rules(index: ModuleIndex) -> dict[str, Any]:
    """Read how FlexibleArgumentParser.parse_args rewrites argv."""
    cls, module = _flexible_argument_parser(index)
    parse = next(n for n in cls.body if isinstance(n, ast.FunctionDef) and n.name == "parse_args")
    text = ast.unparse(parse)
    return {
        "source": f"{index.path_of(module)}:{parse.lineno}",
        "underscore_to_dash": _underscore_rule(text),
        "equals_value": True,
        "allow_abbrev": "allow_abbrev" not in ast.unparse(cls),
        "dotted_json_keys": "dict_args" in text,
        "dotted_values_human_int": "human_readable_int(value_str)" in text,
        "model_option": _model_option_rule(text),
        "config_file_option": "--config",
        "dash_O_rewrite": _dash_o_rule(text),
    }


def _flexible_argument_parser(index: ModuleIndex) -> tuple[ast.ClassDef, str]:
    for mod in ("vllm.utils.argparse_utils", "vllm.utils", "vllm.utils.__init__"):
        if index.path_of(mod) is None:
            continue
        for node in ast.walk(index.tree(mod)):
            if isinstance(node, ast.ClassDef) and node.name == "FlexibleArgumentParser":
                return node, mod
    raise ValueError("FlexibleArgumentParser not found")


def _underscore_rule(text: str) -> str:
    if (
        're.compile("(?<=--)[^\\\\.]*")' in text
        or "(?<=--)[^\\.]*" in text
        or "pattern.sub(repl" in text
    ):
        return "before_first_dot"
    if ".replace('_', '-')" in text:
        return "whole_key"
    raise ValueError("cannot determine FlexibleArgumentParser underscore rule")


def _model_option_rule(text: str) -> str:
    if "raise ValueError" in text and "--model" in text and "model_idx" not in text:
        return "error"
    if "model_idx" in text:
        return "moved_to_positional"
    return "allowed"


def _dash_o_rule(text: str) -> str | None:
    # `-O3` rewriting: 0.8.5's branch requires len(arg) == 2, which never
    # holds for "-O3", so argparse's own short-option handling applies there;
    # 0.11 rewrites to `-O.level=3`; 0.16+ to `--optimization-level 3`.
    if '"--optimization-level"' in text or "'--optimization-level'" in text:
        return "--optimization-level"
    if "-O.level" in text:
        return "-O.level"
    return None
