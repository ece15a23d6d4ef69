"""SpeculativeConfig: the keys, defaults, methods and unknown-key behaviour of
`--speculative-config`."""

from __future__ import annotations

import ast
from typing import Any

from tools.vllm_catalog.dataclass_fields import FieldInfo, dataclass_fields
from tools.vllm_catalog.module_index import Binding, ModuleIndex
from tools.vllm_catalog.type_hints import Hint, TypeEvaluator, union_members


def literal_default(node: ast.expr | None) -> tuple[bool, Any]:
    if node is None:
        return True, None
    if isinstance(node, ast.Call) and ast.unparse(node.func) in (
        "field",
        "dataclasses.field",
        "Field",
    ):
        for kw in node.keywords:
            if kw.arg == "default":
                return literal_default(kw.value)
        return False, None
    try:
        return True, ast.literal_eval(node)
    except ValueError:
        return False, None


def describe_hint(hint: Hint) -> tuple[str, list[Any] | None, bool]:
    """(type, choices, nullable) of a SpeculativeConfig field annotation."""
    members = [m for m in union_members(hint) if m.kind != "none"]
    nullable = len(members) != len(union_members(hint))
    while len(members) == 1 and members[0].kind == "annotated":
        members = [m for m in union_members(members[0].args[0]) if m.kind != "none"]
    kinds = {(m.kind, m.name) for m in members}
    lits = [m for m in members if m.kind == "literal"]
    if lits and len(lits) == len(members):
        values = [v for m in lits for v in m.args]
        return "str" if all(isinstance(v, str) for v in values) else "int", values, nullable
    for builtin in ("bool", "int", "float", "str"):
        if kinds == {("builtin", builtin)}:
            return builtin, None, nullable
    if ("builtin", "int") in kinds and ("builtin", "float") in kinds:
        return "float", None, nullable
    if any(m.kind == "generic" and m.name == "dict" for m in members) or any(
        m.kind == "dataclass" for m in members
    ):
        return "json", None, nullable
    if any(m.kind == "generic" and m.name in ("list", "tuple") for m in members):
        return "list", None, nullable
    if ("builtin", "str") in kinds:
        return "str", None, nullable
    return "object", None, nullable


def speculative_facts(
    index: ModuleIndex, types: TypeEvaluator, flags: list[dict[str, Any]], notes: list[str]
) -> dict[str, Any]:
    cls = index.lookup("vllm.config", "SpeculativeConfig")
    assert cls.kind == "class", cls
    node = cls.node
    assert isinstance(node, ast.ClassDef)
    create = _create_speculative_config(index)
    injected = _injected_keys(create)
    create_text = ast.unparse(create)
    constructs_via = "from_dict" if "SpeculativeConfig.from_dict" in create_text else "constructor"
    deco_kinds = [types.decorator_kind(cls.module, d) for d in node.decorator_list]
    deco_kinds = [d for d in deco_kinds if d is not None]
    if not deco_kinds:
        raise ValueError("SpeculativeConfig is not a recognised dataclass")
    flavour, extra = deco_kinds[0]
    unknown, unknown_why = _unknown_key_rule(flavour, extra)
    decorator_src = f"{index.path_of(cls.module)}:{node.lineno - len(node.decorator_list)}"
    fields_out, internal, method_field = _fields(index, types, cls, injected)
    declared = [
        v
        for m in union_members(types.eval(method_field.annotation, method_field.module))
        if m.kind == "literal"
        for v in m.args
    ]
    enforced = flavour == "pydantic" and "SkipValidation" not in ast.unparse(
        method_field.annotation
    )
    accepted, accepted_why = _accepted_methods(index, cls, declared, enforced, notes)
    spec_qual = f"{cls.module}.{cls.name}"
    shorthand = {
        f["names"][0]: f["origin"][1]
        for f in flags
        if f.get("origin") and f["origin"][0] == spec_qual
    }
    return {
        "fields": dict(sorted(fields_out.items())),
        "internal_keys": sorted(internal),
        "methods_declared": declared,
        "methods_accepted": accepted,
        "methods_accepted_reason": accepted_why,
        "method_source": f"{index.path_of(method_field.module)}:{method_field.lineno}",
        "unknown_keys": unknown,
        "unknown_keys_reason": (
            f"{unknown_why} ({decorator_src}; built by {constructs_via} in "
            f"vllm/engine/arg_utils.py:{create.lineno})"
        ),
        "dash_keys_normalised": 'k.replace("-", "_")' in create_text
        or "k.replace('-', '_')" in create_text,
        "shorthand_flags": dict(sorted(shorthand.items())),
    }


def _create_speculative_config(index: ModuleIndex) -> ast.FunctionDef:
    """How the dict from --speculative-config becomes an object
    (vllm/engine/arg_utils.py EngineArgs.create_speculative_config)."""
    return next(
        n
        for n in ast.walk(index.tree("vllm.engine.arg_utils"))
        if isinstance(n, ast.FunctionDef) and n.name == "create_speculative_config"
    )


