from django.urls import path

from fleet import views

app_name = "fleet"

urlpatterns = [
    path("", views.rollout_list, name="rollout_list"),
    path("new/", views.rollout_new, name="rollout_new"),
    path("<int:pk>/", views.rollout_detail, name="rollout_detail"),
    path("<int:pk>/live/", views.rollout_live, name="rollout_live"),
    path("<int:pk>/decide/", views.rollout_decide, name="rollout_decide"),
    path("<int:pk>/control/", views.rollout_control, name="rollout_control"),
    path("groups/", views.group_list, name="group_list"),
    path("groups/<int:pk>/", views.group_edit, name="group_edit"),
]
