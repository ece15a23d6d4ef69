"""The add_cli_args interpreter: walks `ServeSubcommand.subparser_init` and everything it
calls, statement by statement, recording every `add_argument`."""

from __future__ import annotations

import ast
import copy
import itertools
from collections.abc import Callable
from typing import Any

from tools.vllm_catalog.kwargs_rules import KwargsRules
from tools.vllm_catalog.module_index import Binding, ModuleIndex, src_ref
from tools.vllm_catalog.symbolic import (
    ClassRef,
    ExtRef,
    FuncRef,
    KwDict,
    ParserVal,
    ReturnSignal,
    SubParsers,
    SuperRef,
    TypeVal,
    Unknown,
    to_typeval,
)
from tools.vllm_catalog.type_hints import union_members

# The process that argparse sees for a systemd unit running `vllm serve MODEL`.
SIMULATED_ARGV = ("vllm", "serve", "<model>")
# ... and for `python3 -m vllm.entrypoints.openai.api_server --model MODEL` (sys.argv[0] is
# the module's file). vLLM 0.9.0 adds `--model` only when "serve" is not in sys.argv.
API_SERVER_ARGV = ("vllm/entrypoints/openai/api_server.py", "--model", "<model>")


def _assigns(stmt: ast.stmt, name: str) -> bool:
    """Does this class-body statement bind `name` (`name: T = …` or `name = …`)?"""
    if isinstance(stmt, ast.AnnAssign):
        return isinstance(stmt.target, ast.Name) and stmt.target.id == name
    if isinstance(stmt, ast.Assign):
        return any(isinstance(t, ast.Name) and t.id == name for t in stmt.targets)
    return False


def _dict_update(obj: dict[Any, Any], args: list[Any]) -> None:
    obj.update(args[0])


_DICT_METHODS: dict[str, Callable[[dict[Any, Any], list[Any]], Any]] = {
    "items": lambda obj, args: list(obj.items()),
    "pop": lambda obj, args: obj.pop(args[0], *args[1:]),
    "get": lambda obj, args: obj.get(args[0], *args[1:]),
    "update": _dict_update,
    "copy": lambda obj, args: copy.copy(obj),
}


def _str_method(obj: str, name: str, args: list[Any], expr: ast.Call) -> Any:
    if name == "join" and args and isinstance(args[0], list | tuple):
        if all(isinstance(a, str) for a in args[0]):
            return obj.join(args[0])
        return Unknown(ast.unparse(expr))
    if all(isinstance(a, str) for a in args):
        if name == "replace":
            return obj.replace(*args)
        if name == "join":
            return obj.join(args[0])
        if name in ("lower", "upper", "strip"):
            return getattr(obj, name)()
    return Unknown(ast.unparse(expr))


# The comparisons the interpreter evaluates (one operator, no chains).
_COMPARISONS: dict[type[ast.cmpop], Callable[[Any, Any], bool]] = {
    ast.In: lambda a, b: a in b,
    ast.NotIn: lambda a, b: a not in b,
    ast.Eq: lambda a, b: a == b,
    ast.NotEq: lambda a, b: a != b,
}


