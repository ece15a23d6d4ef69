from __future__ import annotations

import re
import shlex
from collections.abc import Iterator

from linting.commands import shell_script
from linting.context import UnitContext
from linting.findings import Hit, Severity
from linting.rules.registry import rule

# `$(nvidia-smi …)` with nothing after it in the substitution (no `| awk`, `| cut`, …).
_CAPTURE = re.compile(r"\$\(\s*((?:\S*/)?nvidia-smi\b[^()|;&`]*)\)")
_ASSIGNED = re.compile(r"(?:^|[\s;&|(])(?:local\s+|export\s+)?([A-Za-z_]\w*)=\"?$")
_NUMERIC = r"-(?:lt|le|gt|ge|eq|ne)\b"


@rule("OP417", Severity.ERROR)
def nvidia_smi_csv_read_as_number(ctx: UnitContext) -> Iterator[Hit]:
    """
    A GPU check that compares nvidia-smi's CSV output as one number.

    What it does:
    Finds `$(nvidia-smi --query-gpu=… --format=csv…)` in shell scripts (inline or a read
    wrapper) whose output goes, unprocessed (no `awk`, `cut`, `read`), into a numeric
    test (`[ … -lt … ]`, `(( … ))`), directly or through a variable, when the format
    prints more than a number per GPU: several fields (`memory.used,memory.total` gives
    `23456, 24564`), units (no `nounits`: `23456 MiB`), or a header line (no
    `noheader`: `memory.used [MiB]`).

    Why is this bad?
    bash's test fails with "integer expression expected" (status 2): the check is
    false whatever the GPUs hold, so a wait for free memory never ends (or a guard that
    should stop the start never fires).

    Example:
    ```ini
    ExecStartPre=/bin/bash -c 'used=$(nvidia-smi --query-gpu=memory.used,memory.total --format=csv,noheader,nounits); [ "$used" -lt 1000 ]'
    ExecStart=/opt/vllm/bin/vllm serve /models/m
    ```

    Use instead:
    ```ini
    ExecStartPre=/bin/bash -c 'used=$(nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits | sort -n | tail -1); [ "$used" -lt 1000 ]'
    ExecStart=/opt/vllm/bin/vllm serve /models/m
    ```
    """
    for cmd in ctx.commands:
        found = shell_script(cmd)
        if found is not None:
            for start, end, message in _misreads(found[1].value.text):
                yield Hit(found[1].value.span(start, end), message, path=cmd.assignment.path)
    for script in ctx.wrapper_scripts:
        for start, end, message in _misreads(script.text.text):
            yield Hit(script.text.span(start, end), message, path=script.path)


def _misreads(script: str) -> Iterator[tuple[int, int, str]]:
    if "--query-gpu" not in script:
        return  # the usual case: no query of GPU fields at all
    for match in _CAPTURE.finditer(script):
        problem = _format_problem(match.group(1))
        if problem is None:
            continue
        before = script[: match.start()]
        after = script[match.end() :]
        assigned = _ASSIGNED.search(before)
        if assigned:
            name = re.escape(assigned.group(1))
            reference = rf"\"?\$\{{?{name}\}}?\"?"
            used = re.search(rf"{reference}\s+{_NUMERIC}|{_NUMERIC}\s+{reference}", after) or (
                re.search(rf"\(\([^)]*\b{name}\b", after)
            )
        else:
            line_end = after.split("\n", 1)[0]
            used = re.search(rf"^\"?\s+{_NUMERIC}", line_end) or re.search(
                rf"{_NUMERIC}\s+\"?$", before.rsplit("\n", 1)[-1]
            )
        if used:
            yield (
                match.start(),
                match.end(),
                (
                    f"`{match.group(1).strip()}` prints {problem}, not a number: the "
                    'numeric test fails with "integer expression expected" whatever the GPUs '
                    "hold; query one field with --format=csv,noheader,nounits and reduce the "
                    "lines (`| sort -n | tail -1`)"
                ),
            )


def _format_problem(command: str) -> str | None:
    """What the query prints besides a number, or None when it is one number per GPU."""
    try:
        words = shlex.split(command)
    except ValueError:
        return None
    options = dict(
        _option(w, words[i + 1] if i + 1 < len(words) else "") for i, w in enumerate(words)
    )
    fields = options.get("--query-gpu")
    fmt = options.get("--format")
    if fields is None or fmt is None or not fmt.startswith("csv"):
        return None
    flags = set(fmt.split(",")[1:])
    count = len([f for f in fields.split(",") if f])
    if count > 1:
        return f"{count} values per GPU (`23456, 24564`)"
    if "noheader" not in flags:
        return "a header line first (`memory.used [MiB]`)"
    if "nounits" not in flags:
        return "each value with its unit (`23456 MiB`)"
    return None


def _option(word: str, following: str) -> tuple[str, str]:
    name, eq, value = word.partition("=")
    if eq:
        return name, value
    return word, following if word in ("--query-gpu", "--format") else ""
