"""Run the corpus on a real systemd host and compare with the linter's prediction.

Why one batch: ~500 units cost one daemon-reload, one `systemctl start`, one pass over D-Bus
for the load states and one read-back, so the whole proof takes seconds on a 2-core CI
machine.
"""

from __future__ import annotations

import io
import json
import re
import subprocess
import tarfile
from dataclasses import dataclass, field
from pathlib import Path

from linting.context import UnitContext
from linting.engine import lint_units
from linting.execline.cunescape import to_bytes
from linting.execline.specifiers import HostFacts
from linting.findings import Severity
from linting.options import LintOptions
from linting.unitfile import parse_text
from tests.differential.corpus import UNIT_DIR, Case
from tests.differential.dumper import OUT_DIR, install_into, parse_records
from tests.testhost.host import TestHost

Argv = tuple[bytes, ...]
# Codes whose findings may say "refuses to load"; another code doing so is a model change
# this harness should learn about.
LOAD_FAILURE_CODES = frozenset({"SD103", "SD105", "SD106", "SD108", "SD110", "SD112", "SD113"})
UNSET_MESSAGE = "Referenced but unset environment variable evaluates to an empty string: "
NOISE = ("Starting ", "Finished ", "Deactivated ", "Invalid environment assignment")
INVALID_MESSAGE = "Invalid environment variable name evaluates to an empty string: "


@dataclass
class Prediction:
    """What the linter says systemd will do with one unit."""

    load_failure: bool
    commands: list[tuple[str, Argv]]  # (prefixes, argv) of each ExecStart= command
    dropped: bool  # a command is ignored with a warning
    unset: set[str]  # `${X}`/`$X` with X unset (v254+ logs each)
    invalid: set[str]  # invalid names (v254+ logs each)
    errors: list[str]

    @property
    def argvs(self) -> list[Argv]:
        """The records the dumper should write. A command whose argv ends up empty (`@` with
        an unset `$X` as argv[0]) fails in execve() (EINVAL, status 203/EXEC): the oneshot
        stops there, unless the `-` prefix ignores the failure."""
        result: list[Argv] = []
        for prefixes, argv in self.commands:
            if argv:
                result.append(argv)
            elif "-" not in prefixes:
                break
        return result


@dataclass
class Observed:
    """What real systemd did with one unit."""

    load_state: str = ""
    active_state: str = ""
    argvs: list[Argv] = field(default_factory=list)
    messages: list[str] = field(default_factory=list)


def read_host_facts(host: TestHost) -> HostFacts:
    """The specifier values that depend on the host, read over SSH as a deploy would."""
    script = (
        "cat /proc/sys/kernel/hostname /etc/machine-id /proc/sys/kernel/random/boot_id; "
        "uname -r; uname -m; systemd-run --quiet --wait --pipe -p User=root printenv SHELL; "
        "echo ---; cat /etc/os-release"
    )
    out = host.ssh(script, check=True).stdout
    head, _, osr = out.partition("---\n")
    hostname, machine_id, boot_id, release, machine, root_shell = head.split("\n")[:6]
    os_release: dict[str, str] = {}
    for line in osr.splitlines():
        key, eq, value = line.partition("=")
        if eq:
            os_release[key.strip()] = value.strip().strip('"')
    return HostFacts(
        hostname=hostname,
        machine_id=machine_id,
        boot_id=boot_id.replace("-", ""),
        kernel_release=release,
        architecture={"x86_64": "x86-64", "aarch64": "arm64"}.get(machine, machine),
        os_release=os_release,
        root_shell=root_shell,  # the build's default-user-shell (/bin/bash on Debian)
    )


def predict_all(cases: list[Case], version: int, facts: HostFacts) -> list[Prediction]:
    """Lint every unit (ShellCheck off: only the Exec model is under test)."""
    options = LintOptions(systemd_version=version, host_facts=facts, shellcheck=False)
    units = [parse_text(c.text(), f"{UNIT_DIR}/{c.unit(i)}") for i, c in enumerate(cases)]
    report = lint_units(units, options)
    result = []
    for unit, file_report in zip(units, report.files, strict=True):
        errors = [f for f in file_report.findings if f.severity == Severity.ERROR]
        fatal = [f for f in errors if "refuses to load" in f.message]
        unknown = {f.code for f in fatal} - LOAD_FAILURE_CODES
        assert not unknown, f"load-failure findings of unexpected codes {unknown}"
        ctx = UnitContext(unit, options)
        unset: set[str] = set()
        invalid: set[str] = set()
        for command in ctx.commands:
            missing = [sub for _index, sub in command.substitutions if sub.value is None]
            unset |= _as_logged([m.name for m in missing if m.valid_name])
            invalid |= _as_logged([m.name for m in missing if not m.valid_name])
        result.append(
            Prediction(
                load_failure=bool(fatal),
                commands=[
                    (c.prefixes, tuple(to_bytes(a) for a in c.argv))
                    for c in file_report.commands
                    if c.key == "ExecStart"
                ],
                dropped=any(line.dropped for _k, _a, line in ctx.exec_lines),
                unset=unset,
                invalid=invalid,
                errors=[f"{f.code} {f.message}" for f in errors],
            )
        )
    return result


