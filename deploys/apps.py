"""Hosts, transports, deploy requests, approvals and the deploy jobs."""

from django.apps import AppConfig

from deploys.jobs import plain_pickle


class DeploysConfig(AppConfig):
    name = "deploys"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # Registers the Q_CLUSTER system checks (retry must exceed timeout; the host lock's
        # wait + lease must fit inside a job's timeout).
        from deploys.jobs import checks  # noqa: F401, PLC0415 (Django registers checks in ready())

        # No pickle stored in the database runs code when read (docs/security.md).
        plain_pickle.install()
