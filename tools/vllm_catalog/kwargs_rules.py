"""`get_kwargs` / `_compute_kwargs` (vllm/engine/arg_utils.py), per version family: how a
config dataclass field becomes argparse keyword arguments."""

from __future__ import annotations

import ast
import copy

from tools.vllm_catalog.dataclass_fields import FieldInfo, dataclass_fields
from tools.vllm_catalog.module_index import Binding, ModuleIndex
from tools.vllm_catalog.symbolic import ExtRef, KwDict, TypeVal, Unknown
from tools.vllm_catalog.type_hints import Hint, TypeEvaluator


class KwargsRules:
    """Reproduce `get_kwargs(cls)` of one vLLM version.

    The branch order and special cases are detected from that version's own
    `vllm/engine/arg_utils.py` source (the function body is inspected for the
    constructs listed below), so a new construct makes generation fail instead
    of producing a silently wrong catalog.
    """

    def __init__(self, index: ModuleIndex, types: TypeEvaluator) -> None:
        self.index = index
        self.types = types
        tree = index.tree("vllm.engine.arg_utils")
        fn = next(
            (
                n
                for n in tree.body
                if isinstance(n, ast.FunctionDef) and n.name == "_compute_kwargs"
            ),
            None,
        ) or next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "get_kwargs")
        self.fn = fn
        self.source_ref = f"vllm/engine/arg_utils.py:{fn.lineno}"
        text = ast.unparse(fn)
        self.has_dataclass_branch = "dataclass_cls" in text
        self.strips_annotated = "get_type_hints(field.type)" in text
        self.bool_str_none_special = "type_hints == {bool, str, type(None)}" in text
        self.dict_subclass = "is_dict_subclass" in text
        self.literal_metavar_with_str = (
            "collection_to_kwargs" in text or "literal_to_kwargs" in text
        )
        self.has_set_branch = "set)" in text and "collection_to_kwargs" in text
        self.has_union_dict_and_str = "union_dict_and_str" in text
        self.none_choice_is_string = "append('None')" in text or 'append("None")' in text
        self.human_int_names = self._human_int_names(fn)
        if self.literal_metavar_with_str:
            helper = ast.unparse(
                next(
                    n
                    for n in tree.body
                    if isinstance(n, ast.FunctionDef) and n.name == "literal_to_kwargs"
                )
            )
            self.literal_metavar_with_str = '"metavar" if contains_type(type_hints, str)' in helper
        self._cache: dict[str, dict[str, KwDict]] = {}
        self.notes: list[str] = []

    @staticmethod
    def _human_int_names(fn: ast.FunctionDef) -> dict[str, str]:
        """Field names given a human-readable-int parser, from the source: the bodies of
        `if name in {...}: kwargs[name]["type"] = parser` (names inline or in a variable)."""
        sets: dict[str, set[str]] = {}
        for node in ast.walk(fn):
            if isinstance(node, ast.Assign) and isinstance(
                node.value, ast.Set | ast.Tuple | ast.List
            ):
                vals = {e.value for e in node.value.elts if isinstance(e, ast.Constant)}
                for t in node.targets:
                    if isinstance(t, ast.Name):
                        sets[t.id] = vals
        result: dict[str, str] = {}
        for node in ast.walk(fn):
            names = _names_tested(node, sets) if isinstance(node, ast.If) else None
            if names is None:
                continue
            assert isinstance(node, ast.If)
            for stmt in node.body:
                if isinstance(stmt, ast.Assign) and ast.unparse(stmt.targets[0]) in (
                    "kwargs[name]['type']",
                    'kwargs[name]["type"]',
                ):
                    func = ast.unparse(stmt.value)
                    for n in names:
                        result.setdefault(n, func)
        return result

    def for_class(self, cls: Binding) -> dict[str, KwDict]:
        key = f"{cls.module}.{cls.name}"
        if key not in self._cache:
            self._cache[key] = {
                f.name: self.field_kwargs(cls, f) for f in dataclass_fields(self.index, cls)
            }
        return copy.deepcopy(self._cache[key])

    def hint_set(self, f: FieldInfo) -> list[Hint]:
        hint = self.types.eval(f.annotation, f.module)
        if self.strips_annotated:
            return self._flatten(hint)
        # 0.8.5: only `typing.Union` (incl. Optional) is split; PEP 604 unions
        # and Annotated stay whole.
        if hint.kind == "union" and hint.name == "Union":
            return list(hint.args)
        return [hint]

    def _flatten(self, hint: Hint) -> list[Hint]:
        if hint.kind == "annotated":
            return self._flatten(hint.args[0])
        if hint.kind == "union":
            out: list[Hint] = []
            for a in hint.args:
                out.extend(self._flatten(a))
            return list(dict.fromkeys(out))
        return [hint]

    def field_kwargs(self, cls: Binding, f: FieldInfo) -> KwDict:
        """The argparse kwargs `get_kwargs` gives field `f`: the first branch of vLLM's
        if/elif chain on the field's type hints that applies, in vLLM's order."""
        hints = self.hint_set(f)
        if self.dict_subclass:
            hints = [
                Hint("builtin", "dict")
                if (h.kind == "class" and h.dict_subclass and not h.typeddict)
                else h
                for h in hints
            ]
        types = _HintSet(hints)
        kw = KwDict()
        kw.origin = (f"{cls.module}.{cls.name}", f.name)
        kw["default"] = Unknown("default")
        kw["help"] = ""
        branches = (
            self._dataclass_json,
            self._bool_str_none,
            self._boolean,
            self._literal,
            self._tuple,
            self._list,
            self._set,
            self._int,
            self._float,
            self._dict_or_str,
            self._dict,
            self._str,
        )
        if not any(branch(kw, types, cls, f) for branch in branches):
            raise ValueError(f"unsupported type {hints} for {cls.name}.{f.name}")
        if types.has_none and not types.has("builtin", "bool"):
            t = kw.get("type")
            if isinstance(t, TypeVal):
                kw["type"] = TypeVal(t.base, True, t.detail)
            if kw.get("choices"):
                kw["choices"].append("None" if self.none_choice_is_string else None)
        return kw

    # The branches of the chain; each sets `kw` and returns True when it applies.

    def _dataclass_json(self, kw: KwDict, types: _HintSet, cls: Binding, f: FieldInfo) -> bool:
        dc = next((h for h in types.hints if h.kind == "dataclass"), None)
        if not self.has_dataclass_branch or dc is None:
            return False
        kw["type"] = TypeVal(
            "json", detail=f"pydantic TypeAdapter({dc.name.split('.')[-1]}).validate_json"
        )
        return True

    def _bool_str_none(self, kw: KwDict, types: _HintSet, cls: Binding, f: FieldInfo) -> bool:
        kinds = {(h.kind, h.name) for h in types.hints}
        if not self.bool_str_none_special or kinds != {
            ("builtin", "bool"),
            ("builtin", "str"),
            ("none", "NoneType"),
        }:
            return False
        kw["type"] = TypeVal("str")
        kw["nargs"] = "?"
        kw["const"] = True
        return True

    def _boolean(self, kw: KwDict, types: _HintSet, cls: Binding, f: FieldInfo) -> bool:
        if not types.has("builtin", "bool"):
            return False
        kw["action"] = ExtRef("argparse.BooleanOptionalAction")
        return True

    def _literal(self, kw: KwDict, types: _HintSet, cls: Binding, f: FieldInfo) -> bool:
        if not types.has("literal"):
            return False
        lits = [h for h in types.hints if h.kind == "literal"]
        # literal_to_kwargs uses get_type(): the *first* Literal of a set,
        # i.e. hash order.  With several Literals we record their union.
        opts = list(dict.fromkeys(v for h in lits for v in h.args))
        if len(lits) > 1:
            self.notes.append(
                f"{cls.name}.{f.name}: several Literal hints; vLLM picks one in set "
                "order, union recorded"
            )
        kw["type"] = TypeVal(type(opts[0]).__name__ if opts else "str")
        if self.literal_metavar_with_str and types.has("builtin", "str"):
            kw["metavar"] = sorted(opts)
        else:
            kw["choices"] = sorted(opts)
        return True

    def _tuple(self, kw: KwDict, types: _HintSet, cls: Binding, f: FieldInfo) -> bool:
        return types.has("generic", "tuple") and self._collection(kw, types.hints, "tuple")

    def _list(self, kw: KwDict, types: _HintSet, cls: Binding, f: FieldInfo) -> bool:
        return types.has("generic", "list") and self._collection(kw, types.hints, "list")

    def _set(self, kw: KwDict, types: _HintSet, cls: Binding, f: FieldInfo) -> bool:
        return (
            self.has_set_branch
            and types.has("generic", "set")
            and self._collection(kw, types.hints, "set")
        )

    def _int(self, kw: KwDict, types: _HintSet, cls: Binding, f: FieldInfo) -> bool:
        if not types.has("builtin", "int"):
            return False
        func = self.human_int_names.get(f.name)
        kw["type"] = _to_typeval_name(func) if func else TypeVal("int")
        return True

    def _float(self, kw: KwDict, types: _HintSet, cls: Binding, f: FieldInfo) -> bool:
        if not types.has("builtin", "float"):
            return False
        kw["type"] = TypeVal("float")
        return True

    def _dict_or_str(self, kw: KwDict, types: _HintSet, cls: Binding, f: FieldInfo) -> bool:
        if not (
            self.has_union_dict_and_str
            and types.has("generic", "dict")
            and (types.has("builtin", "str") or types.not_builtin())
        ):
            return False
        kw["type"] = TypeVal("json", detail="union_dict_and_str: a JSON object or any plain string")
        return True

    def _dict(self, kw: KwDict, types: _HintSet, cls: Binding, f: FieldInfo) -> bool:
        if not types.has("generic", "dict"):
            return False
        kw["type"] = TypeVal("json", optional=not self.strips_annotated)
        return True

    def _str(self, kw: KwDict, types: _HintSet, cls: Binding, f: FieldInfo) -> bool:
        if not (types.has("builtin", "str") or types.not_builtin()):
            return False
        kw["type"] = TypeVal("str")
        return True

    def _collection(self, kw: KwDict, hints: list[Hint], origin: str) -> bool:
        h = next(h for h in hints if h.kind in ("generic", "builtin") and h.name == origin)
        args = list(h.args)
        elem = args[0] if args else Hint("builtin", "str")
        if elem.kind == "union":
            elem = Hint("builtin", "str")
        if elem.kind == "literal":
            kw["type"] = TypeVal(type(elem.args[0]).__name__)
            kw["choices"] = sorted(elem.args)
        elif elem.kind == "builtin" and elem.name in ("int", "float", "str", "bool"):
            kw["type"] = TypeVal(elem.name)
        else:
            kw["type"] = TypeVal("custom", detail=f"element {elem.name}")
        if origin == "tuple" and not any(a.kind == "ellipsis" for a in args):
            kw["nargs"] = len(args)
        else:
            kw["nargs"] = "+"
        return True


