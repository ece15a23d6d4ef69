"""What one vLLM command line means to vLLM: the model, each option with its value(s) as
traced text (exact file positions), and what argparse or vLLM's own parser would reject.

The spelling of option words (``--x=v``, ``_`` → ``-``, abbreviations, ``-O3``, dotted JSON
keys) is decided by :meth:`VllmCatalog.resolve_flag`; this module only walks argv the way
``argparse`` consumes it and checks each value with the version's ``type`` function, so a
finding can say exactly what ``vllm serve`` would do.
"""

from __future__ import annotations

import difflib
import enum
import json
import math
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from linting.execline.env_substitution import has_unknown
from linting.spans import Pos, Span, Traced
from linting.vllm.catalog import FlagMatch, FlagSpec, VllmCatalog, _version_key
from linting.vllm.detect import VllmInvocation, find_vllm

# argparse's `_negative_number_matcher`: such words are values, not options, because no
# vLLM option looks like a negative number (Lib/argparse.py `_parse_optional`).
_NEGATIVE_NUMBER = re.compile(r"^-\d+$|^-\d*\.\d+$")
# human_readable_int() (vllm/engine/arg_utils.py:1676 in 0.8.5, :1740 in 0.11.0,
# :2106 in 0.16.0; vllm/utils/argparse_utils.py:30 in 0.33.0).
_HUMAN_INT = re.compile(r"(\d+(?:\.\d+)?)([kKmMgGtT])")
# `t`/`T` (tera) are in the multiplier tables from 0.16.0 on; 0.8.5 and 0.11.0 match the
# letter in the regex but then fall through to int() and fail.
_TERA_SINCE = (0, 16, 0)
ALL_INTERFACES = ("", "None", "0.0.0.0", "::", "[::]")
DEFAULT_PORT = 8000  # vllm/entrypoints/openai/cli_args.py `port: int = 8000`


class ArgProblemKind(enum.StrEnum):
    """What argparse or vLLM's argv pre-processing rejects (or ignores)."""

    UNKNOWN_FLAG = "unknown_flag"
    AMBIGUOUS_FLAG = "ambiguous_flag"  # a prefix of several options (allow_abbrev)
    REMOVED_FLAG = "removed_flag"  # existed in older versions (--speculative-model, …)
    MISSING_VALUE = "missing_value"
    UNEXPECTED_VALUE = "unexpected_value"  # `--flag=value` for a flag that takes none
    WRONG_TYPE = "wrong_type"  # the option's argparse `type` fails
    INVALID_JSON = "invalid_json"
    INVALID_CHOICE = "invalid_choice"  # outside argparse `choices`
    RUNTIME_CHOICE = "runtime_choice"  # outside a list vLLM checks at engine start
    MODEL_OPTION = "model_option"  # `vllm serve --model X` where the version refuses it
    EXTRA_POSITIONAL = "extra_positional"


@dataclass(frozen=True)
class ArgProblem:
    """Something argparse or vLLM's argv pre-processing rejects (or ignores)."""

    kind: ArgProblemKind
    text: Traced  # the characters the problem is about
    message: str
    option: ParsedOption | None = None
    suggestion: str | None = None
    data: dict = field(default_factory=dict, compare=False, hash=False)


@dataclass
class ParsedOption:
    """One option as argparse consumes it."""

    match: FlagMatch
    word: Traced  # the option word as vLLM receives it
    arg_index: int  # index of `word` in the command's argv
    values: list[Traced]  # the value(s); an inline `--x=v` value is a slice of `word`
    inline: bool = False

    @property
    def spec(self) -> FlagSpec:
        return self.match.spec

    @property
    def dest(self) -> str:
        return self.match.spec.dest

    @property
    def value(self) -> Traced | None:
        """The (first) value, or None for a flag without one."""
        return self.values[0] if self.values else None

    @property
    def key(self) -> Traced:
        """The option name part of `word` (without an inline `=value`)."""
        if self.inline and self.values:
            return self.word[: len(self.word) - len(self.values[0]) - 1]
        return self.word

    def span(self) -> Span:
        """The option word plus its values (for findings about the whole option)."""
        span = self.word.span()
        for value in self.values:
            if value.origins:
                span = span.union(value.span())
        return span


