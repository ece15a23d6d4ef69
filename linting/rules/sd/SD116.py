from __future__ import annotations

from collections.abc import Iterator

from linting.context import UnitContext
from linting.execline.paths import path_is_normalized, path_simplify
from linting.execline.specifiers import SpecifierError, resolve
from linting.findings import Hit, Severity
from linting.rules.registry import rule
from linting.rules.sd._placeholders import placeholder_in


@rule("SD116", Severity.ERROR)
def working_directory_refused(ctx: UnitContext) -> Iterator[Hit]:
    """
    A `WorkingDirectory=` that systemd refuses, or that cannot exist.

    What it does:
    Checks the value the way `config_parse_working_directory()` does
    (src/core/load-fragment.c): `~` is the user's home; otherwise specifiers are resolved
    and the path must be absolute and normalised (no `..`). Also reports an absolute path
    that is an unreplaced template placeholder (`/opt/__VLLM_SRC__`).

    Why is this bad?
    systemd expands no variables here: `WorkingDirectory=${HOME}/vllm`, a relative path
    and a placeholder such as `__VLLM_SRC__` are "not absolute", and systemd refuses to load
    the unit ("WorkingDirectory= path is not absolute", measured on 252); with a leading
    `-` the setting is ignored and the service runs in `/`. A directory that does not
    exist fails every start at `chdir()` ("status=200/CHDIR").

    Example:
    ```ini
    WorkingDirectory=${HOME}/vllm
    ```

    Use instead:
    ```ini
    WorkingDirectory=~
    ```
    or an absolute path (`/home/vllm/vllm`); `%h` is the manager's home directory.
    """
    found = ctx.unit.last("Service", "WorkingDirectory")
    if found is None or found.value.text in ("", "~", "-~"):
        return
    value = found.value
    optional = value.text.startswith("-")
    try:
        path = resolve(value[1:] if optional else value, ctx.version, ctx.specifiers).text
    except SpecifierError:
        return  # SD110's business (an unknown specifier)
    consequence = (
        "systemd ignores the setting and the service runs in /"
        if optional
        else 'systemd refuses to load the unit ("Unit configuration has fatal error")'
    )
    severity = Severity.WARNING if optional else None
    written = value.text[1:] if optional else value.text
    if not path.startswith("/"):
        why = _not_absolute_reason(written)
        yield Hit(
            value.span(),
            f"WorkingDirectory={written} is not an absolute path{why}: {consequence}",
            path=found.path,
            severity=severity,
        )
    elif not path_is_normalized(path_simplify(path, version=ctx.version)):
        yield Hit(
            value.span(),
            f"WorkingDirectory={written} contains `..` (systemd: path is not normalized): "
            f"{consequence}",
            path=found.path,
            severity=severity,
        )
    elif placeholder_in(path) and not optional:
        yield Hit(
            value.span(),
            f"WorkingDirectory={written} looks like an unreplaced template placeholder: "
            'every start fails at chdir() ("status=200/CHDIR") unless that directory exists',
            path=found.path,
        )


def _not_absolute_reason(text: str) -> str:
    if "$" in text:
        return (
            " (systemd expands no variables in WorkingDirectory=; `~` is the user's home directory)"
        )
    if placeholder_in(text):
        return " (an unreplaced template placeholder)"
    return ""
