"""Point the housekeeping schedules at the stable task wrappers in `deploys.jobs.tasks`
(the functions behind them moved when `deploys/services.py` was split by subject)."""

from django.db import migrations

MOVED = {
    "deploys.services.expire_stale_requests": "deploys.jobs.tasks.expire_stale_requests_task",
    "deploys.jobs.runner.fail_abandoned_deploys": "deploys.jobs.tasks.fail_abandoned_deploys_task",
}


def _repoint(apps, mapping):
    schedule = apps.get_model("django_q", "Schedule")
    for old, new in mapping.items():
        schedule.objects.filter(func=old).update(func=new)


def forwards(apps, schema_editor):
    _repoint(apps, MOVED)


def backwards(apps, schema_editor):
    _repoint(apps, {new: old for old, new in MOVED.items()})


class Migration(migrations.Migration):
    dependencies = [("deploys", "0003_housekeeping_schedules")]

    operations = [migrations.RunPython(forwards, backwards)]
