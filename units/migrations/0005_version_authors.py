"""Who wrote each version's settings (`ProfileVersion.authors`) and which version a copy
copies (`copied_from`), filled in for the versions saved before.

Restores and clones were recorded only in the version's comment ("Restored v2", "Cloned
from NAME v3", written by units/services.py); the profile's `cloned_from` names a clone's
source when the comment lacks the number (then the source's last version saved before
the clone). Versions are read in the order they were saved, so a copied version's authors
are known when its copy is reached.
"""

import re

import django.db.models.deletion
from django.db import migrations, models

RESTORED = re.compile(r"^Restored v(\d+)$")
CLONED = re.compile(r"^Cloned from .+ v(\d+)$")


def _source(version, versions, Version):
    """The version `version` copies, or None (an edit, or a first version)."""
    restored = RESTORED.match(version.comment)
    if restored:
        return versions.get((version.profile_id, int(restored.group(1))))
    source_profile = version.profile.cloned_from_id
    if version.number != 1 or source_profile is None:
        return None
    cloned = CLONED.match(version.comment)
    if cloned:
        return versions.get((source_profile, int(cloned.group(1))))
    earlier = (
        Version.objects.filter(profile_id=source_profile, created_at__lte=version.created_at)
        .order_by("-number")
        .first()
    )
    return versions.get((source_profile, earlier.number)) if earlier else None


def fill_authors(apps, schema_editor):
    Version = apps.get_model("units", "ProfileVersion")
    versions = {}  # (profile id, number) → version, with its authors computed
    for version in Version.objects.select_related("profile").order_by("created_at", "pk"):
        source = _source(version, versions, Version)
        base = source or versions.get((version.profile_id, version.number - 1))
        authors = set(base.authors) if base is not None else set()
        if version.created_by_id is not None:
            authors.add(version.created_by_id)
        version.authors = sorted(authors)
        version.copied_from = source
        Version.objects.filter(pk=version.pk).update(
            authors=version.authors, copied_from=source
        )
        versions[(version.profile_id, version.number)] = version


class Migration(migrations.Migration):
    dependencies = [
        ("units", "0004_gpu_free_threshold_1000_mib"),
    ]

    operations = [
        migrations.AddField(
            model_name="profileversion",
            name="authors",
            field=models.JSONField(default=list),
        ),
        migrations.AddField(
            model_name="profileversion",
            name="copied_from",
            field=models.ForeignKey(
                blank=True,
                null=True,
                on_delete=django.db.models.deletion.PROTECT,
                related_name="+",
                to="units.profileversion",
            ),
        ),
        migrations.RunPython(fill_authors, migrations.RunPython.noop),
    ]
