"""An imported unit's ExecStart= → profile fields, extra arguments, verbatim words and the
command line's order (units.layout), so that rendering gives back the same argv.

A group of words goes into a field only when the field writes it back exactly (the same
option name, the value in the field's own form: `8000`, not `08000`); a word that names a
variable or a specifier (`$PORT`, `%i`) can only be written verbatim; the rest are extra
arguments. The result is checked afterwards (`units.importing.sameness`)."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from linting.commands import Command
from linting.vllm.catalog import FlagMatch, VllmCatalog
from linting.vllm.detect import find_vllm
from units.importing.wrappers import wrapper_reason
from units.layout import Token, token_text
from units.profile_data import normalize_profile_data
from units.rendering import API_SERVER_MODULE, executable_specifier
from units.schema import DEST_FIELDS, FIELDS, SPEC_CONFIG_FLAG, Kind
from units.speculative import SPEC_KEYS, SPEC_METHOD_KEY, method_shape, spec_config
from units.templatetags.unitfile import spec_json

_NEGATIVE_NUMBER = re.compile(r"-\d+\Z|-\d*\.\d+\Z")


class NotImportable(ValueError):
    """The unit's ExecStart= is not one a profile can describe (the message says why)."""


@dataclass
class CommandLine:
    """What the ExecStart= words became."""

    fields: dict[str, Any] = field(default_factory=dict)
    layout: list[str] = field(default_factory=list)
    extra_args: list[str] = field(default_factory=list)
    verbatim: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def add_extra(self, words: list[str]) -> None:
        self.extra_args.extend(words)
        self.layout.append(f"extra:{len(words)}")

    def add_verbatim(self, words: list[str]) -> None:
        self.verbatim.extend(words)
        self.layout.append(f"verbatim:{len(words)}")


@dataclass(frozen=True)
class _Word:
    value: str  # after specifiers (what `$` substitution then reads)
    raw: str  # as written in the unit
    literal: bool  # no specifier, no `$`: the value reaches the program unchanged


def _words(command: Command) -> list[_Word]:
    text = command.assignment.value.text
    result = []
    for word, value in zip(command.command.words, command.command.argv, strict=True):
        raw = text[word.start : word.end]
        literal = "%" not in word.value.text and "$" not in value.text
        result.append(_Word(value.text, raw, literal))
    return result


def _is_option(word: str) -> bool:
    return word.startswith("-") and not _NEGATIVE_NUMBER.match(word) and word != "-"


def _value_count(match: FlagMatch | None, words: list[_Word], i: int) -> int:
    """How many words after words[i] are its option's values."""
    if match is None or match.value is not None or not match.spec.takes_value:
        return 0
    nargs = match.spec.nargs
    following = 0
    while i + 1 + following < len(words) and not _is_option(words[i + 1 + following].value):
        following += 1
    if nargs in ("+", "*"):
        return following
    if nargs == "?":
        return min(following, 1)
    wanted = nargs if isinstance(nargs, int) else 1
    return min(wanted, len(words) - i - 1)


def parse_command(
    command: Command, catalog: VllmCatalog, refused: frozenset[str] = frozenset()
) -> CommandLine:
    """The ExecStart= command as profile data; `refused`: fields not to use (their values
    did not pass the field's checks), whose words are kept as extra or verbatim words."""
    if command.command.prefixes:
        raise NotImportable(
            f"ExecStart= has the prefix “{command.command.prefixes}”, which a profile "
            "does not write."
        )
    words = _words(command)
    program = _program(command, words)
    result = CommandLine(fields={"vllm_executable": _executable(words[0])})
    i, style = program
    while i < len(words):
        i = _next_group(words, i, style, catalog, refused, result)
    if "model" not in result.fields:
        raise NotImportable("The command names no model (MODEL or --model).")
    return result


def _program(command: Command, words: list[_Word]) -> tuple[int, str]:
    """(index of the first vLLM argument, "serve" | "api_server") or NotImportable."""
    values = [w.value for w in words]
    found = find_vllm(values)
    if found is None:
        raise NotImportable(wrapper_reason(command))
    if not all(w.literal for w in words[1 : found.args_start]) or not _executable(words[0]):
        raise NotImportable("The vLLM executable is named through a variable or a specifier.")
    if found.style == "api_server" and values[1:3] != ["-m", API_SERVER_MODULE]:
        raise NotImportable(f"A profile runs the API server as `python -m {API_SERVER_MODULE}`.")
    if found.style == "serve" and found.args_start != 2:
        raise NotImportable("A profile runs `vllm serve` through the vllm executable itself.")
    return found.args_start, found.style


