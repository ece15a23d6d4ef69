from django.apps import AppConfig


class SpecadminConfig(AppConfig):
    """The project package as an app, so that its system checks run with every
    `manage.py` command (specadmin/checks.py); it has no models."""

    name = "specadmin"
    verbose_name = "specadmin"

    def ready(self) -> None:
        from specadmin import checks  # noqa: F401, PLC0415 (Django registers checks in ready())
