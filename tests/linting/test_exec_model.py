"""Tests for the Exec command-line model (linting.execline.command, .specifiers,
.environment, .environ): what systemd stores at load time and the argv at exec time.

Load-time facts checked with systemd 252's `systemd-analyze verify`: prefixes (`+!` and
`!!!` and `|` are fatal "Neither a valid executable name…", `--x` and `-@x` only drop the
command), unbalanced quotes (first word: "Unbalanced quoting, ignoring", unit loads; later
word: fatal), specifier letters (table in specifier_tables.json), Environment= with an
unknown escape ("Invalid syntax, ignoring" drops the rest of the line). Exec-time `$`
substitution cannot be observed with `systemd-analyze`; those tests follow docs/architecture.md
fact 5 / src/basic/env-util.c `replace_env_argv()` and `replace_env()`.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from linting.context import UnitContext
from linting.engine import lint_text
from linting.execline.command import ExecLine, expand_command, parse_exec_value
from linting.execline.env_assignments import parse_environment
from linting.execline.env_substitution import expand_word, split_value
from linting.execline.paths import path_simplify
from linting.execline.specifiers import (
    HostFacts,
    SpecifierError,
    UnitFacts,
    find_specifiers,
    resolve,
    specifier_table,
    specifier_values,
)
from linting.options import LintOptions
from linting.spans import Pos, Traced
from linting.unitfile import parse_text

VALUES = {"s": "/bin/sh", "n": "vllm.service", "h": "/root", "i": "", "u": "root"}


def traced(text: str) -> Traced:
    return Traced(text, tuple(Pos(1, i + 1) for i in range(len(text))))


def load(value: str, version: int = 252) -> ExecLine:
    return parse_exec_value(traced(value), version, VALUES)


def argv(value: str, env: dict[str, str] | None = None, version: int = 252) -> list[list[str]]:
    line = load(value, version)
    assert not line.fatal, line.problems
    return [[a.value.text for a in expand_command(c, env or {})[0]] for c in line.commands]


def kinds(line: ExecLine) -> list[str]:
    return [p.kind for p in line.problems]


# --- separators and prefixes ------------------------------------------------------------


def test_lone_semicolon_separates_commands():
    assert argv("/bin/a x ; /bin/b y") == [["/bin/a", "x"], ["/bin/b", "y"]]


def test_semicolon_glued_to_a_word_is_an_argument():
    assert argv("/bin/a x; /bin/b") == [["/bin/a", "x;", "/bin/b"]]


def test_escaped_semicolon_is_a_literal_argument():
    assert argv("/bin/find . -exec /bin/true \\;") == [
        ["/bin/find", ".", "-exec", "/bin/true", ";"]
    ]


def test_separator_is_a_lone_semicolon_in_the_raw_text():
    # `;x` is a word; a quoted `";"` argument is a literal `;`; a trailing `;` ends the value
    assert argv('/bin/a ;x ";" \t;') == [["/bin/a", ";x", ";"]]
    assert argv("/bin/a x;\t;\n/bin/b") == [["/bin/a", "x;"], ["/bin/b"]]


def test_quoted_semicolon_as_first_word_is_also_a_separator():
    assert argv('/bin/a ; ";" /bin/b') == [["/bin/a"], ["/bin/b"]]


def test_semicolon_separator_is_deprecated_only_from_257():
    assert "semicolon" not in kinds(load("/bin/a ; /bin/b", 252))
    assert "semicolon" in kinds(load("/bin/a ; /bin/b", 257))


@pytest.mark.parametrize(
    ("value", "prefixes", "path"),
    [
        ("-/bin/true", "-", "/bin/true"),
        ("@/bin/true name", "@", "/bin/true"),
        (":/bin/true", ":", "/bin/true"),
        ("+/bin/true", "+", "/bin/true"),
        ("!/bin/true", "!", "/bin/true"),
        ("!!/bin/true", "!!", "/bin/true"),
        ("-:+/bin/true", "-:+", "/bin/true"),
        ("@-/bin/true x", "@-", "/bin/true"),
    ],
)
def test_prefixes_are_split_from_the_executable(value, prefixes, path):
    line = load(value)
    (command,) = line.commands
    assert command.prefixes == prefixes
    assert command.path == path


@pytest.mark.parametrize("value", ["+!/bin/true", "!!!/bin/true", "|/bin/true", "::/bin/true"])
def test_invalid_prefix_combinations_make_the_unit_fail_to_load(value):
    line = load(value)
    assert line.fatal
    assert kinds(line) == ["relative-path"]


def test_pipe_prefix_exists_from_258_and_double_bang_is_gone():
    (command,) = load("|/bin/true", 258).commands
    assert command.prefixes == "|"
    assert load("!!/bin/true", 258).fatal


def test_at_prefix_takes_argv0_from_the_second_word():
    assert argv("@/bin/bash vllm-wrapper -c x") == [["vllm-wrapper", "-c", "x"]]


@pytest.mark.parametrize(
    ("value", "kind", "fatal"),
    [
        ("@/bin/true", "empty-argv0", True),
        ("-@/bin/true", "empty-argv0", False),
        ("-", "empty-path", False),
        ("/bin/", "directory-path", True),
        ("bin/true", "relative-path", True),
        ("--/bin/true", "relative-path", False),
        ("/bin/e\\x01cho", "unsafe-path", True),
    ],
)
def test_bad_executables_fail_or_drop_like_systemd(value, kind, fatal):
    line = load(value)
    assert kinds(line) == [kind]
    assert line.fatal is fatal
    assert line.dropped is not fatal
    assert line.commands == []


def test_bare_executable_name_is_accepted():
    (command,) = load("nvidia-smi -L").commands
    assert command.path == "nvidia-smi"


def test_path_is_simplified():
    (command,) = load("/usr//bin/./true").commands
    assert command.path == "/usr/bin/true"


# --- quoting errors ---------------------------------------------------------------------


def test_unbalanced_quote_in_first_word_drops_the_command_only():
    line = load('"/bin/true')
    assert kinds(line) == ["unbalanced-quote"]
    assert not line.fatal
    assert line.dropped


def test_unbalanced_quote_in_later_word_is_fatal():
    line = load('/bin/true "a')
    assert line.fatal
    assert line.problems[0].span.start == Pos(1, 11)


def test_unbalanced_quote_in_later_word_with_dash_prefix_drops_the_command():
    line = load('-/bin/true "a')
    assert not line.fatal
    assert line.dropped


def test_unbalanced_first_word_after_separator_keeps_earlier_commands():
    line = load('/bin/true ; "/bin/false')
    assert [c.path for c in line.commands] == ["/bin/true"]
    assert not line.fatal


def test_unknown_escape_is_a_warning_and_kept():
    line = load("/bin/grep -q \\d+ /f")
    assert kinds(line) == ["unknown-escape"]
    assert not line.fatal and not line.dropped
    assert line.problems[0].span == traced("/bin/grep -q \\d+ /f").span(13, 15)
    assert argv("/bin/grep -q \\d+ /f") == [["/bin/grep", "-q", "\\d+", "/f"]]


# --- specifiers -------------------------------------------------------------------------


def test_percent_percent_is_a_percent_sign():
    assert argv("/bin/date +%%s") == [["/bin/date", "+%s"]]


def test_known_specifier_is_replaced_per_word():
    assert argv("/bin/date +%s") == [["/bin/date", "+/bin/sh"]]
    assert argv("/bin/echo %n-%i.") == [["/bin/echo", "vllm.service-."]]


@pytest.mark.parametrize("letter", ["e", "k", "x", "z", "D", "F", "K", "O", "Q", "X", "Z", "5"])
def test_unknown_specifier_makes_the_unit_fail_to_load_in_252(letter):
    line = load(f"/bin/printf %{letter}")
    assert line.fatal
    assert kinds(line) == ["unknown-specifier"]
    assert line.problems[0].span.start == Pos(1, 13)
    assert line.problems[0].span.end == Pos(1, 15)


def test_instance_specifiers_unescape_the_unit_name():
    values = specifier_values(UnitFacts("vllm@models-kimi\\x2dk2.service"), HostFacts())
    assert (values["i"], values["I"]) == ("models-kimi\\x2dk2", "models/kimi-k2")


@pytest.mark.parametrize(
    ("path", "simplified"),
    [
        ("/usr/bin/env", "/usr/bin/env"),
        ("//usr/bin/./env", "/usr/bin/env"),
        ("/usr//bin/env", "/usr/bin/env"),
        ("/usr/bin/../bin/env", "/usr/bin/../bin/env"),
        ("/usr/bin/.env", "/usr/bin/.env"),
        ("/usr/bin/", "/usr/bin"),
        ("/usr/bin/.", "/usr/bin"),
        ("/.", "/"),
        ("/", "/"),
        ("./env", "env"),
        (".", "."),
    ],
)
def test_path_simplify_drops_empty_and_dot_components_only(path, simplified):
    assert path_simplify(path) == simplified


@pytest.mark.parametrize(
    "path",
    [
        "/etc/systemd/system/vllm.service",
        "/etc/systemd/system/vllm.service.d/../x.service",
        "/etc//systemd/./system/vllm.service",
        "/etc/systemd/system/",
        "/etc/systemd/system/.",
        "/x.service",
        "//x.service",
        "///x.service",
        "//etc/x.service",
        "./x.service",
        "x.service",
        "units/x.service",
    ],
)
def test_fragment_directory_is_what_pathlib_gives(path):
    values = specifier_values(UnitFacts("x.service", fragment_path=path), HostFacts())
    assert values["Y"] == str(Path(path).parent)


def test_malformed_escape_in_the_unit_name_does_not_crash_the_linter():
    values = specifier_values(UnitFacts("vllm@a\\xzz.service"), HostFacts())
    assert values["I"] == "a\\xzz"
    report = lint_text("[Service]\nExecStart=/bin/echo %I\n", "vllm@a\\xzz.service")
    assert report.files[0].commands[0].argv == ("/bin/echo", "a\\xzz")


def test_unknown_specifier_in_the_executable_is_fatal_too():
    assert load("/bin/x%e").fatal


def test_unknown_specifier_with_dash_prefix_drops_the_command():
    line = load("-/bin/true %e")
    assert line.dropped and not line.fatal


def test_percent_d_upper_is_known_from_257():
    assert "D" not in specifier_table(252)[0]
    assert "D" in specifier_table(257)[0]
    assert not load("/bin/echo %D", 257).fatal


def test_deprecated_specifiers_are_reported_as_such():
    uses = find_specifiers("%c %r %R %n %%r %e", 252)
    assert [(u.letter, u.known, u.deprecated) for u in uses] == [
        ("c", True, True),
        ("r", True, True),
        ("R", True, True),
        ("n", True, False),
        ("e", False, False),
    ]


def test_percent_before_a_non_letter_or_at_the_end_stays():
    assert resolve(traced("100%-%!%"), 252, VALUES).text == "100%-%!%"


def test_unknown_specifier_raises_with_its_offset():
    with pytest.raises(SpecifierError) as exc:
        resolve(traced("ab%e"), 252, VALUES)
    assert exc.value.use.offset == 2


# --- environment substitution -----------------------------------------------------------


def test_whole_word_variable_is_split_on_whitespace():
    env = {"ARGS": "--a 1  --b\t2"}
    assert argv("/bin/x $ARGS end", env) == [["/bin/x", "--a", "1", "--b", "2", "end"]]


def test_whole_word_variable_honours_quotes_in_its_value():
    env = {"ARGS": "--name 'a b' \"c d\""}
    assert argv("/bin/x $ARGS", env) == [["/bin/x", "--name", "a b", "c d"]]


def test_split_value_keeps_unbalanced_quote_content():
    assert split_value("a 'b c") == ["a", "b c"]
    assert split_value("x\\ y") == ["x y"]


def test_unset_whole_word_variable_removes_the_argument():
    assert argv("/bin/x --model $MODEL --port 1") == [["/bin/x", "--model", "--port", "1"]]


def test_empty_whole_word_variable_removes_the_argument():
    assert argv("/bin/x $E y", {"E": ""}) == [["/bin/x", "y"]]


@pytest.mark.parametrize("word", ["$FOO/x", "$1", "$(seq", "$", "$FOO-bar"])
def test_whole_word_with_invalid_name_is_removed(word):
    assert argv(f"/bin/x {word} y", {"FOO": "v"}) == [["/bin/x", "y"]]


def test_braced_variable_is_one_argument_anywhere_in_a_word():
    env = {"N": "a b"}
    assert argv("/bin/x --n=${N}! ${N}", env) == [["/bin/x", "--n=a b!", "a b"]]


def test_braced_unset_variable_becomes_empty():
    assert argv("/bin/x --n=${N} ${N}") == [["/bin/x", "--n=", ""]]


@pytest.mark.parametrize("word", ["${X:-d}", "${X:+a}", "pre${X:-d}"])
def test_braced_with_colon_operator_stays_literal(word):
    assert argv(f"/bin/x {word}", {"X": "v"}) == [["/bin/x", word]]


@pytest.mark.parametrize(("word", "result"), [("${#a[@]}", ""), ("${a[0]}x", "x"), ("${1}", "")])
def test_braced_names_that_cannot_exist_become_empty(word, result):
    assert argv(f"/bin/x {word}", {"a": "v"}) == [["/bin/x", result]]


def test_unterminated_brace_stays_literal():
    assert argv("/bin/x ${X", {"X": "v"}) == [["/bin/x", "${X"]]


def test_double_dollar_is_a_dollar():
    assert argv("/bin/sh -c 'echo $$HOME $${X} $$$$'") == [["/bin/sh", "-c", "echo $HOME ${X} $$"]]


def test_double_dollar_word_is_not_a_whole_word_reference():
    assert argv("/bin/x $$X", {"X": "v"}) == [["/bin/x", "$X"]]


def test_braceless_variable_inside_a_word_is_left_alone():
    assert argv("/bin/x --a=$A pre$A", {"A": "v"}) == [["/bin/x", "--a=$A", "pre$A"]]


def test_colon_prefix_disables_substitution_entirely():
    assert argv(":/bin/x $A ${A} $$", {"A": "v"}) == [["/bin/x", "$A", "${A}", "$$"]]


def test_specifiers_are_resolved_even_with_colon_prefix():
    assert argv(":/bin/x %n") == [["/bin/x", "vllm.service"]]


def test_dollar_from_an_escape_is_still_substituted():
    # unescaping happens at load time, substitution at exec time
    assert argv("/bin/x \\x24{A}", {"A": "v"}) == [["/bin/x", "v"]]


def test_substituted_words_point_at_the_dollar():
    parts, subs = expand_word(traced("--n=${N}"), {"N": "ab"})
    assert parts[0].text == "--n=ab"
    assert parts[0].origins[4:] == (Pos(1, 5), Pos(1, 5))
    assert [(s.name, s.braced, s.start, s.end, s.value) for s in subs] == [("N", True, 4, 8, "ab")]


# --- Environment= -----------------------------------------------------------------------


def env_of(body: str) -> tuple[dict[str, str], list[str]]:
    unit = parse_text("[Service]\n" + body, "x.service")
    env, problems = parse_environment(unit.get_all("Service", "Environment"), 252, VALUES)
    return {k: v.value for k, v in env.items()}, [p.kind for p in problems]


def test_environment_words_are_unquoted_and_later_wins():
    env, problems = env_of('Environment="A=a b" B=1\nEnvironment=B=2\n')
    assert env == {"A": "a b", "B": "2"}
    assert problems == []


def test_empty_environment_resets():
    assert env_of("Environment=A=1\nEnvironment=\nEnvironment=B=2\n")[0] == {"B": "2"}


def test_invalid_environment_assignment_is_skipped_alone():
    env, problems = env_of("Environment=A=1 B-C=2 =3 D E=5\n")
    assert env == {"A": "1", "E": "5"}
    assert problems == ["invalid-assignment"] * 3


def test_unknown_escape_in_environment_drops_the_rest_of_the_line():
    # systemd 252: "Invalid syntax, ignoring: A=1 B=\d C=3" — A stays set, B and C do not.
    env, problems = env_of("Environment=A=1 B=\\d C=3\n")
    assert env == {"A": "1"}
    assert problems == ["invalid-syntax"]


def test_unbalanced_quote_in_environment_drops_the_rest_of_the_line():
    env, problems = env_of("Environment=A=1 'B=2\n")
    assert env == {"A": "1"}
    assert problems == ["invalid-syntax"]


def test_unknown_specifier_in_environment_skips_that_word():
    env, problems = env_of("Environment=A=%e B=%n\n")
    assert env == {"B": "vllm.service"}
    assert problems == ["unknown-specifier"]


def test_command_sees_environment_and_systemd_variables():
    unit = parse_text(
        "[Service]\nUser=root\nEnvironment=M=/models/m\nExecStart=/bin/x $M $HOME $MAINPID\n"
        "ExecStop=/bin/kill $MAINPID\n",
        "vllm.service",
    )
    ctx = UnitContext(unit, LintOptions(shellcheck=False))
    start, stop = ctx.commands
    assert start.argv == ["/bin/x", "/models/m", "/root"]
    assert stop.argv == ["/bin/kill", "<MAINPID>"]
