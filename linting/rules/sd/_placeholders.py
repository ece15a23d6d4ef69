"""Template placeholders left in a unit: Jinja/Go (`{{ x }}`, `{% … %}`), ERB (`<%= x %>`),
`__NAME__` and autoconf's `@NAME@` (SD116 and SD117 look for them)."""

from __future__ import annotations

import re

PLACEHOLDER = re.compile(r"\{\{.*?\}\}|\{%.*?%\}|<%=?.*?%>|__[A-Z][A-Z0-9_]*__|@[A-Z][A-Z0-9_]*@")


def placeholder_in(text: str) -> str | None:
    """The first placeholder in `text`, or None."""
    match = PLACEHOLDER.search(text)
    return match.group(0) if match else None
