"""Routes of the benchmark results pages; the project mounts them under `benchmarks/`."""

from django.urls import path

from perf import views

app_name = "perf"

urlpatterns = [
    path("", views.results_index, name="index"),
    path("<int:profile_id>/<int:host_id>/", views.results, name="results"),
    path("runs/<int:run_id>/accept/", views.accept, name="accept"),
]
