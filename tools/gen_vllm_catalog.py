#!/usr/bin/env python3
"""Generate vLLM version catalogs for the linter from released wheels.

Usage::

    python tools/gen_vllm_catalog.py 0.8.5 0.11.0 0.16.0 0.33.0

For each version the wheel is fetched with ``pip download --no-deps vllm==X``
into a cache outside the repository (``$VLLM_WHEEL_CACHE`` or
``/var/tmp/vllm-wheels``), opened as a zip file and its sources are *read*
with :mod:`ast`.  vLLM is never imported: it needs torch/CUDA.  The output is
``linting/vllm/catalogs/vllm-<version>.json``.

Why a small abstract interpreter instead of a regex scrape: since ~0.9 vLLM
derives most flags from config dataclass fields (``get_kwargs`` /
``_compute_kwargs`` in ``vllm/engine/arg_utils.py``), so a flag's type,
choices and ``nargs`` only exist after evaluating type annotations (Literal
aliases, ``X | None`` unions, ``TYPE_CHECKING`` fallbacks such as
``QuantizationMethods = Any``) exactly the way that version's code does.  The
interpreter walks ``ServeSubcommand.subparser_init`` (``vllm/entrypoints/cli/
serve.py``) → ``make_arg_parser`` → ``FrontendArgs.add_cli_args`` →
``AsyncEngineArgs.add_cli_args`` → ``EngineArgs.add_cli_args`` statement by
statement, simulating ``sys.argv == ["vllm", "serve", "<model>"]``.

Anything it cannot evaluate statically is recorded in the catalog's
``notes`` rather than guessed silently; the generator fails loudly when a
construct it relies on is missing from a version.
"""

from __future__ import annotations

import argparse
import ast
import copy
import hashlib
import itertools
import json
import re
import subprocess
import sys
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parent.parent
CATALOG_DIR = REPO_ROOT / "linting" / "vllm" / "catalogs"
DEFAULT_CACHE = Path("/var/tmp/vllm-wheels")
GENERATED_BY = "tools/gen_vllm_catalog.py"

# Legacy speculative-decoding flags (docs/architecture.md, "vLLM": "legacy flags
# `--speculative-model`, `--num-speculative-tokens`, `--ngram-prompt-lookup-*`
# are gone since 0.8").  Only those absent from a version are listed there.
LEGACY_SPEC_FLAGS = (
    "--speculative-model",
    "--num-speculative-tokens",
    "--ngram-prompt-lookup-max",
    "--ngram-prompt-lookup-min",
)

# The process that argparse sees for a systemd unit running `vllm serve MODEL`.
SIMULATED_ARGV = ["vllm", "serve", "<model>"]

BUILTIN_TYPES = {"int", "str", "float", "bool", "dict", "list", "tuple", "set", "bytes"}
TYPING_UNION = {"typing.Union", "typing.Optional"}


# --------------------------------------------------------------------------
# Wheel access
# --------------------------------------------------------------------------


def find_or_download_wheel(version: str, cache: Path) -> Path:
    """Return the cached wheel for `version`, downloading it with pip if needed."""
    cache.mkdir(parents=True, exist_ok=True)
    matches = sorted(cache.glob(f"vllm-{version}-*.whl"))
    if not matches:
        subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "download",
                "--no-deps",
                "--only-binary=:all:",
                "--dest",
                str(cache),
                f"vllm=={version}",
            ],
            check=True,
        )
        matches = sorted(cache.glob(f"vllm-{version}-*.whl"))
    if not matches:
        raise SystemExit(f"no wheel for vllm=={version} in {cache}")
    return matches[0]


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


# --------------------------------------------------------------------------
# Module index: parse modules lazily and resolve top-level names
# --------------------------------------------------------------------------


@dataclass
class Binding:
    """What a top-level name is bound to at *runtime* in a module."""

    kind: str  # class | func | value | module | external
    module: str
    name: str
    node: ast.AST | None = None


class ModuleIndex:
    """Lazily parsed `vllm/**.py` sources of one wheel."""

    def __init__(self, wheel: zipfile.ZipFile) -> None:
        self.zip = wheel
        self.names = set(wheel.namelist())
        self._trees: dict[str, ast.Module] = {}
        self._tables: dict[str, dict[str, Binding]] = {}

    def path_of(self, module: str) -> str | None:
        base = module.replace(".", "/")
        for cand in (f"{base}.py", f"{base}/__init__.py"):
            if cand in self.names:
                return cand
        return None

    def is_package(self, module: str) -> bool:
        return f"{module.replace('.', '/')}/__init__.py" in self.names

    def tree(self, module: str) -> ast.Module:
        if module not in self._trees:
            path = self.path_of(module)
            if path is None:
                raise KeyError(module)
            self._trees[module] = ast.parse(self.zip.read(path), filename=path)
        return self._trees[module]

    def table(self, module: str) -> dict[str, Binding]:
        if module not in self._tables:
            table: dict[str, Binding] = {}
            self._tables[module] = table  # break import cycles
            self._fill(module, self.tree(module).body, table)
        return self._tables[module]

    def _abs(self, module: str, node: ast.ImportFrom) -> str:
        if not node.level:
            return node.module or ""
        parts = module.split(".")
        pkg = parts if self.is_package(module) else parts[:-1]
        pkg = pkg[: len(pkg) - (node.level - 1)]
        return ".".join(pkg + ([node.module] if node.module else []))

    def _fill(self, module: str, body: list[ast.stmt], table: dict[str, Binding]) -> None:
        for stmt in body:
            if isinstance(stmt, ast.ClassDef):
                table[stmt.name] = Binding("class", module, stmt.name, stmt)
            elif isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef):
                table[stmt.name] = Binding("func", module, stmt.name, stmt)
            elif isinstance(stmt, ast.Assign):
                for target in stmt.targets:
                    if isinstance(target, ast.Name):
                        table[target.id] = Binding("value", module, target.id, stmt.value)
            elif isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
                if stmt.value is not None:
                    table[stmt.target.id] = Binding("value", module, stmt.target.id, stmt.value)
            elif isinstance(stmt, ast.Import):
                for alias in stmt.names:
                    if alias.asname:
                        table[alias.asname] = self._module_binding(alias.name)
                    else:
                        top = alias.name.split(".")[0]
                        table[top] = self._module_binding(top)
            elif isinstance(stmt, ast.ImportFrom):
                src = self._abs(module, stmt)
                for alias in stmt.names:
                    local = alias.asname or alias.name
                    table[local] = Binding("import", src, alias.name)
            elif isinstance(stmt, ast.If):
                # Runtime semantics: `if TYPE_CHECKING:` is False, so only the
                # else branch binds names (e.g. `QuantizationMethods = Any`).
                test = ast.unparse(stmt.test)
                if test in ("TYPE_CHECKING", "typing.TYPE_CHECKING"):
                    self._fill(module, stmt.orelse, table)
                else:
                    self._fill(module, stmt.body, table)
            elif isinstance(stmt, ast.Try):
                self._fill(module, stmt.body, table)

    def _module_binding(self, name: str) -> Binding:
        if name.startswith("vllm") and self.path_of(name):
            return Binding("module", name, name)
        return Binding("external", name, name)

    def lookup(self, module: str, name: str, depth: int = 0) -> Binding:
        """Resolve `name` as seen from `module`, following imports."""
        if depth > 30:
            return Binding("external", module, name)
        if not module.startswith("vllm") or self.path_of(module) is None:
            return Binding("external", module, f"{module}.{name}" if module else name)
        binding = self.table(module).get(name)
        if binding is None:
            sub = f"{module}.{name}"
            if self.path_of(sub):
                return Binding("module", sub, sub)
            return Binding("external", module, f"{module}.{name}")
        if binding.kind == "import":
            src = binding.module
            if src.startswith("vllm") and self.path_of(src):
                return self.lookup(src, binding.name, depth + 1)
            sub = f"{src}.{binding.name}"
            if sub.startswith("vllm") and self.path_of(sub):
                return Binding("module", sub, sub)
            return Binding("external", src, f"{src}.{binding.name}")
        return binding

    def find_class(self, module: str, name: str) -> Binding:
        binding = self.lookup(module, name)
        if binding.kind != "class":
            raise KeyError(f"{module}.{name} is not a class ({binding.kind})")
        return binding


