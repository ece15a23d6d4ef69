"""Services: every save is an immutable version; no-op saves add none; clone, archive,
restore; the lint gate refuses units that could never run."""

from __future__ import annotations

import hashlib

import pytest
from django.core.exceptions import ValidationError

import units.services
from audit.models import AuditEvent
from tests.units.factories import NGRAM_CHANGES, baseline
from units.models import ProfileVersion, ServiceProfile
from units.profile_data import profile_data
from units.rendering import render_unit
from units.selectors import (
    profile_list,
    profile_versions,
    version_field_diff,
    version_unit_diff,
)
from units.services import (
    profile_archive,
    profile_clone,
    profile_create,
    profile_restore_version,
    profile_unarchive,
    profile_update,
)

pytestmark = pytest.mark.django_db


def test_create_saves_version_one_with_unit_and_hash(alice) -> None:  # type: ignore[no-untyped-def]
    profile = profile_create(data=baseline(), created_by=alice, comment="first")
    version = profile.versions.get()
    assert version.number == 1
    assert version.created_by == alice and version.comment == "first"
    assert version.data == profile_data(profile)
    assert version.unit_text == render_unit(baseline())
    assert version.unit_sha256 == hashlib.sha256(version.unit_text.encode()).hexdigest()
    assert version.changed_fields[0] == "name"
    assert profile.gpu_memory_utilization is not None
    assert str(profile.gpu_memory_utilization) == "0.92"


def test_create_refuses_invalid_data_with_field_messages(alice) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ValidationError) as exc:
        profile_create(data=baseline(port=0, extra_args=["--bogus"]), created_by=alice)
    assert "port" in exc.value.message_dict
    assert not ServiceProfile.objects.exists()


def test_create_refuses_lint_errors_that_mean_the_unit_could_never_run(alice) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ValidationError) as exc:
        profile_create(data=baseline(extra_args=["--no-such-flag"]), created_by=alice)
    assert "VL320" in exc.value.message_dict["extra_args"][0]
    assert not ServiceProfile.objects.exists()


def test_warnings_do_not_block_a_save(alice) -> None:  # type: ignore[no-untyped-def]
    # Restart=no draws OP404 (warning): saved anyway
    profile = profile_create(data=baseline(restart="no"), created_by=alice)
    assert profile.restart == "no"


def test_duplicate_name_is_refused(alice) -> None:  # type: ignore[no-untyped-def]
    profile_create(data=baseline(), created_by=alice)
    with pytest.raises(ValidationError) as exc:
        profile_create(data=baseline(), created_by=alice)
    assert "already exists" in exc.value.message_dict["name"][0]