class _HintSet:
    """The type hints of one field, asked the questions vLLM's `get_kwargs` asks."""

    def __init__(self, hints: list[Hint]) -> None:
        self.hints = hints
        self.has_none = any(h.kind == "none" for h in hints)

    def has(self, kind: str, name: str = "") -> bool:
        """A builtin (`int`), a generic alias or its builtin (`list[int]`, `list`), a Literal."""
        for h in self.hints:
            if kind == "literal" and h.kind == "literal":
                return True
            if h.name == name and (
                (kind == "builtin" and h.kind == "builtin")
                or (kind == "generic" and h.kind in ("generic", "builtin"))
            ):
                return True
        return False

    def not_builtin(self) -> bool:
        # `type_hint.__module__ != "builtins"`: classes, typing objects,
        # ForwardRef; builtins and their generic aliases are builtin.
        return any(
            h.kind in ("class", "dataclass", "any", "forward", "literal", "annotated", "union")
            for h in self.hints
        )


def _to_typeval_name(func: str) -> TypeVal:
    return {
        "human_readable_int": TypeVal("human_int"),
        "human_readable_int_or_auto": TypeVal("human_int_or_auto"),
        "int": TypeVal("int"),
    }.get(func, TypeVal("custom", detail=func))


def _names_tested(node: ast.If, sets: dict[str, set[str]]) -> set[str] | None:
    """The field names an `if name == X` / `if name in {...}` / `if name in NAMES` test
    picks, or None for any other test."""
    test = node.test
    if not (isinstance(test, ast.Compare) and ast.unparse(test.left) == "name"):
        return None
    comp = test.comparators[0]
    if isinstance(comp, ast.Constant):
        return {comp.value}
    if isinstance(comp, ast.Set | ast.Tuple | ast.List):
        return {e.value for e in comp.elts if isinstance(e, ast.Constant)}
    if isinstance(comp, ast.Name):
        return sets.get(comp.id, set())
    return None
