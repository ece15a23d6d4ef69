from django.apps import AppConfig


class FleetConfig(AppConfig):
    """Host groups and rollouts. `deploys` does not import `fleet`: the coordinator's task
    wrappers are added to the worker's allow-list, and the coordinator listens for the end
    of deploy jobs, through registrations made here (docs/rollouts.md)."""

    default_auto_field = "django.db.models.BigAutoField"
    name = "fleet"
    verbose_name = "Fleet"

    def ready(self) -> None:
        # Imported here: they import models, which exist only once every app is loaded.
        from deploys import signals  # noqa: PLC0415 (app registry not ready)
        from deploys.jobs import allowlist  # noqa: PLC0415 (app registry not ready)
        from fleet import coordinator, tasks  # noqa: PLC0415 (app registry not ready)

        allowlist.register_tasks(tasks.advance_rollout_task, tasks.check_rollouts_task)
        signals.job_ended.connect(coordinator.on_job_ended, dispatch_uid="fleet.job_ended")
