"""The field table (units/schema.py) is the one description of a profile's fields: the
model's columns, the form, the labels and keys, the data's shape and the rendering all
follow it."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import AbstractBaseUser

from tests.units.factories import baseline
from units.field_texts import HELP, KEYS, LABELS, SECTIONS
from units.forms import ProfileForm
from units.importing.service import import_unit
from units.models import PROFILE_FIELDS, ServiceProfile
from units.profile_data import (
    BOOL_FIELDS,
    INT_FIELDS,
    STRING_FIELDS,
    default_data,
    normalize_profile_data,
)
from units.rendering import profile_argv
from units.schema import FIELDS, OPTION_ORDER, Kind, Target, Widget
from units.speculative import validate_spec
from units.validation import OWNED_DESTS

pytestmark = pytest.mark.django_db

SAMPLE = {Kind.TEXT: "fp8", Kind.INT: 7, Kind.BOOL: True, Kind.DECIMAL: "0.5", Kind.NAMES: ["a"]}


def test_the_table_describes_exactly_the_model_columns() -> None:
    assert set(FIELDS) == set(PROFILE_FIELDS)
    on_form = [name for name, f in FIELDS.items() if f.widget != Widget.NONE]
    assert [name for _, _, names in SECTIONS for name in names] == on_form


def test_every_model_default_is_the_tables() -> None:
    columns = {f.name: f for f in ServiceProfile._meta.local_fields}
    for name, field in FIELDS.items():
        column = columns[name]
        if field.default is None:
            assert not column.has_default() or column.get_default() in ("", None), name
        else:
            expected = field.default() if callable(field.default) else field.default
            assert column.get_default() == expected, name


def test_the_data_shape_follows_the_kinds() -> None:
    assert {n for n, f in FIELDS.items() if f.kind == Kind.TEXT} == STRING_FIELDS
    assert {n for n, f in FIELDS.items() if f.kind == Kind.INT} == INT_FIELDS
    assert {n for n, f in FIELDS.items() if f.kind == Kind.BOOL} == BOOL_FIELDS
    assert set(default_data()) == set(FIELDS)


def test_every_field_has_its_label_help_key_and_widget_on_the_form(
    alice: AbstractBaseUser,
) -> None:
    form = ProfileForm()
    for name, field in FIELDS.items():
        if field.widget == Widget.NONE:
            assert name not in form.fields
            continue
        assert LABELS[name] == field.label == form.fields[name].label
        assert HELP[name] == field.help == form.fields[name].help_text
        assert KEYS[name] == field.writes.key
        widget = type(form.fields[name].widget).__name__
        assert (widget == "CheckboxInput") == (field.widget == Widget.CHECKBOX), name
        assert (widget == "Textarea") == (field.widget == Widget.LINES), name


@pytest.mark.parametrize("name", OPTION_ORDER)
def test_every_flag_field_renders_its_flag_and_the_extra_arguments_may_not_set_it(
    name: str,
) -> None:
    field = FIELDS[name]
    assert field.writes.target == Target.FLAG
    argv = profile_argv(baseline(**{name: SAMPLE[field.kind]}))
    assert field.flag in argv
    assert field.flag.removeprefix("--").replace("-", "_") in OWNED_DESTS


def test_prompt_lookup_order_is_judged_only_for_the_methods_that_take_it() -> None:
    """vLLM compares min and max only for ngram/ngram_gpu; for a draft-model method the
    fields are refused as not taken, without a second, misleading "min > max"."""
    eagle = validate_spec_errors(
        baseline(
            spec_method="eagle",
            spec_draft_model="/m",
            spec_num_tokens=3,
            spec_prompt_lookup_min=9,
            spec_prompt_lookup_max=4,
        )
    )
    assert all("larger than max" not in m for m in eagle["spec_prompt_lookup_min"])
    assert any("does not take" in m for m in eagle["spec_prompt_lookup_min"])
    ngram = validate_spec_errors(
        baseline(
            spec_method="ngram",
            spec_num_tokens=3,
            spec_prompt_lookup_min=9,
            spec_prompt_lookup_max=4,
        )
    )
    assert any("larger than max" in m for m in ngram["spec_prompt_lookup_min"])


def validate_spec_errors(data: dict) -> dict[str, list[str]]:
    errors: dict[str, list[str]] = {}
    validate_spec(normalize_profile_data(data), errors)
    return errors


# A value of each flag field as a unit writes it, and as the field then holds it.
IMPORTED = {
    "served_model_names": ("served-a served-b", ["served-a", "served-b"]),
    "host": ("127.0.0.1", "127.0.0.1"),
    "port": ("9000", 9000),
    "tensor_parallel_size": ("2", 2),
    "enable_expert_parallel": ("", True),
    "trust_remote_code": ("", True),
    "max_model_len": ("32k", "32k"),
    "max_num_seqs": ("7", 7),
    "gpu_memory_utilization": ("0.5", "0.5"),
    "quantization": ("fp8", "fp8"),
    "kv_cache_dtype": ("fp8", "fp8"),
}


@pytest.mark.parametrize("name", OPTION_ORDER)
def test_every_flag_field_is_filled_by_the_import_of_a_unit_that_gives_its_flag(
    name: str,
) -> None:
    """What the table says a field writes is also what an imported unit's flag fills."""
    written, held = IMPORTED[name]
    text = (
        f"[Service]\nExecStart=/opt/vllm/bin/vllm serve /models/m {FIELDS[name].flag} {written}\n"
    )
    result = import_unit(text=text, filename="one-flag.service", actor=None)
    assert result.version.data[name] == held
    assert result.sameness.equal
