from __future__ import annotations

from collections.abc import Iterator

from linting.context import UnitContext
from linting.execline.command import ExecProblemKind
from linting.findings import Hit, Severity
from linting.rules.registry import rule
from linting.rules.sd._exec_problems import exec_problems, with_consequence


@rule("SD106", Severity.ERROR)
def invalid_executable_path(ctx: UnitContext) -> Iterator[Hit]:
    """
    The command's executable is not an absolute path nor a plain file name.

    What it does:
    Checks the first word of each Exec command (after prefixes and specifiers): relative
    paths with a slash, paths ending in `/`, quotes or control characters in the path, and
    a missing argv[0] after the `@` prefix.

    Why is this bad?
    systemd logs "Neither a valid executable name nor an absolute path" and refuses to load
    the unit (with the `-` prefix it drops the command instead).

    Example:
    ```ini
    ExecStart=venv/bin/vllm serve /models/m
    ```

    Use instead:
    ```ini
    ExecStart=/opt/vllm/venv/bin/vllm serve /models/m
    ```
    """
    for assignment, problem, consequence in exec_problems(
        ctx,
        ExecProblemKind.RELATIVE_PATH,
        ExecProblemKind.EMPTY_PATH,
        ExecProblemKind.UNSAFE_PATH,
        ExecProblemKind.DIRECTORY_PATH,
        ExecProblemKind.EMPTY_ARGV0,
    ):
        message = with_consequence(problem.message, consequence)
        yield Hit(problem.span, message, path=assignment.path)
