"""Secrets hidden from people who only look.

A viewer (the `viewer` role: read-only) sees profiles, versions, diffs and requests with
every environment value and the value of every secret-looking argument (`--api-key`,
`--hf-token`, …) replaced by a mask. Who edits profiles or approves deploys sees the unit
as it runs: an approver must judge the exact text. The better place for a secret is a file
on the host (`environment_file`, rendered as `EnvironmentFile=`), which specadmin never
reads, so nobody sees it here at all.

Masking works on the data (settings tables) and on unit text (preview, version page, the
diffs, a unit read from a host), line by line, the way the template writes units: one
`Environment=` assignment per line, and arguments as `--flag value` or `--flag=value`.
"""

from __future__ import annotations

import dataclasses
import re
from typing import Any

from units.preview import Preview

MASK = "••••••"
# Who sees secrets as they are (permission names as strings: units imports no deploys).
SEE_SECRETS = ("units.change_serviceprofile", "deploys.approve_deployrequest")
# Not a secret: what the GPU devices field writes.
PUBLIC_ENVIRONMENT = frozenset({"CUDA_VISIBLE_DEVICES"})
_SECRET_WORD = re.compile(r"(key|token|secret|password|passwd|credential|auth)", re.IGNORECASE)
# `--api-key value`, `--api-key=value`, the value quoted or not (as exec_word writes it).
_SECRET_ARG = re.compile(
    r"""(?P<flag>--[A-Za-z0-9_-]*(?:key|token|secret|password|passwd|credential|auth)"""
    r"""[A-Za-z0-9_-]*)(?P<sep>=|\s+)(?P<value>"(?:\\.|[^"\\])*"|'(?:\\.|[^'\\])*'|[^\s\\]+)""",
    re.IGNORECASE,
)
_ENVIRONMENT_LINE = re.compile(
    r"""^(?P<key>[-+ ]?Environment=)(?P<quote>["']?)(?P<name>[^=\s"']+)="""
)


def can_see_secrets(user: Any) -> bool:
    return any(user.has_perm(perm) for perm in SEE_SECRETS)


def is_secret_flag(word: str) -> bool:
    return word.startswith("--") and bool(_SECRET_WORD.search(word.split("=", 1)[0]))


def mask_args(words: list[str]) -> list[str]:
    """Argument words with the value of every secret-looking option masked."""
    masked: list[str] = []
    hide_next = False
    for word in words:
        if hide_next and not word.startswith("-"):
            masked.append(MASK)
        elif is_secret_flag(word) and "=" in word:
            masked.append(word.split("=", 1)[0] + "=" + MASK)
        else:
            masked.append(word)
        hide_next = is_secret_flag(word) and "=" not in word
    return masked


def mask_data(data: dict[str, Any]) -> dict[str, Any]:
    """Profile data as a viewer may see it."""
    masked = dict(data)
    environment = data.get("environment")
    if isinstance(environment, dict):
        masked["environment"] = {
            name: value if name in PUBLIC_ENVIRONMENT else MASK
            for name, value in environment.items()
        }
    for key in ("extra_args",):
        if isinstance(data.get(key), list):
            masked[key] = mask_args([str(w) for w in data[key]])
    return masked


def mask_line(line: str) -> str:
    """One line of a unit (or of a diff of units) as a viewer may see it."""
    env = _ENVIRONMENT_LINE.match(line)
    if env and env.group("name") not in PUBLIC_ENVIRONMENT:
        return f"{env.group('key')}{env.group('name')}={MASK}"
    return _SECRET_ARG.sub(lambda m: f"{m.group('flag')}{m.group('sep')}{MASK}", line)


def mask_text(text: str) -> str:
    """A unit text as a viewer may see it (line structure kept: `\\n` only)."""
    return "\n".join(mask_line(line) for line in text.split("\n"))


__all__ = [
    "MASK",
    "can_see_secrets",
    "mask_args",
    "mask_data",
    "mask_line",
    "mask_preview",
    "mask_text",
]


def mask_preview(preview: Preview) -> Preview:
    """A preview (unit lines and findings, whose messages may quote arguments) masked."""
    lines = None
    if preview.lines is not None:
        lines = [dataclasses.replace(line, text=mask_line(line.text)) for line in preview.lines]
    findings = [
        dataclasses.replace(
            row, issue=dataclasses.replace(row.issue, message=mask_line(row.issue.message))
        )
        for row in preview.findings
    ]
    issues = {
        name: [dataclasses.replace(issue, message=mask_line(issue.message)) for issue in items]
        for name, items in preview.issues.items()
    }
    return Preview(lines=lines, findings=findings, issues=issues)
