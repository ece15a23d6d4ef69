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
    """One recorded `add_argument` call as the catalog describes it."""
    kw: KwDict = raw["kwargs"]
    action = kw.get("action")
    action_name = action.name if isinstance(action, ExtRef) else action
    if isinstance(action, ClassRef):
        action_name = action.binding.name
    kind, names = _kind_and_names(action_name, list(raw["names"]), inverse, raw["source"])
    type_val = to_typeval(kw.get("type"))
    type_name, also = _type_name(kind, type_val, names[0], notes)
    choices, also = _choices(kw.get("choices"), type_val, also, names[0], notes)
    nargs = kw.get("nargs")
    if isinstance(nargs, Unknown):
        nargs = None
    if action_name == "append":
        notes.append(f"{names[0]}: action='append' (repeatable)")
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
        "deprecated": _is_deprecated(kw, action),
        "source": raw["source"],
        "also_accepts": sorted(set(also)),
    }


def _kind_and_names(
    action_name: Any, names: list[str], inverse: dict[str, str] | None, source: str
) -> tuple[str, list[str]]:
    """The kind of option and every option string it answers to (BooleanOptionalAction
    adds `--no-x`; 0.33's EnableDisableAction adds the `--enable-`/`--disable-` inverse)."""
    if action_name in ("argparse.BooleanOptionalAction", "BooleanOptionalAction"):
        negs = [f"--no-{n[2:]}" for n in names if n.startswith("--")]
        extra: list[str] = []
        if inverse:
            # EnableDisableAction.__init__: inverses of --enable-/--disable-
            for n in names:
                for prefix, inv in inverse.items():
                    if n.startswith(prefix):
                        extra.append(inv + n[len(prefix) :])
        return "boolean_optional", names + negs + extra
    if action_name in ("store_true", "store_false"):
        return action_name, names
    if action_name in ("store_const", "count", "help", "version"):
        raise ValueError(f"{source}: unsupported action {action_name}")
    return "value", names


def _type_name(
    kind: str, type_val: Any, name: str, notes: list[str]
) -> tuple[str | None, list[str]]:
    """The catalog's type for the option, and the strings it also accepts."""
    if kind in ("store_true", "store_false", "boolean_optional"):
        return None, []
    if type_val is None:
        return "str", []  # argparse default: the raw string
    if not isinstance(type_val, TypeVal):
        notes.append(f"{name}: type {type_val!r} not recognised, recorded as str")
        return "str", []
    also: list[str] = []
    type_name = type_val.base
    if type_val.base == "human_int_or_auto":
        type_name = "human_int"
        also += ["auto", "-1"]
    elif type_val.base == "custom":
        type_name = "str"
        notes.append(f"{name}: custom parser `{type_val.detail}` recorded as type str")
    if type_val.optional:
        also += ["None", ""]
    return type_name, also


def _choices(
    choices: Any, type_val: Any, also: list[str], name: str, notes: list[str]
) -> tuple[list[str] | None, list[str]]:
    """argparse `choices` as strings, and `also` without what optional_type would turn
    into a value the choices then reject."""
    if isinstance(choices, Unknown):
        notes.append(
            f"{name}: choices `{choices.text}` are dynamic (registry/plugins); recorded as null"
        )
        return None, also
    if choices is None:
        return None, also
    optional = getattr(type_val, "optional", False)
    real = [c for c in choices if c is not None]
    if None in choices and type_val is not None and optional:
        pass  # None is a real choice: optional_type maps "None"/"" to None
    elif optional:
        if "None" in real:
            # optional_type turns "None" into the object None, which is not in
            # a choices list holding the *string* "None": argparse rejects it.
            real = [c for c in real if c != "None"]
        also = [a for a in also if a not in ("None", "")]
    return [str(c) for c in real], also


def _is_deprecated(kw: KwDict, action: Any) -> bool:
    """`deprecated=True` (Python 3.13 argparse), a "[DEPRECATED]" help text, or a
    deprecation action class."""
    help_text = kw.get("help")
    return (
        kw.get("deprecated") is True
        or (isinstance(help_text, str) and help_text.lstrip().startswith("[DEPRECATED]"))
        or (isinstance(action, ClassRef) and "Deprecated" in action.binding.name)
    )
