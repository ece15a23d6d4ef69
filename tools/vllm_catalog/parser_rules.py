"""FlexibleArgumentParser spelling rules: how vLLM rewrites argv before argparse sees it."""

from __future__ import annotations

import ast
from typing import Any

from tools.vllm_catalog.module_index import ModuleIndex


def parser_rules(index: ModuleIndex) -> dict[str, Any]:
    """Read how FlexibleArgumentParser.parse_args rewrites argv."""
    for mod in ("vllm.utils.argparse_utils", "vllm.utils", "vllm.utils.__init__"):
        if index.path_of(mod) is None:
            continue
        for node in ast.walk(index.tree(mod)):
            if isinstance(node, ast.ClassDef) and node.name == "FlexibleArgumentParser":
                cls, module = node, mod
                break
        else:
            continue
        break
    else:
        raise ValueError("FlexibleArgumentParser not found")
    parse = next(n for n in cls.body if isinstance(n, ast.FunctionDef) and n.name == "parse_args")
    text = ast.unparse(parse)
    dotted = "dict_args" in text
    if (
        're.compile("(?<=--)[^\\\\.]*")' in text
        or "(?<=--)[^\\.]*" in text
        or "pattern.sub(repl" in text
    ):
        underscore = "before_first_dot"
    elif ".replace('_', '-')" in text:
        underscore = "whole_key"
    else:
        raise ValueError("cannot determine FlexibleArgumentParser underscore rule")
    if "raise ValueError" in text and "--model" in text and "model_idx" not in text:
        model_option = "error"
    elif "model_idx" in text:
        model_option = "moved_to_positional"
    else:
        model_option = "allowed"
    allow_abbrev = "allow_abbrev" not in ast.unparse(cls)
    # `-O3` rewriting: 0.8.5's branch requires len(arg) == 2, which never
    # holds for "-O3", so argparse's own short-option handling applies there;
    # 0.11 rewrites to `-O.level=3`; 0.16+ to `--optimization-level 3`.
    if '"--optimization-level"' in text or "'--optimization-level'" in text:
        dash_o = "--optimization-level"
    elif "-O.level" in text:
        dash_o = "-O.level"
    else:
        dash_o = None
    human_dotted = "human_readable_int(value_str)" in text
    return {
        "source": f"{index.path_of(module)}:{parse.lineno}",
        "underscore_to_dash": underscore,
        "equals_value": True,
        "allow_abbrev": allow_abbrev,
        "dotted_json_keys": dotted,
        "dotted_values_human_int": human_dotted,
        "model_option": model_option,
        "config_file_option": "--config",
        "dash_O_rewrite": dash_o,
    }