def _executable(word: _Word) -> str:
    """The executable as the field holds it: the path, or the unit's word when it starts
    with a directory specifier and is plain after it (`%h/vllm/bin/vllm`: the field
    writes it back so); "" for any other specifier or variable."""
    if word.literal:
        return word.value
    lead = executable_specifier(word.raw)
    rest = word.raw[len(lead) :]
    plain = not any(c in rest for c in "%$'\"\\ ")
    return word.raw if lead and plain else ""


def _next_group(
    words: list[_Word],
    i: int,
    style: str,
    catalog: VllmCatalog,
    refused: frozenset[str],
    result: CommandLine,
) -> int:
    """Place the group starting at words[i]; the index after it."""
    word = words[i]
    if not _is_option(word.value):
        _positional(word, style, refused, result)
        return i + 1
    match = catalog.resolve_flag(word.value)
    group = words[i : i + 1 + _value_count(match, words, i)]
    if match is not None and _to_field(match, group, style, refused, result):
        return i + len(group)
    owned = match is not None and match.spec.dest in DEST_FIELDS
    if owned or not all(w.literal for w in group):
        result.add_verbatim([w.raw for w in group])
        if owned:
            result.notes.append(
                f"“{' '.join(w.raw for w in group)}” sets the "
                f"{FIELDS[DEST_FIELDS[match.spec.dest]].in_sentence} in a way its field "
                "cannot write back: kept verbatim."  # type: ignore[union-attr]
            )
    else:
        result.add_extra([w.value for w in group])
    return i + len(group)


def _positional(word: _Word, style: str, refused: frozenset[str], result: CommandLine) -> None:
    if style == "serve" and "model" not in result.fields and "model" not in refused:
        result.fields["model"] = word.value if word.literal else word.raw
        result.layout.append("model" if word.literal else "model~")
    elif word.literal:
        result.add_extra([word.value])
    else:
        result.add_verbatim([word.raw])


def _to_field(
    match: FlagMatch, group: list[_Word], style: str, refused: frozenset[str], result: CommandLine
) -> bool:
    """Put the group into its field when the field writes it back exactly."""
    name = DEST_FIELDS.get(match.spec.dest)
    if name is None or name in refused or name in result.fields:
        return False
    joined = match.value is not None
    spelling = group[0].value.split("=", 1)[0] if joined else group[0].value
    if match.spec.is_negative(spelling) or match.spelling != "exact":
        return False
    values = [match.value] if joined else [w.value for w in group[1:]]
    verbatim_model = name == "model" and not all(w.literal for w in group[1:])
    if not verbatim_model and not all(w.literal for w in group):
        return False
    value = _field_value(name, values, group, verbatim_model)
    if value is _NO:
        return False
    result.fields.update(value if name == "spec_method" else {name: value})  # type: ignore[arg-type]
    result.layout.append(token_text(_token(name, spelling, joined, style, verbatim_model)))
    return True


_NO = object()


def _token(name: str, spelling: str, joined: bool, style: str, verbatim: bool) -> Token:
    own = "--model" if name == "model" and style == "api_server" else FIELDS[name].flag
    if name == "model" and style == "serve":
        own = ""
    if name == "spec_method":
        own = SPEC_CONFIG_FLAG
    return Token(
        name, spelling="" if spelling == own else spelling, joined=joined, verbatim=verbatim
    )


def _field_value(name: str, values: list[str], group: list[_Word], verbatim: bool) -> Any:
    """The field's value for the option's values, or _NO when the field would write
    other words back."""
    if name == "model":
        if len(values) != 1:
            return _NO
        return group[-1].raw if verbatim else values[0]
    if name == "spec_method":
        return _spec_fields(values)
    kind = FIELDS[name].kind
    if kind == Kind.BOOL:
        return True if not values else _NO
    if kind == Kind.NAMES:
        return values or _NO
    if len(values) != 1:
        return _NO
    canonical = normalize_profile_data({name: values[0]}, fill_defaults=False)[name]
    return canonical if str(canonical) == values[0] else _NO


def _spec_fields(values: list[str]) -> Any:
    """The spec_* fields of a --speculative-config JSON that they write back verbatim."""
    if len(values) != 1:
        return _NO
    try:
        config = json.loads(values[0])
    except ValueError:
        return _NO
    if not isinstance(config, dict) or not isinstance(config.get(SPEC_METHOD_KEY), str):
        return _NO
    by_key = {key: f for f, key in SPEC_KEYS.items()}
    if method_shape(config[SPEC_METHOD_KEY]) is None or set(config) - {SPEC_METHOD_KEY, *by_key}:
        return _NO
    fields = {"spec_method": config[SPEC_METHOD_KEY]}
    fields.update({by_key[k]: v for k, v in config.items() if k != SPEC_METHOD_KEY})
    rebuilt = spec_config(fields)
    return fields if rebuilt is not None and spec_json(rebuilt) == values[0] else _NO
