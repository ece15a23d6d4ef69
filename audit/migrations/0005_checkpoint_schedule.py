"""django-q2 schedule: sign and export the audit chain's head every 5 minutes
(audit/checkpoints.py; the window in which deleting the newest events goes unseen)."""

from django.db import migrations

FUNC = "audit.tasks.checkpoint_task"


def create_schedule(apps, schema_editor):
    apps.get_model("django_q", "Schedule").objects.get_or_create(
        func=FUNC,
        defaults={
            "name": "audit checkpoint",
            "schedule_type": "I",
            "minutes": 5,
            "repeats": -1,
        },
    )


def remove_schedule(apps, schema_editor):
    apps.get_model("django_q", "Schedule").objects.filter(func=FUNC).delete()


class Migration(migrations.Migration):
    dependencies = [
        ("audit", "0004_chain_head_guard"),
        ("django_q", "0019_alter_task_options_alter_ormq_key_alter_ormq_lock_and_more"),
    ]

    operations = [migrations.RunPython(create_schedule, remove_schedule)]
