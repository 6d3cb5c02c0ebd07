from django.urls import path

from . import export_views, snapshot_views, views

app_name = "feedback"

urlpatterns = [
    path("", views.queue, name="queue"),
    path("next/", views.next_pending, name="next"),
    path("bulk-reject/", views.bulk_reject, name="bulk_reject"),
    path("bulk-reopen/", views.bulk_reopen, name="bulk_reopen"),
    path("export.jsonl", export_views.export, name="export"),
    path("training-data/", snapshot_views.snapshots, name="snapshots"),
    path("training-data/<str:name>/download.jsonl", snapshot_views.snapshot_download, name="snapshot_download"),
    path("<str:public_id>/", views.detail, name="detail"),
    path("<str:public_id>/review/", views.review, name="review"),
    path("<str:public_id>/claim/", views.claim, name="claim"),
]
