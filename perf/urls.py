"""Routes of the benchmark results pages; the project mounts them under `benchmarks/`."""

from django.urls import path

from perf import compare_views, sweep_views, trial_views, views

app_name = "perf"

urlpatterns = [
    path("", views.results_index, name="index"),
    path("<int:profile_id>/<int:host_id>/", views.results, name="results"),
    path("runs/<int:run_id>/accept/", views.accept, name="accept"),
    path("hosts/<int:host_id>/", views.host_results, name="host"),
    path("profiles/<int:profile_id>/settings/", views.policy_edit, name="policy"),
    path("hosts/<int:host_id>/versions/", compare_views.compare_versions, name="compare_versions"),
    path(
        "hosts/<int:host_id>/versions/export.json",
        compare_views.compare_versions_export,
        {"fmt": "json"},
        name="compare_versions_json",
    ),
    path(
        "hosts/<int:host_id>/versions/export.csv",
        compare_views.compare_versions_export,
        {"fmt": "csv"},
        name="compare_versions_csv",
    ),
    path("trials/<int:pk>/", trial_views.trial_results_page, name="trial_results"),
    path(
        "trials/<int:pk>/export.json",
        trial_views.trial_results_export,
        {"fmt": "json"},
        name="trial_results_json",
    ),
    path(
        "trials/<int:pk>/export.csv",
        trial_views.trial_results_export,
        {"fmt": "csv"},
        name="trial_results_csv",
    ),
    path("profiles/<int:profile_id>/sweep/", sweep_views.sweep, name="sweep"),
    path(
        "hosts/<int:host_id>/export.json",
        views.host_export,
        {"fmt": "json"},
        name="host_export_json",
    ),
    path(
        "hosts/<int:host_id>/export.csv", views.host_export, {"fmt": "csv"}, name="host_export_csv"
    ),
]
