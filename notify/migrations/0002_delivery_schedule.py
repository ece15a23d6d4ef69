"""django-q2 schedule: deliver due notifications every minute (the retries; a fresh
notification is also kicked off when the transaction that wrote it commits)."""

from django.db import migrations

FUNC = "notify.tasks.deliver_notifications_task"


def create_schedule(apps, schema_editor):
    apps.get_model("django_q", "Schedule").objects.get_or_create(
        func=FUNC,
        defaults={
            "name": "deliver due notifications",
            "schedule_type": "I",
            "minutes": 1,
            "repeats": -1,
        },
    )


def remove_schedule(apps, schema_editor):
    apps.get_model("django_q", "Schedule").objects.filter(func=FUNC).delete()


class Migration(migrations.Migration):
    dependencies = [
        ("notify", "0001_initial"),
        ("django_q", "0019_alter_task_options_alter_ormq_key_alter_ormq_lock_and_more"),
    ]

    operations = [migrations.RunPython(create_schedule, remove_schedule)]
