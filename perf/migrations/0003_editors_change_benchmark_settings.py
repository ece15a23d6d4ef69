"""Editors (operators, admins) may change a profile's benchmark settings on its page
(perf.views.policy_edit): the role groups get `perf.change_benchpolicy` (units/roles.py),
as units migration 0006 grants the roles' other permissions."""

from django.apps import apps as global_apps
from django.contrib.auth.management import create_permissions
from django.db import migrations

from units.roles import ensure_roles


def grant(apps, schema_editor):
    create_permissions(global_apps.get_app_config("perf"), verbosity=0, apps=apps)
    ensure_roles(apps)


class Migration(migrations.Migration):
    dependencies = [
        ("perf", "0002_policy_noisy_budget_client_on_host"),
        ("units", "0006_role_groups"),
    ]

    operations = [migrations.RunPython(grant, migrations.RunPython.noop)]
