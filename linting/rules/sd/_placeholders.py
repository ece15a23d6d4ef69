"""Template placeholders left in a unit: Jinja/Go (`{{ x }}`, `{% … %}`), ERB (`<%= x %>`),
`__NAME__`, autoconf's `@NAME@`, fill-in-the-blank words (`YOUR_USERNAME`,
`hf_your_token_here`, `CHANGE_ME`, `hf_xxxxxxxx`), and the `${NAME}`s of an envsubst
template (SD116 and SD117 look for them)."""

from __future__ import annotations

import re

PLACEHOLDER = re.compile(
    r"\{\{.*?\}\}|\{%.*?%\}|<%=?.*?%>|__[A-Z][A-Z0-9_]*__|@[A-Z][A-Z0-9_]*@"
    r"|(?i:\b(?:hf_)?your[_-][a-z0-9_-]+|\bchange[_-]?me\b)|\bhf_[xX*]{4,}\b"
)
# `${NAME}` where systemd expands nothing (User=, WorkingDirectory=, an executable path):
# with two or more names, the file is a template for envsubst(1), rendered before install.
ENVSUBST = re.compile(r"\$\{([A-Z][A-Z0-9_]*)\}")


def placeholder_in(text: str) -> str | None:
    """The first placeholder in `text`, or None."""
    match = PLACEHOLDER.search(text)
    return match.group(0) if match else None
