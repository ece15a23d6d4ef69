"""Operators and admins may change a host's watch settings on its page
(watchdog.views.watch_settings): the role groups get `watchdog.change_hostwatch`
(units/roles.py), as units migration 0006 grants the roles' other permissions."""

from django.apps import apps as global_apps
from django.contrib.auth.management import create_permissions
from django.db import migrations

from units.roles import ensure_roles


def grant(apps, schema_editor):
    create_permissions(global_apps.get_app_config("watchdog"), verbosity=0, apps=apps)
    ensure_roles(apps)


class Migration(migrations.Migration):
    dependencies = [
        ("watchdog", "0003_hostwatch_hung_window_and_canary"),
        ("units", "0006_role_groups"),
    ]

    operations = [migrations.RunPython(grant, migrations.RunPython.noop)]