def src_ref(index: ModuleIndex, module: str, node: ast.AST) -> str:
    return f"{index.path_of(module)}:{getattr(node, 'lineno', 0)}"


# --------------------------------------------------------------------------
# Type hints: a static model of `typing` objects
# --------------------------------------------------------------------------


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
            if full in ("dataclasses.dataclass",):
                return ("stdlib", None)
            if full in ("pydantic.dataclasses.dataclass",):
                extra = None
                for kw in call_kwargs:
                    if kw.arg == "config":
                        extra = _config_dict_extra(kw.value)
                return ("pydantic", extra)
            return None
        if binding.kind == "func":
            fn = binding.node
            assert isinstance(fn, ast.FunctionDef)
            # vllm.config.utils.config: identity in 0.8/0.11
            # (`return cls`), a pydantic dataclass factory with
            # ConfigDict(extra="forbid") from 0.12 on.
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
        return None

    def eval(self, expr: ast.expr | None, module: str, depth: int = 0) -> Hint:
        if expr is None or depth > 40:
            return Hint("any", "typing.Any")
        if isinstance(expr, ast.Constant):
            if expr.value is None:
                return Hint("none", "NoneType")
            if expr.value is Ellipsis:
                return Hint("ellipsis")
            if isinstance(expr.value, str):
                # String forward references become typing.ForwardRef objects
                # (module "typing", i.e. "not builtin").
                return Hint("forward", expr.value)
        if isinstance(expr, ast.BinOp) and isinstance(expr.op, ast.BitOr):
            return self._union(
                [self.eval(expr.left, module, depth + 1), self.eval(expr.right, module, depth + 1)],
                pep604=True,
            )
        if isinstance(expr, ast.Subscript):
            origin = self.eval_origin(expr.value, module)
            elts = expr.slice.elts if isinstance(expr.slice, ast.Tuple) else [expr.slice]
            if origin == "typing.Literal":
                values: list[Any] = []
                for elt in elts:
                    if isinstance(elt, ast.Constant):
                        values.append(elt.value)
                    else:  # nested Literal aliases are flattened by typing
                        inner = self.eval(elt, module, depth + 1)
                        for member in _union_members(inner):
                            if member.kind == "literal":
                                values.extend(member.args)
                return Hint("literal", "Literal", tuple(dict.fromkeys(values)))
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
            norm = {
                "typing.List": "list",
                "typing.Dict": "dict",
                "typing.Tuple": "tuple",
                "typing.Set": "set",
                "typing.Type": "type",
                "collections.abc.Callable": "callable",
                "typing.Callable": "callable",
                "typing.Sequence": "sequence",
                "collections.abc.Sequence": "sequence",
            }.get(origin, origin)
            if norm in ("list", "dict", "tuple", "set", "type"):
                return Hint("generic", norm, tuple(self.eval(e, module, depth + 1) for e in elts))
            if norm in ("typing.ClassVar", "dataclasses.InitVar"):
                return Hint("class", norm)
            return Hint("class", norm)
        name = ast.unparse(expr)
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
            full = binding.name + (f".{rest}" if rest else "")
            if full in ("typing.Any", "typing_extensions.Any"):
                return Hint("any", "typing.Any")
            if full.startswith("typing.") or full.startswith("typing_extensions."):
                return Hint("class", "typing." + full.split(".")[-1])
            return Hint("class", full)
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


def _config_dict_extra(call: ast.expr) -> str | None:
    if isinstance(call, ast.Call):
        for kw in call.keywords:
            if kw.arg == "extra" and isinstance(kw.value, ast.Constant):
                return str(kw.value.value)
    return None


def _union_members(hint: Hint) -> tuple[Hint, ...]:
    return hint.args if hint.kind == "union" else (hint,)


# --------------------------------------------------------------------------
# Dataclass fields
# --------------------------------------------------------------------------


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


# --------------------------------------------------------------------------
# Symbolic values used by the interpreter
# --------------------------------------------------------------------------


@dataclass
class TypeVal:
    """An argparse `type=` callable, reduced to what the linter needs."""

    base: str  # int | float | str | bool | json | human_int | human_int_or_auto | custom
    optional: bool = False
    detail: str = ""


@dataclass
class Unknown:
    text: str


@dataclass
class ParserVal:
    flags: list[dict[str, Any]]
    positionals: list[str]


@dataclass
class ClassRef:
    binding: Binding


