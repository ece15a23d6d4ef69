"""What the profile form says about each field: its label, its help, the key it writes
(shown beside the label) and the sections the edit page groups fields into. All of it is
read from the field table, `units.schema`."""

from __future__ import annotations

from units.schema import FIELDS, sections

SPEC_KEYS_METHOD = FIELDS["spec_method"].writes.name  # the key the method goes to

# (anchor, title, fields): the edit page's sections, in the order an operator thinks.
SECTIONS: tuple[tuple[str, str, tuple[str, ...]], ...] = sections()

LABELS: dict[str, str] = {name: field.label for name, field in FIELDS.items()}

# What each field writes, shown beside its label: the vLLM flag, the key inside
# --speculative-config, or the unit setting. Checked against what the rendering writes
# (tests/units/test_form.py).
KEYS: dict[str, str] = {name: field.writes.key for name, field in FIELDS.items()}

HELP: dict[str, str] = {name: field.help for name, field in FIELDS.items()}