@dataclass
class VllmArgs:
    """A parsed vLLM command line."""

    invocation: VllmInvocation
    catalog: VllmCatalog
    argv: list[Traced]
    model: Traced | None
    model_source: str  # positional | --model | none
    options: list[ParsedOption]
    problems: list[ArgProblem]
    config_file: bool  # `--config FILE`: more options come from a file we cannot see

    def all(self, dest: str) -> list[ParsedOption]:
        return list(self._by_dest.get(dest, ()))

    @cached_property
    def _by_dest(self) -> dict[str, list[ParsedOption]]:
        by_dest: dict[str, list[ParsedOption]] = {}
        for option in self.options:
            by_dest.setdefault(option.dest, []).append(option)
        return by_dest

    def last(self, dest: str) -> ParsedOption | None:
        """argparse keeps the last occurrence of a plain option."""
        found = [o for o in self.all(dest) if not o.match.json_path]
        return found[-1] if found else None

    @cached_property
    def speculative_sources(self) -> list[SpecSource]:
        """Every `--speculative-config` value in the order argparse sees them."""
        return _speculative_sources(self)

    @cached_property
    def spec_view(self) -> SpecView | None:
        """The speculative config vLLM builds (None when the command sets none)."""
        return _spec_view(self)

    def int_value(self, dest: str) -> int | None:
        """The integer argparse stores for `dest`, or None if absent or unparsable."""
        option = self.last(dest)
        if option is None or option.value is None:
            return None
        try:
            return int(option.value.text)
        except ValueError:
            return None


def parse_vllm_command(argv: list[Traced], catalog: VllmCatalog) -> VllmArgs | None:
    """Parse a command's argv if it runs a vLLM server, else None."""
    found = find_vllm([a.text for a in argv])
    if found is None:
        return None
    if found.style == "api_server":
        catalog = catalog.for_api_server()
    elif found.style == "demo_server":
        catalog = catalog.for_demo_server()
    return _Parser(argv, found, catalog).run()


def looks_like_option(text: str, catalog: VllmCatalog) -> bool:
    """argparse's `_parse_optional` test (Lib/argparse.py): would this word be taken as an
    option rather than a value? Known options always are; then negative numbers and words
    with a blank are values; any other `-word` is an (unknown) option."""
    if not text.startswith("-") or text == "-":
        return False
    if catalog.resolve_flag(text) is not None:
        return True
    return not (_NEGATIVE_NUMBER.match(text) or " " in text)


