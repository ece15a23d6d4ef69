"""Routes of the audit app; the project mounts them under `history/`."""

from django.urls import path

from audit import views

app_name = "audit"

urlpatterns = [
    path("", views.history, name="history"),
    path("export.csv", views.export_csv, name="export_csv"),
    path("export.json", views.export_json, name="export_json"),
]
