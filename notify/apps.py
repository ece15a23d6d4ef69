"""Notifications: the outbox, its delivery worker task, and the receivers of deploys'
signals (docs/notifications.md)."""

from django.apps import AppConfig


class NotifyConfig(AppConfig):
    name = "notify"
    verbose_name = "Notifications"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # deploys may not import notify (docs/architecture.md): it sends signals, which
        # are connected here, once every model is loaded (Django's place for it).
        from notify import receivers  # noqa: PLC0415 (app registry not ready)

        receivers.connect()
