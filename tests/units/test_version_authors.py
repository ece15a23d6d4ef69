"""Who wrote a version (`ProfileVersion.authors`): authorship follows content. An edit
keeps the authors of the version it edits and adds its own; a restore or a clone carries
the authors of the version it copies plus the person who copied. Versions saved before the
field existed get the same answer from migration units 0005."""

from __future__ import annotations

import importlib

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from tests.units.factories import baseline
from units.models import ProfileVersion
from units.services import (
    profile_clone,
    profile_create,
    profile_restore_version,
    profile_update,
)

pytestmark = pytest.mark.django_db
MIGRATION = importlib.import_module("units.migrations.0005_version_authors")


def test_an_edit_adds_its_author_to_those_of_the_version_it_edits(alice, bob) -> None:  # type: ignore[no-untyped-def]
    profile = profile_create(data=baseline(), created_by=alice)
    v2 = profile_update(profile=profile, data={"max_num_seqs": 32}, updated_by=bob)
    assert profile.versions.get(number=1).authors == [alice.pk]
    assert v2 is not None and v2.authors == sorted([alice.pk, bob.pk])
    assert v2.copied_from is None and v2.brought_by == {bob.pk}


def test_a_clone_carries_the_authors_of_its_source_plus_the_cloner(alice, bob, carl) -> None:  # type: ignore[no-untyped-def]
    profile = profile_create(data=baseline(), created_by=alice)
    profile_update(profile=profile, data={"max_num_seqs": 32}, updated_by=bob)
    clone = profile_clone(profile=profile, new_name="vllm-variant", created_by=carl)
    first = clone.versions.get()
    assert first.copied_from == profile.versions.get(number=2)
    assert first.authors == sorted([alice.pk, bob.pk, carl.pk])
    assert first.brought_by == {alice.pk, bob.pk, carl.pk}


def existing_versions_without_authors() -> None:
    """As a database from before the field: no authors, no copied_from."""
    with connection.cursor() as cursor:
        cursor.execute("UPDATE units_profileversion SET authors = '[]', copied_from_id = NULL")


def test_the_migration_fills_in_authors_of_older_versions_from_their_comments(
    alice, bob, carl
) -> None:  # type: ignore[no-untyped-def]
    profile = profile_create(data=baseline(), created_by=alice)
    profile_update(profile=profile, data={"max_num_seqs": 32}, updated_by=bob)  # v2
    profile_update(profile=profile, data={"max_num_seqs": 16}, updated_by=alice)  # v3
    restored = profile_restore_version(version=profile.versions.get(number=2), restored_by=carl)
    clone = profile_clone(profile=profile, new_name="vllm-variant", created_by=carl)
    expected = {v.pk: (v.authors, v.copied_from_id) for v in ProfileVersion.objects.order_by("pk")}
    existing_versions_without_authors()
    state = MigrationExecutor(connection).loader.project_state(("units", "0005_version_authors"))
    MIGRATION.fill_authors(state.apps, None)
    got = {v.pk: (v.authors, v.copied_from_id) for v in ProfileVersion.objects.order_by("pk")}
    assert got == expected
    assert got[restored.pk] == (sorted([alice.pk, bob.pk, carl.pk]), restored.copied_from_id)
    assert got[clone.versions.get().pk][1] == restored.pk  # the clone copied v4


def test_the_version_page_names_who_wrote_the_settings_and_what_they_copy(
    client, alice, bob, carl
) -> None:  # type: ignore[no-untyped-def]
    profile = profile_create(data=baseline(), created_by=alice)
    profile_update(profile=profile, data={"max_num_seqs": 32}, updated_by=bob)
    restored = profile_restore_version(version=profile.versions.get(number=1), restored_by=carl)
    client.force_login(bob)
    page = client.get(f"/profiles/{profile.pk}/versions/{restored.number}/").content.decode()
    assert "Settings written by alice, carl (a copy of" in page
    assert f"{profile.name} v1</a>)</p>" in page
