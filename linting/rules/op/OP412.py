from __future__ import annotations

from collections.abc import Iterator

from linting.context import UnitContext
from linting.execline.env_substitution import has_unknown
from linting.findings import Hit, Severity
from linting.rules.registry import rule
from linting.spans import Span

# Where a C compiler lives on the distributions GPU hosts run (merged /usr: /bin is /usr/bin).
_COMPILER_DIRS = ("/usr/bin", "/bin", "/usr/local/bin")


@rule("OP412", Severity.ERROR)
def path_without_compiler(ctx: UnitContext) -> Iterator[Hit]:
    """
    `Environment=PATH=` without `/usr/bin` for a vLLM server.

    What it does:
    Reports vLLM units whose `PATH` (set by `Environment=` or a read `EnvironmentFile=`)
    names none of `/usr/bin`, `/bin`, `/usr/local/bin`, when `CC` is not set either.

    Why is this bad?
    Triton compiles a small C launcher the first time a kernel runs and looks for the
    compiler on `PATH` (`CC`, else `gcc` or `clang` found by `shutil.which`,
    triton/runtime/build.py): "Failed to find C compiler. Please specify via CC
    environment variable." vLLM has loaded the model by then; the first request, or the
    warm-up, fails. A `PATH` that lists only the virtualenv hides `/usr/bin/gcc`.

    Example:
    ```ini
    Environment=PATH=/opt/vllm/bin
    ExecStart=/opt/vllm/bin/vllm serve /models/m
    ```

    Use instead:
    ```ini
    Environment=PATH=/opt/vllm/bin:/usr/local/bin:/usr/bin:/bin
    ExecStart=/opt/vllm/bin/vllm serve /models/m
    ```
    """
    servers = [vc for vc in ctx.vllm_servers if vc.container is None]
    variable = ctx.environment.get("PATH")
    if not servers or variable is None or "CC" in ctx.environment:
        return
    value = variable.value
    if has_unknown(value):
        return
    entries = [entry.rstrip("/") or "/" for entry in value.split(":")]
    if any(entry in _COMPILER_DIRS for entry in entries):
        return
    yield Hit(
        variable.span,
        f"PATH={value} names no /usr/bin: Triton finds no C compiler (gcc) when vLLM runs "
        'its first kernel ("Failed to find C compiler"), after the model has loaded; add '
        ":/usr/local/bin:/usr/bin:/bin, or set CC=",
        path=_file_of(ctx, variable.span),
    )


def _file_of(ctx: UnitContext, span: Span) -> str:
    """The file (unit or drop-in) of the Environment=/EnvironmentFile= line at `span`."""
    for key in ("Environment", "EnvironmentFile"):
        for a in ctx.unit.get_all("Service", key):
            where = a.value.span()
            if where.start <= span.start and span.end <= where.end:
                return a.path
    return ctx.unit.path
