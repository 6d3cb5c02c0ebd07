from django.urls import path

from . import views

app_name = "sampling"

urlpatterns = [
    path("", views.index, name="index"),
    path("new/", views.plan_new, name="plan_new"),
    path("plans/<int:pk>/", views.plan_detail, name="plan"),
    path("plans/<int:pk>/plan.json", views.plan_json, name="plan_json"),
    path("plans/<int:pk>/enqueue/", views.plan_enqueue_view, name="plan_enqueue"),
]
