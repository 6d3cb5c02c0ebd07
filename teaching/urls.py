from django.urls import path

from . import views

app_name = "teaching"

urlpatterns = [
    path("", views.index, name="index"),
    path("proposals/<str:proposal_id>/", views.proposal_detail, name="proposal"),
    path("proposals/<str:proposal_id>/decide/", views.proposal_decide, name="decide"),
    path("candidates/", views.candidate_list, name="candidates"),
    path("candidates/<str:candidate_id>/propose/", views.candidate_propose, name="propose"),
    path("evals/", views.evals, name="evals"),
    path("corpus/", views.corpus, name="corpus"),
]
