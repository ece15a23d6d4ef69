"""Routes of the profile pages; the project mounts them under `profiles/`."""

from django.urls import path

from units import import_views, views

app_name = "units"

urlpatterns = [
    path("", views.profile_list, name="list"),
    path("new/", views.profile_create, name="create"),
    path("preview/", views.profile_preview, name="preview"),
    path("compare/", views.version_compare, name="compare"),
    path("import/", import_views.unit_import, name="import"),
    path("imports/<int:pk>/", import_views.unit_import_detail, name="import_detail"),
    path("<int:pk>/", views.profile_detail, name="detail"),
    path("<int:pk>/edit/", views.profile_edit, name="edit"),
    path("<int:pk>/clone/", views.profile_clone, name="clone"),
    path("<int:pk>/archive/", views.profile_archive, name="archive"),
    path("<int:pk>/unarchive/", views.profile_unarchive, name="unarchive"),
    path("<int:pk>/versions/", views.version_history, name="history"),
    path("<int:pk>/versions/<int:number>/", views.version_detail, name="version"),
    path("<int:pk>/versions/<int:number>/restore/", views.version_restore, name="restore"),
]