class Interpreter:
    """Execute parser-building functions symbolically."""

    def __init__(
        self,
        index: ModuleIndex,
        rules: KwargsRules,
        notes: list[str],
        argv: tuple[str, ...] = SIMULATED_ARGV,
    ) -> None:
        self.index = index
        self.argv = list(argv)
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
        handler = getattr(self, "_exec_" + type(stmt).__name__, None)
        if handler is None:
            raise ValueError(
                f"{src_ref(self.index, self.module, stmt)}: unsupported statement "
                f"{type(stmt).__name__}"
            )
        handler(stmt, env)

    # One method per statement kind (as ast.NodeVisitor names them).

    def _exec_Expr(self, stmt: ast.Expr, env: dict[str, Any]) -> None:
        if not isinstance(stmt.value, ast.Constant):  # a docstring does nothing
            self.ev(stmt.value, env, self.module)

    def _exec_Assign(self, stmt: ast.Assign, env: dict[str, Any]) -> None:
        value = self.ev(stmt.value, env, self.module)
        for target in stmt.targets:
            self.assign(target, value, env)

    def _exec_AugAssign(self, stmt: ast.AugAssign, env: dict[str, Any]) -> None:
        current = self.ev(stmt.target, env, self.module)
        value = self.ev(stmt.value, env, self.module)
        if isinstance(current, list) and isinstance(value, list) and isinstance(stmt.op, ast.Add):
            current.extend(value)
        elif isinstance(current, str) and isinstance(value, str):
            self.assign(stmt.target, current + value, env)
        else:
            self.assign(stmt.target, Unknown(ast.unparse(stmt)), env)

    def _exec_If(self, stmt: ast.If, env: dict[str, Any]) -> None:
        test = self.ev(stmt.test, env, self.module)
        if isinstance(test, Unknown):
            self.notes.append(
                f"{src_ref(self.index, self.module, stmt)}: condition "
                f"`{ast.unparse(stmt.test)}` not evaluable; assumed true"
            )
            self.exec_body(stmt.body, env)
        elif test:
            self.exec_body(stmt.body, env)
        else:
            self.exec_body(stmt.orelse, env)

    def _exec_For(self, stmt: ast.For, env: dict[str, Any]) -> None:
        it = self.ev(stmt.iter, env, self.module)
        if isinstance(it, Unknown):
            raise ValueError(
                f"{src_ref(self.index, self.module, stmt)}: cannot iterate {ast.unparse(stmt.iter)}"
            )
        for item in list(it):
            self.assign(stmt.target, item, env)
            self.exec_body(stmt.body, env)

    def _exec_Delete(self, stmt: ast.Delete, env: dict[str, Any]) -> None:
        for target in stmt.targets:
            if isinstance(target, ast.Subscript):
                container = self.ev(target.value, env, self.module)
                key = self.ev(target.slice, env, self.module)
                if isinstance(container, dict):
                    del container[key]

    def _exec_Return(self, stmt: ast.Return, env: dict[str, Any]) -> None:
        raise ReturnSignal(self.ev(stmt.value, env, self.module) if stmt.value else None)

    def _exec_Import(self, stmt: ast.Import, env: dict[str, Any]) -> None:
        """A function-level `import x` binds nothing the arguments depend on."""

    def _exec_ImportFrom(self, stmt: ast.ImportFrom, env: dict[str, Any]) -> None:
        for alias in stmt.names:
            local = alias.asname or alias.name.split(".")[0]
            src = self.index.absolute_module(self.module, stmt)
            env[local] = self.wrap_binding(self.index.lookup(src, alias.name))

    def _exec_Pass(self, stmt: ast.Pass, env: dict[str, Any]) -> None:
        pass

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
        handler = getattr(self, "_ev_" + type(expr).__name__, None)
        if handler is None:
            return Unknown(ast.unparse(expr))
        return handler(expr, env, mod)

    # One method per expression kind (as ast.NodeVisitor names them); anything else is
    # Unknown.

    def _ev_Constant(self, expr: ast.Constant, env: dict[str, Any], mod: str) -> Any:
        return expr.value

    def _ev_Name(self, expr: ast.Name, env: dict[str, Any], mod: str) -> Any:
        return self.lookup_name(expr.id, env, mod)

    def _ev_JoinedStr(self, expr: ast.JoinedStr, env: dict[str, Any], mod: str) -> Any:
        parts = []
        for v in expr.values:
            val = self.ev(v.value, env, mod) if isinstance(v, ast.FormattedValue) else v.value
            if not isinstance(val, str | int | float):
                return Unknown(ast.unparse(expr))
            parts.append(str(val))
        return "".join(parts)

    def _ev_List(self, expr: ast.List | ast.Tuple | ast.Set, env: dict[str, Any], mod: str) -> Any:
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

    _ev_Tuple = _ev_List
    _ev_Set = _ev_List

    def _ev_Dict(self, expr: ast.Dict, env: dict[str, Any], mod: str) -> Any:
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

    def _ev_Subscript(self, expr: ast.Subscript, env: dict[str, Any], mod: str) -> Any:
        container = self.ev(expr.value, env, mod)
        if isinstance(expr.slice, ast.Slice):
            if isinstance(container, list | tuple):
                lo = self.ev(expr.slice.lower, env, mod)
                hi = self.ev(expr.slice.upper, env, mod)
                return container[lo:hi]
            return Unknown(ast.unparse(expr))
        key = self.ev(expr.slice, env, mod)
        if not isinstance(container, dict | list | tuple):
            return Unknown(ast.unparse(expr))
        try:
            return container[key]
        except (KeyError, IndexError, TypeError):
            raise ValueError(
                f"{src_ref(self.index, mod, expr)}: {ast.unparse(expr)} not found"
            ) from None

    def _ev_Attribute(self, expr: ast.Attribute, env: dict[str, Any], mod: str) -> Any:
        return self.attr(self.ev(expr.value, env, mod), expr.attr, expr)

    def _ev_Call(self, expr: ast.Call, env: dict[str, Any], mod: str) -> Any:
        return self.call(expr, env, mod)

    def _ev_UnaryOp(self, expr: ast.UnaryOp, env: dict[str, Any], mod: str) -> Any:
        if not isinstance(expr.op, ast.Not):
            return Unknown(ast.unparse(expr))
        v = self.ev(expr.operand, env, mod)
        return v if isinstance(v, Unknown) else not v

    def _ev_BoolOp(self, expr: ast.BoolOp, env: dict[str, Any], mod: str) -> Any:
        vals = [self.ev(v, env, mod) for v in expr.values]
        if any(isinstance(v, Unknown) for v in vals):
            return Unknown(ast.unparse(expr))
        return all(vals) if isinstance(expr.op, ast.And) else any(vals)

    def _ev_Compare(self, expr: ast.Compare, env: dict[str, Any], mod: str) -> Any:
        if len(expr.ops) != 1:
            return Unknown(ast.unparse(expr))
        left = self.ev(expr.left, env, mod)
        right = self.ev(expr.comparators[0], env, mod)
        compare = _COMPARISONS.get(type(expr.ops[0]))
        if isinstance(left, Unknown) or isinstance(right, Unknown) or compare is None:
            return Unknown(ast.unparse(expr))
        try:
            return compare(left, right)
        except TypeError:
            return Unknown(ast.unparse(expr))

    def _ev_BinOp(self, expr: ast.BinOp, env: dict[str, Any], mod: str) -> Any:
        if not isinstance(expr.op, ast.Add):
            return Unknown(ast.unparse(expr))
        left = self.ev(expr.left, env, mod)
        right = self.ev(expr.right, env, mod)
        if isinstance(left, list) and isinstance(right, list):
            return left + right
        if isinstance(left, str) and isinstance(right, str):
            return left + right
        return Unknown(ast.unparse(expr))

    def _ev_ListComp(self, expr: ast.ListComp, env: dict[str, Any], mod: str) -> Any:
        return self.listcomp(expr, env, mod)

    def _ev_Lambda(self, expr: ast.Lambda, env: dict[str, Any], mod: str) -> Any:
        return Unknown(f"lambda: {ast.unparse(expr.body)}")

    def _ev_IfExp(self, expr: ast.IfExp, env: dict[str, Any], mod: str) -> Any:
        test = self.ev(expr.test, env, mod)
        if isinstance(test, Unknown):
            return Unknown(ast.unparse(expr))
        return self.ev(expr.body if test else expr.orelse, env, mod)

    def attr(self, base: Any, name: str, expr: ast.expr) -> Any:
        if isinstance(base, ExtRef):
            return self._module_attr(base, name)
        if isinstance(base, SuperRef):
            return self._super_attr(base, name)
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

    def _module_attr(self, base: ExtRef, name: str) -> Any:
        """`sys.argv` (the simulated command line), `vllm.x.y` (followed), else external."""
        full = f"{base.name}.{name}"
        if full == "sys.argv":
            return list(self.argv)
        if base.name.startswith("vllm") and self.index.path_of(base.name):
            return self.wrap_binding(self.index.lookup(base.name, name))
        return ExtRef(full)

    def _super_attr(self, base: SuperRef, name: str) -> Any:
        """`super().name`: the first base class that has the method, bound to `cls`."""
        for parent in self._base_classes(base.owner):
            found = self.class_member(parent, name)
            if isinstance(found, FuncRef):
                return FuncRef(found.binding, bound_cls=base.cls, owner=found.owner)
        return Unknown(f"super().{name}")

    def _base_classes(self, cls: Binding) -> list[Binding]:
        """The vLLM classes among the bases of `cls` (`Base` and `Base[T]`), in order."""
        node = cls.node
        assert isinstance(node, ast.ClassDef)
        found = []
        for base in node.bases:
            target = base.value if isinstance(base, ast.Subscript) else base
            if isinstance(target, ast.Name):
                binding = self.index.lookup(cls.module, target.id)
                if binding.kind == "class":
                    found.append(binding)
        return found

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
            if _assigns(stmt, name):
                return Unknown(f"{cls.name}.{name}")  # a field default or class attribute
        for parent in self._base_classes(cls):
            found = self.class_member(parent, name)
            if isinstance(found, FuncRef):
                # keep the *subclass* as `cls` for classmethods
                return FuncRef(found.binding, bound_cls=ClassRef(cls), owner=found.owner)
            if found is not None:
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
        args = self._call_args(expr, env, mod)
        if args is None:
            return Unknown(ast.unparse(expr))
        kwargs = self._call_kwargs(expr, env, mod)
        if isinstance(func, tuple) and func[0] == "parser_method":
            return self._parser_call(func[1], func[2], args, kwargs, src_ref(self.index, mod, expr))
        if isinstance(func, tuple) and func[0] == "bound_method":
            return self.bound_method(func[1], func[2], args, expr)
        if isinstance(func, ExtRef):
            return self.ext_call(func.name, args, kwargs, expr, env, mod)
        if isinstance(func, FuncRef):
            return self._function_call(func, args, expr, env, mod)
        if isinstance(func, ClassRef):
            return Unknown(f"{func.binding.name}()")
        if isinstance(func, Unknown) and "pre_register_and_update" in func.text:
            self.notes.append(
                f"{src_ref(self.index, mod, expr)}: "
                "current_platform.pre_register_and_update(parser) skipped (the CUDA "
                "platform keeps the interface's no-op; out-of-tree platforms may add "
                "choices)"
            )
        return Unknown(ast.unparse(expr))

    def _call_args(self, expr: ast.Call, env: dict[str, Any], mod: str) -> list[Any] | None:
        """The positional arguments (`*args` expanded); None when one cannot be known."""
        args: list[Any] = []
        for a in expr.args:
            if isinstance(a, ast.Starred):
                inner = self.ev(a.value, env, mod)
                if isinstance(inner, Unknown):
                    return None
                args.extend(inner)
            else:
                args.append(self.ev(a, env, mod))
        return args

    def _call_kwargs(self, expr: ast.Call, env: dict[str, Any], mod: str) -> KwDict:
        """The keyword arguments (`**kwargs` merged, their origin kept); a keyword given
        twice is the TypeError Python would raise."""
        kwargs = KwDict()
        where = src_ref(self.index, mod, expr)
        for kw in expr.keywords:
            value = self.ev(kw.value, env, mod)
            if kw.arg is not None:
                if kw.arg in kwargs:
                    raise ValueError(f"{where}: duplicate keyword {kw.arg}")
                kwargs[kw.arg] = value
                continue
            if not isinstance(value, dict):
                raise ValueError(f"{where}: **{ast.unparse(kw.value)} not evaluable")
            if isinstance(value, KwDict) and value.origin:
                kwargs.origin = value.origin
            clash = set(value) & set(kwargs)
            if clash:  # Python raises TypeError: multiple values
                raise ValueError(f"{where}: duplicate keywords {sorted(clash)}")
            kwargs.update(value)
        return kwargs

    def _parser_call(
        self, parser: ParserVal, name: str, args: list[Any], kwargs: KwDict, source: str
    ) -> Any:
        """A method of the argparse parser (or a group, or the subparsers action)."""
        if name == "add_argument":
            self.record(parser, args, kwargs, source)
            return None
        if name == "add_parser":
            return parser.target if isinstance(parser, SubParsers) else parser
        if name in ("add_argument_group", "add_mutually_exclusive_group"):
            return parser
        if name == "register":
            return None
        return Unknown(f"parser.{name}")

    def _function_call(
        self, func: FuncRef, args: list[Any], expr: ast.Call, env: dict[str, Any], mod: str
    ) -> Any:
        """A vLLM function: the few that shape the command line are followed or modelled;
        any other call's result is unknown."""
        name = func.binding.name
        where = src_ref(self.index, mod, expr)
        if (
            name in ("get_kwargs", "_compute_kwargs")
            and func.binding.module == "vllm.engine.arg_utils"
        ):
            cls = args[0]
            if not isinstance(cls, ClassRef):
                raise ValueError(f"{where}: get_kwargs of {cls!r}")
            return self.rules.for_class(cls.binding)
        if name == "optional_type":
            t = to_typeval(args[0])
            return TypeVal(t.base, True, t.detail) if isinstance(t, TypeVal) else Unknown(name)
        if name == "parse_type":
            return to_typeval(args[0])
        if name == "load_general_plugins":
            self.notes.append(
                f"{where}: {name}() skipped: out-of-tree plugins may add flags or choices"
            )
            return None
        if name in ("add_cli_args", "make_arg_parser", "_customize_cli_kwargs", "subparser_init"):
            return self.run_function(func.binding, args, func.bound_cls, func.owner)
        if name == "get_args":
            return self.literal_values(expr.args[0], env, mod)
        return Unknown(f"{name}()")

    def literal_values(self, expr: ast.expr, env: dict[str, Any], mod: str) -> Any:
        hint = self.rules.types.eval(expr, mod)
        values: list[Any] = []
        for m in union_members(hint):
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
        """The few dict, list and str methods the argument code uses, run for real."""
        if isinstance(obj, dict) and name in _DICT_METHODS:
            return _DICT_METHODS[name](obj, args)
        if isinstance(obj, list) and name in ("remove", "append", "extend"):
            return self._list_method(obj, name, args)
        if isinstance(obj, str):
            return _str_method(obj, name, args, expr)
        return Unknown(ast.unparse(expr))

    def _list_method(self, obj: list[Any], name: str, args: list[Any]) -> None:
        if name == "append":
            obj.append(args[0])
        elif name == "extend":
            obj.extend(args[0])
        elif args[0] in obj:
            obj.remove(args[0])
        else:
            self.notes.append(f"list.remove({args[0]!r}) on a value not present; ignored")

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
