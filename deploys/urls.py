"""Routes of the host and deploy pages; the project mounts them under `deploys/`."""

from django.urls import path

from deploys import import_views, job_views, trial_views, views

app_name = "deploys"

urlpatterns = [
    path("hosts/", views.host_list, name="host_list"),
    path("hosts/new/", views.host_add, name="host_add"),
    path("hosts/<int:pk>/", views.host_detail, name="host_detail"),
    path("hosts/<int:pk>/edit/", views.host_edit, name="host_edit"),
    path("hosts/<int:pk>/archive/", views.host_archive, name="host_archive"),
    path("hosts/<int:pk>/unarchive/", views.host_unarchive, name="host_unarchive"),
    path("hosts/<int:pk>/probe/", views.host_probe, name="host_probe"),
    path("hosts/<int:pk>/probe-results/", views.host_probe_results, name="host_probe_results"),
    path("hosts/<int:pk>/rescan-key/", views.host_rescan_key, name="host_rescan_key"),
    path("hosts/<int:pk>/pin-key/", views.host_pin_key, name="host_pin_key"),
    path("hosts/<int:pk>/adopt-unit/", views.host_adopt_unit, name="host_adopt_unit"),
    path("hosts/<int:pk>/import-unit/", import_views.host_import_unit, name="host_import_unit"),
    path(
        "hosts/<int:pk>/probe-executables/",
        views.host_probe_executables,
        name="host_probe_executables",
    ),
    path("requests/", views.request_list, name="request_list"),
    path("requests/new/", views.request_new, name="request_new"),
    path("trials/new/", trial_views.trial_new, name="trial_new"),
    path("requests/<int:pk>/", views.request_detail, name="request_detail"),
    path("requests/<int:pk>/approve/", views.request_approve, name="request_approve"),
    path("requests/<int:pk>/reject/", views.request_reject, name="request_reject"),
    path("requests/<int:pk>/job/", job_views.request_job, name="request_job"),
    path("requests/<int:pk>/cancel/", job_views.request_cancel, name="request_cancel"),
    path("requests/<int:pk>/withdraw/", job_views.request_withdraw, name="request_withdraw"),
    path("hosts/<int:pk>/restart/", job_views.host_unit_restart, name="host_unit_restart"),
    path("hosts/<int:pk>/rollback/", job_views.host_unit_rollback, name="host_unit_rollback"),
    path("hosts/<int:pk>/remove/", job_views.host_unit_remove, name="host_unit_remove"),
    path(
        "hosts/<int:pk>/restarts-setting/",
        job_views.host_restarts_setting,
        name="host_restarts_setting",
    ),
]
