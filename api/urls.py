"""Routes of the API (`api/v1/…`, JSON) and of the token page (`api/tokens/`); the
project mounts them under `api/`."""

from django.urls import path, re_path
from drf_spectacular.views import SpectacularAPIView

from api import token_views, views

app_name = "api"

urlpatterns = [
    path("tokens/", token_views.token_list, name="tokens"),
    path("tokens/<int:pk>/revoke/", token_views.token_revoke_view, name="token_revoke"),
    path("v1/schema/", SpectacularAPIView.as_view(), name="schema"),
    path("v1/me/", views.Me.as_view(), name="me"),
    path("v1/profiles/", views.ProfileList.as_view(), name="profiles"),
    path("v1/profiles/<str:name>/", views.ProfileDetail.as_view(), name="profile"),
    path("v1/profiles/<str:name>/versions/", views.VersionList.as_view(), name="versions"),
    path(
        "v1/profiles/<str:name>/versions/<int:number>/",
        views.VersionDetail.as_view(),
        name="version",
    ),
    path("v1/imports/", views.ImportUnit.as_view(), name="imports"),
    path("v1/lint/", views.Lint.as_view(), name="lint"),
    path("v1/hosts/", views.HostList.as_view(), name="hosts"),
    path("v1/hosts/<str:name>/", views.HostDetail.as_view(), name="host"),
    path("v1/requests/", views.RequestList.as_view(), name="requests"),
    path("v1/requests/<int:pk>/", views.RequestDetail.as_view(), name="request"),
    path("v1/trials/", views.TrialList.as_view(), name="trials"),
    path("v1/jobs/<int:pk>/", views.JobDetail.as_view(), name="job"),
    path("v1/benchmarks/", views.BenchRunList.as_view(), name="benchmarks"),
    path("v1/history/", views.History.as_view(), name="history"),
    # Anything else under v1/ (a pk that is not a number, a missing slash): JSON too.
    re_path(r"^v1/", views.no_such_route),
]
