"""Routes of the notification settings page (mounted under `notifications/`)."""

from django.urls import path

from notify import views

app_name = "notify"

urlpatterns = [
    path("", views.settings_page, name="settings"),
    path("webhooks/<int:pk>/delete/", views.webhook_delete, name="webhook_delete"),
]