class _Parser:
    def __init__(self, argv: list[Traced], found: VllmInvocation, catalog: VllmCatalog):
        self.argv = argv
        self.found = found
        self.catalog = catalog
        self.options: list[ParsedOption] = []
        self.problems: list[ArgProblem] = []
        self.positionals: list[Traced] = []

    def run(self) -> VllmArgs:
        i = self.found.args_start
        only_positionals = False
        while i < len(self.argv):
            word = self.argv[i]
            if only_positionals or not looks_like_option(word.text, self.catalog):
                self.positionals.append(word)
                i += 1
                continue
            if word.text == "--":
                only_positionals = True
                i += 1
                continue
            i = self._option(i)
        return self._finish()

    # -- one option ------------------------------------------------------------------
    def _option(self, i: int) -> int:
        """Consume the option at argv[i] and its values; returns the next index."""
        word = self.argv[i]
        match = self.catalog.resolve_flag(word.text)
        if match is None:
            self._unknown(word)
            # argparse leaves the unknown word's value as an extra positional; we skip
            # it so it is not reported twice.
            nxt = self.argv[i + 1].text if i + 1 < len(self.argv) else None
            if (
                nxt is not None
                and "=" not in word.text
                and not looks_like_option(nxt, self.catalog)
            ):
                return i + 2
            return i + 1
        option = ParsedOption(match, word, i, [])
        self.options.append(option)
        if match.value is not None:
            self._inline_value(option)
            return i + 1
        if match.json_path:
            # FlexibleArgumentParser takes the next word whatever it looks like
            # (vllm/utils/argparse_utils.py:456 in 0.33.0).
            if i + 1 < len(self.argv):
                option.values.append(self.argv[i + 1])
                return i + 2
            self._missing(option)
            return i + 1
        if not match.spec.takes_value:
            return i + 1
        j = self._values(option, i + 1)
        for value in option.values:
            self._check_value(option, value)
        return j

    def _inline_value(self, option: ParsedOption) -> None:
        """`--x=v`, `-xV`, `-O3`: the value is part of the option word."""
        match, word, spec = option.match, option.word, option.spec
        assert match.value is not None
        value = word[len(word) - len(match.value) :]
        option.values.append(value)
        option.inline = match.spelling not in ("short_concat", "dash_o")
        if not spec.takes_value and not match.json_path:
            self._problem(
                ArgProblemKind.UNEXPECTED_VALUE,
                value,
                f'`{match.name}` takes no value: argparse exits with "argument '
                f"{_names(spec)}: ignored explicit argument '{match.value}'\"",
                option,
            )
        else:
            self._check_value(option, value)

    def _values(self, option: ParsedOption, j: int) -> int:
        """The values after the option word as argparse's `nargs` takes them; returns the
        index after the last one."""
        nargs = option.spec.nargs
        if nargs in (None, "?") or isinstance(nargs, int):
            wanted = nargs if isinstance(nargs, int) else 1
            while len(option.values) < wanted and j < len(self.argv):
                if looks_like_option(self.argv[j].text, self.catalog):
                    break
                option.values.append(self.argv[j])
                j += 1
            if len(option.values) < wanted and nargs != "?":
                self._missing(option)
            return j
        # "+" / "*"
        while j < len(self.argv) and not looks_like_option(self.argv[j].text, self.catalog):
            option.values.append(self.argv[j])
            j += 1
        if nargs == "+" and not option.values:
            self._missing(option)
        return j

    def _unknown(self, word: Traced) -> None:
        key = self.catalog._normalise(word.text.partition("=")[0])
        if self.catalog.parser.dotted_json_keys:
            key = key.partition(".")[0]
        if key in self.catalog.removed_flags:
            self._problem(
                ArgProblemKind.REMOVED_FLAG,
                word,
                f"`{key}` no longer exists in vLLM {self.catalog.version}",
                data={"flag": key},
            )
            return
        if key.startswith("--") and self.catalog.parser.allow_abbrev:
            hits = self.catalog.names_starting_with(key)
            if len(hits) > 1:
                self._problem(
                    ArgProblemKind.AMBIGUOUS_FLAG,
                    word,
                    f'`{key}` is an ambiguous abbreviation: argparse exits with "ambiguous '
                    f'option: {key} could match {", ".join(hits[:6])}"',
                    data={"candidates": hits},
                )
                return
        suggestion = self.catalog.suggest_flag(word.text)
        self._problem(
            ArgProblemKind.UNKNOWN_FLAG,
            word,
            f"vLLM {self.catalog.version} does not know `{word.text.partition('=')[0]}`",
            suggestion=suggestion,
        )

    def _missing(self, option: ParsedOption) -> None:
        spec = option.spec
        what = "at least one argument" if spec.nargs == "+" else "one argument"
        if isinstance(spec.nargs, int) and spec.nargs > 1:
            what = f"{spec.nargs} arguments"
        self._problem(
            ArgProblemKind.MISSING_VALUE,
            option.word,
            f'`{option.word.text}` needs a value: argparse exits with "argument '
            f'{_names(spec)}: expected {what}"',
            option,
        )

    # -- values ----------------------------------------------------------------------
    def _check_value(self, option: ParsedOption, value: Traced) -> None:
        spec = option.spec
        text = value.text
        if option.match.json_path:
            return  # folded into the JSON of the parent option; checked with it
        if text in spec.also_accepts or has_unknown(text):
            return  # an unknown value (an unread EnvironmentFile=) may be right
        problem = check_type(spec.type, text, self.catalog.version)
        if problem is not None:
            kind = ArgProblemKind.INVALID_JSON if spec.type == "json" else ArgProblemKind.WRONG_TYPE
            self._problem(kind, value, problem, option, data={"type": spec.type})
            return
        if spec.choices is not None and not _in_choices(text, spec):
            suggestion = _closest(text, [str(c) for c in spec.choices])
            self._problem(
                ArgProblemKind.INVALID_CHOICE,
                value,
                f'argparse exits with "argument {_names(spec)}: invalid choice: {text!r}"',
                option,
                suggestion=suggestion,
                data={"choices": [str(c) for c in spec.choices]},
            )
            return
        runtime = self.catalog.runtime_choices.get(spec.dest)
        if runtime is not None and spec.choices is None and text not in runtime:
            self._problem(
                ArgProblemKind.RUNTIME_CHOICE,
                value,
                f"{text!r} is not a {spec.dest} method of vLLM {self.catalog.version}",
                option,
                suggestion=_closest(text, list(runtime)),
                data={"choices": list(runtime)},
            )

    def _problem(
        self,
        kind: ArgProblemKind,
        text: Traced,
        message: str,
        option: ParsedOption | None = None,
        *,
        suggestion: str | None = None,
        data: dict | None = None,
    ) -> None:
        self.problems.append(ArgProblem(kind, text, message, option, suggestion, data or {}))

    # -- model -----------------------------------------------------------------------
    def _finish(self) -> VllmArgs:
        model: Traced | None = None
        source = "none"
        positionals = list(self.positionals)
        model_opts = [o for o in self.options if o.dest == "model" and o.value is not None]
        if self.found.style == "serve":
            if positionals:
                model, source = positionals.pop(0), "positional"
            rule = self.catalog.parser.model_option
            exact = [o for o in model_opts if o.word.text == "--model"]
            if rule == "error" and exact:
                # FlexibleArgumentParser.parse_args raises before argparse runs, but only
                # for the exact word `--model` (vllm/utils/__init__.py:1856 in 0.11.0,
                # vllm/utils.py:1338 in 0.8.5); `--model=X` slips through.
                self._problem(
                    ArgProblemKind.MODEL_OPTION,
                    exact[0].word,
                    f'vLLM {self.catalog.version} refuses to start: "ValueError: With '
                    "`vllm serve`, you should provide the model as a positional argument "
                    'or in a config file instead of via the `--model` option."',
                    exact[0],
                )
            if model_opts and (model is None or rule == "moved_to_positional"):
                # 0.16+: `--model X` is moved in front and becomes the positional
                # (vllm/utils/argparse_utils.py:179 in 0.16.0); then any other
                # positional is an extra.
                if rule == "moved_to_positional" and model is not None:
                    positionals.insert(0, model)
                model, source = model_opts[0].value, "--model"
        elif model_opts:
            model, source = model_opts[-1].value, "--model"
        # An unknown whole-word `$ARGS` may stand for any number of words (or none): what
        # follows it cannot be called extra.
        if any(has_unknown(p.text) for p in self.positionals):
            positionals = []
        for extra in positionals:
            self._problem(
                ArgProblemKind.EXTRA_POSITIONAL,
                extra,
                f'argparse exits with "unrecognized arguments: {extra.text}"',
            )
        return VllmArgs(
            self.found,
            self.catalog,
            self.argv,
            model,
            source,
            self.options,
            self.problems,
            any(o.dest == "config" for o in self.options),
        )


