"""The schedule that advances unfinished rollouts every minute: a pause between batches
that ended, a coordinator task that was lost (fleet.coordinator.check_rollouts)."""

from django.db import migrations

FUNC = "fleet.tasks.check_rollouts_task"


def forwards(apps, schema_editor):
    apps.get_model("django_q", "Schedule").objects.get_or_create(
        func=FUNC,
        defaults={
            "name": "advance unfinished rollouts",
            "schedule_type": "I",
            "minutes": 1,
            "repeats": -1,
        },
    )


def backwards(apps, schema_editor):
    apps.get_model("django_q", "Schedule").objects.filter(func=FUNC).delete()


class Migration(migrations.Migration):
    dependencies = [
        ("fleet", "0001_rollouts"),
        ("django_q", "0019_alter_task_options_alter_ormq_key_alter_ormq_lock_and_more"),
    ]

    operations = [migrations.RunPython(forwards, backwards)]
