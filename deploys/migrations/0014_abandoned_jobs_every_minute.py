"""The housekeeping that marks a dead worker's job `interrupted` runs every minute (was 5):
it acts as soon as the job's host lease has expired (`deploys.jobs.liveness`), so its
period is how long after the expiry the request still says `running`
(docs/architecture.md, "Jobs and steps")."""

from django.db import migrations

FUNC = "deploys.jobs.tasks.fail_abandoned_deploys_task"


def _every(apps, minutes):
    apps.get_model("django_q", "Schedule").objects.filter(func=FUNC).update(minutes=minutes)


def forwards(apps, schema_editor):
    _every(apps, 1)


def backwards(apps, schema_editor):
    _every(apps, 5)


class Migration(migrations.Migration):
    dependencies = [("deploys", "0013_host_foreign_vllm_units")]

    operations = [migrations.RunPython(forwards, backwards)]
