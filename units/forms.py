"""Profile forms: text in the operator's terms ⇄ the canonical profile data.

Every setting but the yes/no ones is a plain text field on purpose (selects offer the
known choices, they do not judge them): `units.validation` is the single place
that knows what systemd or vLLM would reject and says so in the user's terms, so the
form only splits multi-line fields into the list/dict shapes of the data and leaves the
verdict to validation (and, on save, to the services that enforce it).

Labels and help texts live in `units.field_texts`; what the edit page shows beside the
form (unit, findings, messages per field) in `units.preview`.
"""

from __future__ import annotations

import re
from functools import cache
from typing import Any

from django import forms
from django.core.exceptions import ValidationError

from linting.systemd.catalog import available_versions as systemd_versions
from linting.vllm.catalog import available_versions as vllm_versions
from units import selectors
from units.field_texts import HELP, KEYS, LABELS, SECTIONS
from units.models import PROFILE_FIELDS, RESTART_CHOICES, ServiceProfile
from units.preview import FieldRow, Issue, Section
from units.profile_data import (
    BOOL_FIELDS,
    DEFAULT_VLLM_EXECUTABLE,
    default_data,
    normalize_profile_data,
    profile_data,
)
from units.schema import FIELDS, Kind, Widget
from units.selectors import NO_METHOD
from units.speculative import SPEC_FIELDS, method_shape, spec_methods
from units.unicode_text import validate_visible
from units.validation import field_choices

_DATALIST_FIELDS = frozenset(n for n, f in FIELDS.items() if f.widget == Widget.DATALIST)
_NEGATIVE_NUMBER = re.compile(r"-\d+\Z|-\d*\.\d+\Z")
_OPTION_AND_VALUE = re.compile(r"(\S+)\s+(\S.*)\Z", re.S)


def _text_lines(text: str | None) -> list[str]:
    """Lines ended by `\\n` (a pasted `\\r\\n` too), not by U+2028 & co., which
    `str.splitlines()` also breaks at: validation must see those and name them."""
    return [line.removesuffix("\r") for line in (text or "").split("\n")]


def _lines(text: str | None) -> list[str]:
    """Non-blank lines, stripped."""
    return [line.strip() for line in _text_lines(text) if line.strip()]


def parse_environment(text: str | None) -> tuple[dict[str, str], list[str]]:
    """`NAME=value` lines → (variables, problems). The value is kept as written (inner and
    trailing spaces included) because systemd passes it verbatim."""
    variables: dict[str, str] = {}
    first_line: dict[str, int] = {}
    problems: list[str] = []
    for number, line in enumerate(_text_lines(text), start=1):
        if not line.strip():
            continue
        name, eq, value = line.partition("=")
        name = name.strip()
        if not eq or not name:
            problems.append(f"Line {number} (“{line.strip()}”): write it as NAME=value.")
            continue
        if name in first_line:
            problems.append(
                f"{name} is set twice (lines {first_line[name]} and {number}); keep one."
            )
            continue
        first_line[name] = number
        variables[name] = value
    return variables, problems


def _is_option(word: str) -> bool:
    """An option word to argparse (a negative number is a value: `_negative_number_matcher`
    in Lib/argparse.py, as vLLM has no option that looks like one)."""
    return word.startswith("-") and not _NEGATIVE_NUMBER.match(word)


def parse_extra_args(text: str | None) -> list[str]:
    """ "Extra arguments" text → argv words. One option per line; on an option's line the
    value may follow the first run of spaces (`--max-loras 4`) and is taken as written,
    JSON included; `--option=value` and a line that is not an option are one word each."""
    words: list[str] = []
    for line in _lines(text):
        match = _OPTION_AND_VALUE.match(line)
        if match and _is_option(line) and "=" not in match[1]:
            words.extend(match.groups())
        else:
            words.append(line)
    return words


