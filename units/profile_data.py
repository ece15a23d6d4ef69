"""Profile settings as plain data: one canonical, JSON-safe dict shape.

Forms, services, rendering, versions and diffs all speak this shape, so "did anything
change?" is a dict comparison and a version snapshot can be rendered again years later
without the model. Normalising never raises: values it cannot coerce are kept as given
and `units.validation` reports them in the user's terms.
"""

from __future__ import annotations

from collections.abc import Callable
from decimal import Decimal, InvalidOperation
from typing import Any

from units.models import PROFILE_FIELDS, ServiceProfile
from units.schema import FIELDS, Kind, names_of

# The canonical data's shape per field, from the field table (units.schema).
STRING_FIELDS = names_of(Kind.TEXT)
INT_FIELDS = names_of(Kind.INT)
BOOL_FIELDS = names_of(Kind.BOOL)
# Longer digit strings stay text (validation names them): `int()` refuses more than 4,300
# digits (sys.get_int_max_str_digits) and no setting needs more than 18.
MAX_INT_DIGITS = 18
# A fraction written with more characters, or an exponent past this, is not one: beyond
# them Decimal.normalize() raises decimal.Overflow (Emax 999999) or takes ages.
MAX_DECIMAL_CHARS = 40
MAX_DECIMAL_EXPONENT = 20
# Where a new profile's form starts: vLLM installed in its own virtual environment, the
# usual layout (`python -m venv /opt/vllm && /opt/vllm/bin/pip install vllm`).
DEFAULT_VLLM_EXECUTABLE = "/opt/vllm/bin/vllm"
# Model paths and names keep inner spaces but never surrounding ones (a form artefact).
_NO_STRIP = frozenset({"description"})


def default_data() -> dict[str, Any]:
    """Every profile field at its model default (a blank profile)."""
    fields = {f.name: f for f in ServiceProfile._meta.local_fields}
    result: dict[str, Any] = {}
    for name in PROFILE_FIELDS:
        field = fields[name]
        result[name] = field.get_default() if field.has_default() else None
        if result[name] is None and name in STRING_FIELDS:
            result[name] = ""
    return normalize_profile_data(result, fill_defaults=False)


def normalize_profile_data(data: dict[str, Any], *, fill_defaults: bool = True) -> dict[str, Any]:
    """The canonical dict for `data` (missing fields take their defaults). Unknown keys
    are kept so validation can name them."""
    result: dict[str, Any] = default_data() if fill_defaults else {}
    for key, value in data.items():
        result[key] = _normalize(key, value)
    return result


def _normalize(key: str, value: Any) -> Any:
    if key in STRING_FIELDS:
        return _normalize_text(key, value)
    if key in INT_FIELDS:
        return _normalize_int(value)
    normalizer = _NORMALIZERS.get(key)
    return normalizer(value) if normalizer else value


def _normalize_text(key: str, value: Any) -> Any:
    """None → ""; surrounding blanks dropped (the description keeps line ends); GPU lists
    lose the blanks around their commas."""
    if value is None:
        return ""
    if not isinstance(value, str):
        return value
    value = value.strip() if key not in _NO_STRIP else value.strip(" \t")
    if key == "gpu_devices":
        value = ",".join(part.strip() for part in value.split(","))
    return value


def _normalize_int(value: Any) -> Any:
    """Digit strings of sane length (a leading "-" allowed) become ints, blank becomes
    None; the rest stays. A negative number then meets its field's range check, which
    says what is allowed, instead of "Enter a whole number"."""
    if not isinstance(value, str):
        return value
    text = value.strip()
    if text == "":
        return None
    digits = text[1:] if text.startswith("-") else text
    if is_ascii_digits(digits) and len(digits) <= MAX_INT_DIGITS:
        return int(text)
    return value


def _normalize_served_names(value: Any) -> Any:
    """One name per comma or line, blanks dropped; a list keeps its order."""
    if isinstance(value, str):
        parts = value.replace("\n", ",").split(",")
        return [p.strip() for p in parts if p.strip()]
    if isinstance(value, list | tuple):
        return [v.strip() if isinstance(v, str) else v for v in value]
    return value


def is_ascii_digits(text: str) -> bool:
    """Only 0-9. `str.isdigit()` also accepts "²" (which `int()` refuses) and other
    scripts' digits (which systemd and CUDA do not read as numbers)."""
    return text.isascii() and text.isdigit()


def bounded_decimal(value: Any) -> Decimal | None:
    """`value` as a finite Decimal of sane size, or None (not a number, or one whose
    normalising would overflow: `1E+1000000`)."""
    if isinstance(value, bool):
        return None
    text = str(value).strip()
    if len(text) > MAX_DECIMAL_CHARS:
        return None
    try:
        number = Decimal(text)
    except InvalidOperation:
        return None
    if not number.is_finite() or abs(number.adjusted()) > MAX_DECIMAL_EXPONENT:
        return None
    return number


def _decimal_text(value: Any) -> Any:
    """`0.920`, 0.92 and "0.92" all become "0.92" (what vLLM is given); None/"" → None.
    What is not a sane decimal is kept as given, for validation to name."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    number = bounded_decimal(value)
    if number is None:
        return value if isinstance(value, bool) else str(value)
    return format(number.normalize(), "f")


# The kinds with a shape of their own (BOOL fields and unknown keys are kept as given).
_KIND_NORMALIZERS: dict[Kind, Callable[[Any], Any]] = {
    Kind.DECIMAL: _decimal_text,
    Kind.NAMES: _normalize_served_names,
    Kind.ARGS: lambda value: list(value) if isinstance(value, tuple) else value,
    Kind.WORDS: lambda value: list(value) if isinstance(value, tuple) else value,
    Kind.ENV: lambda value: dict(value) if isinstance(value, dict) else value,
    Kind.SETTINGS: lambda value: (
        [list(v) if isinstance(v, tuple) else v for v in value]
        if isinstance(value, list | tuple)
        else value
    ),
    Kind.LAYOUT: lambda value: list(value) if isinstance(value, tuple) else value,
}
_NORMALIZERS: dict[str, Callable[[Any], Any]] = {
    name: _KIND_NORMALIZERS[field.kind]
    for name, field in FIELDS.items()
    if field.kind in _KIND_NORMALIZERS
}


def profile_data(profile: ServiceProfile) -> dict[str, Any]:
    """The canonical settings of a stored profile."""
    return normalize_profile_data({name: getattr(profile, name) for name in PROFILE_FIELDS})


def model_values(data: dict[str, Any]) -> dict[str, Any]:
    """Canonical data → keyword arguments for the model fields."""
    values = {name: data[name] for name in PROFILE_FIELDS}
    gmu = values["gpu_memory_utilization"]
    values["gpu_memory_utilization"] = Decimal(gmu) if gmu is not None else None
    for name in PROFILE_FIELDS:
        if name in STRING_FIELDS and values[name] is None:
            values[name] = ""
    return values
