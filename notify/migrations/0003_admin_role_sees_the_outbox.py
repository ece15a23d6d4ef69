"""The admin role gets the outbox's permissions (units/roles.py) on installs whose roles
exist already (units 0006 made them before this app had permissions)."""

from django.apps import apps as global_apps
from django.contrib.auth.management import create_permissions
from django.db import migrations

from units.roles import ensure_roles


def grant(apps, schema_editor):
    create_permissions(global_apps.get_app_config("notify"), verbosity=0, apps=apps)
    ensure_roles(apps)


class Migration(migrations.Migration):
    dependencies = [("notify", "0002_delivery_schedule"), ("units", "0006_role_groups")]

    operations = [migrations.RunPython(grant, migrations.RunPython.noop)]
