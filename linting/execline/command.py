"""The Exec command-line model: `config_parse_exec()` (src/core/load-fragment.c) at load
time and `replace_env_argv()` at exec time, giving the exact argv systemd passes.

Load time, per value: split into words (extract_word), a lone `;` separates commands,
`\\;` is a literal `;` argument, prefixes `- @ : + ! !!` (v258: `|`, no `!!`) on the first
word, `%` specifiers per word. Errors either drop the command (first word undecodable, or
any error with the `-` prefix: systemd logs "…, ignoring") or make the unit fail to load
("Unit configuration has fatal error"). Exec time: environment substitution, unless `:`.
"""

from __future__ import annotations

import enum
import posixpath
from dataclasses import dataclass, field

from linting.execline.environment import Substitution, expand_word
from linting.execline.extract_word import WHITESPACE, ExtractError, Word, extract_first_word
from linting.execline.specifiers import SpecifierError, resolve
from linting.spans import Span, Traced
from linting.unitfile import string_is_safe

EXEC_KEYS = (
    "ExecCondition",
    "ExecStartPre",
    "ExecStart",
    "ExecStartPost",
    "ExecReload",
    "ExecStop",
    "ExecStopPost",
)


class ExecProblemKind(enum.StrEnum):
    """What `config_parse_exec()` logs about an Exec value (src/core/load-fragment.c)."""

    UNBALANCED_QUOTE = "unbalanced-quote"  # "Unbalanced quoting"
    UNKNOWN_ESCAPE = "unknown-escape"  # "Ignoring unknown escape sequences"
    UNKNOWN_SPECIFIER = "unknown-specifier"  # "Failed to resolve unit specifiers"
    RELATIVE_PATH = "relative-path"  # "Neither a valid executable name nor an absolute path"
    EMPTY_PATH = "empty-path"
    UNSAFE_PATH = "unsafe-path"  # "Executable name contains special characters"
    DIRECTORY_PATH = "directory-path"  # "Executable path specifies a directory"
    EMPTY_ARGV0 = "empty-argv0"  # "Empty executable name or zeroeth argument"
    SEMICOLON = "semicolon"  # `;` as a command separator (deprecated from v257)


@dataclass(frozen=True)
class ExecProblem:
    kind: ExecProblemKind
    message: str
    span: Span
    fatal: bool  # True: the unit fails to load; False: systemd warns (maybe drops the command)
    data: dict = field(default_factory=dict, compare=False, hash=False)


@dataclass
class ExecCommand:
    """One command of an Exec line, as systemd stores it after loading the unit."""

    prefixes: str
    path: str
    words: list[Word]  # raw words, the first one without its prefixes
    argv: list[Traced]  # after specifier resolution (load time), argv[0] included
    first_word_offset: int  # offset of the first word in the value (prefixes included)

    @property
    def no_env_expand(self) -> bool:
        return ":" in self.prefixes

    @property
    def ignore_failure(self) -> bool:
        return "-" in self.prefixes


@dataclass
class ExecLine:
    value: Traced
    commands: list[ExecCommand]
    problems: list[ExecProblem]
    dropped: bool = False  # systemd ignored (part of) the line with a warning
    fatal: bool = False  # the unit fails to load


def _prefix_chars(version: int) -> str:
    return "-@:+!|" if version >= 258 else "-@:+!"


def _accepts_prefix(c: str, prefixes: str, version: int) -> bool:
    """One step of config_parse_exec()'s prefix loop: each prefix at most once, `+` and `!`
    exclusive, a second `!` (`!!`) only before v258, `|` only from v258."""
    if c in "-@:":
        return c not in prefixes
    if c == "|":
        return version >= 258 and c not in prefixes
    if c == "+":
        return not any(p in prefixes for p in "+!")
    if c == "!":
        if "+" in prefixes:
            return False
        return "!" not in prefixes or (version < 258 and prefixes.count("!") == 1)
    return False


def _split_prefixes(word: str, version: int) -> tuple[str, str]:
    prefixes = ""
    for c in word:
        if not _accepts_prefix(c, prefixes, version):
            break
        prefixes += c
    return prefixes, word[len(prefixes) :]


def _filename_is_valid(name: str) -> bool:
    return bool(name) and name not in (".", "..") and "/" not in name and len(name) <= 255


