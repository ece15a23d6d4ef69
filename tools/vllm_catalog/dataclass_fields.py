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
        if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
            ann = ast.unparse(stmt.annotation)
            if ann.startswith(("ClassVar", "typing.ClassVar", "InitVar")):
                continue
            init = True
            if isinstance(stmt.value, ast.Call) and ast.unparse(stmt.value.func) in (
                "field",
                "dataclasses.field",
                "Field",
            ):
                for kw in stmt.value.keywords:
                    if kw.arg == "init" and isinstance(kw.value, ast.Constant):
                        init = bool(kw.value.value)
            result[stmt.target.id] = FieldInfo(
                stmt.target.id, stmt.annotation, binding.module, stmt.value, stmt.lineno, init
            )
    return list(result.values())
