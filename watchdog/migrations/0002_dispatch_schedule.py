"""The watchdog's dispatcher runs every minute (django-q2's finest schedule period); each
run claims due hosts and enqueues their checks for about a minute (watchdog.dispatch)."""

from django.db import migrations

FUNC = "watchdog.tasks.dispatch_task"


def create_schedule(apps, schema_editor):
    apps.get_model("django_q", "Schedule").objects.get_or_create(
        func=FUNC,
        defaults={
            "name": "watchdog: check due hosts",
            "schedule_type": "I",
            "minutes": 1,
            "repeats": -1,
        },
    )


def remove_schedule(apps, schema_editor):
    apps.get_model("django_q", "Schedule").objects.filter(func=FUNC).delete()


class Migration(migrations.Migration):
    dependencies = [
        ("watchdog", "0001_watch_state_and_incidents"),
        ("django_q", "0019_alter_task_options_alter_ormq_key_alter_ormq_lock_and_more"),
    ]

    operations = [migrations.RunPython(create_schedule, remove_schedule)]
