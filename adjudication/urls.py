from django.urls import path

from . import views

app_name = "adjudication"

urlpatterns = [
    path("", views.index, name="index"),
]
