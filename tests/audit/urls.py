"""The project's URLconf, plus audit.urls at history/ until the project mounts it itself."""

from django.urls import include, path

from specadmin.urls import urlpatterns as project_urlpatterns

urlpatterns = list(project_urlpatterns)
if not any(str(pattern.pattern) == "history/" for pattern in urlpatterns):
    urlpatterns.append(path("history/", include("audit.urls")))
