from django.urls import path

from . import views

app_name = "adjudication"

# A case is addressed by its case id (as the pipeline and every screen name it) or
# by its number; the literal routes above the case's come first, so a case whose
# id is "queue" or "agreement" is reached by its number.
urlpatterns = [
    path("", views.index, name="index"),
    path("queue/", views.queue, name="queue"),
    path("queue/claim/", views.claim_next, name="claim_next"),
    path("queue/<int:entry_pk>/release/", views.release, name="release"),
    path("queue/<int:entry_pk>/skip/", views.skip, name="skip"),
    path("agreement/", views.agreement_page, name="agreement"),
    path("<str:case_ref>/", views.case_detail, name="case"),
    path("<str:case_ref>/label/", views.label, name="label"),
    path("<str:case_ref>/gold/", views.promote, name="promote"),
    path("<str:case_ref>/enqueue/", views.enqueue, name="enqueue"),
    path("<str:case_ref>/feedback/", views.feedback, name="feedback"),
]
