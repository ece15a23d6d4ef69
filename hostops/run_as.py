"""As whom a program of the unit runs on the host before the unit itself does (the vLLM
check), and the rules that keep it from running someone else's code as root.

The check runs the service's own Python, with the profile's environment, from paths the
service account may own. Run as root, a `sitecustomize.py` on a `PYTHONPATH` the profile
sets, or a `python3` the `vllm` user can replace, would be that user's code running as
uid 0, with "restarts need no approval" even without an approver. So:

- the check runs as the unit's `User=` (with `Group=`, or the user's own group), switched
  to on the host by util-linux `setpriv --reuid --regid --init-groups --no-new-privs
  --reset-env` (every flag checked in Debian 12's util-linux 2.38.1): its supplementary
  groups as systemd gives them (initgroups(3)), no way back to root through setuid
  programs (PR_SET_NO_NEW_PRIVS), none of the SSH session's environment. The profile's variables
  are set after the switch (`env` runs as the user), so not even the loader of `setpriv`
  sees them. A login user that is the unit's user runs it directly; any other non-root
  login cannot switch users, and the check is skipped saying so;
- a unit that runs as root (no `User=`, `User=root`/`0`) is checked as root only under the
  probe's rules for what root may run (`hostops.executables.executable_problem`: every
  path component of the executable and of the Python owned by root or the login user and
  writable by no one else), and never with a variable that makes the interpreter, the
  loader or a shell load other code (`HIJACKING`): the check is skipped instead, with the
  reason. (The service itself runs as root with them: that is what was approved; the
  check must not add a run before anyone sees it, nor one with no approver at all.)
- `DynamicUser=yes` and a `User=` with a specifier or a variable cannot be resolved before
  systemd starts the unit: skipped.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from hostops.channel.base import Transport
from hostops.executables import executable_problem
from linting.unitfile import parse_text

# Variables that decide which code a process loads, rather than what it does: Python's
# own (python(1) "Environment variables"), the dynamic loader's (ld.so(8): LD_PRELOAD,
# LD_LIBRARY_PATH, LD_AUDIT …), glibc's iconv modules (GCONV_PATH), the start-up files of
# a shell the program may spawn (bash(1) BASH_ENV, sh(1) ENV), and PATH for the commands
# it spawns by name.
HIJACKING = re.compile(r"^(PYTHON.*|LD_.*|GCONV_PATH|BASH_ENV|ENV|PATH|PERL5LIB|PERL5OPT)$")
ROOT_NAMES = ("", "root", "0")
_PLAIN_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.@-]*")
_ID_TIMEOUT_S = 15.0


@dataclass(frozen=True)
class RunAs:
    """How the check's command starts on the host: `prefix` goes before `env …` (empty:
    as the login user), `user` names whom it runs as; `skip` says why it must not run."""

    user: str = ""
    prefix: tuple[str, ...] = ()
    skip: str = ""
    as_root: bool = False


def unit_identity(unit_text: str) -> tuple[str, str, str]:
    """(User=, Group=, why they cannot be used) of the unit's [Service] section."""
    unit = parse_text(unit_text, "unit.service")
    user = (unit.last_value("Service", "User") or "").strip()
    group = (unit.last_value("Service", "Group") or "").strip()
    dynamic = (unit.last_value("Service", "DynamicUser") or "").strip().lower()
    if dynamic in ("1", "yes", "true", "on"):
        return user, group, "the unit has DynamicUser=yes: its user exists only while it runs"
    for key, value in (("User", user), ("Group", group)):
        if value and not _PLAIN_NAME.fullmatch(value):  # %i, $VAR: resolved only by systemd
            return user, group, f"{key}={value} is not a plain user or group name"
    return user, group, ""


def _id(transport: Transport, *args: str) -> str:
    result = transport.run(["id", *args], timeout=_ID_TIMEOUT_S)
    text = result.stdout_text.strip()
    return text if result.ok and text.isdecimal() else ""


def plan_run_as(
    transport: Transport,
    unit_text: str,
    *,
    executables: list[str],
    environment: dict[str, str],
) -> RunAs:
    """How (and whether) to run a program of the unit as the unit's user (module doc).
    `executables`: the unit's executable and the Python that will run it."""
    user, group, problem = unit_identity(unit_text)
    if problem:
        return RunAs(skip=problem)
    login_uid = _id(transport, "-u")
    if not login_uid:
        return RunAs(skip="cannot tell which user specadmin logs in as (`id -u` failed)")
    if user in ROOT_NAMES:
        target_uid = "0"
    else:
        target_uid = _id(transport, "-u", "--", user)
        if not target_uid:
            return RunAs(skip=f"User={user} does not exist on the host")
    shown = user or "root"
    if target_uid == "0":
        return _as_root(transport, login_uid, shown, executables, environment)
    if login_uid == target_uid:  # already the unit's user: nothing to switch
        return RunAs(user=shown)
    if login_uid != "0":
        return RunAs(
            skip=f"the unit runs as {shown}, specadmin logs in as uid {login_uid}: switching "
            "users needs root on the host"
        )
    gid = group or _id(transport, "-g", "--", user)
    if not gid:
        return RunAs(skip=f"cannot read the group of User={user} on the host")
    prefix = (
        "setpriv",
        f"--reuid={target_uid}",
        f"--regid={gid}",
        "--init-groups",
        "--no-new-privs",
        "--reset-env",
        "--",
    )
    return RunAs(user=shown, prefix=prefix)


def _as_root(
    transport: Transport,
    login_uid: str,
    shown: str,
    executables: list[str],
    environment: dict[str, str],
) -> RunAs:
    """The unit runs as root: run the check as the login user, under the probe's rules
    whenever that is root too."""
    if login_uid != "0":
        return RunAs(user=f"uid {login_uid}")  # less than the unit's own rights
    hijacking = sorted(name for name in environment if HIJACKING.match(name))
    if hijacking:
        return RunAs(
            skip=f"the unit runs as {shown} and sets {', '.join(hijacking)}: the check never "
            "runs a program as root with variables that make it load other code",
            as_root=True,
        )
    for path in dict.fromkeys(executables):
        problem = executable_problem(transport, path)
        if problem:
            return RunAs(
                skip=f"the unit runs as {shown}; {path} is not run as root by the check: {problem}",
                as_root=True,
            )
    return RunAs(user="root", as_root=True)


__all__ = ["HIJACKING", "RunAs", "plan_run_as", "unit_identity"]
