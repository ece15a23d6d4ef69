"""Type hints: a static model of `typing` objects, evaluated from annotation expressions
as the release's own code sees them at runtime."""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import Any

from tools.vllm_catalog.module_index import Binding, ModuleIndex

BUILTIN_TYPES = {"int", "str", "float", "bool", "dict", "list", "tuple", "set", "bytes"}

TYPING_UNION = {"typing.Union", "typing.Optional"}


@dataclass(frozen=True)
class Hint:
    """A runtime type-hint object, as far as the kwargs logic inspects it."""

    # builtin | none | literal | generic | annotated | union | dataclass | class
    # | any | ellipsis | forward
    kind: str
    name: str = ""  # builtin / generic origin name / class qualname
    args: tuple[Any, ...] = ()  # literal values, or generic/union/annotated args (Hints)
    typeddict: bool = False
    dict_subclass: bool = False
    enum: bool = False


class TypeEvaluator:
    """Evaluate annotation expressions of a wheel into `Hint` objects."""

    def __init__(self, index: ModuleIndex) -> None:
        self.index = index

    def class_hint(self, binding: Binding) -> Hint:
        node = binding.node
        assert isinstance(node, ast.ClassDef)
        qual = f"{binding.module}.{binding.name}"
        if self.is_dataclass(binding):
            return Hint("dataclass", qual)
        bases = [self.base_name(binding.module, b) for b in node.bases]
        return Hint(
            "class",
            qual,
            typeddict=any(b.endswith("TypedDict") for b in bases),
            dict_subclass=any(b in ("dict", "builtins.dict") for b in bases),
            enum=any(b.split(".")[-1] in ("Enum", "IntEnum", "StrEnum") for b in bases),
        )

    def base_name(self, module: str, expr: ast.expr) -> str:
        if isinstance(expr, ast.Subscript):
            expr = expr.value
        text = ast.unparse(expr)
        head, _, rest = text.partition(".")
        binding = self.index.lookup(module, head)
        if binding.kind == "class":
            return f"{binding.module}.{binding.name}"
        if binding.kind == "external":
            return binding.name + (f".{rest}" if rest else "")
        return text

    def is_dataclass(self, binding: Binding) -> bool:
        """`dataclasses.is_dataclass`: a dataclass decorator or a dataclass base."""
        node = binding.node
        assert isinstance(node, ast.ClassDef)
        for deco in node.decorator_list:
            if self.decorator_kind(binding.module, deco) is not None:
                return True
        for base in node.bases:
            target = base.value if isinstance(base, ast.Subscript) else base
            if isinstance(target, ast.Name):
                b = self.index.lookup(binding.module, target.id)
                if b.kind == "class" and self.is_dataclass(b):
                    return True
        return False

    def decorator_kind(self, module: str, deco: ast.expr) -> tuple[str, str | None] | None:
        """Classify a class decorator.

        Returns ("stdlib", None) for `dataclasses.dataclass`, ("pydantic", extra)
        for `pydantic.dataclasses.dataclass` (extra = the ConfigDict `extra`
        setting or None for pydantic's default "ignore"), or None.
        """
        call_kwargs: list[ast.keyword] = []
        if isinstance(deco, ast.Call):
            call_kwargs = deco.keywords
            deco = deco.func
        name = ast.unparse(deco)
        head, _, rest = name.partition(".")
        binding = self.index.lookup(module, head)
        if binding.kind == "external":
            full = binding.name + (f".{rest}" if rest else "")
            if full == "dataclasses.dataclass":
                return ("stdlib", None)
            if full == "pydantic.dataclasses.dataclass":
                extra = None
                for kw in call_kwargs:
                    if kw.arg == "config":
                        extra = _config_dict_extra(kw.value)
                return ("pydantic", extra)
            return None
        if binding.kind == "func":
            return self._decorator_factory(binding)
        return None

    def _decorator_factory(self, binding: Binding) -> tuple[str, str | None] | None:
        """A vLLM function used as a class decorator: what dataclass it makes.
        vllm.config.utils.config: identity in 0.8/0.11 (`return cls`), a pydantic
        dataclass factory with ConfigDict(extra="forbid") from 0.12 on."""
        fn = binding.node
        assert isinstance(fn, ast.FunctionDef)
        inner: tuple[str, str | None] | None = None
        extra: str | None = None
        for node in ast.walk(fn):
            if isinstance(node, ast.Call):
                callee = ast.unparse(node.func)
                if callee == "ConfigDict":
                    extra = _config_dict_extra(node) or extra
                elif callee.split(".")[-1] == "dataclass":
                    inner = self.decorator_kind(binding.module, node.func)
        if inner is not None and inner[0] == "pydantic":
            return ("pydantic", extra or inner[1])
        return inner

    def eval(self, expr: ast.expr | None, module: str, depth: int = 0) -> Hint:
        if expr is None or depth > 40:
            return Hint("any", "typing.Any")
        if isinstance(expr, ast.Constant):
            constant = _constant_hint(expr.value)
            if constant is not None:
                return constant
        if isinstance(expr, ast.BinOp) and isinstance(expr.op, ast.BitOr):
            return self._union(
                [self.eval(expr.left, module, depth + 1), self.eval(expr.right, module, depth + 1)],
                pep604=True,
            )
        if isinstance(expr, ast.Subscript):
            return self._subscript(expr, module, depth)
        return self._named(ast.unparse(expr), module, depth)

    def _subscript(self, expr: ast.Subscript, module: str, depth: int) -> Hint:
        """`Literal[...]`, `Optional[X]`, `Union[...]`, `Annotated[X, ...]`, `list[X]` …"""
        origin = self.eval_origin(expr.value, module)
        elts = expr.slice.elts if isinstance(expr.slice, ast.Tuple) else [expr.slice]
        if origin == "typing.Literal":
            return Hint("literal", "Literal", self._literal_values(elts, module, depth))
        if origin in TYPING_UNION:
            members = [self.eval(e, module, depth + 1) for e in elts]
            if origin == "typing.Optional":
                members.append(Hint("none", "NoneType"))
            return self._union(members, pep604=False)
        # pydantic.SkipValidation[X] is Annotated[X, SkipValidation()] at runtime.
        if origin in (
            "typing.Annotated",
            "pydantic.SkipValidation",
            "pydantic.functional_validators.SkipValidation",
        ):
            return Hint("annotated", "Annotated", (self.eval(elts[0], module, depth + 1),))
        norm = _GENERIC_ORIGINS.get(origin, origin)
        if norm in ("list", "dict", "tuple", "set", "type"):
            return Hint("generic", norm, tuple(self.eval(e, module, depth + 1) for e in elts))
        return Hint("class", norm)  # typing.ClassVar, dataclasses.InitVar, other generics

    def _literal_values(self, elts: list[ast.expr], module: str, depth: int) -> tuple[Any, ...]:
        values: list[Any] = []
        for elt in elts:
            if isinstance(elt, ast.Constant):
                values.append(elt.value)
            else:  # nested Literal aliases are flattened by typing
                inner = self.eval(elt, module, depth + 1)
                for member in union_members(inner):
                    if member.kind == "literal":
                        values.extend(member.args)
        return tuple(dict.fromkeys(values))

    def _named(self, name: str, module: str, depth: int) -> Hint:
        """A name or dotted name: a builtin, a class, a type alias, a typing object."""
        if name in BUILTIN_TYPES:
            return Hint("builtin", name)
        if name == "None":
            return Hint("none", "NoneType")
        head, _, rest = name.partition(".")
        binding = self.index.lookup(module, head)
        if rest and binding.kind == "module":
            parts = rest.split(".")
            binding = self.index.lookup(binding.module, parts[0])
            rest = ".".join(parts[1:])
        if binding.kind == "class" and not rest:
            return self.class_hint(binding)
        if binding.kind == "value" and not rest:
            return self.eval(binding.node, binding.module, depth + 1)  # type alias
        if binding.kind == "external":
            return _external_hint(binding.name + (f".{rest}" if rest else ""))
        return Hint("class", name)

    def eval_origin(self, expr: ast.expr, module: str) -> str:
        name = ast.unparse(expr)
        if name in BUILTIN_TYPES or name == "type":
            return name
        head, _, rest = name.partition(".")
        binding = self.index.lookup(module, head)
        if binding.kind == "external":
            full = binding.name + (f".{rest}" if rest else "")
            if full.startswith("typing_extensions."):
                full = "typing." + full.split(".", 1)[1]
            return full
        if binding.kind == "class":
            return f"{binding.module}.{binding.name}"
        return name

    @staticmethod
    def _union(members: list[Hint], pep604: bool) -> Hint:
        flat: list[Hint] = []
        for m in members:
            flat.extend(m.args if m.kind == "union" else (m,))
        unique = list(dict.fromkeys(flat))
        if len(unique) == 1:
            return unique[0]
        return Hint("union", "UnionType" if pep604 else "Union", tuple(unique))