def _names(spec: FlagSpec) -> str:
    """argparse's "argument --a/-b" wording."""
    return "/".join(spec.names[:2]) if spec.kind != "boolean_optional" else spec.names[0]


def _in_choices(text: str, spec: FlagSpec) -> bool:
    choices = {str(c) for c in spec.choices or ()}
    if spec.type == "int":
        try:
            return str(int(text)) in choices
        except ValueError:
            return False
    return text in choices


def _closest(text: str, options: list[str]) -> str | None:
    close = difflib.get_close_matches(text, options, n=1, cutoff=0.6)
    return close[0] if close else None


def load_json(text: str) -> Any:
    """`json.loads`, with what makes Python's parser give up reported as the
    JSONDecodeError it is to vLLM (whose own `json.loads` then fails at start-up) instead
    of an exception that would crash the linter: nesting too deep
    (RecursionError), a number past Python's 4,300-digit int conversion limit."""
    try:
        return json.loads(text)
    except RecursionError:
        raise json.JSONDecodeError(
            "nested too deeply (Python's json parser gives up with RecursionError)", text, 0
        ) from None
    except json.JSONDecodeError:
        raise
    except ValueError as exc:  # sys.get_int_max_str_digits()
        raise json.JSONDecodeError(f"a number Python cannot read ({exc})", text, 0) from None


def check_type(kind: str | None, text: str, version: str) -> str | None:
    """Why the version's argparse `type` function rejects `text`, or None if it accepts."""
    if kind == "int":
        try:
            int(text)
        except ValueError:
            return f'argparse exits with "invalid int value: {text!r}"'
    elif kind == "float":
        try:
            float(text)
        except ValueError:
            return f'argparse exits with "invalid float value: {text!r}"'
    elif kind == "human_int":
        return human_int_problem(text, version)
    elif kind == "json":
        stripped = text.strip()
        if not stripped.startswith(("{", "[")):
            return None  # some JSON flags also take a plain string (union_dict_and_str)
        try:
            load_json(text)
        except json.JSONDecodeError as exc:
            return f"not valid JSON: {exc.msg} at character {exc.pos + 1}"
    return None


