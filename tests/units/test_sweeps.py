"""Sweeps: a grid of speculative settings and flags expanded for one vLLM release, each
point checked like a profile save; rejected points keep their reasons; the bound."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError

from audit.models import AuditEvent
from tests.units.factories import baseline
from units.models import ProfileVersion, ServiceProfile
from units.services import profile_create
from units.sweep_services import sweep_create_candidates
from units.sweeps import (
    FlagAxis,
    Grid,
    SweepError,
    build_sweep,
    grid_size,
    parse_flags,
    parse_numbers,
)

pytestmark = pytest.mark.django_db

BASE = baseline(target_vllm_version="0.16.0")


def _user(name: str) -> object:
    return get_user_model().objects.create_user(username=name, password="x")


def test_ngram_is_crossed_with_its_lookup_bounds_and_min_above_max_is_rejected() -> None:
    grid = Grid(
        methods=("ngram",),
        num_speculative_tokens=(3, 5),
        prompt_lookup_max=(4,),
        prompt_lookup_min=(2, 5),
    )
    plan = build_sweep(BASE, grid, vllm_version="0.16.0")
    assert [p.label for p in plan.points] == [
        "n-gram k=3 lookup 2–4",
        "n-gram k=3 lookup 5–4",
        "n-gram k=5 lookup 2–4",
        "n-gram k=5 lookup 5–4",
    ]
    assert [p.accepted for p in plan.points] == [True, False, True, False]
    assert plan.points[1].reasons == (
        "Prompt lookup min (5) is larger than max (4): vLLM refuses to start.",
    )
    assert '"num_speculative_tokens": 5' in plan.points[2].unit_text
    assert plan.points[1].unit_text == ""  # a rejected point is never rendered for a run


def test_a_method_the_release_does_not_accept_is_one_rejected_point_naming_the_release() -> None:
    grid = Grid(methods=("suffix", "ngram"), num_speculative_tokens=(3, 5, 8))
    plan = build_sweep(BASE, grid, vllm_version="0.8.5")
    suffix = [p for p in plan.points if p.changes.get("spec_method") == "suffix"]
    assert len(suffix) == 1 and not suffix[0].accepted
    assert "“suffix” is not accepted by vLLM 0.8.5" in suffix[0].reasons[0]
    assert len(plan.accepted) == 3
    # the same grid for a release that has suffix decoding: every point accepted
    assert len(build_sweep(BASE, grid, vllm_version="0.16.0").accepted) == 6


def test_a_draft_model_method_without_its_path_is_rejected_with_what_it_needs() -> None:
    plan = build_sweep(
        BASE, Grid(methods=("eagle3",), num_speculative_tokens=(3,)), vllm_version="0.16.0"
    )
    (point,) = plan.points
    assert not point.accepted
    assert any("needs a draft model" in r for r in point.reasons), point.reasons
    with_path = Grid(methods=("eagle3",), num_speculative_tokens=(3,), draft_model="/models/e3")
    (ok,) = build_sweep(BASE, with_path, vllm_version="0.16.0").points
    assert ok.accepted and '"model": "/models/e3"' in ok.unit_text


def test_a_flag_a_profile_field_sets_goes_to_the_field_and_an_unknown_flag_is_rejected() -> None:
    grid = Grid(
        methods=("",),
        flags=(FlagAxis("--max-num-seqs", ("32", "128")), FlagAxis("--no-such-flag", ("1",))),
    )
    plan = build_sweep(BASE, grid, vllm_version="0.16.0")
    assert [p.changes.get("max_num_seqs") for p in plan.points] == [32, 128]
    assert all(not p.accepted for p in plan.points)
    assert all("--no-such-flag" in " ".join(p.reasons) for p in plan.points), plan.points[0].reasons
    known = Grid(methods=("",), flags=(FlagAxis("--max-num-seqs", ("32", "128")),))
    accepted = build_sweep(BASE, known, vllm_version="0.16.0").accepted
    assert ["--max-num-seqs 32" in p.unit_text for p in accepted] == [True, False]
    assert "--max-num-seqs 128" in accepted[1].unit_text


def test_points_equal_to_the_start_or_to_another_point_are_dropped() -> None:
    # the base has max-num-seqs 64: that point is the base itself
    grid = Grid(methods=("",), flags=(FlagAxis("--max-num-seqs", ("64", "32")),))
    plan = build_sweep(BASE, grid, vllm_version="0.16.0")
    assert plan.points[0].reasons == ("The same unit as the version the sweep starts from.",)
    assert plan.points[1].accepted
    twice = Grid(methods=("ngram", "ngram"), num_speculative_tokens=(3,))
    assert len(build_sweep(BASE, twice, vllm_version="0.16.0").points) == 1


def test_a_grid_over_the_bound_is_refused_before_anything_is_rendered() -> None:
    grid = Grid(
        methods=("ngram", "suffix"),
        num_speculative_tokens=(1, 2, 3, 4, 5),
        prompt_lookup_max=(2, 4),
        flags=(FlagAxis("--max-num-seqs", ("16", "32")),),
    )
    assert grid_size(grid, "0.16.0") == (5 * 2 + 5) * 2
    with pytest.raises(SweepError, match=r"This grid has 30 points; a sweep has at most 16\."):
        build_sweep(BASE, grid, vllm_version="0.16.0")
    assert len(build_sweep(BASE, grid, vllm_version="0.16.0", max_points=30).points) == 30
    with pytest.raises(SweepError, match="Choose at least one method"):
        build_sweep(BASE, Grid(methods=()), vllm_version="0.16.0")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("3, five", "“five” is not a whole number"),
        ("-1", "“-1” is not a whole number"),
    ],
)
def test_value_lists_that_are_not_numbers_say_which_word(text: str, message: str) -> None:
    with pytest.raises(SweepError, match=message):
        parse_numbers(text, "Speculative tokens")


def test_value_lists_keep_their_order_without_duplicates() -> None:
    assert parse_numbers("5, 3 5,8", "x") == (5, 3, 8)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("max-num-seqs 32", "line 1: “max-num-seqs” is not a vLLM flag"),
        ("--max-num-seqs", "line 1: --max-num-seqs has no values to try"),
        ("\n--speculative-config {}", "line 2: the speculative config is built from the method"),
        ("--max-num-seqs 1\n--max-num-seqs 2", "line 2: --max-num-seqs is named twice"),
    ],
)
def test_flag_lines_that_cannot_be_swept_say_which_line(text: str, message: str) -> None:
    with pytest.raises(SweepError, match=message):
        parse_flags(text)


def test_flag_lines_take_values_after_the_flag_or_after_an_equals_sign() -> None:
    assert parse_flags("--max-num-seqs 32, 64\n\n--block-size=16 32") == (
        FlagAxis("--max-num-seqs", ("32", "64")),
        FlagAxis("--block-size", ("16", "32")),
    )


def test_the_accepted_points_become_versions_of_a_clone_with_their_author() -> None:
    olga, alice = _user("olga"), _user("alice")
    source = profile_create(data=BASE, created_by=olga)
    version = source.versions.get()
    grid = Grid(
        methods=("ngram",),
        num_speculative_tokens=(3, 5),
        prompt_lookup_max=(4,),
        prompt_lookup_min=(2, 9),
    )
    plan = build_sweep(version.data, grid, vllm_version="0.16.0")
    assert len(plan.accepted) == 2
    clone, versions = sweep_create_candidates(
        version=version, plan=plan, clone_name="kimi-sweep1", created_by=alice
    )
    assert clone.cloned_from == source
    assert [v.number for v in versions] == [2, 3]
    assert all(v.data["spec_method"] == "ngram" for v in versions)
    assert all(v.data["spec_prompt_lookup_min"] == 2 for v in versions)
    assert [v.data["spec_num_tokens"] for v in versions] == [3, 5]
    assert all(v.created_by == alice for v in versions)
    assert all(set(v.authors) == {olga.pk, alice.pk} for v in versions)
    assert "point 1: n-gram k=3 lookup 2–4" in versions[0].comment
    assert AuditEvent.objects.filter(object_repr__contains="kimi-sweep1").count() == 3


def test_creating_candidates_under_a_taken_name_leaves_nothing_behind() -> None:
    olga = _user("olga")
    source = profile_create(data=BASE, created_by=olga)
    plan = build_sweep(
        BASE, Grid(methods=("ngram",), num_speculative_tokens=(3,)), vllm_version="0.16.0"
    )
    before = ProfileVersion.objects.count()
    with pytest.raises(ValidationError, match="already exists"):
        sweep_create_candidates(
            version=source.versions.get(), plan=plan, clone_name=source.name, created_by=olga
        )
    assert ProfileVersion.objects.count() == before
    assert ServiceProfile.objects.count() == 1