def _as_logged(names: list[str]) -> set[str]:
    """The names of one command as the journal shows them: systemd logs them joined with
    ", " in one message, and log_dispatch_internal() cuts a message at its first newline
    (the rest becomes a separate entry without the unit prefix)."""
    if not names:
        return set()
    return set(", ".join(dict.fromkeys(names)).split("\n", 1)[0].split(", "))


def _bus_path(unit: str) -> str:
    """sd_bus_path_encode() of a unit name under /org/freedesktop/systemd1/unit."""
    label = "".join(
        c if (c.isascii() and c.isalnum()) and not (i == 0 and c.isdigit()) else f"_{ord(c):02x}"
        for i, c in enumerate(unit)
    )
    return f"/org/freedesktop/systemd1/unit/{label}"


def _states(host: TestHost, units: list[str]) -> dict[str, tuple[str, str]]:
    """(LoadState, ActiveState) per unit, read property by property over D-Bus (the lookup
    loads the unit). Not `systemctl show`: it fetches every property, and sd-bus refuses the
    ExecStart= property of a unit whose argv holds non-UTF-8 bytes ("Invalid argument");
    not `list-units`: it lists only units already in memory."""
    script = (
        'for p in "$@"; do echo "#unit $p"; busctl get-property org.freedesktop.systemd1 "$p" '
        "org.freedesktop.systemd1.Unit Id LoadState ActiveState; done"
    )
    paths = {_bus_path(u): u for u in units}
    res = host.nsenter(["sh", "-c", script, "sh", *paths], timeout=300)
    states: dict[str, tuple[str, str]] = {}
    for block in res.stdout.split("#unit ")[1:]:
        path, *values = block.splitlines()
        if len(values) == 3:
            # busctl prints `s "…"` with C escapes (template instances hold `\\x2d`)
            unit_id, load, active = (v.split(" ", 1)[1][1:-1].replace("\\\\", "\\") for v in values)
            assert unit_id == paths[path], (unit_id, path)
            states[paths[path]] = (load, active)
    missing = set(units) - set(states)
    assert not missing, f"no state for {sorted(missing)[:5]}: {res.stderr[-2000:]}"
    return states


def _read_dumps(host: TestHost) -> dict[str, bytes]:
    proc = subprocess.run(
        ["nsenter", "-t", str(host.container_pid()), "-a", "--", "tar", "-C", OUT_DIR, "-cf-", "."],
        capture_output=True,
        check=True,
        timeout=60,
    )
    dumps: dict[str, bytes] = {}
    with tarfile.open(fileobj=io.BytesIO(proc.stdout)) as tar:
        for member in tar.getmembers():
            if member.isfile():
                data = tar.extractfile(member)
                assert data is not None
                dumps[Path(member.name).name] = data.read()
    return dumps


def _cursor(host: TestHost) -> str:
    out = host.nsenter(["journalctl", "--no-pager", "-n", "1", "-o", "json"]).stdout
    return json.loads(out.splitlines()[-1])["__CURSOR"] if out.strip() else ""


def _journal(host: TestHost, cursor: str) -> dict[str, list[str]]:
    """MESSAGE fields per unit (UNIT= of the manager's lines, _SYSTEMD_UNIT of the units')."""
    host.nsenter(["journalctl", "--sync"])  # what the units logged is written, not queued
    argv = ["journalctl", "--no-pager", "-o", "json", "--output-fields=MESSAGE,UNIT"]
    res = host.nsenter([*argv, f"--after-cursor={cursor}"] if cursor else argv)
    per_unit: dict[str, list[str]] = {}
    for line in res.stdout.splitlines():
        try:
            entry = json.loads(line)
        except json.JSONDecodeError:
            continue
        message = entry.get("MESSAGE")
        if isinstance(message, list):  # non-UTF-8 payloads come as byte arrays
            message = bytes(message).decode("utf-8", "replace")
        for key in ("UNIT", "_SYSTEMD_UNIT"):
            unit = entry.get(key)
            if isinstance(unit, str) and unit.startswith("diff-") and message:
                per_unit.setdefault(unit, []).append(message)
                break
    return per_unit


