from django.urls import path

from . import views

app_name = "adjudication"

urlpatterns = [
    path("", views.index, name="index"),
    path("queue/", views.queue, name="queue"),
    path("queue/claim/", views.claim_next, name="claim_next"),
    path("queue/<int:entry_pk>/release/", views.release, name="release"),
    path("queue/<int:entry_pk>/skip/", views.skip, name="skip"),
    path("agreement/", views.agreement_page, name="agreement"),
    path("<int:pk>/", views.case_detail, name="case"),
    path("<int:pk>/label/", views.label, name="label"),
    path("<int:pk>/gold/", views.promote, name="promote"),
    path("<int:pk>/enqueue/", views.enqueue, name="enqueue"),
    path("<int:pk>/feedback/", views.feedback, name="feedback"),
]