@dataclass
class FuncRef:
    binding: Binding
    bound_cls: ClassRef | None = None
    owner: Binding | None = None  # class whose body defines the method


@dataclass
class ExtRef:
    name: str


class KwDict(dict):  # type: ignore[type-arg]
    """A kwargs dict; `origin` = (config class, field) when made by get_kwargs."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.origin: tuple[str, str] | None = None


@dataclass
class SuperRef:
    """`super()` inside a method defined on `owner`, called for `cls`."""

    owner: Binding
    cls: ClassRef | None


class ReturnSignal(Exception):
    def __init__(self, value: Any) -> None:
        self.value = value


def _to_typeval(value: Any) -> Any:
    """Map a `type=` value to a TypeVal where possible."""
    if isinstance(value, TypeVal):
        return value
    if isinstance(value, ExtRef):
        if value.name in ("builtins.int", "int"):
            return TypeVal("int")
        if value.name in ("builtins.str", "str"):
            return TypeVal("str")
        if value.name in ("builtins.float", "float"):
            return TypeVal("float")
        if value.name in ("builtins.bool", "bool"):
            return TypeVal("bool")
        if value.name == "json.loads":
            return TypeVal("json")
    if isinstance(value, FuncRef):
        name = value.binding.name
        if name == "human_readable_int":
            return TypeVal("human_int")
        if name == "human_readable_int_or_auto":
            return TypeVal("human_int_or_auto")
        if name == "union_dict_and_str":
            return TypeVal("json", detail="union_dict_and_str: a JSON object or any plain string")
        if name in ("from_cli", "from_json"):
            return TypeVal(
                "json", detail=f"{value.bound_cls.binding.name if value.bound_cls else ''}.{name}"
            )
        return TypeVal("custom", detail=name)
    if isinstance(value, Unknown):
        return TypeVal("custom", detail=value.text)
    return value


# --------------------------------------------------------------------------
# get_kwargs / _compute_kwargs, per version family
# --------------------------------------------------------------------------


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
        """Field names given a human-readable-int parser, from the source."""
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
            if not isinstance(node, ast.If):
                continue
            test = node.test
            if not (isinstance(test, ast.Compare) and ast.unparse(test.left) == "name"):
                continue
            comp = test.comparators[0]
            if isinstance(comp, ast.Constant):
                names = {comp.value}
            elif isinstance(comp, ast.Set | ast.Tuple | ast.List):
                names = {e.value for e in comp.elts if isinstance(e, ast.Constant)}
            elif isinstance(comp, ast.Name):
                names = sets.get(comp.id, set())
            else:
                continue
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
        hints = self.hint_set(f)
        if self.dict_subclass:
            hints = [
                Hint("builtin", "dict")
                if (h.kind == "class" and h.dict_subclass and not h.typeddict)
                else h
                for h in hints
            ]
        kw = KwDict()
        kw.origin = (f"{cls.module}.{cls.name}", f.name)
        kw["default"] = Unknown("default")
        kw["help"] = ""

        def has(kind: str, name: str = "") -> bool:
            for h in hints:
                if kind == "builtin" and h.kind == "builtin" and h.name == name:
                    return True
                if kind == "generic" and h.kind == "generic" and h.name == name:
                    return True
                if kind == "generic" and h.kind == "builtin" and h.name == name:
                    return True
                if kind == "literal" and h.kind == "literal":
                    return True
            return False

        def not_builtin() -> bool:
            # `type_hint.__module__ != "builtins"`: classes, typing objects,
            # ForwardRef; builtins and their generic aliases are builtin.
            return any(
                h.kind in ("class", "dataclass", "any", "forward", "literal", "annotated", "union")
                for h in hints
            )

        has_none = any(h.kind == "none" for h in hints)
        dc = next((h for h in hints if h.kind == "dataclass"), None)
        if self.has_dataclass_branch and dc is not None:
            kw["type"] = TypeVal(
                "json", detail=f"pydantic TypeAdapter({dc.name.split('.')[-1]}).validate_json"
            )
        elif self.bool_str_none_special and {(h.kind, h.name) for h in hints} == {
            ("builtin", "bool"),
            ("builtin", "str"),
            ("none", "NoneType"),
        }:
            kw["type"] = TypeVal("str")
            kw["nargs"] = "?"
            kw["const"] = True
        elif has("builtin", "bool"):
            kw["action"] = ExtRef("argparse.BooleanOptionalAction")
        elif has("literal"):
            lits = [h for h in hints if h.kind == "literal"]
            # literal_to_kwargs uses get_type(): the *first* Literal of a set,
            # i.e. hash order.  With several Literals we record their union.
            opts = list(dict.fromkeys(v for h in lits for v in h.args))
            if len(lits) > 1:
                self.notes.append(
                    f"{cls.name}.{f.name}: several Literal hints; vLLM picks one in set "
                    "order, union recorded"
                )
            use_metavar = self.literal_metavar_with_str and has("builtin", "str")
            kw["type"] = TypeVal(type(opts[0]).__name__ if opts else "str")
            if use_metavar:
                kw["metavar"] = sorted(opts)
            else:
                kw["choices"] = sorted(opts)
        elif has("generic", "tuple"):
            self._collection(kw, hints, "tuple")
        elif has("generic", "list"):
            self._collection(kw, hints, "list")
        elif self.has_set_branch and has("generic", "set"):
            self._collection(kw, hints, "set")
        elif has("builtin", "int"):
            func = self.human_int_names.get(f.name)
            kw["type"] = _to_typeval_name(func) if func else TypeVal("int")
        elif has("builtin", "float"):
            kw["type"] = TypeVal("float")
        elif (
            self.has_union_dict_and_str
            and has("generic", "dict")
            and (has("builtin", "str") or not_builtin())
        ):
            kw["type"] = TypeVal(
                "json", detail="union_dict_and_str: a JSON object or any plain string"
            )
        elif has("generic", "dict"):
            kw["type"] = TypeVal("json", optional=not self.strips_annotated)
        elif has("builtin", "str") or not_builtin():
            kw["type"] = TypeVal("str")
        else:
            raise ValueError(f"unsupported type {hints} for {cls.name}.{f.name}")

        if has_none and not has("builtin", "bool"):
            t = kw.get("type")
            if isinstance(t, TypeVal):
                kw["type"] = TypeVal(t.base, True, t.detail)
            if kw.get("choices"):
                kw["choices"].append("None" if self.none_choice_is_string else None)
        return kw

    def _collection(self, kw: KwDict, hints: list[Hint], origin: str) -> None:
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


def _to_typeval_name(func: str) -> TypeVal:
    return {
        "human_readable_int": TypeVal("human_int"),
        "human_readable_int_or_auto": TypeVal("human_int_or_auto"),
        "int": TypeVal("int"),
    }.get(func, TypeVal("custom", detail=func))


# --------------------------------------------------------------------------
# The add_cli_args interpreter
# --------------------------------------------------------------------------


class Interpreter:
    """Execute parser-building functions symbolically."""

    def __init__(self, index: ModuleIndex, rules: KwargsRules, notes: list[str]) -> None:
        self.index = index
        self.rules = rules
        self.notes = notes
        self.parser = ParserVal([], [])
        self.module = ""
        self.calls = 0

    # -- entry points -----------------------------------------------------

    def run_function(
        self,
        fn_binding: Binding,
        args: list[Any],
        cls: ClassRef | None = None,
        owner: Binding | None = None,
    ) -> Any:
        fn = fn_binding.node
        assert isinstance(fn, ast.FunctionDef)
        env: dict[str, Any] = {"__owner__": owner, "__cls__": cls}
        params = [a.arg for a in fn.args.args]
        defaults = fn.args.defaults
        is_static = any(ast.unparse(d) == "staticmethod" for d in fn.decorator_list)
        is_classmethod = any(ast.unparse(d) == "classmethod" for d in fn.decorator_list)
        if (is_classmethod or not is_static) and params and params[0] in ("cls", "self"):
            env[params[0]] = cls
            params = params[1:]
        for i, p in enumerate(params):
            if i < len(args):
                env[p] = args[i]
            else:
                d = (
                    defaults[i - (len(params) - len(defaults))]
                    if len(params) - i <= len(defaults)
                    else None
                )
                env[p] = self.ev(d, env, fn_binding.module) if d is not None else None
        saved = self.module
        self.module = fn_binding.module
        try:
            self.exec_body(fn.body, env)
        except ReturnSignal as r:
            return r.value
        finally:
            self.module = saved
        return None

    # -- statements -------------------------------------------------------

    def exec_body(self, body: list[ast.stmt], env: dict[str, Any]) -> None:
        for stmt in body:
            self.exec_stmt(stmt, env)

    def exec_stmt(self, stmt: ast.stmt, env: dict[str, Any]) -> None:
        mod = self.module
        if isinstance(stmt, ast.Expr):
            if isinstance(stmt.value, ast.Constant):
                return  # docstring
            self.ev(stmt.value, env, mod)
        elif isinstance(stmt, ast.Assign):
            value = self.ev(stmt.value, env, mod)
            for target in stmt.targets:
                self.assign(target, value, env)
        elif isinstance(stmt, ast.AugAssign):
            current = self.ev(stmt.target, env, mod)
            value = self.ev(stmt.value, env, mod)
            if (
                isinstance(current, list)
                and isinstance(value, list)
                and isinstance(stmt.op, ast.Add)
            ):
                current.extend(value)
            elif isinstance(current, str) and isinstance(value, str):
                self.assign(stmt.target, current + value, env)
            else:
                self.assign(stmt.target, Unknown(ast.unparse(stmt)), env)
        elif isinstance(stmt, ast.If):
            test = self.ev(stmt.test, env, mod)
            if isinstance(test, Unknown):
                self.notes.append(
                    f"{src_ref(self.index, mod, stmt)}: condition "
                    f"`{ast.unparse(stmt.test)}` not evaluable; assumed true"
                )
                self.exec_body(stmt.body, env)
            elif test:
                self.exec_body(stmt.body, env)
            else:
                self.exec_body(stmt.orelse, env)
        elif isinstance(stmt, ast.For):
            it = self.ev(stmt.iter, env, mod)
            if isinstance(it, Unknown):
                raise ValueError(
                    f"{src_ref(self.index, mod, stmt)}: cannot iterate {ast.unparse(stmt.iter)}"
                )
            for item in list(it):
                self.assign(stmt.target, item, env)
                self.exec_body(stmt.body, env)
        elif isinstance(stmt, ast.Delete):
            for target in stmt.targets:
                if isinstance(target, ast.Subscript):
                    container = self.ev(target.value, env, mod)
                    key = self.ev(target.slice, env, mod)
                    if isinstance(container, dict):
                        del container[key]
        elif isinstance(stmt, ast.Return):
            raise ReturnSignal(self.ev(stmt.value, env, mod) if stmt.value else None)
        elif isinstance(stmt, ast.Import | ast.ImportFrom):
            for alias in stmt.names:
                local = alias.asname or alias.name.split(".")[0]
                if isinstance(stmt, ast.ImportFrom):
                    src = self.index._abs(mod, stmt)
                    b = self.index.lookup(src, alias.name)
                    env[local] = self.wrap_binding(b)
        elif isinstance(stmt, ast.Pass):
            pass
        else:
            raise ValueError(
                f"{src_ref(self.index, mod, stmt)}: unsupported statement {type(stmt).__name__}"
            )

    def assign(self, target: ast.expr, value: Any, env: dict[str, Any]) -> None:
        if isinstance(target, ast.Name):
            env[target.id] = value
        elif isinstance(target, ast.Tuple):
            for t, v in zip(target.elts, list(value), strict=True):
                self.assign(t, v, env)
        elif isinstance(target, ast.Subscript):
            container = self.ev(target.value, env, self.module)
            key = self.ev(target.slice, env, self.module)
            if isinstance(container, dict):
                container[key] = value
        elif isinstance(target, ast.Attribute):
            pass  # e.g. serve_parser.epilog = ...
        else:
            raise ValueError(f"unsupported assignment target {ast.unparse(target)}")

    # -- expressions ------------------------------------------------------

    def wrap_binding(self, b: Binding) -> Any:
        if b.kind == "class":
            return ClassRef(b)
        if b.kind == "func":
            return FuncRef(b)
        if b.kind == "external":
            return ExtRef(b.name)
        if b.kind == "module":
            return ExtRef(b.name)
        if b.kind == "value":
            return self.ev(b.node, {}, b.module)
        return Unknown(b.name)

    def lookup_name(self, name: str, env: dict[str, Any], mod: str) -> Any:
        if name in env:
            return env[name]
        builtins = {"None": None, "True": True, "False": False}
        if name in builtins:
            return builtins[name]
        if name in (
            "int",
            "str",
            "float",
            "bool",
            "list",
            "dict",
            "tuple",
            "set",
            "sorted",
            "len",
            "type",
        ):
            b = self.index.table(mod).get(name) if self.index.path_of(mod) else None
            if b is None:
                return ExtRef(name)
        if name == "sys":
            return ExtRef("sys")
        return self.wrap_binding(self.index.lookup(mod, name))

    def ev(self, expr: ast.expr | None, env: dict[str, Any], mod: str) -> Any:
        if expr is None:
            return None
        if isinstance(expr, ast.Constant):
            return expr.value
        if isinstance(expr, ast.Name):
            return self.lookup_name(expr.id, env, mod)
        if isinstance(expr, ast.JoinedStr):
            parts = []
            for v in expr.values:
                val = self.ev(v.value, env, mod) if isinstance(v, ast.FormattedValue) else v.value
                if not isinstance(val, str | int | float):
                    return Unknown(ast.unparse(expr))
                parts.append(str(val))
            return "".join(parts)
        if isinstance(expr, ast.List | ast.Tuple | ast.Set):
            out: list[Any] = []
            for e in expr.elts:
                if isinstance(e, ast.Starred):
                    inner = self.ev(e.value, env, mod)
                    if isinstance(inner, Unknown):
                        return Unknown(ast.unparse(expr))
                    out.extend(inner)
                else:
                    out.append(self.ev(e, env, mod))
            return tuple(out) if isinstance(expr, ast.Tuple) else out
        if isinstance(expr, ast.Dict):
            d = KwDict()
            for k, v in zip(expr.keys, expr.values, strict=True):
                if k is None:
                    inner = self.ev(v, env, mod)
                    if isinstance(inner, KwDict) and inner.origin:
                        d.origin = inner.origin
                    if isinstance(inner, dict):
                        d.update(inner)
                else:
                    d[self.ev(k, env, mod)] = self.ev(v, env, mod)
            return d
        if isinstance(expr, ast.Subscript):
            container = self.ev(expr.value, env, mod)
            if isinstance(expr.slice, ast.Slice):
                if isinstance(container, list | tuple):
                    lo = self.ev(expr.slice.lower, env, mod)
                    hi = self.ev(expr.slice.upper, env, mod)
                    return container[lo:hi]
                return Unknown(ast.unparse(expr))
            key = self.ev(expr.slice, env, mod)
            if isinstance(container, dict | list | tuple):
                try:
                    return container[key]
                except (KeyError, IndexError, TypeError):
                    raise ValueError(
                        f"{src_ref(self.index, mod, expr)}: {ast.unparse(expr)} not found"
                    ) from None
            return Unknown(ast.unparse(expr))
        if isinstance(expr, ast.Attribute):
            base = self.ev(expr.value, env, mod)
            return self.attr(base, expr.attr, expr)
        if isinstance(expr, ast.Call):
            return self.call(expr, env, mod)
        if isinstance(expr, ast.UnaryOp) and isinstance(expr.op, ast.Not):
            v = self.ev(expr.operand, env, mod)
            return v if isinstance(v, Unknown) else not v
        if isinstance(expr, ast.BoolOp):
            vals = [self.ev(v, env, mod) for v in expr.values]
            if any(isinstance(v, Unknown) for v in vals):
                return Unknown(ast.unparse(expr))
            return all(vals) if isinstance(expr.op, ast.And) else any(vals)
        if isinstance(expr, ast.Compare) and len(expr.ops) == 1:
            left = self.ev(expr.left, env, mod)
            right = self.ev(expr.comparators[0], env, mod)
            if isinstance(left, Unknown) or isinstance(right, Unknown):
                return Unknown(ast.unparse(expr))
            op = expr.ops[0]
            try:
                if isinstance(op, ast.In):
                    return left in right
                if isinstance(op, ast.NotIn):
                    return left not in right
                if isinstance(op, ast.Eq):
                    return left == right
                if isinstance(op, ast.NotEq):
                    return left != right
            except TypeError:
                return Unknown(ast.unparse(expr))
            return Unknown(ast.unparse(expr))
        if isinstance(expr, ast.BinOp) and isinstance(expr.op, ast.Add):
            left = self.ev(expr.left, env, mod)
            right = self.ev(expr.right, env, mod)
            if isinstance(left, list) and isinstance(right, list):
                return left + right
            if isinstance(left, str) and isinstance(right, str):
                return left + right
            return Unknown(ast.unparse(expr))
        if isinstance(expr, ast.ListComp):
            return self.listcomp(expr, env, mod)
        if isinstance(expr, ast.Lambda):
            return Unknown(f"lambda: {ast.unparse(expr.body)}")
        if isinstance(expr, ast.IfExp):
            test = self.ev(expr.test, env, mod)
            if isinstance(test, Unknown):
                return Unknown(ast.unparse(expr))
            return self.ev(expr.body if test else expr.orelse, env, mod)
        return Unknown(ast.unparse(expr))

    def attr(self, base: Any, name: str, expr: ast.expr) -> Any:
        if isinstance(base, ExtRef):
            full = f"{base.name}.{name}"
            if full == "sys.argv":
                return list(SIMULATED_ARGV)
            if base.name.startswith("vllm") and self.index.path_of(base.name):
                return self.wrap_binding(self.index.lookup(base.name, name))
            return ExtRef(full)
        if isinstance(base, SuperRef):
            node = base.owner.node
            assert isinstance(node, ast.ClassDef)
            for b in node.bases:
                target = b.value if isinstance(b, ast.Subscript) else b
                if isinstance(target, ast.Name):
                    bb = self.index.lookup(base.owner.module, target.id)
                    if bb.kind == "class":
                        found = self.class_member(bb, name)
                        if isinstance(found, FuncRef):
                            return FuncRef(found.binding, bound_cls=base.cls, owner=found.owner)
            return Unknown(f"super().{name}")
        if isinstance(base, ClassRef):
            member = self.class_member(base.binding, name)
            if member is not None:
                return member
            return Unknown(f"{base.binding.name}.{name}")
        if isinstance(base, ParserVal):
            if name == "check_port":
                return TypeVal("int", detail="FlexibleArgumentParser.check_port: 1024..65535")
            return ("parser_method", base, name)
        if isinstance(base, dict | list | str):
            return ("bound_method", base, name)
        if isinstance(base, FuncRef) and name == "__doc__":
            return ""
        return Unknown(ast.unparse(expr))

    def class_member(self, cls: Binding, name: str) -> Any:
        node = cls.node
        assert isinstance(node, ast.ClassDef)
        if name == "__doc__":
            return ast.get_docstring(node) or ""
        if name == "__name__":
            return cls.name
        for stmt in node.body:
            if isinstance(stmt, ast.FunctionDef) and stmt.name == name:
                return FuncRef(
                    Binding("func", cls.module, name, stmt), bound_cls=ClassRef(cls), owner=cls
                )
            if (
                isinstance(stmt, ast.AnnAssign)
                and isinstance(stmt.target, ast.Name)
                and stmt.target.id == name
            ):
                return Unknown(f"{cls.name}.{name}")  # a field default
            if isinstance(stmt, ast.Assign) and any(
                isinstance(t, ast.Name) and t.id == name for t in stmt.targets
            ):
                return Unknown(f"{cls.name}.{name}")
        for base in node.bases:
            target = base.value if isinstance(base, ast.Subscript) else base
            if isinstance(target, ast.Name):
                b = self.index.lookup(cls.module, target.id)
                if b.kind == "class":
                    found = self.class_member(b, name)
                    if found is not None:
                        if isinstance(found, FuncRef):
                            # keep the *subclass* as `cls` for classmethods
                            return FuncRef(
                                found.binding, bound_cls=ClassRef(cls), owner=found.owner
                            )
                        return found
        return None

    def listcomp(self, expr: ast.ListComp, env: dict[str, Any], mod: str) -> Any:
        if len(expr.generators) != 1:
            return Unknown(ast.unparse(expr))
        gen = expr.generators[0]
        it = self.ev(gen.iter, env, mod)
        # `[f.value for f in SomeEnum]`
        if isinstance(it, ClassRef) and isinstance(gen.target, ast.Name):
            members = self.enum_members(it.binding)
            if (
                isinstance(expr.elt, ast.Attribute)
                and expr.elt.attr == "value"
                and members is not None
            ):
                return [v for _, v in members]
            return Unknown(ast.unparse(expr))
        if (
            isinstance(it, list | tuple)
            and isinstance(gen.target, ast.Name | ast.Tuple)
            and not gen.ifs
        ):
            out = []
            for item in it:
                local = dict(env)
                self.assign(gen.target, item, local)
                out.append(self.ev(expr.elt, local, mod))
            return out
        return Unknown(ast.unparse(expr))

    def enum_members(self, cls: Binding) -> list[tuple[str, Any]] | None:
        node = cls.node
        assert isinstance(node, ast.ClassDef)
        out = []
        for stmt in node.body:
            if isinstance(stmt, ast.Assign) and isinstance(stmt.targets[0], ast.Name):
                if isinstance(stmt.value, ast.Constant):
                    out.append((stmt.targets[0].id, stmt.value.value))
                else:
                    return None
        return out

    def call(self, expr: ast.Call, env: dict[str, Any], mod: str) -> Any:
        self.calls += 1
        if isinstance(expr.func, ast.Name) and expr.func.id == "super" and not expr.args:
            return SuperRef(env["__owner__"], env["__cls__"])
        func = self.ev(expr.func, env, mod)
        args: list[Any] = []
        for a in expr.args:
            if isinstance(a, ast.Starred):
                inner = self.ev(a.value, env, mod)
                if isinstance(inner, Unknown):
                    return Unknown(ast.unparse(expr))
                args.extend(inner)
            else:
                args.append(self.ev(a, env, mod))
        kwargs = KwDict()
        for kw in expr.keywords:
            value = self.ev(kw.value, env, mod)
            if kw.arg is None:
                if isinstance(value, KwDict) and value.origin:
                    kwargs.origin = value.origin
                if isinstance(value, dict):
                    clash = set(value) & set(kwargs)
                    if clash:  # Python raises TypeError: multiple values
                        raise ValueError(
                            f"{src_ref(self.index, mod, expr)}: duplicate keywords {sorted(clash)}"
                        )
                    kwargs.update(value)
                else:
                    raise ValueError(
                        f"{src_ref(self.index, mod, expr)}: **{ast.unparse(kw.value)} not evaluable"
                    )
            else:
                if kw.arg in kwargs:
                    raise ValueError(
                        f"{src_ref(self.index, mod, expr)}: duplicate keyword {kw.arg}"
                    )
                kwargs[kw.arg] = value

        # parser methods
        if isinstance(func, tuple) and func[0] == "parser_method":
            _, parser, name = func
            if name == "add_argument":
                self.record(parser, args, kwargs, src_ref(self.index, mod, expr))
                return None
            if name == "add_parser":
                return parser.target if isinstance(parser, _SubParsers) else parser
            if name in ("add_argument_group", "add_mutually_exclusive_group"):
                return parser
            if name == "register":
                return None
            return Unknown(f"parser.{name}")
        if isinstance(func, tuple) and func[0] == "bound_method":
            _, obj, name = func
            return self.bound_method(obj, name, args, expr)
        if isinstance(func, ExtRef):
            return self.ext_call(func.name, args, kwargs, expr, env, mod)
        if isinstance(func, FuncRef):
            name = func.binding.name
            if (
                name in ("get_kwargs", "_compute_kwargs")
                and func.binding.module == "vllm.engine.arg_utils"
            ):
                cls = args[0]
                if not isinstance(cls, ClassRef):
                    raise ValueError(f"{src_ref(self.index, mod, expr)}: get_kwargs of {cls!r}")
                table = self.rules.for_class(cls.binding)
                return table
            if name == "optional_type":
                t = _to_typeval(args[0])
                return (
                    TypeVal(t.base, True, t.detail)
                    if isinstance(t, TypeVal)
                    else Unknown("optional_type")
                )
            if name == "parse_type":
                return _to_typeval(args[0])
            if name in ("load_general_plugins",):
                self.notes.append(
                    f"{src_ref(self.index, mod, expr)}: {name}() skipped: "
                    "out-of-tree plugins may add flags or choices"
                )
                return None
            if name in (
                "add_cli_args",
                "make_arg_parser",
                "_customize_cli_kwargs",
                "subparser_init",
            ):
                return self.run_function(func.binding, args, func.bound_cls, func.owner)
            if name in ("get_args",):
                return self.literal_values(expr.args[0], env, mod)
            return Unknown(f"{name}()")
        if isinstance(func, ClassRef):
            return Unknown(f"{func.binding.name}()")
        if isinstance(func, Unknown):
            if "pre_register_and_update" in func.text:
                self.notes.append(
                    f"{src_ref(self.index, mod, expr)}: "
                    "current_platform.pre_register_and_update(parser) skipped (the CUDA "
                    "platform keeps the interface's no-op; out-of-tree platforms may add "
                    "choices)"
                )
            return Unknown(ast.unparse(expr))
        return Unknown(ast.unparse(expr))

    def literal_values(self, expr: ast.expr, env: dict[str, Any], mod: str) -> Any:
        hint = self.rules.types.eval(expr, mod)
        values: list[Any] = []
        for m in _union_members(hint):
            if m.kind != "literal":
                return Unknown(f"get_args({ast.unparse(expr)})")
            values.extend(m.args)
        return tuple(values)

    def ext_call(
        self,
        name: str,
        args: list[Any],
        kwargs: dict[str, Any],
        expr: ast.Call,
        env: dict[str, Any],
        mod: str,
    ) -> Any:
        if (
            name in ("list", "tuple", "sorted", "set")
            and len(args) == 1
            and not isinstance(args[0], Unknown)
        ):
            try:
                data = list(args[0])
            except TypeError:
                return Unknown(ast.unparse(expr))
            return sorted(data, key=str) if name == "sorted" else data
        if name in ("typing.get_args", "get_args"):
            return self.literal_values(expr.args[0], env, mod)
        if name == "itertools.permutations" and not isinstance(args[0], Unknown):
            return [list(p) for p in itertools.permutations(args[0], *args[1:], **kwargs)]
        if name == "copy.deepcopy":
            return copy.deepcopy(args[0])
        return Unknown(ast.unparse(expr))

    def bound_method(self, obj: Any, name: str, args: list[Any], expr: ast.Call) -> Any:
        if isinstance(obj, dict):
            if name == "items":
                return list(obj.items())
            if name == "pop":
                return obj.pop(args[0], *args[1:])
            if name == "get":
                return obj.get(args[0], *args[1:])
            if name == "update":
                obj.update(args[0])
                return None
            if name == "copy":
                return copy.copy(obj)
        if isinstance(obj, list):
            if name == "remove":
                if args[0] in obj:
                    obj.remove(args[0])
                else:
                    self.notes.append(f"list.remove({args[0]!r}) on a value not present; ignored")
                return None
            if name == "append":
                obj.append(args[0])
                return None
            if name == "extend":
                obj.extend(args[0])
                return None
        if isinstance(obj, str) and name == "join" and args and isinstance(args[0], list | tuple):
            if all(isinstance(a, str) for a in args[0]):
                return obj.join(args[0])
            return Unknown(ast.unparse(expr))
        if isinstance(obj, str) and all(isinstance(a, str) for a in args):
            if name == "replace":
                return obj.replace(*args)
            if name == "join":
                return obj.join(args[0])
            if name in ("lower", "upper", "strip"):
                return getattr(obj, name)()
        return Unknown(ast.unparse(expr))

    # -- recording --------------------------------------------------------

    def record(self, parser: ParserVal, args: list[Any], kwargs: KwDict, source: str) -> None:
        names = [a for a in args if isinstance(a, str)]
        if len(names) != len(args):
            raise ValueError(f"{source}: non-literal option strings {args!r}")
        if names and not names[0].startswith("-"):
            parser.positionals.append(names[0])
            return
        parser.flags.append(
            {"names": names, "kwargs": kwargs, "source": source, "origin": kwargs.origin}
        )


# --------------------------------------------------------------------------
# Flag post-processing: argparse semantics
# --------------------------------------------------------------------------


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
    type_val = _to_typeval(kw.get("type"))
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


# --------------------------------------------------------------------------
# FlexibleArgumentParser spelling rules
# --------------------------------------------------------------------------


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


# --------------------------------------------------------------------------
# SpeculativeConfig
# --------------------------------------------------------------------------


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
    members = [m for m in _union_members(hint) if m.kind != "none"]
    nullable = len(members) != len(_union_members(hint))
    while len(members) == 1 and members[0].kind == "annotated":
        members = [m for m in _union_members(members[0].args[0]) if m.kind != "none"]
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
    path = index.path_of(cls.module)

    # How the dict from --speculative-config becomes an object
    # (vllm/engine/arg_utils.py EngineArgs.create_speculative_config).
    arg_utils = index.tree("vllm.engine.arg_utils")
    create = next(
        n
        for n in ast.walk(arg_utils)
        if isinstance(n, ast.FunctionDef) and n.name == "create_speculative_config"
    )
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
    create_text = ast.unparse(create)
    constructs_via = "from_dict" if "SpeculativeConfig.from_dict" in create_text else "constructor"
    dashes_normalised = 'k.replace("-", "_")' in create_text or "k.replace('-', '_')" in create_text

    deco_kinds = [types.decorator_kind(cls.module, d) for d in node.decorator_list]
    deco_kinds = [d for d in deco_kinds if d is not None]
    if not deco_kinds:
        raise ValueError("SpeculativeConfig is not a recognised dataclass")
    flavour, extra = deco_kinds[0]
    if flavour == "stdlib":
        unknown = "type_error"
        unknown_why = (
            "stdlib @dataclass __init__ raises TypeError on an unexpected keyword argument"
        )
    elif (extra or "ignore") == "forbid":
        unknown = "validation_error"
        unknown_why = (
            "pydantic dataclass with ConfigDict(extra='forbid'): 'Unexpected keyword argument'"
        )
    elif (extra or "ignore") == "ignore":
        unknown = "ignored"
        unknown_why = (
            "pydantic dataclass with the default extra='ignore': unknown keys are silently dropped"
        )
    else:
        unknown = "ignored" if extra == "allow" else "validation_error"
        unknown_why = f"pydantic dataclass extra={extra!r}"
    decorator_src = f"{path}:{node.lineno - len(node.decorator_list)}"

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
        hint = types.eval(f.annotation, f.module)
        tname, choices, nullable = describe_hint(hint)
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
        fields_out[f.name] = entry
    if method_field is None:
        raise ValueError("SpeculativeConfig has no `method` field")
    declared = [
        v
        for m in _union_members(types.eval(method_field.annotation, method_field.module))
        if m.kind == "literal"
        for v in m.args
    ]

    # Values the code branches on: comparisons against `self.method` /
    # `method` and assignments to it inside the class body.
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
    enforced = flavour == "pydantic" and "SkipValidation" not in ast.unparse(
        method_field.annotation
    )
    if enforced:
        # pydantic validates the Literal before __post_init__ runs.
        accepted = list(declared)
        accepted_why = "pydantic validates the Literal type hint"
    else:
        accepted = list(dict.fromkeys(declared + branched))
        accepted_why = (
            "stdlib dataclass: the Literal is not enforced; accepted = Literal + every "
            "value the code compares with or assigns to `method`"
        )
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

    shorthand = {}
    spec_qual = f"{cls.module}.{cls.name}"
    for f in flags:
        if f.get("origin") and f["origin"][0] == spec_qual:
            shorthand[f["names"][0]] = f["origin"][1]

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
        "dash_keys_normalised": dashes_normalised,
        "shorthand_flags": dict(sorted(shorthand.items())),
    }


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
            for m in _union_members(hint)
            if m.kind == "literal"
            for v in m.args
            if isinstance(v, str)
        ]
    if isinstance(expr, ast.Name):
        b = index.lookup(module, expr.id)
        if b.kind == "value" and isinstance(b.node, ast.expr):
            return _string_constants(b.node, index, b.module)
    return []


# --------------------------------------------------------------------------
# Runtime value sets that argparse does not enforce
# --------------------------------------------------------------------------


def runtime_choices(
    index: ModuleIndex, types: TypeEvaluator, flags: list[dict[str, Any]]
) -> dict[str, Any]:
    """Values checked after parsing (at engine start), e.g. --quantization."""
    out: dict[str, Any] = {}
    mod = "vllm.model_executor.layers.quantization"
    binding = index.lookup(mod, "QuantizationMethods")
    if binding.kind == "value":
        hint = types.eval(binding.node, binding.module)
        values = [v for m in _union_members(hint) if m.kind == "literal" for v in m.args]
        flag = next((f for f in flags if f["dest"] == "quantization"), None)
        if flag is not None:
            out["quantization"] = {
                "values": values,
                "enforced_by_argparse": flag["choices"] is not None,
                "source": f"{index.path_of(binding.module)}:{binding.node.lineno}",
                "note": (
                    "QUANTIZATION_METHODS = list(get_args(QuantizationMethods)); "
                    "plugins may register more at runtime"
                ),
            }
    return out


# --------------------------------------------------------------------------
# Driver
# --------------------------------------------------------------------------


def build_catalog(version: str, wheel_path: Path) -> dict[str, Any]:
    notes: list[str] = []
    with zipfile.ZipFile(wheel_path) as zf:
        index = ModuleIndex(zf)
        types = TypeEvaluator(index)
        rules = KwargsRules(index, types)
        interp = Interpreter(index, rules, notes)
        serve = index.find_class("vllm.entrypoints.cli.serve", "ServeSubcommand")
        init = interp.class_member(serve, "subparser_init")
        assert isinstance(init, FuncRef)
        parser = ParserVal([], [])
        interp.parser = parser
        # `subparsers.add_parser(...)` (argparse._SubParsersAction) must
        # yield the serve parser.
        result = interp.run_function(init.binding, [_SubParsers(parser)], ClassRef(serve))
        if not isinstance(result, ParserVal):
            raise ValueError(f"subparser_init returned {result!r}")
        inverse = enable_disable_rule(index)
        flags = [
            finalize_flag(raw, inverse, notes) | {"origin": raw["origin"]} for raw in parser.flags
        ]
        seen: dict[str, str] = {}
        for f in flags:
            for n in f["names"]:
                if n in seen:
                    raise ValueError(f"duplicate option string {n}: {seen[n]} and {f['source']}")
                seen[n] = f["source"]
        spec = speculative_facts(index, types, flags, notes)
        runtime = runtime_choices(index, types, flags)
        prules = parser_rules(index)
        notes.extend(rules.notes)
    for f in flags:
        f.pop("origin", None)
    notes.append(
        f"get_kwargs/_compute_kwargs reproduced from {rules.source_ref}; "
        f"human-readable int fields: {sorted(rules.human_int_names)}"
    )
    notes.append("argparse adds -h/--help, not listed in flags")
    notes.append("type 'human_int' with also_accepts ['auto','-1'] is human_readable_int_or_auto")
    notes.append("also_accepts ['', 'None'] = optional_type(): those strings parse to None")
    flags.sort(key=lambda f: f["names"][0])
    removed = [f for f in LEGACY_SPEC_FLAGS if f not in seen]
    return {
        "vllm_version": version,
        "generated_by": GENERATED_BY,
        "wheel": wheel_path.name,
        "wheel_sha256": sha256_of(wheel_path),
        "parser": prules,
        "positionals": parser.positionals,
        "flags": flags,
        "runtime_choices": runtime,
        "speculative_config": spec,
        "removed_flags": removed,
        "notes": sorted(set(notes)),
    }


class _SubParsers(ParserVal):
    """Stand-in for argparse._SubParsersAction: add_parser returns the parser."""

    def __init__(self, parser: ParserVal) -> None:
        super().__init__(parser.flags, parser.positionals)
        self.target = parser


def iter_versions(args: list[str]) -> Iterator[str]:
    for v in args:
        if not re.fullmatch(r"\d+(\.\d+)+(\.post\d+)?", v):
            raise SystemExit(f"not a version: {v}")
        yield v


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("versions", nargs="+")
    ap.add_argument("--cache", type=Path, default=DEFAULT_CACHE, help="wheel cache directory")
    ap.add_argument("--out", type=Path, default=CATALOG_DIR)
    ns = ap.parse_args(argv)
    ns.out.mkdir(parents=True, exist_ok=True)
    for version in iter_versions(ns.versions):
        wheel = find_or_download_wheel(version, ns.cache)
        catalog = build_catalog(version, wheel)
        out = ns.out / f"vllm-{version}.json"
        out.write_text(json.dumps(catalog, indent=2, sort_keys=True, ensure_ascii=False) + "\n")
        print(
            f"{out.relative_to(REPO_ROOT) if out.is_relative_to(REPO_ROOT) else out}: "
            f"{len(catalog['flags'])} flags"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
