"""What the rules look at: a parsed unit plus everything derived from it (environment,
Exec commands and their exact argv), computed once per unit."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING

from linting.execline.command import (
    EXEC_KEYS,
    ExecCommand,
    ExecLine,
    ExpandedArg,
    expand_command,
    parse_exec_value,
)
from linting.execline.environ import EnvProblem, EnvVar, load_environment_files, parse_environment
from linting.execline.environment import Substitution
from linting.execline.extract_word import Word
from linting.execline.shells import ShellInvocation, find_shell_script
from linting.execline.specifiers import UnitFacts, local_host_facts, specifier_values
from linting.options import LintOptions
from linting.unitfile import Assignment, UnitFile

if TYPE_CHECKING:
    from linting.vllm.invocation import VllmArgs

DEFAULT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin"
# Before v255 distributions built systemd with split-usr (path-util.h DEFAULT_PATH_SPLIT_USR);
# v255 removed it. Measured by tests/differential: Debian 12's 252 passes this, 257 the above.
DEFAULT_PATH_SPLIT_USR = DEFAULT_PATH + ":/sbin:/bin"
# Shells systemd treats as "no login" (user-util.c is_nologin_shell()): no $SHELL then.
NOLOGIN_SHELLS = frozenset(
    (
        "/bin/nologin",
        "/sbin/nologin",
        "/usr/bin/nologin",
        "/usr/sbin/nologin",
        "/bin/true",
        "/usr/bin/true",
        "/bin/false",
        "/usr/bin/false",
    )
)
# Set by systemd for every command (exec.c build_environment()); values vary per run.
RUNTIME_VARIABLES = ("INVOCATION_ID", "JOURNAL_STREAM", "SYSTEMD_EXEC_PID")
# Only for commands that run after the main process exists / for stop commands.
MAINPID_KEYS = ("ExecStartPost", "ExecReload", "ExecStop", "ExecStopPost")
STOP_KEYS = ("ExecStop", "ExecStopPost")
# RuntimeDirectory= & co.: the variable systemd sets and the base of a system service's paths.
EXEC_DIRECTORIES = (
    ("RuntimeDirectory", "RUNTIME_DIRECTORY", "/run"),
    ("StateDirectory", "STATE_DIRECTORY", "/var/lib"),
    ("CacheDirectory", "CACHE_DIRECTORY", "/var/cache"),
    ("LogsDirectory", "LOGS_DIRECTORY", "/var/log"),
    ("ConfigurationDirectory", "CONFIGURATION_DIRECTORY", "/etc"),
)


@dataclass
class Command:
    """One command of an Exec line with its exec-time argv."""

    key: str
    assignment: Assignment
    line: ExecLine
    command: ExecCommand
    args: list[ExpandedArg]
    substitutions: list[tuple[int, Substitution]]

    @property
    def argv(self) -> list[str]:
        return [a.value.text for a in self.args]


@dataclass
class VllmCommand:
    """An Exec command that runs a vLLM server, with its arguments parsed for the target
    vLLM version."""

    command: Command
    args: VllmArgs

    @property
    def path(self) -> str:
        return self.command.assignment.path


@dataclass
class UnitContext:
    unit: UnitFile
    options: LintOptions

    @property
    def version(self) -> int:
        return self.options.effective_systemd_version

    @cached_property
    def specifiers(self) -> dict[str, str]:
        facts = UnitFacts(
            self.unit.name,
            fragment_path=self.unit.path,
            user=self.unit.last_value("Service", "User"),
            group=self.unit.last_value("Service", "Group"),
        )
        return specifier_values(facts, self.options.host_facts or local_host_facts())

    @cached_property
    def _environment(self) -> tuple[dict[str, EnvVar], list[EnvProblem], list[str]]:
        env, problems = parse_environment(
            self.unit.get_all("Service", "Environment"), self.version, self.specifiers
        )
        env, file_problems, unreadable = load_environment_files(
            self.unit.get_all("Service", "EnvironmentFile"), env
        )
        return env, problems + file_problems, unreadable

    @property
    def environment(self) -> dict[str, EnvVar]:
        """Variables from Environment= and readable EnvironmentFile= files."""
        return self._environment[0]

    @property
    def environment_problems(self) -> list[EnvProblem]:
        return self._environment[1]

    @property
    def unreadable_env_files(self) -> list[str]:
        return self._environment[2]

    @property
    def has_unknown_environment(self) -> bool:
        """True when some variables may come from files the linter cannot read, or from
        PassEnvironment=: "unset" cannot be concluded then."""
        return bool(self.unreadable_env_files) or bool(
            self.unit.effective_list("Service", "PassEnvironment")
        )

    def exec_environment(self, key: str) -> dict[str, str]:
        """The environment a command of `key` receives (systemd's own variables first,
        overridden by Environment=, overridden by EnvironmentFile=)."""
        env: dict[str, str] = {
            "PATH": DEFAULT_PATH if self.version >= 255 else DEFAULT_PATH_SPLIT_USR
        }
        for name in RUNTIME_VARIABLES:
            env[name] = f"<{name}>"
        env.update(self._login_environment())
        if key in MAINPID_KEYS:
            env["MAINPID"] = "<MAINPID>"
        if key in STOP_KEYS:
            env.update(
                SERVICE_RESULT="<SERVICE_RESULT>",
                EXIT_CODE="<EXIT_CODE>",
                EXIT_STATUS="<EXIT_STATUS>",
            )
        for kind, var, base in EXEC_DIRECTORIES:
            dirs = self.unit.effective_list("Service", kind)
            if dirs:
                names = [w for a in dirs for w in a.value.text.split()]
                env[var] = ":".join(f"{base}/{n.split(':')[0]}" for n in names)
        term = self._term()
        if term:
            env["TERM"] = term
        if self.unit.last_value("Service", "Type") in ("notify", "notify-reload"):
            env["NOTIFY_SOCKET"] = "/run/systemd/notify"
        env.update({name: var.value for name, var in self.environment.items()})
        return env

    def _login_environment(self) -> dict[str, str]:
        """USER, LOGNAME, HOME, SHELL (exec.c/exec-invoke.c build_environment()).

        Before v255 all four only with User=. Since v255 (SetLoginEnvironment=) USER is always
        set (root without User=), the other three only when SetLoginEnvironment= is on (its
        default: User= or PAMName= set). HOME is left out when empty or "/", SHELL when it is a
        nologin shell; `nobody` is synthesized without either. Measured on 252 and 257 with
        User=nobody and without User= (tests/differential)."""
        from linting.execline.specifiers import _user_fields
        from linting.systemd.values import parse_boolean

        user = self.unit.last_value("Service", "User")
        if self.version >= 255:
            login = self.unit.last_value("Service", "SetLoginEnvironment")
            wanted = parse_boolean(login) if login else None
            if wanted is None:
                wanted = bool(user) or bool(self.unit.last_value("Service", "PAMName"))
        else:
            wanted = bool(user)
        if not user and self.version < 255:
            return {}
        name = user or "root"
        if name in ("root", "0"):
            facts = self.options.host_facts or local_host_facts()
            name, home, shell = "root", "/root", facts.root_shell
        elif name in ("nobody", "65534"):
            name, home, shell = "nobody", "", ""
        else:
            name, _uid, home, shell = _user_fields(name)
        env = {"USER": name}
        if wanted:
            env["LOGNAME"] = name
            if home.startswith("/") and home.strip("/"):
                env["HOME"] = home
            if shell.startswith("/") and shell not in NOLOGIN_SHELLS:
                env["SHELL"] = shell
        return env

    def _term(self) -> str | None:
        """exec.c `exec_context_needs_term()`: TERM is set for services on a terminal;
        `default_term_for_tty()` gives "linux" on virtual consoles, "vt220" elsewhere."""
        tty = self.unit.last_value("Service", "TTYPath")
        streams = [
            self.unit.last_value("Service", k) or ""
            for k in ("StandardInput", "StandardOutput", "StandardError")
        ]
        if not tty and not any(s.startswith("tty") for s in streams):
            return None
        tty = tty or "/dev/console"
        name = tty.removeprefix("/dev/")
        return "linux" if name.startswith("tty") and name[3:4].isdigit() else "vt220"

    @cached_property
    def exec_lines(self) -> list[tuple[str, Assignment, ExecLine]]:
        result = []
        for key in EXEC_KEYS:
            for a in self.unit.get_all("Service", key):
                if a.value.text == "":
                    continue
                result.append((key, a, parse_exec_value(a.value, self.version, self.specifiers)))
        result.sort(key=lambda item: (item[1].path, item[1].line))
        return result

    @cached_property
    def commands(self) -> list[Command]:
        """Every command systemd would run, after resets by empty assignments."""
        effective = {
            key: {id(a) for a in self.unit.effective_list("Service", key)} for key in EXEC_KEYS
        }
        result = []
        for key, assignment, line in self.exec_lines:
            if id(assignment) not in effective[key]:
                continue
            env = self.exec_environment(key)
            for cmd in line.commands:
                args, subs = expand_command(cmd, env)
                result.append(Command(key, assignment, line, cmd, args, subs))
        return result

    @cached_property
    def vllm_commands(self) -> list[VllmCommand]:
        """Every Exec command that runs vLLM, parsed once per unit (none when the target
        vLLM version has no catalog; the command line refuses such versions up front)."""
        from linting.vllm.catalog import UnknownVllmVersion, load_catalog
        from linting.vllm.invocation import parse_vllm_command

        try:
            catalog = load_catalog(self.options.effective_vllm_version)
        except UnknownVllmVersion:
            return []
        result = []
        for cmd in self.commands:
            parsed = parse_vllm_command([a.value for a in cmd.args], catalog)
            if parsed is not None:
                result.append(VllmCommand(cmd, parsed))
        return result

    @cached_property
    def vllm_servers(self) -> list[VllmCommand]:
        """The unit's vLLM servers: its ExecStart= commands that run vLLM."""
        return [vc for vc in self.vllm_commands if vc.command.key == "ExecStart"]


@dataclass
class RunContext:
    """All units of one lint run, for checks that compare units (e.g. the same --port)."""

    units: list[UnitContext]
    options: LintOptions


def load_word(command: Command, word_index: int) -> Word:
    """The raw (unquoted, pre-specifier) word behind load-time argv[word_index]."""
    offset = 1 if "@" in command.command.prefixes else 0
    return command.command.words[word_index + offset]


def shell_script(command: Command) -> tuple[ShellInvocation, ExpandedArg] | None:
    """The `-c` script of a shell command, as the shell receives it."""
    found = find_shell_script(command.argv)
    if found is None:
        return None
    return found, command.args[found.script_index]