def _injected_keys(create: ast.FunctionDef) -> list[str]:
    """Keys vLLM itself adds to the user's dict (`speculative_config.update({...})`):
    internal, not for users to set."""
    injected: list[str] = []
    for n in ast.walk(create):
        if (
            isinstance(n, ast.Call)
            and isinstance(n.func, ast.Attribute)
            and n.func.attr == "update"
            and n.args
            and isinstance(n.args[0], ast.Dict)
        ):
            injected += [k.value for k in n.args[0].keys if isinstance(k, ast.Constant)]
    return injected


def _unknown_key_rule(flavour: str, extra: str | None) -> tuple[str, str]:
    """What SpeculativeConfig does with a key it does not know, and why."""
    if flavour == "stdlib":
        return "type_error", (
            "stdlib @dataclass __init__ raises TypeError on an unexpected keyword argument"
        )
    if (extra or "ignore") == "forbid":
        return "validation_error", (
            "pydantic dataclass with ConfigDict(extra='forbid'): 'Unexpected keyword argument'"
        )
    if (extra or "ignore") == "ignore":
        return "ignored", (
            "pydantic dataclass with the default extra='ignore': unknown keys are silently dropped"
        )
    return (
        "ignored" if extra == "allow" else "validation_error",
        f"pydantic dataclass extra={extra!r}",
    )


def _fields(
    index: ModuleIndex, types: TypeEvaluator, cls: Binding, injected: list[str]
) -> tuple[dict[str, Any], list[str], FieldInfo]:
    """The keys a user may set (type, default, choices), the internal ones, and the
    `method` field."""
    fields_out: dict[str, Any] = {}
    internal: list[str] = []
    method_field: FieldInfo | None = None
    for f in dataclass_fields(index, cls):
        if f.name == "method":
            method_field = f
        if not f.init:
            continue
        if f.name in injected:
            internal.append(f.name)
            continue
        fields_out[f.name] = _field_entry(index, types, f)
    if method_field is None:
        raise ValueError("SpeculativeConfig has no `method` field")
    return fields_out, internal, method_field


def _field_entry(index: ModuleIndex, types: TypeEvaluator, f: FieldInfo) -> dict[str, Any]:
    tname, choices, nullable = describe_hint(types.eval(f.annotation, f.module))
    ok, default = literal_default(f.value)
    entry: dict[str, Any] = {
        "type": tname,
        "default": default if ok else None,
        "nullable": nullable,
        "source": f"{index.path_of(f.module)}:{f.lineno}",
    }
    if not ok:
        entry["default_expr"] = ast.unparse(f.value) if f.value is not None else None
    if choices is not None:
        entry["choices"] = choices
    return entry


def _accepted_methods(
    index: ModuleIndex, cls: Binding, declared: list[str], enforced: bool, notes: list[str]
) -> tuple[list[str], str]:
    """The methods that run: the Literal when pydantic enforces it, else also every value
    the code compares `method` with or assigns to it (what runs is the truth)."""
    node = cls.node
    assert isinstance(node, ast.ClassDef)
    branched: list[str] = []
    for n in ast.walk(node):
        if isinstance(n, ast.Compare) and ast.unparse(n.left) in ("self.method", "method"):
            for comp in n.comparators:
                branched += _string_constants(comp, index, cls.module)
        if (
            isinstance(n, ast.Assign)
            and any(ast.unparse(t) == "self.method" for t in n.targets)
            and isinstance(n.value, ast.Constant)
            and isinstance(n.value.value, str)
        ):
            branched.append(n.value.value)
    extra_branched = sorted(set(branched) - set(declared))
    if extra_branched:
        notes.append(
            "speculative method values handled in code but absent from the Literal: "
            f"{extra_branched}"
            + (
                ""
                if not enforced
                else " (unreachable from user input: pydantic rejects them first)"
            )
        )
    if enforced:
        # pydantic validates the Literal before __post_init__ runs.
        return list(declared), "pydantic validates the Literal type hint"
    return list(dict.fromkeys(declared + branched)), (
        "stdlib dataclass: the Literal is not enforced; accepted = Literal + every "
        "value the code compares with or assigns to `method`"
    )


def _string_constants(expr: ast.expr, index: ModuleIndex, module: str) -> list[str]:
    if isinstance(expr, ast.Constant) and isinstance(expr.value, str):
        return [expr.value]
    if isinstance(expr, ast.Tuple | ast.List | ast.Set):
        return [
            e.value for e in expr.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)
        ]
    if isinstance(expr, ast.Call) and ast.unparse(expr.func) == "get_args" and expr.args:
        hint = TypeEvaluator(index).eval(expr.args[0], module)
        return [
            v
            for m in union_members(hint)
            if m.kind == "literal"
            for v in m.args
            if isinstance(v, str)
        ]
    if isinstance(expr, ast.Name):
        b = index.lookup(module, expr.id)
        if b.kind == "value" and isinstance(b.node, ast.expr):
            return _string_constants(b.node, index, b.module)
    return []