def accepts_tera_suffix(version: str) -> bool:
    """Whether `version`'s human_readable_int() knows `t`/`T` (see `_TERA_SINCE`)."""
    return _version_key(version) >= _TERA_SINCE


def parse_human_int(text: str, version: str) -> int:
    """vLLM's human_readable_int(): `32k` = 32000, `32K` = 32768, `25.6k` = 25600."""
    value = text.strip()
    match = _HUMAN_INT.fullmatch(value)
    if match:
        number, suffix = match.groups()
        tera = accepts_tera_suffix(version)
        decimal = {"k": 10**3, "m": 10**6, "g": 10**9} | ({"t": 10**12} if tera else {})
        binary = {"K": 2**10, "M": 2**20, "G": 2**30} | ({"T": 2**40} if tera else {})
        if suffix in decimal:
            scaled = float(number) * decimal[suffix]
            if not math.isfinite(scaled):  # vLLM's int(float(…)) raises OverflowError
                raise ValueError(f"{value} is too large: vLLM crashes with OverflowError")
            return int(scaled)
        if suffix in binary:
            if "." in number:
                raise ValueError(
                    f"Decimals are not allowed with binary suffixes like {suffix}. Did you "
                    f"mean to use {number}{suffix.lower()} instead?"
                )
            return int(number) * binary[suffix]
    return int(value)


def human_int_problem(text: str, version: str) -> str | None:
    try:
        parse_human_int(text, version)
    except ValueError as exc:
        if "OverflowError" in str(exc):
            return str(exc)
        if "Decimals" in str(exc):
            return f'argparse exits with "{exc}"'
        return (
            f'argparse exits with "invalid human_readable_int value: {text!r}" (accepted: '
            "an integer, optionally with k/m/g (×1000) or K/M/G (×1024)"
            + (", t/T" if accepts_tera_suffix(version) else "")
            + ")"
        )
    return None


# -- --speculative-config ------------------------------------------------------------


@dataclass
class SpecEntry:
    """One key of the speculative config with where it was written."""

    key: str
    value: Any
    key_text: Traced
    value_text: Traced
    origin: str  # json | dotted | shorthand


@dataclass
class SpecSource:
    """One `--speculative-config` JSON argument (or the dotted keys folded into one)."""

    option: ParsedOption | None
    entries: list[SpecEntry]
    kind: str  # json | dotted
    error: json.JSONDecodeError | None = None
    not_object: bool = False
    unknown: bool = False  # from a variable the linter cannot read

    @property
    def as_dict(self) -> dict[str, Any]:
        return {e.key: e.value for e in self.entries}


_DECODER = json.JSONDecoder()
_JSON_WHITESPACE = re.compile(r"[ \t\n\r]*")


def json_object_entries(text: Traced) -> list[SpecEntry]:
    """Top-level keys and values of a JSON object with the exact text of each, so that
    findings can point at one key in the file. Call only on text `json.loads` accepts."""
    s = text.text
    decoder, ws = _DECODER, _JSON_WHITESPACE
    i = ws.match(s, 0).end()  # type: ignore[union-attr]
    if s[i : i + 1] != "{":
        return []
    i = ws.match(s, i + 1).end()  # type: ignore[union-attr]
    entries: list[SpecEntry] = []
    while i < len(s) and s[i] == '"':
        key, key_end = json.decoder.scanstring(s, i + 1)
        key_text = text[i:key_end]
        i = ws.match(s, key_end).end()  # type: ignore[union-attr]
        i = ws.match(s, i + 1).end()  # type: ignore[union-attr]  # past ':'
        value, end = decoder.raw_decode(s, i)
        entries.append(SpecEntry(key, value, key_text, text[i:end], "json"))
        i = ws.match(s, end).end()  # type: ignore[union-attr]
        if s[i : i + 1] == ",":
            i = ws.match(s, i + 1).end()  # type: ignore[union-attr]
    return entries


