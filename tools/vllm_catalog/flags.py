"""Flag post-processing: what argparse makes of the recorded `add_argument` calls."""

from __future__ import annotations

import ast
from typing import Any

from tools.vllm_catalog.module_index import ModuleIndex
from tools.vllm_catalog.symbolic import ClassRef, ExtRef, KwDict, TypeVal, Unknown, to_typeval


def enable_disable_rule(index: ModuleIndex) -> dict[str, str] | None:
    """Inverse prefixes of 0.33's EnableDisableAction, read from the source.

    vllm/utils/argparse_utils.py registers `EnableDisableAction` for
    `BooleanOptionalAction`, so `--enable-x` also accepts `--disable-x`.
    """
    mod = "vllm.utils.argparse_utils"
    if index.path_of(mod) is None:
        return None
    tree = index.tree(mod)
    registered = any(
        isinstance(n, ast.Call)
        and ast.unparse(n.func) == "self.register"
        and len(n.args) == 3
        and ast.unparse(n.args[1]) == "BooleanOptionalAction"
        and ast.unparse(n.args[2]) == "EnableDisableAction"
        for n in ast.walk(tree)
    )
    if not registered:
        return None
    for n in ast.walk(tree):
        if isinstance(n, ast.ClassDef) and n.name == "EnableDisableAction":
            for stmt in n.body:
                if (
                    isinstance(stmt, ast.Assign)
                    and ast.unparse(stmt.targets[0]) == "_inverse_prefixes"
                ):
                    return ast.literal_eval(stmt.value)
    raise ValueError("EnableDisableAction registered but _inverse_prefixes not found")


def finalize_flag(
    raw: dict[str, Any], inverse: dict[str, str] | None, notes: list[str]
) -> dict[str, Any]:
    kw: KwDict = raw["kwargs"]
    names: list[str] = list(raw["names"])
    action = kw.get("action")
    action_name = action.name if isinstance(action, ExtRef) else action
    if isinstance(action, ClassRef):
        action_name = action.binding.name
    kind = "value"
    also: list[str] = []
    if action_name in ("argparse.BooleanOptionalAction", "BooleanOptionalAction"):
        kind = "boolean_optional"
        negs = [f"--no-{n[2:]}" for n in names if n.startswith("--")]
        extra: list[str] = []
        if inverse:
            # EnableDisableAction.__init__: inverses of --enable-/--disable-
            for n in names:
                for prefix, inv in inverse.items():
                    if n.startswith(prefix):
                        extra.append(inv + n[len(prefix) :])
        names = names + negs + extra
    elif action_name == "store_true":
        kind = "store_true"
    elif action_name == "store_false":
        kind = "store_false"
    elif action_name in ("store_const", "count", "help", "version"):
        raise ValueError(f"{raw['source']}: unsupported action {action_name}")
    type_val = to_typeval(kw.get("type"))
    type_name: str | None
    if kind in ("store_true", "store_false", "boolean_optional"):
        type_name = None
    elif type_val is None:
        type_name = "str"  # argparse default: the raw string
    elif isinstance(type_val, TypeVal):
        base = type_val.base
        if base == "human_int_or_auto":
            type_name = "human_int"
            also += ["auto", "-1"]
        elif base == "custom":
            type_name = "str"
            notes.append(f"{names[0]}: custom parser `{type_val.detail}` recorded as type str")
        else:
            type_name = base
        if type_val.optional:
            also += ["None", ""]
    else:
        type_name = "str"
        notes.append(f"{names[0]}: type {type_val!r} not recognised, recorded as str")
    choices = kw.get("choices")
    if isinstance(choices, Unknown):
        notes.append(
            f"{names[0]}: choices `{choices.text}` are dynamic (registry/plugins); recorded as null"
        )
        choices = None
    if choices is not None:
        real = [c for c in choices if c is not None]
        if None in choices and type_val is not None and getattr(type_val, "optional", False):
            pass  # None is a real choice: optional_type maps "None"/"" to None
        elif "None" in real and getattr(type_val, "optional", False):
            # optional_type turns "None" into the object None, which is not in
            # a choices list holding the *string* "None": argparse rejects it.
            real = [c for c in real if c != "None"]
            also = [a for a in also if a not in ("None", "")]
        elif getattr(type_val, "optional", False):
            also = [a for a in also if a not in ("None", "")]
        choices = [str(c) for c in real]
    nargs = kw.get("nargs")
    if isinstance(nargs, Unknown):
        nargs = None
    if action_name == "append":
        notes.append(f"{names[0]}: action='append' (repeatable)")
    deprecated = bool(kw.get("deprecated") is True)
    help_text = kw.get("help")
    if isinstance(help_text, str) and help_text.lstrip().startswith("[DEPRECATED]"):
        deprecated = True
    if isinstance(action, ClassRef) and "Deprecated" in action.binding.name:
        deprecated = True
    dest = kw.get("dest")
    if not isinstance(dest, str):
        long = next((n for n in raw["names"] if n.startswith("--")), raw["names"][0])
        dest = long.lstrip("-").replace("-", "_")
    return {
        "names": list(dict.fromkeys(names)),
        "dest": dest,
        "kind": kind,
        "type": type_name,
        "choices": choices,
        "nargs": nargs,
        "deprecated": deprecated,
        "source": raw["source"],
        "also_accepts": sorted(set(also)),
    }