def extra_args_text(words: list[str]) -> str:
    """Argv words → the form's text: an option and its value share a line where the line
    reads back as the same two words (`parse_extra_args`)."""
    lines: list[str] = []
    i = 0
    while i < len(words):
        word = words[i]
        value = words[i + 1] if i + 1 < len(words) else None
        pairable = (
            _is_option(word)
            and not any(c.isspace() for c in word)
            and "=" not in word
            and value is not None
            and value
            and not _is_option(value)
            and value == value.strip()
        )
        if pairable:
            lines.append(f"{word} {value}")
            i += 2
        else:
            lines.append(word)
            i += 1
    return "\n".join(lines)


def unit_extra_text(pairs: list[list[str]]) -> str:
    """[section, line] pairs → the form's text: a `[Section]` line before each run."""
    lines: list[str] = []
    current = None
    for section, line in pairs:
        if section != current:
            lines.append(f"[{section}]")
            current = section
        lines.append(line)
    return "\n".join(lines)


def parse_unit_extra(text: str | None) -> list[list[str]]:
    """The form's text → [section, line] pairs; lines before any `[Section]` belong to
    [Service]. Validation judges each line."""
    pairs: list[list[str]] = []
    section = "Service"
    for line in _lines(text):
        if line.startswith("[") and line.endswith("]"):
            section = line[1:-1].strip()
        else:
            pairs.append([section, line])
    return pairs


@cache
def all_spec_methods() -> tuple[str, ...]:
    """Every method any catalogued vLLM version accepts (for the list filter)."""
    seen: dict[str, None] = {}
    for version in vllm_versions():
        seen.update(dict.fromkeys(spec_methods(version)))
    return tuple(seen)


@cache
def method_fields() -> dict[str, Any]:
    """{method: [fields it takes]} and {version: [methods]} for the form's script, which
    shows only the fields the chosen method takes (written with `json_script`; shared,
    do not modify)."""
    takes = {}
    for method in all_spec_methods():
        shape = method_shape(method)
        takes[method] = sorted(shape.takes) if shape else []
    versions = {v: spec_methods(v) for v in vllm_versions()}
    return {"takes": takes, "methods": versions, "fields": list(SPEC_FIELDS)}


def spec_fields_taken(method: str) -> frozenset[str]:
    shape = method_shape(method) if method else None
    return shape.takes if shape else frozenset()


def initial_from_data(data: dict[str, Any]) -> dict[str, Any]:
    """Canonical data → the texts the form shows."""
    initial: dict[str, Any] = {}
    for name in PROFILE_FIELDS:
        value = data.get(name)
        kind = FIELDS[name].kind
        if kind == Kind.BOOL:
            initial[name] = bool(value)
        elif kind == Kind.NAMES:
            initial[name] = "\n".join(value or [])
        elif kind == Kind.ARGS:
            initial[name] = extra_args_text(list(value or []))
        elif kind == Kind.ENV:
            # In the unit's order (units.rendering sorts them), the same on every database:
            # PostgreSQL's jsonb keeps no key order.
            initial[name] = "\n".join(f"{k}={v}" for k, v in sorted((value or {}).items()))
        elif kind == Kind.WORDS:
            initial[name] = "\n".join(value or [])
        elif kind == Kind.SETTINGS:
            initial[name] = unit_extra_text(value or [])
        elif kind == Kind.LAYOUT:
            initial[name] = list(value or [])
        else:
            initial[name] = "" if value is None else str(value)
    return initial


def _widget(name: str) -> forms.Widget:
    """The field's widget as the field table describes it (units.schema)."""
    field = FIELDS[name]
    attrs: dict[str, str] = {"aria-describedby": f"issues-{name} help-{name}"}
    if field.widget == Widget.LINES:
        return forms.Textarea(attrs={**attrs, "rows": str(field.rows), "spellcheck": "false"})
    if field.widget == Widget.CHECKBOX:
        return forms.CheckboxInput(attrs=attrs)
    if field.widget == Widget.SELECT:
        return forms.Select(attrs=attrs)
    if field.widget == Widget.NUMBER:
        attrs["inputmode"] = "numeric"
    if field.widget == Widget.DATALIST:
        attrs["list"] = f"choices-{name}"
    return forms.TextInput(attrs={**attrs, "spellcheck": "false", "autocomplete": "off"})


