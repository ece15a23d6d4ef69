"""The environment systemd gives a service's commands: its own variables first, then
`Environment=`, then `EnvironmentFile=` (src/core/exec.c `build_environment()`, moved to
exec-invoke.c in v255). What the `$` substitution of Exec lines (env_substitution.py)
looks names up in.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

from linting.execline.env_assignments import EnvVar
from linting.execline.specifiers import HostFacts
from linting.execline.users import user_fields
from linting.systemd.values import parse_boolean
from linting.unitfile import UnitFile
from linting.user_units import UserManager

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


@dataclass(frozen=True)
class UnitEnvironment:
    """What every command of one unit receives, around what depends on the command's key
    (MAINPID, the stop results), in build_environment()'s order: computed once per unit
    instead of once per Exec line."""

    head: Mapping[str, str]  # PATH, the runtime variables, USER/LOGNAME/HOME/SHELL
    tail: Mapping[str, str]  # *_DIRECTORY, TERM, NOTIFY_SOCKET, then the unit's variables

    def for_key(self, key: str) -> dict[str, str]:
        env = dict(self.head)
        if key in MAINPID_KEYS:
            env["MAINPID"] = "<MAINPID>"
        if key in STOP_KEYS:
            env.update(
                SERVICE_RESULT="<SERVICE_RESULT>",
                EXIT_CODE="<EXIT_CODE>",
                EXIT_STATUS="<EXIT_STATUS>",
            )
        # A name set twice keeps its first place and takes the later value, as dict.update
        # did when all of this was one dictionary.
        env.update(self.tail)
        return env


def unit_environment(
    unit: UnitFile,
    version: int,
    variables: Mapping[str, EnvVar],
    host: HostFacts,
    manager: UserManager | None = None,
) -> UnitEnvironment:
    """systemd's own variables, overridden by the unit's `variables` (Environment= and
    EnvironmentFile=); `.for_key(key)` is what a command of `key` receives. A user
    manager (`manager`) passes its own HOME, USER, LOGNAME, SHELL and XDG_RUNTIME_DIR."""
    head: dict[str, str] = {"PATH": DEFAULT_PATH if version >= 255 else DEFAULT_PATH_SPLIT_USR}
    for name in RUNTIME_VARIABLES:
        head[name] = f"<{name}>"
    if manager is not None:
        head.update(
            HOME=manager.home,
            USER=manager.name,
            LOGNAME=manager.name,
            SHELL=manager.shell,
            XDG_RUNTIME_DIR=manager.runtime_dir,
        )
    else:
        head.update(login_environment(unit, version, host))
    tail = directory_variables(unit, manager)
    term = terminal_type(unit)
    if term:
        tail["TERM"] = term
    if unit.last_value("Service", "Type") in ("notify", "notify-reload"):
        tail["NOTIFY_SOCKET"] = "/run/systemd/notify"
    tail.update({name: var.value for name, var in variables.items()})
    return UnitEnvironment(MappingProxyType(head), MappingProxyType(tail))


def directory_variables(unit: UnitFile, manager: UserManager | None = None) -> dict[str, str]:
    """`RUNTIME_DIRECTORY=/run/a:/run/b` & co. for the unit's `RuntimeDirectory=` & co.
    (a user manager's under its home and runtime directory, systemd.exec(5))."""
    bases = {var: base for _kind, var, base in EXEC_DIRECTORIES}
    if manager is not None:
        bases = {
            "RUNTIME_DIRECTORY": manager.runtime_dir,
            "STATE_DIRECTORY": f"{manager.home}/.local/state",
            "CACHE_DIRECTORY": f"{manager.home}/.cache",
            "LOGS_DIRECTORY": f"{manager.home}/.local/state/log",
            "CONFIGURATION_DIRECTORY": f"{manager.home}/.config",
        }
    env = {}
    for kind, var, _base in EXEC_DIRECTORIES:
        base = bases[var]
        dirs = unit.effective_list("Service", kind)
        if dirs:
            names = [w for a in dirs for w in a.value.text.split()]
            env[var] = ":".join(f"{base}/{n.split(':')[0]}" for n in names)
    return env


def login_environment(unit: UnitFile, version: int, host: HostFacts) -> dict[str, str]:
    """USER, LOGNAME, HOME, SHELL.

    Before v255 all four only with User=. Since v255 (SetLoginEnvironment=) USER is always
    set (root without User=), the other three only when SetLoginEnvironment= is on (its
    default: User= or PAMName= set). HOME is left out when empty or "/", SHELL when it is a
    nologin shell; `nobody` is synthesized without either. Measured on 252 and 257 with
    User=nobody and without User= (tests/differential)."""
    user = unit.last_value("Service", "User")
    if not user and version < 255:
        return {}
    name = user or "root"
    if name in ("root", "0"):
        name, home, shell = "root", "/root", host.root_shell
    elif name in ("nobody", "65534"):
        name, home, shell = "nobody", "", ""
    else:
        name, _uid, home, shell = user_fields(name)
    env = {"USER": name}
    if _sets_login_environment(unit, version):
        env["LOGNAME"] = name
        if home.startswith("/") and home.strip("/"):
            env["HOME"] = home
        if shell.startswith("/") and shell not in NOLOGIN_SHELLS:
            env["SHELL"] = shell
    return env


def _sets_login_environment(unit: UnitFile, version: int) -> bool:
    user = unit.last_value("Service", "User")
    if version < 255:
        return bool(user)
    login = unit.last_value("Service", "SetLoginEnvironment")
    wanted = parse_boolean(login) if login else None
    if wanted is None:
        return bool(user) or bool(unit.last_value("Service", "PAMName"))
    return wanted


def terminal_type(unit: UnitFile) -> str | None:
    """exec.c `exec_context_needs_term()`: TERM is set for services on a terminal;
    `default_term_for_tty()` gives "linux" on virtual consoles, "vt220" elsewhere."""
    tty = unit.last_value("Service", "TTYPath")
    streams = [
        unit.last_value("Service", k) or ""
        for k in ("StandardInput", "StandardOutput", "StandardError")
    ]
    if not tty and not any(s.startswith("tty") for s in streams):
        return None
    tty = tty or "/dev/console"
    name = tty.removeprefix("/dev/")
    return "linux" if name.startswith("tty") and name[3:4].isdigit() else "vt220"
