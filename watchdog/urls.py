"""Routes of the watchdog's pages; the project mounts them under `watchdog/`."""

from django.urls import path

from watchdog import views

app_name = "watchdog"

urlpatterns = [
    path("", views.fleet, name="fleet"),
    path("fleet-table/", views.fleet_table, name="fleet_table"),
    path("incidents/", views.incident_list, name="incident_list"),
    path("incidents/<int:pk>/", views.incident_detail, name="incident_detail"),
    path("incidents/<int:pk>/take-in/", views.incident_take_in, name="incident_take_in"),
    path("hosts/<int:pk>/live/", views.host_live, name="host_live"),
    path("hosts/<int:pk>/settings/", views.watch_settings, name="watch_settings"),
]
