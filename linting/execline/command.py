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
from dataclasses import dataclass, field

from linting.execline.env_substitution import Substitution, expand_word
from linting.execline.extract_word import (
    PLAIN_WORD,
    WHITESPACE,
    ExtractError,
    Word,
    extract_first_word,
)
from linting.execline.paths import implies_directory, path_simplify
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
    """Parse one Exec*= value the way systemd loads it: command after command while a `;`
    separates them (`config_parse_exec()`'s `do { … } while (semicolon)`)."""
    parser = _ExecParser(value, version, specifier_values)
    while parser.command():
        pass
    return parser.line


class _ExecParser:
    """The steps of one pass of `config_parse_exec()` (src/core/load-fragment.c), each a
    method: the first word (a lone `;`, the prefixes, specifiers), the checks of the
    executable path, the argument loop, the check of argv[0]. A method that finds a problem
    records it and returns None: systemd stops parsing the value there."""

    def __init__(self, value: Traced, version: int, specifier_values: dict[str, str]) -> None:
        self.value = value
        self.version = version
        self.specifier_values = specifier_values
        self.line = ExecLine(value, [], [])
        self.pos = 0

    def command(self) -> bool:
        """Parse one command; True when a `;` separator says another one follows."""
        first = self._first_word()
        if first is None:
            return False
        if first.value.text == ";":
            self._separator(self.value.span(first.start, first.end))
            return True
        prefixes, _ = _split_prefixes(first.value.text, self.version)
        ignore = "-" in prefixes
        if prefixes:
            first_rest = first.value[len(prefixes) :]
            first = Word(first_rest, first.start, first.end, first.unknown_escapes, first.quotes)
        path = self._executable(first, ignore)
        if path is None:
            return False
        words = [first]
        argv: list[Traced] = [] if "@" in prefixes else [path]
        semicolon = self._arguments(words, argv, ignore)
        if semicolon is None:
            return False
        if not argv:
            self._fail(
                ExecProblemKind.EMPTY_ARGV0,
                "Empty executable name or zeroeth argument",
                self.value.span(first.start, first.end),
                ignore,
            )
            return False
        exe = path.text
        self.line.commands.append(
            ExecCommand(
                prefixes,
                path_simplify(exe, version=self.version) if exe.startswith("/") else exe,
                words,
                argv,
                first.start,
            )
        )
        return semicolon

    # -- the steps ---------------------------------------------------------------------
    def _first_word(self) -> Word | None:
        """`extract_first_word_and_warn()`; `if (r <= 0) return 0;`: an undecodable first
        word is logged and the rest of the value dropped, whatever the prefixes."""
        try:
            first, self.pos = extract_first_word(self.value, self.pos)
        except ExtractError as exc:
            at = self.value.span(exc.offset, exc.offset + 1)
            self._fail(ExecProblemKind.UNBALANCED_QUOTE, "Unbalanced quoting", at, True)
            return None
        if first is not None:
            _note_unknown_escapes(self.line, self.value, first)
        return first

    def _executable(self, first: Word, ignore: bool) -> Traced | None:
        """Specifiers, then the path checks in systemd's order; None after a failure.
        `first` is the first word without its prefixes."""
        try:
            path = resolve(first.value, self.version, self.specifier_values)
        except SpecifierError as exc:
            self._unknown_specifier(exc, first.value, ignore)
            return None
        text = path.text
        if not text:
            problem = (ExecProblemKind.EMPTY_PATH, "Empty path in command line")
        elif not string_is_safe(text):
            problem = (ExecProblemKind.UNSAFE_PATH, "Executable name contains special characters")
        elif implies_directory(text, self.version):
            problem = (ExecProblemKind.DIRECTORY_PATH, "Executable path specifies a directory")
        elif not text.startswith("/") and not _filename_is_valid(text):
            problem = (
                ExecProblemKind.RELATIVE_PATH,
                "Neither a valid executable name nor an absolute path",
            )
        else:
            return path
        self._fail(*problem, self.value.span(first.start, first.end), ignore)
        return None

    def _arguments(self, words: list[Word], argv: list[Traced], ignore: bool) -> bool | None:
        """The argument loop: words until the end or a `;` separator (True); None after a
        failure. `self.pos` is never at a blank: every step moves past the blanks after
        what it read."""
        value, text = self.value, self.value.text
        while self.pos < len(text):
            pos = self.pos
            plain = PLAIN_WORD.match(text, pos)
            if plain is None:  # quotes or backslashes
                word = self._decoded_argument(pos, ignore)
                if word is None:
                    return None
            elif plain.end(1) == pos + 1 and text[pos] == ";":  # a lone `;`: a separator
                self.pos = plain.end()
                self._separator(value.span(pos, pos + 1))
                return True
            else:  # most words: nothing to decode or to note
                end = plain.end(1)
                self.pos = plain.end()
                word = Word(value[pos:end], pos, end, (), ())
            try:
                resolved = resolve(word.value, self.version, self.specifier_values)
            except SpecifierError as exc:
                self._unknown_specifier(exc, word.value, ignore)
                return None
            words.append(word)
            argv.append(resolved)
        return False

    def _decoded_argument(self, pos: int, ignore: bool) -> Word | None:
        """The word at `pos`, which has quotes or backslashes (`\\;` is a literal `;`);
        `self.pos` moves past it. None after a failure."""
        value, text = self.value, self.value.text
        if text.startswith("\\;", pos) and _separated(text, pos + 2):
            self.pos = _skip_blanks(text, pos + 2)
            return Word(Traced(";", (value.origins[pos],)), pos, pos + 2, (), ())
        try:
            word, self.pos = extract_first_word(value, pos)
        except ExtractError as exc:
            at = value.span(exc.offset, exc.offset + 1)
            self._fail(ExecProblemKind.UNBALANCED_QUOTE, "Unbalanced quoting", at, ignore)
            return None
        assert word is not None  # `pos` is at a word
        _note_unknown_escapes(self.line, value, word)
        return word

    # -- recording problems --------------------------------------------------------------
    def _fail(
        self, kind: ExecProblemKind, message: str, span: Span, ignore: bool, **data: object
    ) -> None:
        """`return ignore ? 0 : -ENOEXEC;`: with `-` the command is dropped with a warning,
        without it the unit fails to load."""
        self.line.problems.append(ExecProblem(kind, message, span, fatal=not ignore, data=data))
        if ignore:
            self.line.dropped = True
        else:
            self.line.fatal = True

    def _unknown_specifier(self, exc: SpecifierError, word: Traced, ignore: bool) -> None:
        at = word.span(exc.use.offset, exc.use.offset + 2)
        message = f"unknown specifier '%{exc.use.letter}'"
        self._fail(ExecProblemKind.UNKNOWN_SPECIFIER, message, at, ignore, letter=exc.use.letter)

    def _separator(self, span: Span) -> None:
        """A `;` between commands: documented as deprecated from v257 on."""
        if self.version >= 257:
            message = "';' as a command separator is deprecated"
            self.line.problems.append(
                ExecProblem(ExecProblemKind.SEMICOLON, message, span, fatal=False)
            )


def _separated(text: str, pos: int) -> bool:
    """Is `pos` the end of the value or a blank (`!p[1] || strchr(WHITESPACE, p[1])`)?"""
    return pos == len(text) or text[pos] in WHITESPACE


def _skip_blanks(text: str, pos: int) -> int:
    while pos < len(text) and text[pos] in WHITESPACE:
        pos += 1
    return pos


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
    command: ExecCommand, env: dict[str, str], open_env: bool = False
) -> tuple[list[ExpandedArg], list[tuple[int, Substitution]]]:
    """The argv at exec time, plus every substitution (with its load-time word index).
    `open_env`: variables not in `env` may still be set (an unread EnvironmentFile=)."""
    if command.no_env_expand:
        return [ExpandedArg(a, i) for i, a in enumerate(command.argv)], []
    args: list[ExpandedArg] = []
    subs: list[tuple[int, Substitution]] = []
    for index, word in enumerate(command.argv):
        if "$" not in word.text:  # most words: nothing to substitute
            args.append(ExpandedArg(word, index))
            continue
        parts, found = expand_word(word, env, open_env)
        args.extend(ExpandedArg(p, index) for p in parts)
        subs.extend((index, s) for s in found)
    return args, subs
