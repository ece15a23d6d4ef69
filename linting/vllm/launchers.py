"""Programs that run another program: `env -i PATH=… vllm serve …`, `nohup`, `setsid`,
`numactl --cpunodebind=0 --`, `taskset -c 0-7`, `sudo -u vllm`, `runuser -u vllm --`,
`conda run -n vllm`, `uv run`, `tini --`. The vLLM command is what they launch; this module
says where that starts. Each launcher's options that take a separate value are listed from
its manual page (env(1), sudo(8), runuser(1), numactl(8), taskset(1), nice(1), ionice(1),
chrt(1), stdbuf(1), timeout(1), conda run --help, uv run --help), so their values are not
taken for the program."""

from __future__ import annotations

import posixpath
import re

_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=")
# launcher -> (options with a separate value, positional words before the program)
_LAUNCHERS: dict[str, tuple[frozenset[str], int]] = {
    "env": (frozenset({"-u", "--unset", "-C", "--chdir", "-S", "--split-string"}), 0),
    "nohup": (frozenset(), 0),
    "setsid": (frozenset(), 0),
    "exec": (frozenset({"-a"}), 0),
    "command": (frozenset(), 0),
    "time": (frozenset({"-f", "--format", "-o", "--output"}), 0),
    "nice": (frozenset({"-n", "--adjustment"}), 0),
    "ionice": (frozenset({"-c", "--class", "-n", "--classdata", "-p", "-P", "-u"}), 0),
    "chrt": (frozenset({"-T", "-P", "-D"}), 1),
    "taskset": (frozenset({"-c", "--cpu-list"}), -1),
    "numactl": (
        frozenset(
            {
                "-N",
                "-m",
                "-C",
                "-p",
                "-i",
                "--cpunodebind",
                "--membind",
                "--physcpubind",
                "--preferred",
                "--interleave",
            }
        ),
        0,
    ),
    "stdbuf": (frozenset({"-i", "-o", "-e", "--input", "--output", "--error"}), 0),
    "timeout": (frozenset({"-s", "--signal", "-k", "--kill-after"}), 1),
    "sudo": (
        frozenset({"-u", "--user", "-g", "--group", "-C", "-D", "-h", "-p", "-r", "-t", "-U"}),
        0,
    ),
    "runuser": (frozenset({"-u", "--user", "-g", "--group", "-G", "--supp-group", "-w"}), 0),
    "tini": (frozenset({"-e", "-p"}), 0),
    "dumb-init": (frozenset({"-r", "--rewrite"}), 0),
    "catchsegv": (frozenset(), 0),
    "systemd-cat": (frozenset({"-t", "--identifier", "-p", "--priority"}), 0),
}
# `conda run -n ENV …`, `uv run …`: the launcher's subcommand, then options.
_RUNNERS: dict[str, frozenset[str]] = {
    "conda": frozenset({"-n", "--name", "-p", "--prefix", "--cwd"}),
    "mamba": frozenset({"-n", "--name", "-p", "--prefix", "--cwd"}),
    "micromamba": frozenset({"-n", "--name", "-p", "--prefix", "--cwd", "-r", "--root-prefix"}),
    "uv": frozenset(
        {
            "--with",
            "--python",
            "-p",
            "--project",
            "--directory",
            "--package",
            "--extra",
            "--group",
            "--env-file",
            "--index",
            "--index-url",
            "--from",
        }
    ),
    "poetry": frozenset({"-C", "--directory", "-P", "--project"}),
    "pipenv": frozenset(),
    "pixi": frozenset({"-e", "--environment", "--manifest-path"}),
}


def launched(argv: list[str]) -> int:
    """The index of the program that `argv` finally runs, past every launcher (0 when
    argv[0] is no launcher; len(argv) when nothing follows them)."""
    i = 0
    for _ in range(8):  # `sudo -u v env X=1 nohup vllm …`: a few levels at most
        start = _after_launcher(argv, i)
        if start == i:
            return i
        i = start
    return i


def _after_launcher(argv: list[str], i: int) -> int:
    if i >= len(argv):
        return i
    name = posixpath.basename(argv[i])
    if name in _RUNNERS:
        if i + 1 >= len(argv) or argv[i + 1] != "run":
            return i
        return _skip_options(argv, i + 2, _RUNNERS[name], 0, assignments=False)
    if name not in _LAUNCHERS:
        return i
    with_value, positional = _LAUNCHERS[name]
    return _skip_options(argv, i + 1, with_value, positional, assignments=name in ("env", "sudo"))


def _skip_options(
    argv: list[str], i: int, with_value: frozenset[str], positional: int, *, assignments: bool
) -> int:
    """Past the options (and `NAME=value` words for env and sudo), a `--`, and the
    launcher's own positional words (`timeout 30m`; -1: taskset's mask unless `-c`)."""
    mask = positional == -1
    while i < len(argv):
        word = argv[i]
        if word == "--":
            return i + 1 + max(positional, 0)
        if word.startswith("-") and len(word) > 1:
            if word in ("-c", "--cpu-list") and mask:
                mask = False  # `taskset -c LIST PROGRAM`: LIST is the option's value
            i += 2 if word in with_value else 1
            continue
        if assignments and _ASSIGNMENT.match(word):
            i += 1
            continue
        break
    if mask:
        return i + 1  # `taskset MASK PROGRAM`
    return i + max(positional, 0)
