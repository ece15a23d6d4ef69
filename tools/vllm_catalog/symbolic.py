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


# `type=` callables argparse is given, by name: builtins and json.loads ...
_EXTERNAL_TYPES = {
    "builtins.int": "int",
    "int": "int",
    "builtins.str": "str",
    "str": "str",
    "builtins.float": "float",
    "float": "float",
    "builtins.bool": "bool",
    "bool": "bool",
    "json.loads": "json",
}
# ... and vLLM's own parsers.
_VLLM_TYPES = {
    "human_readable_int": TypeVal("human_int"),
    "human_readable_int_or_auto": TypeVal("human_int_or_auto"),
    "union_dict_and_str": TypeVal(
        "json", detail="union_dict_and_str: a JSON object or any plain string"
    ),
}


def to_typeval(value: Any) -> Any:
    """Map a `type=` value to a TypeVal where possible."""
    if isinstance(value, ExtRef) and value.name in _EXTERNAL_TYPES:
        return TypeVal(_EXTERNAL_TYPES[value.name])
    if isinstance(value, FuncRef):
        name = value.binding.name
        if name in _VLLM_TYPES:
            return _VLLM_TYPES[name]
        if name in ("from_cli", "from_json"):
            owner = value.bound_cls.binding.name if value.bound_cls else ""
            return TypeVal("json", detail=f"{owner}.{name}")
        return TypeVal("custom", detail=name)
    if isinstance(value, Unknown):
        return TypeVal("custom", detail=value.text)
    return value


class SubParsers(ParserVal):
    """Stand-in for argparse._SubParsersAction: add_parser returns the parser."""

    def __init__(self, parser: ParserVal) -> None:
        super().__init__(parser.flags, parser.positionals)
        self.target = parser
