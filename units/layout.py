"""The order of an imported unit's command line (`command_layout`), so that the rendered
ExecStart= gives the program exactly the argv the original gave it (docs/unit-import.md).

A profile without a layout is written in specadmin's own order (units.rendering). A
layout is a list of tokens, one per group of words after the program:

- `FIELD` — the field's option as the profile writes it (`--port 8000`); `model` is the
  positional MODEL of `vllm serve` (or `--model M` for the API server module);
- `FIELD:SPELLING` — the same option under another of its names (`-tp 8`);
- `FIELD=` / `FIELD:SPELLING=` — the option and its value as one word (`--port=8000`);
- `model~` — the model written verbatim (it names a variable or a specifier: `$MODEL`);
- `spec_method` — `--speculative-config` built from the spec_* fields;
- `extra:N` — the next N words of the extra arguments;
- `verbatim:N` — the next N words of the verbatim command-line words.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_TOKEN = re.compile(
    r"(?P<field>[a-z_]+)(?P<verbatim>~)?(?::(?P<spelling>-{1,2}[A-Za-z0-9][A-Za-z0-9_.-]*))?"
    r"(?P<joined>=)?\Z"
)
_COUNT = re.compile(r"(?P<part>extra|verbatim):(?P<count>[1-9][0-9]{0,5})\Z")


@dataclass(frozen=True)
class Token:
    field: str  # a profile field, or "extra" / "verbatim"
    spelling: str = ""  # the option name used instead of the field's own
    joined: bool = False
    verbatim: bool = False
    count: int = 0  # for extra / verbatim


def parse_token(text: str) -> Token | None:
    """The token `text` stands for, or None when it is not one."""
    if not isinstance(text, str):
        return None
    count = _COUNT.match(text)
    if count:
        return Token(count["part"], count=int(count["count"]))
    match = _TOKEN.match(text)
    if not match:
        return None
    return Token(
        match["field"],
        spelling=match["spelling"] or "",
        joined=bool(match["joined"]),
        verbatim=bool(match["verbatim"]),
    )


def token_text(token: Token) -> str:
    if token.count:
        return f"{token.field}:{token.count}"
    spelling = f":{token.spelling}" if token.spelling else ""
    return f"{token.field}{'~' if token.verbatim else ''}{spelling}{'=' if token.joined else ''}"
