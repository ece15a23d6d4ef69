"""`EnvironmentFile=`: variables read from files, overriding `Environment=`.

Loading the setting (src/core/load-fragment.c `config_parse_unit_env_file()`): specifiers
are resolved first, then the path (after an optional `-`) must be absolute ("path is not
absolute, ignoring"). Starting the service (src/core/execute.c
`exec_context_load_environment()`): each path may be a glob; a file that cannot be read
fails the start unless the setting has `-`; the file is parsed by `load_env_file()`
(src/basic/env-file.c `parse_env_file_internal()`, ported below state by state), and
assignments whose name is not a valid variable name are dropped with "Ignoring invalid
environment assignment" (`strv_env_clean_with_callback()`). Measured on 252: `export A=1`
is such an invalid assignment, `A="x"b'c'` gives `xb'c'`, and a comment line ending in
`\\` swallows the next line (v254 changed that: the next line is read again).

Whether the linter can see the file is another matter (`linting/local_files.py`): a file it
cannot find is *unknown*, and so is every variable not set elsewhere.
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import dataclass, field

from linting.execline.env_assignments import EnvProblem, EnvProblemKind, EnvVar
from linting.execline.env_substitution import is_valid_name
from linting.execline.specifiers import SpecifierError, resolve
from linting.spans import Pos, Span
from linting.unitfile import Assignment

NEWLINE = "\n\r"
WHITESPACE = " \t\n\r"
COMMENTS = "#;"
SHELL_NEED_ESCAPE = '"\\`$'  # src/basic/escape.h


_FIRST = Pos(1, 1)


class _State(enum.Enum):
    PRE_KEY = enum.auto()
    KEY = enum.auto()
    PRE_VALUE = enum.auto()
    VALUE = enum.auto()
    VALUE_ESCAPE = enum.auto()
    SINGLE_QUOTE_VALUE = enum.auto()
    DOUBLE_QUOTE_VALUE = enum.auto()
    DOUBLE_QUOTE_VALUE_ESCAPE = enum.auto()
    COMMENT = enum.auto()
    COMMENT_ESCAPE = enum.auto()


@dataclass(frozen=True)
class EnvFileEntry:
    """One assignment `parse_env_file_internal()` pushes: the key, the value, and where
    the key starts in the file (for findings)."""

    key: str
    value: str
    at: Pos


@dataclass
class _Parser:
    """The state machine of `parse_env_file_internal()`, one character at a time."""

    version: int
    entries: list[EnvFileEntry] = field(default_factory=list)
    state: _State = _State.PRE_KEY
    key: list[str] = field(default_factory=list)
    value: list[str] = field(default_factory=list)
    key_at: Pos = _FIRST
    last_key_whitespace: int | None = None
    last_value_whitespace: int | None = None

    def feed(self, c: str, at: Pos) -> None:
        getattr(self, "_" + self.state.name.lower())(c, at)

    def push(self) -> None:
        """Chomp trailing blanks off key (and an unquoted value), then keep the entry."""
        key = "".join(self.key)
        if self.last_key_whitespace is not None:
            key = key[: self.last_key_whitespace]
        value = "".join(self.value)
        if self.state is _State.VALUE and self.last_value_whitespace is not None:
            value = value[: self.last_value_whitespace]
        self.entries.append(EnvFileEntry(key, value, self.key_at))
        self.key, self.value = [], []

    def finish(self) -> list[EnvFileEntry]:
        """End of file: a value in progress is pushed as if the line ended."""
        if self.state in _VALUE_STATES:
            self.push()
        return self.entries

    # -- the states (the C code's `case` labels) ----------------------------------------

    def _pre_key(self, c: str, at: Pos) -> None:
        if c in COMMENTS:
            self.state = _State.COMMENT
        elif c not in WHITESPACE:
            self.state = _State.KEY
            self.last_key_whitespace = None
            self.key_at = at
            self.key.append(c)

    def _key(self, c: str, at: Pos) -> None:
        if c in NEWLINE:
            self.state = _State.PRE_KEY
            self.key = []
        elif c == "=":
            self.state = _State.PRE_VALUE
            self.last_value_whitespace = None
        else:
            if c not in WHITESPACE:
                self.last_key_whitespace = None
            elif self.last_key_whitespace is None:
                self.last_key_whitespace = len(self.key)
            self.key.append(c)

    def _pre_value(self, c: str, at: Pos) -> None:
        if c in NEWLINE:
            self.push()
            self.state = _State.PRE_KEY
        elif c == "'":
            self.state = _State.SINGLE_QUOTE_VALUE
        elif c == '"':
            self.state = _State.DOUBLE_QUOTE_VALUE
        elif c == "\\":
            self.state = _State.VALUE_ESCAPE
        elif c not in WHITESPACE:
            self.state = _State.VALUE
            self.value.append(c)

    def _value(self, c: str, at: Pos) -> None:
        if c in NEWLINE:
            self.push()
            self.state = _State.PRE_KEY
        elif c == "\\":
            self.state = _State.VALUE_ESCAPE
            self.last_value_whitespace = None
        else:
            if c not in WHITESPACE:
                self.last_value_whitespace = None
            elif self.last_value_whitespace is None:
                self.last_value_whitespace = len(self.value)
            self.value.append(c)

    def _value_escape(self, c: str, at: Pos) -> None:
        self.state = _State.VALUE
        if c not in NEWLINE:  # escaped newlines are eaten up entirely
            self.value.append(c)

    def _single_quote_value(self, c: str, at: Pos) -> None:
        if c == "'":
            self.state = _State.PRE_VALUE
        else:
            self.value.append(c)

    def _double_quote_value(self, c: str, at: Pos) -> None:
        if c == '"':
            self.state = _State.PRE_VALUE
        elif c == "\\":
            self.state = _State.DOUBLE_QUOTE_VALUE_ESCAPE
        else:
            self.value.append(c)

    def _double_quote_value_escape(self, c: str, at: Pos) -> None:
        self.state = _State.DOUBLE_QUOTE_VALUE
        if c in SHELL_NEED_ESCAPE:
            self.value.append(c)
        elif c != "\n":  # other characters keep the backslash, like the real shell
            self.value.extend(("\\", c))

    def _comment(self, c: str, at: Pos) -> None:
        if c == "\\":
            self.state = _State.COMMENT_ESCAPE
        elif c in NEWLINE:
            self.state = _State.PRE_KEY

    def _comment_escape(self, c: str, at: Pos) -> None:
        # v254+: a line after a comment ending in `\` is a line of its own again; before,
        # the escaped newline continued the comment.
        if c in NEWLINE and self.version >= 254:
            self.state = _State.PRE_KEY
        else:
            self.state = _State.COMMENT


_VALUE_STATES = (
    _State.PRE_VALUE,
    _State.VALUE,
    _State.VALUE_ESCAPE,
    _State.SINGLE_QUOTE_VALUE,
    _State.DOUBLE_QUOTE_VALUE,
    _State.DOUBLE_QUOTE_VALUE_ESCAPE,
)


def parse_env_file(text: str, version: int) -> list[EnvFileEntry]:
    """Every assignment of an environment file, in order, as systemd `version` reads it
    (names not yet checked)."""
    parser = _Parser(version)
    line, column = 1, 1
    for c in text:
        parser.feed(c, Pos(line, column))
        if c == "\n":
            line, column = line + 1, 1
        else:
            column += 1
    return parser.finish()


def parse_env_file_text(text: str, version: int = 252) -> dict[str, str]:
    """The variables an environment file sets (invalid names dropped, last one wins)."""
    return {e.key: e.value for e in parse_env_file(text, version) if _valid(e)}


def _valid(entry: EnvFileEntry) -> bool:
    """`env_assignment_is_valid()`: a valid name, and a value that is valid UTF-8."""
    if not is_valid_name(entry.key):
        return False
    try:
        entry.value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


@dataclass(frozen=True)
class EnvFileSetting:
    """One `EnvironmentFile=` path as systemd stores it, and the copy the linter read."""

    assignment: Assignment
    path: str  # after specifiers, without `-`
    optional: bool
    local: str | None = None  # the file the linter read; None: it could not see it
    text: str | None = None


@dataclass
class EnvFiles:
    """What the unit's `EnvironmentFile=` settings contribute."""

    variables: dict[str, EnvVar]
    problems: list[EnvProblem]
    settings: list[EnvFileSetting]

    @property
    def unknown(self) -> list[str]:
        """Paths the linter could not read: every variable may come from them."""
        return [s.path for s in self.settings if s.local is None]