def parse_exec_value(value: Traced, version: int, specifier_values: dict[str, str]) -> ExecLine:
    """Parse one Exec*= value the way systemd loads it."""
    line = ExecLine(value, [], [])
    text = value.text
    pos = 0

    def fail(kind: ExecProblemKind, message: str, span: Span, ignore: bool, **data: object) -> None:
        line.problems.append(ExecProblem(kind, message, span, fatal=not ignore, data=dict(data)))
        if ignore:
            line.dropped = True
        else:
            line.fatal = True

    def unknown_specifier(exc: SpecifierError, word: Traced, ignore: bool) -> None:
        at = word.span(exc.use.offset, exc.use.offset + 2)
        fail(
            ExecProblemKind.UNKNOWN_SPECIFIER,
            f"unknown specifier '%{exc.use.letter}'",
            at,
            ignore,
            letter=exc.use.letter,
        )

    def separator(span: Span) -> None:
        """A `;` between commands: documented as deprecated from v257 on."""
        if version >= 257:
            line.problems.append(
                ExecProblem(
                    ExecProblemKind.SEMICOLON,
                    "';' as a command separator is deprecated",
                    span,
                    fatal=False,
                )
            )

    while True:
        try:
            first, pos = extract_first_word(value, pos)
        except ExtractError as exc:
            # config_parse_exec: `if (r <= 0) return 0;` — logged, the rest is dropped.
            fail(
                ExecProblemKind.UNBALANCED_QUOTE,
                "Unbalanced quoting",
                value.span(exc.offset, exc.offset + 1),
                True,
            )
            return line
        if first is None:
            return line
        _note_unknown_escapes(line, value, first)
        if first.value.text == ";":
            separator(value.span(first.start, first.end))
            continue
        prefixes, _ = _split_prefixes(first.value.text, version)
        ignore = "-" in prefixes
        first_rest = first.value[len(prefixes) :]
        try:
            path_traced = resolve(first_rest, version, specifier_values)
        except SpecifierError as exc:
            unknown_specifier(exc, first_rest, ignore)
            return line
        path = path_traced.text
        word_span = value.span(first.start, first.end)
        if not path:
            fail(ExecProblemKind.EMPTY_PATH, "Empty path in command line", word_span, ignore)
            return line
        if not string_is_safe(path):
            fail(
                ExecProblemKind.UNSAFE_PATH,
                "Executable name contains special characters",
                word_span,
                ignore,
            )
            return line
        if path.endswith("/"):
            fail(
                ExecProblemKind.DIRECTORY_PATH,
                "Executable path specifies a directory",
                word_span,
                ignore,
            )
            return line
        if not path.startswith("/") and not _filename_is_valid(path):
            fail(
                ExecProblemKind.RELATIVE_PATH,
                "Neither a valid executable name nor an absolute path",
                word_span,
                ignore,
            )
            return line
        argv: list[Traced] = [] if "@" in prefixes else [path_traced]
        words = [Word(first_rest, first.start, first.end, first.unknown_escapes, first.quotes)]
        semicolon = False
        while pos < len(text):
            if text[pos] == ";" and (pos + 1 == len(text) or text[pos + 1] in WHITESPACE):
                sep_start = pos
                pos += 1
                while pos < len(text) and text[pos] in WHITESPACE:
                    pos += 1
                semicolon = True
                separator(value.span(sep_start, sep_start + 1))
                break
            if text.startswith("\\;", pos) and (
                pos + 2 == len(text) or text[pos + 2] in WHITESPACE
            ):
                start = pos
                pos += 2
                while pos < len(text) and text[pos] in WHITESPACE:
                    pos += 1
                lit = Traced(";", (value.origins[start],))
                words.append(Word(lit, start, start + 2, (), ()))
                argv.append(lit)
                continue
            try:
                word, pos = extract_first_word(value, pos)
            except ExtractError as exc:
                fail(
                    ExecProblemKind.UNBALANCED_QUOTE,
                    "Unbalanced quoting",
                    value.span(exc.offset, exc.offset + 1),
                    ignore,
                )
                return line
            if word is None:
                break
            _note_unknown_escapes(line, value, word)
            try:
                resolved = resolve(word.value, version, specifier_values)
            except SpecifierError as exc:
                unknown_specifier(exc, word.value, ignore)
                return line
            words.append(word)
            argv.append(resolved)
        if not argv:
            fail(
                ExecProblemKind.EMPTY_ARGV0,
                "Empty executable name or zeroeth argument",
                word_span,
                ignore,
            )
            return line
        line.commands.append(
            ExecCommand(
                prefixes,
                posixpath.normpath(path) if path.startswith("/") else path,
                words,
                argv,
                first.start,
            )
        )
        if not semicolon:
            return line
    return line  # pragma: no cover - loop exits by return


def _note_unknown_escapes(line: ExecLine, value: Traced, word: Word) -> None:
    for offset in word.unknown_escapes:
        line.problems.append(
            ExecProblem(
                ExecProblemKind.UNKNOWN_ESCAPE,
                "Ignoring unknown escape sequence",
                value.span(offset, min(offset + 2, len(value))),
                fatal=False,
            )
        )


@dataclass
class ExpandedArg:
    """One argument the program receives, and the load-time word it came from."""

    value: Traced
    word_index: int


def expand_command(
    command: ExecCommand, env: dict[str, str]
) -> tuple[list[ExpandedArg], list[tuple[int, Substitution]]]:
    """The argv at exec time, plus every substitution (with its load-time word index)."""
    if command.no_env_expand:
        return [ExpandedArg(a, i) for i, a in enumerate(command.argv)], []
    args: list[ExpandedArg] = []
    subs: list[tuple[int, Substitution]] = []
    for index, word in enumerate(command.argv):
        parts, found = expand_word(word, env)
        args.extend(ExpandedArg(p, index) for p in parts)
        subs.extend((index, s) for s in found)
    return args, subs
