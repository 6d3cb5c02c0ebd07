from django.urls import path

from . import export_views, views

app_name = "feedback"

urlpatterns = [
    path("", views.queue, name="queue"),
    path("next/", views.next_pending, name="next"),
    path("bulk-reject/", views.bulk_reject, name="bulk_reject"),
    path("export.jsonl", export_views.export, name="export"),
    path("<str:public_id>/", views.detail, name="detail"),
    path("<str:public_id>/review/", views.review, name="review"),
]