def _speculative_sources(args: VllmArgs) -> list[SpecSource]:
    """Every `--speculative-config` value in the order argparse sees them.

    From 0.11 the dotted form (`--speculative-config.method ngram`) is folded into one JSON
    argument appended at the END of argv (vllm/utils/argparse_utils.py:497 in 0.33.0), so
    it replaces any explicit JSON: argparse keeps only the last value.
    """
    sources: list[SpecSource] = []
    dotted: list[SpecEntry] = []
    dotted_options: list[ParsedOption] = []
    for option in args.all("speculative_config"):
        value = option.value
        if value is None:
            continue
        if option.match.json_path:
            dotted_options.append(option)
            key = option.match.json_path[0]
            start = option.word.text.find(key, option.word.text.find("."))
            key_text = option.word[start : start + len(key)] if start >= 0 else option.word
            dotted.append(
                SpecEntry(key, _dotted_value(value.text, args), key_text, value, "dotted")
            )
            continue
        if has_unknown(value.text):
            sources.append(SpecSource(option, [], "json", unknown=True))
            continue
        if value.text in option.spec.also_accepts:
            sources.append(SpecSource(option, [], "json"))  # '' / 'None' → no config
            continue
        try:
            parsed = load_json(value.text)
        except json.JSONDecodeError as exc:
            sources.append(SpecSource(option, [], "json", error=exc))
            continue
        if parsed is None:
            sources.append(SpecSource(option, [], "json"))
        elif not isinstance(parsed, dict):
            sources.append(SpecSource(option, [], "json", not_object=True))
        else:
            sources.append(SpecSource(option, json_object_entries(value), "json"))
    if dotted:
        sources.append(SpecSource(dotted_options[0], dotted, "dotted"))
    return sources


def _dotted_value(text: str, args: VllmArgs) -> Any:
    """How FlexibleArgumentParser turns a dotted key's value into JSON: json.loads, else
    (0.33) human_readable_int, else the string."""
    try:
        return load_json(text)
    except json.JSONDecodeError:
        if args.catalog.parser.dotted_values_human_int:
            try:
                return parse_human_int(text, args.catalog.version)
            except ValueError:
                pass
        return text


@dataclass
class SpecView:
    """The speculative config vLLM builds, with where each key was written."""

    source: SpecSource
    entries: dict[str, SpecEntry]  # normalised key -> entry (last one wins)
    shorthand: list[tuple[SpecEntry, str]]  # (entry, flag) from 0.33's --spec-* flags

    def get(self, key: str) -> Any:
        entry = self.entries.get(key)
        return None if entry is None else entry.value

    @property
    def as_dict(self) -> dict[str, Any]:
        return {k: e.value for k, e in self.entries.items()}


def _spec_view(args: VllmArgs) -> SpecView | None:
    """The last `--speculative-config` (argparse keeps the last value), with 0.33's
    `--spec-*` shorthands merged in (vllm/engine/arg_utils.py:2108 in 0.33.0)."""
    sources = [s for s in args.speculative_sources if s.error is None and not s.not_object]
    if sources and sources[-1].unknown:
        return None  # the config comes from a variable the linter cannot read
    shorthands = list(shorthand_entries(args))
    if not sources and not shorthands:
        return None
    source = sources[-1] if sources else SpecSource(None, [], "json")
    spec = args.catalog.speculative_config
    entries: dict[str, SpecEntry] = {}
    for entry in source.entries:
        # 0.33 rewrites `-` to `_` in keys (vllm/engine/arg_utils.py:2126 in 0.33.0).
        key = entry.key.replace("-", "_") if spec.dash_keys_normalised else entry.key
        entries[key] = entry
    merged: list[tuple[SpecEntry, str]] = []
    for option, key in shorthands:
        assert option.value is not None
        value: Any = option.value.text
        if option.spec.type == "int":
            try:
                value = int(value)
            except ValueError:
                continue  # reported by VL323
        entry = SpecEntry(key, value, option.key, option.value, "shorthand")
        merged.append((entry, option.match.name))
        if key not in entries:
            entries[key] = entry
    return SpecView(source, entries, merged)


def shorthand_entries(args: VllmArgs) -> Iterator[tuple[ParsedOption, str]]:
    """0.33's `--spec-method/--spec-model/--spec-tokens` and the key each one sets."""
    for flag, key in args.catalog.speculative_config.shorthand_flags.items():
        spec = args.catalog.flag(flag)
        if spec is None:
            continue
        option = args.last(spec.dest)
        if option is not None and option.value is not None:
            yield option, key


def point(text: Traced, index: int) -> Span:
    """The file span of character `index` of `text`; one past the end points just after
    the last character (where JSON's "Expecting ..." errors at end of input belong)."""
    if 0 <= index < len(text):
        return text.span(index, index + 1)
    if text.origins:
        last: Pos = text.origins[-1]
        return Span.at(last.next())
    return Span(Pos(1, 1), Pos(1, 2))
