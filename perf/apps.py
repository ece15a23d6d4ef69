from django.apps import AppConfig


class PerfConfig(AppConfig):
    """Benchmark results per profile and host, baselines, and the deploy pipeline's
    benchmark step (registered into `deploys.jobs.benchmark` when the app loads)."""

    default_auto_field = "django.db.models.BigAutoField"
    name = "perf"
    verbose_name = "Performance"

    def ready(self) -> None:
        # Imported here, not at the top: both import models, which exist only once every
        # app is loaded (Django's documented place for such registrations).
        from deploys import job_settings  # noqa: PLC0415 (app registry not ready)
        from deploys.jobs import benchmark as hook  # noqa: PLC0415 (app registry not ready)
        from perf.selectors import policy_settings  # noqa: PLC0415 (app registry not ready)
        from perf.step import benchmark_step  # noqa: PLC0415 (app registry not ready)

        hook.register(benchmark_step)
        # The benchmark policy is part of what a deploy's approval covers.
        job_settings.register_benchmark_settings(policy_settings)
