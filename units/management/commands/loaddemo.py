"""`manage.py loaddemo`: the demo account the README names (idempotent; `make run` calls it).

The seed deployment's demo profiles join this command with the profiles feature.
"""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand

DEMO_USERNAME = "admin"
DEMO_PASSWORD = "specadmin-demo"


class Command(BaseCommand):
    help = "Load demo data (idempotent): the demo admin account."

    def handle(self, *args: object, **options: object) -> None:
        user_model = get_user_model()
        user, created = user_model.objects.get_or_create(
            username=DEMO_USERNAME, defaults={"is_staff": True, "is_superuser": True}
        )
        if created:
            user.set_password(DEMO_PASSWORD)
            user.save()
            self.stdout.write(f"created demo admin {DEMO_USERNAME!r}")
        else:
            self.stdout.write(f"demo admin {DEMO_USERNAME!r} already exists (left unchanged)")
