"""The four roles (viewer, operator, approver, admin; units/roles.py) on every install.

Before, only `loaddemo` created them: a production install that ran `migrate` had no roles
to give its users. Django creates permissions after all migrations ran (its post_migrate
handler), so they are created here first for the apps whose permissions the roles hold;
both steps are idempotent, and groups an administrator changed keep their extra grants.
"""

from django.apps import apps as global_apps
from django.contrib.auth.management import create_permissions
from django.db import migrations

from units.roles import ensure_roles

APPS_WITH_ROLE_PERMISSIONS = ("units", "audit", "deploys", "perf")


def create_roles(apps, schema_editor):
    for label in APPS_WITH_ROLE_PERMISSIONS:
        create_permissions(global_apps.get_app_config(label), verbosity=0, apps=apps)
    ensure_roles(apps)


class Migration(migrations.Migration):
    dependencies = [
        ("units", "0005_version_authors"),
        ("auth", "0012_alter_user_first_name_max_length"),
        ("contenttypes", "0002_remove_content_type_name"),
        ("audit", "0001_initial"),
        ("deploys", "0010_rolled_back_label_fits_new_and_replaced_units"),
        ("perf", "0001_bench_results"),
    ]

    operations = [migrations.RunPython(create_roles, migrations.RunPython.noop)]
