"""Admin: runs and baselines are read here; a run becomes the baseline only through the
audited action (perf.services.accept_baseline); policies are edited here."""

from __future__ import annotations

from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest

from perf.models import Baseline, BenchPolicy, BenchRun
from perf.services import accept_baseline
from units.admin import ReadOnlyAdmin


@admin.register(BenchRun)
class BenchRunAdmin(ReadOnlyAdmin):
    list_display = (
        "pk",
        "profile",
        "host",
        "engine",
        "output_tok_s",
        "tpot_p50_ms",
        "verdict",
        "incomplete",
        "created_at",
    )
    list_filter = ("verdict", "incomplete", "engine")
    actions = ["accept_as_baseline"]

    @admin.action(description="Accept the selected run as the baseline of its profile and host")
    def accept_as_baseline(self, request: HttpRequest, queryset: QuerySet[BenchRun]) -> None:
        if not request.user.has_perm("perf.accept_baseline"):
            self.message_user(request, "You may not accept baselines.", messages.ERROR)
            return
        if queryset.count() != 1:
            self.message_user(request, "Select exactly one run.", messages.ERROR)
            return
        run = queryset.get()
        try:
            accept_baseline(run=run, actor=request.user, reason="accepted in the admin")
        except ValueError as exc:
            self.message_user(request, str(exc), messages.ERROR)
            return
        self.message_user(request, f"Run #{run.pk} is now the baseline.", messages.SUCCESS)


@admin.register(Baseline)
class BaselineAdmin(ReadOnlyAdmin):
    list_display = ("profile", "host", "run", "accepted_by", "accepted_at", "reason")


@admin.register(BenchPolicy)
class BenchPolicyAdmin(admin.ModelAdmin):
    list_display = ("profile", "enabled", "threshold_pct", "repeats", "rollback_on_regression")
