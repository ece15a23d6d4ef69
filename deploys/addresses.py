"""Host addresses specadmin connects to: an IP address or an ASCII host name.

Python's socket layer runs names through the IDNA codec, which raises UnicodeError (not
OSError) for a label longer than 63 characters or an empty one (`b..c`): checked here,
at the form and in the services, so the admin reads a field error (RFC 1035 2.3.4:
labels of at most 63 octets, names of at most 253 characters in text form; RFC 1123 2.1:
letters, digits and hyphens, not starting or ending with a hyphen).
"""

from __future__ import annotations

import ipaddress
import re

_LABEL = re.compile(r"(?!-)[A-Za-z0-9-]{1,63}(?<!-)\Z")
MAX_NAME = 253


def host_address_problem(address: str) -> str | None:
    """Why `address` is not something to connect to, or None."""
    try:
        ipaddress.ip_address(address)
        return None
    except ValueError:
        pass
    shown = address if len(address) <= 80 else address[:79] + "…"
    prefix = f"“{shown}” is not a host name or an IP address"
    if not address:
        return "Give the host name or IP address."
    if not address.isascii():
        return f"{prefix}: write an internationalised name in its xn-- (punycode) form."
    name = address[:-1] if address.endswith(".") else address
    if len(name) > MAX_NAME:
        return f"{prefix}: a host name has at most {MAX_NAME} characters."
    for label in name.split("."):
        if not label:
            return f"{prefix}: it has an empty label (two dots in a row, or a leading dot)."
        if len(label) > 63:
            return f"{prefix}: the label “{label[:20]}…” is longer than 63 characters."
        if not _LABEL.match(label):
            return (
                f"{prefix}: “{label[:40]}” may only hold letters, digits and “-”, "
                "and may not start or end with “-”."
            )
    return None


__all__ = ["host_address_problem"]
