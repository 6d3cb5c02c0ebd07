"""The Django admin of tenants, memberships and tokens, as an admin uses it."""

import json

import pytest
from django.contrib.auth import get_user_model
from django.db import connection
from django.test.utils import CaptureQueriesContext

from consoles.models import Application, Role
from consoles.tests.factories import ApiTokenFactory, ApplicationFactory, MembershipFactory
from feedback.tests.factories import FlagFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def admin_client(client):
    client.force_login(get_user_model().objects.create_superuser("root", "root@example.com", "root-pass-2026!"))
    return client


def _application_form(application: Application, **overrides) -> dict:
    data = {
        "slug": application.slug, "name": application.name, "axes": json.dumps(application.axes),
        "problems": json.dumps(application.problems), "capture_max_items": application.capture_max_items,
        "capture_labels": json.dumps(application.capture_labels), "case_labels": json.dumps(application.case_labels),
        "retention_days": "",
        "memberships-TOTAL_FORMS": "0", "memberships-INITIAL_FORMS": "0",
        "tokens-TOTAL_FORMS": "0", "tokens-INITIAL_FORMS": "0",
    }
    data.update(overrides)
    return data


@pytest.mark.parametrize("problem", [
    {"key": ["fabricated"], "label": "Made something up", "axis": "hallucination"},  # was a 500 (unhashable)
    {"key": "", "label": "Made something up", "axis": "hallucination"},
    {"key": 7, "label": "Made something up", "axis": "hallucination"},
    {"key": "fabricated", "label": " ", "axis": "hallucination"},
])
def test_a_problem_that_is_not_named_by_strings_is_a_form_error(admin_client, application, problem):
    before = application.problems
    response = admin_client.post(
        f"/admin/consoles/application/{application.pk}/change/",
        _application_form(application, problems=json.dumps([problem])),
    )
    assert response.status_code == 200
    assert "non-empty strings" in response.context["adminform"].form.errors["problems"][0]
    application.refresh_from_db()
    assert application.problems == before


def test_a_retention_of_zero_days_is_a_form_error_in_words(admin_client, application):
    response = admin_client.post(
        f"/admin/consoles/application/{application.pk}/change/", _application_form(application, retention_days="0")
    )
    assert response.status_code == 200
    assert response.context["adminform"].form.errors["retention_days"] == [
        "Keep flags at least 1 day, or leave it blank to keep them."
    ]
    application.refresh_from_db()
    assert application.retention_days is None


def test_the_application_page_reads_members_and_tokens_without_a_query_per_row(admin_client):
    def queries(extra: int) -> int:
        application = ApplicationFactory()
        for _ in range(extra):
            MembershipFactory(application=application, role=Role.VIEWER)
            ApiTokenFactory(application=application)
        with CaptureQueriesContext(connection) as captured:
            response = admin_client.get(f"/admin/consoles/application/{application.pk}/change/")
        assert response.status_code == 200
        return len(captured)

    # What stays per member is the user picker's own lookup of the selected user.
    assert queries(6) - queries(1) <= 5


def test_deleting_a_tenant_with_history_is_refused_without_reading_its_history(admin_client, application):
    flags = FlagFactory.create_batch(3, application=application)
    with CaptureQueriesContext(connection) as captured:
        page = admin_client.get(f"/admin/consoles/application/{application.pk}/delete/")
    assert page.status_code == 200
    assert "doesn't have permission to delete" in page.text and "<li>flag</li>" in page.text
    assert flags[0].public_id not in page.text
    # The flags are probed (one EXISTS), never read row by row for a list no one can act on.
    flag_reads = [q["sql"] for q in captured if 'FROM "feedback_flag"' in q["sql"]]
    assert flag_reads and all("LIMIT 1" in sql for sql in flag_reads)
    assert admin_client.post(f"/admin/consoles/application/{application.pk}/delete/", {"post": "yes"}).status_code == 403
    assert Application.objects.filter(pk=application.pk).exists()


def test_a_tenant_without_history_is_deleted_from_the_admin(admin_client):
    application = ApplicationFactory()
    MembershipFactory(application=application)
    page = admin_client.get(f"/admin/consoles/application/{application.pk}/delete/")
    assert page.status_code == 200 and "Are you sure" in page.text and "Membership:" in page.text
    admin_client.post(f"/admin/consoles/application/{application.pk}/delete/", {"post": "yes"})
    assert not Application.objects.filter(pk=application.pk).exists()
