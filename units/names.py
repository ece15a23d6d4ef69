"""Unit names specadmin accepts: a safe subset of systemd's unit-name grammar.

systemd allows `[A-Za-z0-9:_.\\-]` plus `@` for templates and `\\xNN` escapes
(src/basic/unit-name.c `unit_name_is_valid()`, at most 255 bytes with the suffix). A profile
names one concrete service that is also a file name on the host and appears in argv lists,
so we refuse `@`, backslashes, leading `-`/`.` and `..`: nothing that could be read as an
option, a path or a template.
"""

from __future__ import annotations

import re

from django.core.exceptions import ValidationError

UNIT_NAME_MAX = 255 - len(".service")
_NAME = re.compile(r"[A-Za-z0-9_:][A-Za-z0-9_:.\-]*\Z")


def validate_unit_name(value: str) -> None:
    if not value:
        raise ValidationError("A unit name is required.")
    if value.endswith(".service"):
        raise ValidationError("Give the name without “.service”; specadmin adds it.")
    if len(value) > UNIT_NAME_MAX:
        raise ValidationError(
            f"At most {UNIT_NAME_MAX} characters (systemd's limit with “.service”)."
        )
    if "/" in value or ".." in value:
        raise ValidationError(
            "A unit name cannot contain “/” or “..”: it is a file name on the host."
        )
    if "@" in value:
        raise ValidationError(
            "Templates (“@”) are not supported: a profile is one concrete service."
        )
    if not _NAME.match(value):
        bad = sorted({c for c in value if not re.match(r"[A-Za-z0-9_:.\-]", c)})
        if bad:
            shown = " ".join(repr(c) for c in bad)
            raise ValidationError(
                f"Not allowed in a unit name: {shown}. Use letters, digits, “-”, “_”, “.” and “:”."
            )
        raise ValidationError("A unit name must start with a letter, a digit, “_” or “:”.")
