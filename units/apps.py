"""vLLM service profiles and their rendering to systemd units."""

from django.apps import AppConfig


class UnitsConfig(AppConfig):
    name = "units"
    default_auto_field = "django.db.models.BigAutoField"
