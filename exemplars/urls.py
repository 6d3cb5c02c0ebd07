from django.urls import path

from . import views

app_name = "exemplars"

urlpatterns = [
    path("", views.bank, name="bank"),
    path("try/", views.try_it, name="try"),
    path("settings/", views.settings_update, name="settings"),
    path("profiles/", views.profile_create, name="profile_create"),
    path("profiles/<int:pk>/", views.profile_update, name="profile_update"),
    path("profiles/<int:pk>/delete/", views.profile_delete, name="profile_delete"),
    path("profiles/<int:pk>/rebuild/", views.profile_rebuild, name="profile_rebuild"),
]
