"""django-q2 schedules for housekeeping: expire deploy requests nobody decided on in time,
and fail jobs whose worker died."""

from django.db import migrations

SCHEDULES = {
    "deploys.services.expire_stale_requests": "expire stale deploy requests",
    "deploys.jobs.runner.fail_abandoned_deploys": "fail deploys whose worker died",
}


def create_schedule(apps, schema_editor):
    schedule = apps.get_model("django_q", "Schedule")
    for func, name in SCHEDULES.items():
        schedule.objects.get_or_create(
            func=func,
            defaults={"name": name, "schedule_type": "I", "minutes": 5, "repeats": -1},
        )


def remove_schedule(apps, schema_editor):
    apps.get_model("django_q", "Schedule").objects.filter(func__in=list(SCHEDULES)).delete()


class Migration(migrations.Migration):
    dependencies = [
        ("deploys", "0002_hostlock"),
        ("django_q", "0019_alter_task_options_alter_ormq_key_alter_ormq_lock_and_more"),
    ]

    operations = [migrations.RunPython(create_schedule, remove_schedule)]
