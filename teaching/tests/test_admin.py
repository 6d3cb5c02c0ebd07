"""The read-only Django admin of teaching history."""

import pytest
from django.contrib.auth import get_user_model

from consoles.tests.factories import ApplicationFactory
from teaching.tests.factories import CandidateFactory, CorpusEntryFactory, EvalCaseFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def admin_client(client):
    client.force_login(get_user_model().objects.create_superuser("root", "root@example.com", "root-pass-2026!"))
    return client


@pytest.mark.parametrize("model, factory, marker", [
    ("candidate", CandidateFactory, "candidate_id"),
    ("corpusentry", CorpusEntryFactory, "subject"),
    ("evalcase", EvalCaseFactory, "case_id"),
])
def test_teaching_rows_are_filtered_by_application(admin_client, application, model, factory, marker):
    mine, theirs = factory(application=application), factory(application=ApplicationFactory())
    listing = admin_client.get(f"/admin/teaching/{model}/")
    assert f"?application__id__exact={application.pk}" in listing.text  # the sidebar offers each tenant
    page = admin_client.get(f"/admin/teaching/{model}/", {"application__id__exact": application.pk})
    assert page.status_code == 200
    assert getattr(mine, marker) in page.text and getattr(theirs, marker) not in page.text


@pytest.mark.parametrize("model", ["proposal", "proposalevent", "proposaldecision"])
def test_proposal_history_offers_a_filter_by_application(admin_client, application, model):
    ApplicationFactory()  # the filter shows once there is a choice to make
    listing = admin_client.get(f"/admin/teaching/{model}/")
    assert listing.status_code == 200 and f"?application__id__exact={application.pk}" in listing.text


@pytest.mark.parametrize("model, factory, field", [
    ("corpusentry", CorpusEntryFactory, "subject"),
    ("evalcase", EvalCaseFactory, "case_id"),
])
def test_corpus_entries_and_eval_cases_are_found_by_search(admin_client, application, model, factory, field):
    wanted, other = factory(application=application), factory(application=application)
    page = admin_client.get(f"/admin/teaching/{model}/", {"q": getattr(wanted, field)})
    assert page.status_code == 200
    assert getattr(wanted, field) in page.text and getattr(other, field) not in page.text