_GENERIC_ORIGINS = {
    "typing.List": "list",
    "typing.Dict": "dict",
    "typing.Tuple": "tuple",
    "typing.Set": "set",
    "typing.Type": "type",
    "collections.abc.Callable": "callable",
    "typing.Callable": "callable",
    "typing.Sequence": "sequence",
    "collections.abc.Sequence": "sequence",
}


def _constant_hint(value: Any) -> Hint | None:
    if value is None:
        return Hint("none", "NoneType")
    if value is Ellipsis:
        return Hint("ellipsis")
    if isinstance(value, str):
        # String forward references become typing.ForwardRef objects
        # (module "typing", i.e. "not builtin").
        return Hint("forward", value)
    return None


def _external_hint(full: str) -> Hint:
    if full in ("typing.Any", "typing_extensions.Any"):
        return Hint("any", "typing.Any")
    if full.startswith("typing.") or full.startswith("typing_extensions."):
        return Hint("class", "typing." + full.split(".")[-1])
    return Hint("class", full)


def _config_dict_extra(call: ast.expr) -> str | None:
    if isinstance(call, ast.Call):
        for kw in call.keywords:
            if kw.arg == "extra" and isinstance(kw.value, ast.Constant):
                return str(kw.value.value)
    return None


def union_members(hint: Hint) -> tuple[Hint, ...]:
    return hint.args if hint.kind == "union" else (hint,)
