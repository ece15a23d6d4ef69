from __future__ import annotations

from collections.abc import Iterator

from linting.context import UnitContext
from linting.findings import Hit, Severity
from linting.rules.op._scripts import program, program_index, simple_commands
from linting.rules.registry import rule

# pkill/pgrep options (procps-ng pgrep(1)), short letters and long names; `-SIGNAL` too.
_SHORT = set("cdFfGghilnoOPrsTtUuVvwxAe")
_WITH_VALUE = set("dFGgPstUu")
_LONG = {
    "--signal",
    "--count",
    "--delimiter",
    "--full",
    "--pgroup",
    "--group",
    "--ignore-case",
    "--list-name",
    "--list-full",
    "--newest",
    "--oldest",
    "--older",
    "--parent",
    "--session",
    "--terminal",
    "--euid",
    "--uid",
    "--inverse",
    "--lightweight",
    "--exact",
    "--pidfile",
    "--logpidfile",
    "--runstates",
    "--ignore-ancestors",
    "--cgroup",
    "--ns",
    "--nslist",
    "--env",
    "--echo",
    "--queue",
    "--require-handler",
    "--help",
    "--version",
}


@rule("OP414", Severity.ERROR)
def pattern_read_as_option(ctx: UnitContext) -> Iterator[Hit]:
    """
    A `pkill -f`/`pgrep -f` pattern that begins with `-`, read as options.

    What it does:
    Finds `pkill`/`pgrep` commands (direct, or in a shell script) whose pattern word
    starts with `-` and is none of their options (`-f "--model /models/m"`,
    `pkill -f '-m vllm.entrypoints'`) with no `--` before it.

    Why is this bad?
    pgrep's getopt takes the word for options: `pkill: invalid option -- 'm'` (or
    "unrecognized option '--model /models/m'"), exit status 2, and nothing is killed; the
    old server keeps its GPUs and the new one fails to start, while `|| true` hides the
    mistake.

    Example:
    ```ini
    ExecStartPre=/bin/bash -c 'pkill -f "--model /models/m" || true'
    ExecStart=/opt/vllm/bin/vllm serve --model /models/m
    ```

    Use instead:
    ```ini
    ExecStartPre=/bin/bash -c 'pkill -f -- "--model /models/m" || true'
    ExecStart=/opt/vllm/bin/vllm serve --model /models/m
    ```
    """
    for cmd in ctx.commands:
        text = cmd.assignment.value.text
        if "pkill" not in text and "pgrep" not in text:
            continue  # neither is run (the usual case): no need to split the script
        for simple in simple_commands(cmd):
            name = program(simple.words)
            if name not in ("pkill", "pgrep"):
                continue
            bad = _option_like_pattern(simple.words[program_index(simple.words) + 1 :])
            if bad is None:
                continue
            yield Hit(
                cmd.assignment.value.span(),
                f"{name} reads the pattern `{bad}` as options (it begins with `-`): it exits "
                f"with \"invalid option\" and matches nothing; write `{name} -f -- '{bad}'`",
                path=cmd.assignment.path,
            )


def _option_like_pattern(words: list[str]) -> str | None:
    """The first word that looks like an option to the user but is none of pgrep's."""
    skip = False
    for word in words:
        if skip:
            skip = False
            continue
        if word == "--" or not word.startswith("-") or word == "-":
            return None
        if word.startswith("--"):
            if word.split("=", 1)[0] not in _LONG:
                return word
            continue
        body = word[1:]
        if body.isdigit() or (body.isupper() and body.isalpha()):
            continue  # -9, -TERM, -KILL: a signal
        if " " in word or not set(body) <= _SHORT:
            return word
        skip = body[-1] in _WITH_VALUE
    return None
