"""`dataclasses.fields()` of a config class, read from its source."""

from __future__ import annotations

import ast
from dataclasses import dataclass

from tools.vllm_catalog.module_index import Binding, ModuleIndex


@dataclass
class FieldInfo:
    name: str
    annotation: ast.expr
    module: str
    value: ast.expr | None
    lineno: int
    init: bool = True


def dataclass_fields(index: ModuleIndex, binding: Binding) -> list[FieldInfo]:
    """`dataclasses.fields(cls)`: base-class fields first, overrides keep position."""
    node = binding.node
    assert isinstance(node, ast.ClassDef)
    result: dict[str, FieldInfo] = {}
    for base in node.bases:
        target = base.value if isinstance(base, ast.Subscript) else base
        if isinstance(target, ast.Name):
            b = index.lookup(binding.module, target.id)
            if b.kind == "class":
                for f in dataclass_fields(index, b):
                    result[f.name] = f
    for stmt in node.body:
        field = _field(stmt, binding.module)
        if field is not None:
            result[field.name] = field
    return list(result.values())


def _field(stmt: ast.stmt, module: str) -> FieldInfo | None:
    """The field an annotated class-body statement declares (not ClassVar/InitVar)."""
    if not (isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name)):
        return None
    if ast.unparse(stmt.annotation).startswith(("ClassVar", "typing.ClassVar", "InitVar")):
        return None
    init = True
    if isinstance(stmt.value, ast.Call) and ast.unparse(stmt.value.func) in (
        "field",
        "dataclasses.field",
        "Field",
    ):
        for kw in stmt.value.keywords:
            if kw.arg == "init" and isinstance(kw.value, ast.Constant):
                init = bool(kw.value.value)
    return FieldInfo(stmt.target.id, stmt.annotation, module, stmt.value, stmt.lineno, init)
