"""What the rules look at: a parsed unit plus everything derived from it (environment,
Exec commands and their exact argv), computed once per unit."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

from linting.commands import Command, shell_script
from linting.execline.command import EXEC_KEYS, ExecLine, expand_command, parse_exec_value
from linting.execline.env_assignments import EnvProblem, EnvVar, parse_environment
from linting.execline.env_files import EnvFiles, load_environment_files
from linting.execline.env_substitution import without_marks
from linting.execline.exec_environment import UnitEnvironment, unit_environment
from linting.execline.specifiers import UnitFacts, local_host_facts, specifier_values
from linting.options import LintOptions
from linting.servers import VllmCommand, WrapperScript, find_servers, wrapper_scripts
from linting.shell.scripts import ShellScript, dialect_for
from linting.shell.shellcheck import PendingCheck
from linting.unitfile import Assignment, SourceFile, UnitFile
from linting.user_units import UserManager, user_manager


@dataclass
class UnitContext:
    unit: UnitFile
    options: LintOptions

    @property
    def version(self) -> int:
        return self.options.effective_systemd_version

    @cached_property
    def user_manager(self) -> UserManager | None:
        """The user manager that runs this unit (`systemctl --user`), or None for a system
        unit (linting/user_units.py says how it is told)."""
        return user_manager(self.unit, self.options.user_units)

    @cached_property
    def specifiers(self) -> dict[str, str]:
        facts = UnitFacts(
            self.unit.name,
            fragment_path=self.unit.path,
            user=self.unit.last_value("Service", "User"),
            group=self.unit.last_value("Service", "Group"),
            manager=self.user_manager,
        )
        return specifier_values(facts, self.options.host_facts or local_host_facts())

    @cached_property
    def _environment(self) -> tuple[dict[str, EnvVar], list[EnvProblem], EnvFiles]:
        env, problems = parse_environment(
            self.unit.get_all("Service", "Environment"), self.version, self.specifiers
        )
        finder = self.options.file_finder
        files = load_environment_files(
            self.unit.get_all("Service", "EnvironmentFile"),
            env,
            self.version,
            self.specifiers,
            lambda host_path: finder.read(host_path, self.unit.path),
        )
        for setting in files.settings:  # findings may point into the files read
            if setting.local is not None and setting.text is not None:
                self.unit.sources.setdefault(setting.local, SourceFile(setting.local, setting.text))
        return files.variables, problems + files.problems, files

    @property
    def environment(self) -> dict[str, EnvVar]:
        """Variables from Environment= and the EnvironmentFile= files the linter read."""
        return self._environment[0]

    @property
    def environment_problems(self) -> list[EnvProblem]:
        return self._environment[1]

    @property
    def env_files(self) -> EnvFiles:
        return self._environment[2]

    @cached_property
    def has_unknown_environment(self) -> bool:
        """True when some variables may come from files the linter cannot read (required
        or `-` optional), or from PassEnvironment=: "unset" cannot be concluded then."""
        return bool(self.env_files.unknown) or bool(
            self.unit.effective_list("Service", "PassEnvironment")
        )

    def exec_environment(self, key: str) -> dict[str, str]:
        """The environment a command of `key` receives."""
        return self._unit_environment.for_key(key)

    @cached_property
    def _unit_environment(self) -> UnitEnvironment:
        return unit_environment(
            self.unit,
            self.version,
            self.environment,
            self.options.host_facts or local_host_facts(),
            self.user_manager,
        )

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
            key: {id(a) for a in self.unit.effective_list("Service", key)}
            for key in {key for key, _, _ in self.exec_lines}
        }
        result = []
        for key, assignment, line in self.exec_lines:
            if id(assignment) not in effective[key]:
                continue
            env = self.exec_environment(key)
            for cmd in line.commands:
                args, subs = expand_command(cmd, env, self.has_unknown_environment)
                result.append(Command(key, assignment, line, cmd, args, subs))
        return result

    @cached_property
    def vllm_commands(self) -> list[VllmCommand]:
        """Every vLLM server the unit starts, its arguments parsed for the release it runs:
        directly, in a container, or from a wrapper script (linting/servers.py)."""
        return find_servers(self)

    @cached_property
    def shell_scripts(self) -> list[tuple[str, ShellScript]]:
        """(file, script) for ShellCheck: the scripts of `bash|sh|dash|ksh … -c SCRIPT`
        commands as the shell receives them, with the unit's Environment= names exported,
        and the wrapper scripts the unit starts (checked as files)."""
        result = []
        exported = tuple(sorted(self.environment))
        for cmd in self.commands:
            found = shell_script(cmd)
            if found is None:
                continue
            shell, arg = found
            # `mksh` is a shell we recognise but not a ShellCheck dialect: check it as ksh.
            dialect = dialect_for(shell.dialect)
            if dialect is None:
                continue
            result.append(
                (cmd.assignment.path, ShellScript(without_marks(arg.value), dialect, exported))
            )
        for wrapper in self.wrapper_scripts:
            dialect = dialect_for(wrapper.dialect)
            if dialect is not None:
                result.append((wrapper.path, ShellScript(wrapper.text, dialect, exported)))
        return result

    @cached_property
    def wrapper_scripts(self) -> list[WrapperScript]:
        """The wrapper scripts the unit's commands run, where the linter can read them."""
        return wrapper_scripts(self)

    @cached_property
    def vllm_servers(self) -> list[VllmCommand]:
        """The unit's vLLM servers: its ExecStart= commands that run vLLM."""
        return [vc for vc in self.vllm_commands if vc.command.key == "ExecStart"]


@dataclass
class ShellCheckJob:
    """A unit's `bash -c` script, handed to ShellCheck while the other rules run."""

    unit: UnitContext
    path: str  # the file of its Exec line (a drop-in, maybe)
    script: ShellScript
    check: PendingCheck


@dataclass
class RunContext:
    """All units of one lint run, for checks that compare units (e.g. the same --port),
    and the ShellCheck work the engine started for them."""

    units: list[UnitContext]
    options: LintOptions
    shellcheck_jobs: list[ShellCheckJob] = field(default_factory=list)
