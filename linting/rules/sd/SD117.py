from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

from linting.context import UnitContext
from linting.findings import Hit, Severity
from linting.rules.registry import rule
from linting.rules.sd._placeholders import ENVSUBST, PLACEHOLDER
from linting.spans import Span
from linting.unitfile import Assignment

# What a placeholder left in the unit turns into: complaints about the words it became.
_KNOCK_ONS = (
    "VL301",
    "VL320",
    "VL321",
    "VL323",
    "VL326",
    "VL328",
    "VL330",
    "VL333",
    "SD106",
    "SD116",
    "EX202",
    "EX204",
    "EX210",
    "OP410",
    "SC",  # ShellCheck's findings at a placeholder (SC1091 on `source __DIR__/…`)
)
# Settings in which systemd expands no `${NAME}` (an envsubst template's are rendered
# before install); Exec lines only in their executable.
_EXPANDING = ("Environment",)
_FATAL = ("User", "Group")
# What systemd takes for a user or group name (user-util.c valid_user_group_name(), relaxed).
_USER_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.-]*\$?")


@dataclass(frozen=True)
class _Spot:
    assignment: Assignment
    start: int
    end: int

    @property
    def text(self) -> str:
        return self.assignment.value.text[self.start : self.end]

    @property
    def span(self) -> Span:
        return self.assignment.value.span(self.start, self.end)


@rule("SD117", Severity.WARNING, supersedes=_KNOCK_ONS)
def unreplaced_template_placeholder(ctx: UnitContext) -> Iterator[Hit]:
    """
    Template placeholders left in the unit (`{{ model_path }}`, `__MODEL__`, `YOUR_USERNAME`).

    What it does:
    Finds Jinja/Go (`{{ … }}`, `{% … %}`), ERB (`<%= … %>`), `__NAME__` and `@NAME@`
    placeholders, fill-in words (`YOUR_USERNAME`, `hf_your_token_here`, `CHANGE_ME`,
    `hf_xxxxxxxx`) and, in an envsubst template (two or more `${NAME}` where systemd
    expands none: `User=`, `WorkingDirectory=`, an executable path), its `${NAME}`s.
    One finding for the unit, at the first, naming every one; the findings they cause
    (an unset variable, a relative executable, vLLM's complaints about the words) are not
    repeated. An error when one is in `User=` or `Group=`, where systemd refuses to load
    the unit; a warning elsewhere. A lone placeholder in `WorkingDirectory=` is SD116's.

    Why is this bad?
    The unit was checked in or deployed without being rendered: systemd and vLLM receive
    the placeholder literally. `vllm serve {{ model_path }}` gets three arguments `{{`,
    `model_path` and `}}`; `User={{ vllm_user }}` is "Invalid user/group name" and the unit
    does not load; `HF_TOKEN=hf_your_token_here` is sent to Hugging Face as the token.

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
    spots = _placeholders(ctx)
    if not spots or (len(spots) == 1 and spots[0].assignment.name == "WorkingDirectory"):
        return
    first = spots[0]
    users = [s for s in spots if s.assignment.section == "Service" and s.assignment.name in _FATAL]
    # `{{ user }}` is no user name at all; `YOUR_USERNAME` is one, of nobody (217/USER).
    fatal = [s for s in users if not _USER_NAME.fullmatch(s.assignment.value.text)]
    listed = ", ".join(
        f"`{s.text}` ({s.assignment.name}=, line {s.span.start.line})" for s in spots
    )
    consequence = (
        'systemd refuses to load the unit ("Invalid user/group name or numeric ID")'
        if fatal
        else "the start fails with status 217/USER (no such user)"
        if users
        else f"systemd and vLLM receive {'it' if len(spots) == 1 else 'them'} literally"
    )
    count = "a placeholder" if len(spots) == 1 else f"{len(spots)} placeholders"
    yield Hit(
        first.span,
        f"the unit holds {count} of a template that was not rendered: {listed}; "
        f"{consequence}. Render the template and lint the result",
        {"placeholders": [s.text for s in spots]},
        path=first.assignment.path,
        severity=Severity.ERROR if users else None,
        related=tuple((s.assignment.path, s.span) for s in spots[1:]),
    )


def _placeholders(ctx: UnitContext) -> list[_Spot]:
    texts = [source.text for source in ctx.unit.sources.values()]
    if not any(_may_hold(text) for text in texts):
        return []  # one look at each file, not one search per setting (the usual case)
    spots = [
        _Spot(a, m.start(), m.end())
        for a in ctx.unit.assignments
        for m in PLACEHOLDER.finditer(a.value.text)
    ]
    envsubst = _envsubst_spots(ctx)
    taken = {(id(s.assignment), s.start) for s in spots}
    spots += [s for s in envsubst if (id(s.assignment), s.start) not in taken]
    return sorted(spots, key=lambda s: (s.assignment.path, s.span.start))


_MARKS = ("{{", "{%", "<%", "__", "@", "your", "change", "hf_", "${")


def _may_hold(text: str) -> bool:
    """Could `text` hold a placeholder? (substrings first: the regex is the slow part)"""
    lower = text.lower()
    return any(mark in lower for mark in _MARKS) and bool("${" in text or PLACEHOLDER.search(text))


def _envsubst_spots(ctx: UnitContext) -> list[_Spot]:
    """The `${NAME}`s of an envsubst template: found where systemd never expands them at
    least twice (two names), then every `${NAME}` of the unit counts."""
    outside: set[str] = set()
    every: list[_Spot] = []
    for a in ctx.unit.assignments:
        for m in ENVSUBST.finditer(a.value.text):
            every.append(_Spot(a, m.start(), m.end()))
            if _never_expanded(a, m.start()):
                outside.add(m.group(1))
    defined = set(ctx.environment)
    if len(outside - defined) < 2:
        return []
    return [s for s in every if s.text[2:-1] not in defined]


def _never_expanded(a: Assignment, offset: int) -> bool:
    if a.name in _EXPANDING:
        return False
    if a.name.startswith("Exec"):
        value = a.value.text.lstrip("-@:+!")
        first = len(a.value.text) - len(value) + (len(value.split(" ", 1)[0]) if value else 0)
        return offset < first  # in the executable, which systemd takes as written
    return True
