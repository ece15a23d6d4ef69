"""URL routes for specadmin."""

from django.contrib import admin
from django.urls import include, path

from specadmin import views
from specadmin.accounts import account_patterns

urlpatterns = [
    path("", views.home, name="home"),
    path("admin/", admin.site.urls),
    # Django's account pages; reset by e-mail only with a mail server (specadmin/accounts.py).
    path("accounts/", include(account_patterns())),
    path("profiles/", include("units.urls")),
    path("history/", include("audit.urls")),
    path("deploys/", include("deploys.urls")),
    path("benchmarks/", include("perf.urls")),
    # Host groups and rollouts: one version to many hosts (fleet/; docs/rollouts.md).
    path("rollouts/", include("fleet.urls")),
    path("watchdog/", include("watchdog.urls")),
    # The REST API for CI and scripts, and the token page (api/; docs/api.md).
    path("api/", include("api.urls")),
    # Each person's notification settings (notify/; docs/notifications.md).
    path("notifications/", include("notify.urls")),
]

# The site's own 403 page, naming the roles that would allow what was refused.
handler403 = "specadmin.access.permission_denied"
