from django.apps import AppConfig


class WatchdogConfig(AppConfig):
    """Per-host checks between jobs, their incidents and the fleet page (docs/watchdog.md).

    Its task wrappers join the worker's allow-list and a check follows every job: both
    registered into `deploys` when the app loads, as `perf` registers its benchmark step.
    """

    default_auto_field = "django.db.models.BigAutoField"
    name = "watchdog"
    verbose_name = "Watchdog"

    def ready(self) -> None:
        # Imported here: they import models, which exist once every app is loaded.
        from deploys.jobs import allowlist  # noqa: PLC0415 (app registry not ready)
        from deploys.signals import job_finished  # noqa: PLC0415 (app registry not ready)
        from notify import incidents  # noqa: PLC0415 (app registry not ready)
        from watchdog import signals, tasks  # noqa: PLC0415 (app registry not ready)
        from watchdog.dispatch import check_after_job  # noqa: PLC0415 (app registry not ready)

        allowlist.register_tasks(tasks.dispatch_task, tasks.check_task)
        job_finished.connect(check_after_job, dispatch_uid="watchdog.check_after_job")
        # Incidents opened and closed are told to people (docs/notifications.md).
        incidents.connect(signals.incident_opened, signals.incident_closed)