class ProfileForm(forms.Form):
    """All settings of a profile plus the version comment; `profile` given: editing (the
    name is fixed, since renaming would orphan the unit on its hosts)."""

    comment = forms.CharField(
        label="Comment for this version",
        required=False,
        max_length=500,
        validators=[validate_visible],
        widget=forms.TextInput(attrs={"placeholder": "What changed and why (optional)"}),
    )
    # The version the edit started from: a save on an older base than the profile has
    # now is refused instead of silently undoing someone else's change.
    base_version = forms.IntegerField(
        required=False, min_value=1, max_value=2**31 - 1, widget=forms.HiddenInput
    )

    def __init__(
        self,
        *args: Any,
        profile: ServiceProfile | None = None,
        initial_data: dict | None = None,
        **kwargs: Any,
    ) -> None:
        self.profile = profile
        start = initial_data or (
            profile_data(profile)
            if profile
            else {**default_data(), "vllm_executable": DEFAULT_VLLM_EXECUTABLE}
        )
        kwargs.setdefault("initial", initial_from_data(start))
        super().__init__(*args, **kwargs)
        # Fields not on the form (the command line's order) are carried from where the
        # edit started; the save keeps them.
        self._carried = {
            name: start.get(name, [])
            for name in PROFILE_FIELDS
            if FIELDS[name].widget == Widget.NONE
        }
        for name in PROFILE_FIELDS:
            if name in self._carried:
                continue
            field_class = forms.BooleanField if name in BOOL_FIELDS else forms.CharField
            extra = {} if name in BOOL_FIELDS else {"strip": False}
            self.fields[name] = field_class(
                label=LABELS[name],
                required=False,
                help_text=HELP.get(name, ""),
                widget=_widget(name),
                **extra,
            )
        self.fields["comment"] = self.fields.pop("comment")  # after the settings
        self.fields["base_version"] = self.fields.pop("base_version")
        if profile is not None:
            self.fields["name"].widget.attrs["readonly"] = "readonly"
            latest = selectors.profile_latest_version(profile=profile)
            self.initial.setdefault("base_version", latest.number if latest else None)
        version = self._value("target_vllm_version") or start.get("target_vllm_version", "")
        self.vllm_version = version
        self._set_choices(version)

    def _value(self, name: str) -> Any:
        return self[name].value()

    def _set_choices(self, version: str) -> None:
        def with_current(options: list[tuple[str, str]], current: str, note: str) -> list:
            if current and current not in {value for value, _ in options}:
                options.append((current, f"{current} ({note})"))
            return options

        methods = [("", "none (no speculative decoding)")] + [(m, m) for m in spec_methods(version)]
        self.fields["spec_method"].widget.choices = with_current(
            methods, self._value("spec_method") or "", f"not in vLLM {version}"
        )
        self.fields["restart"].widget.choices = list(RESTART_CHOICES)
        self.fields["target_vllm_version"].widget.choices = with_current(
            [(v, v) for v in vllm_versions()], version, "no catalog"
        )
        self.fields["target_systemd_version"].widget.choices = with_current(
            [(str(v), str(v)) for v in systemd_versions()],
            str(self._value("target_systemd_version") or ""),
            "no catalog",
        )

    def datalists(self) -> list[tuple[str, list[str]]]:
        """Suggestions for free-text choice fields, from the target version's catalog."""
        return [(name, field_choices(name, self.vllm_version)) for name in sorted(_DATALIST_FIELDS)]

    def to_data(self) -> dict[str, Any]:
        """The canonical data the inputs describe (works on invalid input too: validation
        then names what is wrong)."""
        values: dict[str, Any] = {
            name: self._value(name) if name in self.fields else self._carried[name]
            for name in PROFILE_FIELDS
        }
        for name in PROFILE_FIELDS:
            kind = FIELDS[name].kind
            if kind == Kind.NAMES:
                values[name] = _lines(values[name])
            elif kind == Kind.ARGS:
                values[name] = parse_extra_args(values[name])
            elif kind == Kind.ENV:
                values[name], _ = parse_environment(values[name])
            elif kind == Kind.BOOL:
                values[name] = bool(values[name])
            elif kind == Kind.WORDS:
                values[name] = _lines(values[name])
            elif kind == Kind.SETTINGS:
                values[name] = parse_unit_extra(values[name])
        if self.profile is not None:
            values["name"] = self.profile.name
        return normalize_profile_data(values)

    def clean(self) -> dict[str, Any]:
        """Only what the text shape itself gets wrong; the settings are judged by
        validation (preview) and by the services (save)."""
        cleaned = super().clean()
        for name, problems in self.shape_errors().items():
            for problem in problems:
                self.add_error(name, problem)
        return cleaned

    def shape_errors(self) -> dict[str, list[str]]:
        """What the text shape gets wrong, per field (`clean()` adds these; the preview,
        which does not save, shows them)."""
        result: dict[str, list[str]] = {}
        _, env_problems = parse_environment(self._value("environment"))
        if env_problems:
            result["environment"] = env_problems
        return result

    def add_service_error(self, exc: ValidationError) -> None:
        """Show a service's ValidationError at the fields it names."""
        if hasattr(exc, "error_dict"):
            for name, errors in exc.error_dict.items():
                target = name if name in self.fields else None
                for error in errors:
                    self.add_error(target, error)
        else:
            self.add_error(None, exc)

    def sections(self, issues: dict[str, list[Issue]]) -> list[Section]:
        """The form's fields grouped for the page, each with its messages."""
        taken = spec_fields_taken(self._value("spec_method") or "")
        result = []
        for anchor, title, names in SECTIONS:
            rows = []
            for name in names:
                hidden = name in SPEC_FIELDS and name not in taken
                if hidden:
                    self.fields[name].widget.attrs["disabled"] = "disabled"
                rows.append(FieldRow(self[name], issues.get(name, []), hidden, KEYS[name]))
            result.append(Section(anchor, title, rows))
        return result


