from __future__ import annotations

from collections.abc import Iterator

from linting.context import UnitContext
from linting.findings import Hit, Severity
from linting.rules.registry import rule
from linting.rules.sd._placeholders import PLACEHOLDER

# What a placeholder left in an Exec line turns into: vLLM's complaints about the words.
_KNOCK_ONS = ("VL301", "VL320", "VL321", "VL323", "VL326", "VL328", "VL330", "SD106")


@rule("SD117", Severity.WARNING, supersedes=_KNOCK_ONS)
def unreplaced_template_placeholder(ctx: UnitContext) -> Iterator[Hit]:
    """
    A template placeholder left in the unit (`{{ model_path }}`, `__MODEL__`, `@PORT@`).

    What it does:
    Finds Jinja/Go (`{{ … }}`, `{% … %}`), ERB (`<%= … %>`), `__NAME__` and `@NAME@`
    placeholders in any setting (`WorkingDirectory=` is SD116's). An error in `User=` and
    `Group=`, where systemd refuses to load the unit; a warning elsewhere.

    Why is this bad?
    The unit was checked in or deployed without being rendered: systemd and vLLM receive
    the placeholder literally. `vllm serve {{ model_path }}` gets three arguments `{{`,
    `model_path` and `}}`; `User={{ vllm_user }}` is "Invalid user/group name" and the unit
    does not load. (Findings about the words a placeholder becomes are not repeated.)

    Example:
    ```ini
    ExecStart=/opt/vllm/bin/vllm serve {{ model_path }} --port 8000
    ```

    Use instead:
    ```ini
    ExecStart=/opt/vllm/bin/vllm serve /models/Qwen2.5-7B-Instruct --port 8000
    ```
    (render the template before deploying or linting it, e.g. lint the rendered output).
    """
    for a in ctx.unit.assignments:
        if a.name == "WorkingDirectory":
            continue
        for match in PLACEHOLDER.finditer(a.value.text):
            fatal = a.section == "Service" and a.name in ("User", "Group")
            consequence = (
                'systemd refuses to load the unit ("Invalid user/group name or numeric ID")'
                if fatal
                else f"systemd {'and vLLM ' if a.name.startswith('Exec') else ''}"
                "receive it literally"
            )
            yield Hit(
                a.value.span(match.start(), match.end()),
                f"`{match.group(0)}` in {a.name}= looks like an unreplaced template "
                f"placeholder: {consequence}",
                path=a.path,
                severity=Severity.ERROR if fatal else None,
            )