# host path -> (local path, text) of the file the linter can read, or None
FileReader = Callable[[str], tuple[str, str] | None]


def load_environment_files(
    assignments: list[Assignment],
    base_env: dict[str, EnvVar],
    version: int,
    specifier_values: dict[str, str],
    read: FileReader,
) -> EnvFiles:
    """Merge the environment files the linter can read over `base_env`."""
    env = dict(base_env)
    problems: list[EnvProblem] = []
    settings: list[EnvFileSetting] = []
    for a in assignments:
        if a.value.text == "":
            settings.clear()  # an empty assignment resets the list
            continue
        setting = _setting(a, version, specifier_values, problems)
        if setting is None:
            continue
        found = read(setting.path)
        if found is not None:
            local, text = found
            setting = EnvFileSetting(a, setting.path, setting.optional, local, text)
        settings.append(setting)
    for setting in settings:
        if setting.text is not None:
            _merge(setting, version, env, problems)
    return EnvFiles(env, problems, settings)


def _setting(
    a: Assignment, version: int, specifier_values: dict[str, str], problems: list[EnvProblem]
) -> EnvFileSetting | None:
    """config_parse_unit_env_file(): specifiers first, then the absolute-path check."""
    try:
        resolved = resolve(a.value, version, specifier_values).text
    except SpecifierError as exc:
        problems.append(
            EnvProblem(
                EnvProblemKind.UNKNOWN_SPECIFIER,
                f"unknown specifier '%{exc.use.letter}': systemd ignores this setting",
                a.value.span(exc.use.offset, exc.use.offset + 2),
                a.path,
            )
        )
        return None
    optional = resolved.startswith("-")
    path = resolved[1:] if optional else resolved
    if not path.startswith("/"):
        problems.append(
            EnvProblem(
                EnvProblemKind.RELATIVE_PATH,
                f"EnvironmentFile= path is not absolute, ignoring: {path}",
                a.value.span(),
                a.path,
            )
        )
        return None
    return EnvFileSetting(a, path, optional)


def _merge(
    setting: EnvFileSetting, version: int, env: dict[str, EnvVar], problems: list[EnvProblem]
) -> None:
    assert setting.text is not None and setting.local is not None
    for entry in parse_env_file(setting.text, version):
        if not _valid(entry):
            problems.append(
                EnvProblem(
                    EnvProblemKind.INVALID_ASSIGNMENT,
                    f"Ignoring invalid environment assignment '{entry.key}={entry.value}': "
                    f"{setting.path}",
                    Span.at(entry.at, len(entry.key)),
                    setting.local,
                )
            )
            continue
        env[entry.key] = EnvVar(
            entry.key,
            entry.value,
            setting.assignment.value.span(),
            f"EnvironmentFile:{setting.path}",
        )
