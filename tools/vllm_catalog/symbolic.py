"""The symbolic values the add_cli_args interpreter computes with."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tools.vllm_catalog.module_index import Binding


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


def to_typeval(value: Any) -> Any:
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


class SubParsers(ParserVal):
    """Stand-in for argparse._SubParsersAction: add_parser returns the parser."""

    def __init__(self, parser: ParserVal) -> None:
        super().__init__(parser.flags, parser.positionals)
        self.target = parser