class CloneForm(forms.Form):
    new_name = forms.CharField(
        label="Name of the variant",
        max_length=247,
        help_text="The original stays as it is (your fallback); the variant starts with its "
        "current settings.",
        widget=forms.TextInput(attrs={"autofocus": "autofocus", "spellcheck": "false"}),
    )


STATE_CHOICES = [("active", "Active"), ("archived", "Archived"), ("all", "All")]


class ProfileFilterForm(forms.Form):
    """List filters; bad values fall back to "no filter" instead of an error page."""

    q = forms.CharField(required=False, label="Search")
    method = forms.ChoiceField(required=False, label="Speculative method")
    vllm = forms.ChoiceField(required=False, label="vLLM version")
    host = forms.ChoiceField(required=False, label="Deployed to")
    state = forms.ChoiceField(required=False, choices=STATE_CHOICES, label="State")

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["method"].choices = [("", "any method"), (NO_METHOD, "none")] + [
            (m, m) for m in all_spec_methods()
        ]
        self.fields["vllm"].choices = [("", "any version")] + [(v, v) for v in vllm_versions()]
        self.fields["host"].choices = [("", "any host")] + [
            (h, h) for h in selectors.deploy_host_names()
        ]

    def selector_kwargs(self) -> dict[str, Any]:
        """Keyword arguments for `selectors.profile_list`."""
        self.is_valid()
        data = getattr(self, "cleaned_data", {})
        state = data.get("state") or "active"
        archived = {"active": False, "archived": True, "all": None}[state]
        return {
            "search": data.get("q", "")[:200],
            "method": data.get("method", ""),
            "vllm_version": data.get("vllm", ""),
            "host": data.get("host", ""),
            "archived": archived,
        }