def test_a_name_taken_by_a_concurrent_create_is_refused_at_the_name(alice, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """Both creates pass the existence check before either commits (PostgreSQL, READ
    COMMITTED); the unique index then refuses the second: a message, not a 500."""
    profile_create(data=baseline(), created_by=alice)
    monkeypatch.setattr(units.services, "_check_name_free", lambda name: None)
    for attempt in (
        lambda: profile_create(data=baseline(), created_by=alice),
        lambda: profile_clone(
            profile=ServiceProfile.objects.get(), new_name=baseline()["name"], created_by=alice
        ),
    ):
        with pytest.raises(ValidationError) as exc:
            attempt()
        assert "already exists" in exc.value.message_dict["name"][0]
    assert ServiceProfile.objects.count() == 1
    assert ProfileVersion.objects.count() == 1


def test_update_adds_a_version_with_the_changed_fields(alice, bob) -> None:  # type: ignore[no-untyped-def]
    profile = profile_create(data=baseline(), created_by=alice)
    version = profile_update(
        profile=profile, data={"port": 8001, "max_num_seqs": 32}, updated_by=bob, comment="x"
    )
    assert version is not None
    assert version.number == 2 and version.created_by == bob
    assert version.changed_fields == ["port", "max_num_seqs"]
    profile.refresh_from_db()
    assert profile.port == 8001
    assert "--port 8001" in version.unit_text


def test_saving_unchanged_settings_adds_no_version(alice) -> None:  # type: ignore[no-untyped-def]
    profile = profile_create(data=baseline(), created_by=alice)
    assert profile_update(profile=profile, data=baseline(), updated_by=alice) is None
    # equivalent spellings are no change either
    assert (
        profile_update(profile=profile, data={"gpu_memory_utilization": "0.920"}, updated_by=alice)
        is None
    )
    assert profile.versions.count() == 1


def test_update_cannot_rename(alice) -> None:  # type: ignore[no-untyped-def]
    profile = profile_create(data=baseline(), created_by=alice)
    with pytest.raises(ValidationError) as exc:
        profile_update(profile=profile, data={"name": "other"}, updated_by=alice)
    assert "Clone it" in exc.value.message_dict["name"][0]


def test_update_refuses_invalid_data_and_keeps_state(alice) -> None:  # type: ignore[no-untyped-def]
    profile = profile_create(data=baseline(), created_by=alice)
    with pytest.raises(ValidationError):
        profile_update(profile=profile, data={"spec_method": "ngram"}, updated_by=alice)
    profile.refresh_from_db()
    assert profile.spec_method == "" and profile.versions.count() == 1


def test_clone_makes_a_variant_beside_the_original(alice, bob) -> None:  # type: ignore[no-untyped-def]
    original = profile_create(data=baseline(), created_by=alice)
    variant = profile_clone(profile=original, new_name="vllm-kimi-k25-int4-ngram", created_by=bob)
    assert variant.cloned_from == original
    first = variant.versions.get()
    assert first.number == 1 and first.changed_fields == ["name"]
    assert first.comment == "Cloned from vllm-kimi-k25-int4 v1"
    assert profile_data(variant) == {**profile_data(original), "name": variant.name}
    v2 = profile_update(profile=variant, data=NGRAM_CHANGES, updated_by=bob)
    assert v2 is not None and "--speculative-config" in v2.unit_text
    original.refresh_from_db()
    assert original.spec_method == "" and original.versions.count() == 1


def test_clone_validates_the_new_name(alice) -> None:  # type: ignore[no-untyped-def]
    original = profile_create(data=baseline(), created_by=alice)
    with pytest.raises(ValidationError) as exc:
        profile_clone(profile=original, new_name="bad name", created_by=alice)
    assert "name" in exc.value.message_dict
    with pytest.raises(ValidationError):
        profile_clone(profile=original, new_name=original.name, created_by=alice)


def test_archive_hides_but_keeps_history_and_blocks_edits(alice) -> None:  # type: ignore[no-untyped-def]
    profile = profile_create(data=baseline(), created_by=alice)
    profile_archive(profile=profile, archived_by=alice)
    profile_archive(profile=profile, archived_by=alice)  # idempotent
    profile.refresh_from_db()
    assert profile.archived
    assert list(profile_list()) == [] and list(profile_list(archived=True)) == [profile]
    assert profile.versions.count() == 1
    with pytest.raises(ValidationError, match="archived"):
        profile_update(profile=profile, data={"port": 9000}, updated_by=alice)
    profile_unarchive(profile=profile, unarchived_by=alice)
    assert profile_update(profile=profile, data={"port": 9000}, updated_by=alice) is not None


def test_profiles_and_versions_are_never_deleted_or_changed(alice) -> None:  # type: ignore[no-untyped-def]
    profile = profile_create(data=baseline(), created_by=alice)
    version = profile.versions.get()
    with pytest.raises(ValidationError):
        profile.delete()
    with pytest.raises(ValidationError):
        version.delete()
    with pytest.raises(ValidationError):
        ProfileVersion.objects.filter(pk=version.pk).delete()
    with pytest.raises(ValidationError):
        ProfileVersion.objects.filter(pk=version.pk).update(comment="rewritten")
    version.comment = "rewritten"
    with pytest.raises(ValidationError):
        version.save()
    assert ProfileVersion.objects.get(pk=version.pk).comment == "Created"


def test_restore_creates_a_new_version_with_the_old_settings(alice, bob) -> None:  # type: ignore[no-untyped-def]
    profile = profile_create(data=baseline(), created_by=alice)
    v1 = profile.versions.get()
    profile_update(profile=profile, data={"port": 8001}, updated_by=alice)
    v3 = profile_restore_version(version=v1, restored_by=bob)
    assert v3.number == 3 and v3.created_by == bob
    assert v3.comment == "Restored v1" and v3.changed_fields == ["port"]
    assert v3.data == v1.data and v3.unit_text == v1.unit_text
    profile.refresh_from_db()
    assert profile.port == 8000
    # restoring what is already current writes nothing
    assert profile_restore_version(version=v1, restored_by=bob) == v3
    assert [v.number for v in profile_versions(profile=profile)] == [3, 2, 1]


def test_version_diffs(alice) -> None:  # type: ignore[no-untyped-def]
    profile = profile_create(data=baseline(), created_by=alice)
    v2 = profile_update(profile=profile, data=NGRAM_CHANGES, updated_by=alice)
    assert v2 is not None
    v1 = profile.versions.get(number=1)
    diff = version_field_diff(v1, v2)
    assert ("spec_method", "", "ngram") in diff
    assert ("spec_num_tokens", None, 5) in diff
    assert [f for f, _, _ in diff] == v2.changed_fields
    assert version_field_diff(v1, v1) == []
    text = version_unit_diff(v1, v2)
    assert text.startswith("--- vllm-kimi-k25-int4.service@v1\n+++ vllm-kimi-k25-int4.service@v2\n")
    assert '+    --speculative-config \'{"method": "ngram"' in text
    assert version_unit_diff(v1, v1) == ""


def test_profile_list_filters(alice) -> None:  # type: ignore[no-untyped-def]
    base = profile_create(data=baseline(), created_by=alice)
    variant = profile_clone(profile=base, new_name="vllm-kimi-k25-int4-ngram", created_by=alice)
    profile_update(profile=variant, data=NGRAM_CHANGES, updated_by=alice)
    other = profile_create(
        data=baseline(
            name="qwen",
            description="Qwen3",
            model="Qwen/Qwen3-8B",
            target_vllm_version="0.11.0",
            quantization="",
            kv_cache_dtype="",
        ),
        created_by=alice,
    )
    assert list(profile_list()) == [other, base, variant]
    assert list(profile_list(search="KIMI")) == [base, variant]
    assert list(profile_list(search="qwen3")) == [other]
    assert list(profile_list(method="ngram")) == [variant]
    assert list(profile_list(method="none")) == [other, base]
    assert list(profile_list(vllm_version="0.11.0")) == [other]
    assert list(profile_list(archived=None)) == [other, base, variant]


def test_every_change_is_audited_and_failed_or_no_op_saves_are_not(alice, bob) -> None:  # type: ignore[no-untyped-def]

    def events() -> list[tuple[str, str, str, dict]]:
        return [
            (e.kind, e.actor_name, e.profile_name, e.payload)
            for e in AuditEvent.objects.order_by("id")
        ]

    base = profile_create(data=baseline(), created_by=alice)
    with pytest.raises(ValidationError):
        profile_create(data=baseline(name="x", port=0), created_by=alice)
    profile_update(profile=base, data=baseline(), updated_by=alice)  # no change
    profile_update(profile=base, data={"port": 8001}, updated_by=bob)
    variant = profile_clone(profile=base, new_name="variant", created_by=bob)
    profile_restore_version(version=base.versions.get(number=1), restored_by=alice)
    profile_archive(profile=variant, archived_by=alice)
    profile_unarchive(profile=variant, unarchived_by=alice)
    name = "vllm-kimi-k25-int4"
    assert events() == [
        ("profile.created", "alice", name, {"version": 1}),
        ("profile.edited", "bob", name, {"version": 2, "changed_fields": ["port"]}),
        ("profile.created", "bob", "variant", {"version": 1, "cloned_from": name}),
        ("profile.restored", "alice", name, {"version": 3, "restored": 1}),
        ("profile.archived", "alice", "variant", {}),
        ("profile.unarchived", "alice", "variant", {}),
    ]
