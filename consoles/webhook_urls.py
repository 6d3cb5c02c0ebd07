from django.urls import path

from . import webhook_views as views

app_name = "webhooks"

urlpatterns = [
    path("", views.endpoint_list, name="list"),
    path("<int:pk>/", views.endpoint_detail, name="detail"),
    path("<int:pk>/toggle/", views.endpoint_toggle, name="toggle"),
    path("<int:pk>/delete/", views.endpoint_delete, name="delete"),
    path("<int:pk>/deliveries/<int:delivery_pk>/redeliver/", views.delivery_redeliver, name="redeliver"),
]