def run_on_host(host: TestHost, cases: list[Case]) -> list[Observed]:
    """Install every unit, reload once, start them all, read back argv, states and journal."""
    install_into(host.root)
    host.nsenter(["sh", "-c", f"rm -rf {OUT_DIR} && mkdir -m 1777 {OUT_DIR}"], check=True)
    cursor = _cursor(host)  # this run's journal lines only (the host may be shared)
    unit_dir = host.root / UNIT_DIR.lstrip("/")
    for old in unit_dir.glob("diff-*.service"):
        old.unlink()
    for i, case in enumerate(cases):
        (unit_dir / case.template_name(i)).write_text(case.text(), encoding="utf-8")
    host.systemctl("daemon-reload", check=True)
    units = [c.unit(i) for i, c in enumerate(cases)]
    # One job per unit; returns when all finished. A unit that fails to load fails only its
    # own job ("has a bad unit file setting"), the others run.
    host.nsenter(["systemctl", "start", "--", *units], timeout=300)
    states = _states(host, units)
    dumps = _read_dumps(host)
    journal = _journal(host, cursor)
    observed = []
    for unit in units:
        observed.append(
            Observed(
                load_state=states[unit][0],
                active_state=states[unit][1],
                argvs=parse_records(dumps[unit]) if unit in dumps else [],
                messages=journal.get(unit, []),
            )
        )
    return observed


def logged_names(messages: list[str], text: str) -> set[str]:
    """Names in "<unit>: <text>A, B" journal lines (one line per command, v254+)."""
    names: set[str] = set()
    for message in messages:
        _unit, sep, rest = message.partition(": ")
        if sep and rest.startswith(text):
            names.update(rest[len(text) :].split(", "))
    return names


# "<file>:<line>: <what>, ignoring…" for an Exec line that systemd dropped (other keys' and
# Environment= words' "ignoring" messages are not about commands).
_IGNORING = re.compile(r"^/\S+:(?P<line>\d+): (?P<what>[^:]*?), ignoring")


def exec_line_numbers(text: str) -> set[int]:
    """Physical line numbers of ExecStart= assignments, continuation lines included."""
    numbers: set[int] = set()
    continued = False
    for number, line in enumerate(text.split("\n"), start=1):
        if continued or line.startswith("ExecStart="):
            numbers.add(number)
            trailing = len(line) - len(line.rstrip("\\"))
            comment = continued and line.lstrip().startswith(("#", ";"))
            continued = comment or trailing % 2 == 1
    return numbers


def systemd_dropped(messages: list[str], exec_lines: set[int]) -> bool:
    """Did systemd log that it ignored (part of) an ExecStart= line of this unit?"""
    for message in messages:
        match = _IGNORING.match(message)
        if match and int(match["line"]) in exec_lines:
            return True
    return False


def describe(case: Case, index: int, pred: Prediction, real: Observed) -> str:
    """A mismatch, readable: the unit text, both argv lists, the linter's errors, the journal."""

    def fmt(argvs: list[Argv]) -> str:
        return (
            "\n".join(
                "    " + repr([a.decode("utf-8", "backslashreplace") for a in argv])
                for argv in argvs
            )
            or "    (none)"
        )

    journal = list(dict.fromkeys(m for m in real.messages if not m.startswith(NOISE)))
    return (
        f"--- {case.unit(index)} ({case.cid}, {case.origin}) ---\n{case.text()}"
        f"  systemd: LoadState={real.load_state} ActiveState={real.active_state}\n"
        f"  real argv:\n{fmt(real.argvs)}\n"
        f"  linter: load_failure={pred.load_failure}\n  predicted argv:\n{fmt(pred.argvs)}\n"
        f"  linter errors: {pred.errors}\n"
        f"  journal: {journal}\n"
    )


def agrees(pred: Prediction, real: Observed) -> bool:
    """(b) load failures match; (a)+(c) for loaded units the argv lists match exactly."""
    real_failure = real.load_state != "loaded"
    if real_failure != pred.load_failure:
        return False
    return real_failure or pred.argvs == real.argvs
