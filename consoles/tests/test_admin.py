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


def _without(keys: list[str], key: str) -> str:
    return json.dumps([k for k in keys if k != key])


def _change(admin_client, application, **overrides):
    return admin_client.post(f"/admin/consoles/application/{application.pk}/change/",
                             _application_form(application, **overrides))


@pytest.mark.parametrize("used_as", ["axis", "suggested_axis"])
def test_an_axis_a_flag_uses_cannot_be_removed_and_nothing_changes(admin_client, application, used_as):
    """A re-opened flag on a removed axis could not be approved as it was, and the
    axis would vanish from the queue's filters while flags still carried it."""
    if used_as == "axis":  # approved under another axis than its problem suggests
        FlagFactory(application=application, problem="fabricated", suggested_axis="hallucination", axis="toxicity")
    else:  # flagged while `offensive` still suggested toxicity; it now suggests hallucination
        FlagFactory(application=application, problem="offensive", suggested_axis="toxicity", axis="")
    # Every problem that maps to toxicity is mapped elsewhere, so only the flag holds it.
    problems = [{**p, "axis": "hallucination"} if p["axis"] == "toxicity" else p for p in application.problems]
    before = (application.axes, application.problems)
    response = _change(admin_client, application, axes=_without(application.axes, "toxicity"),
                       problems=json.dumps(problems))
    assert response.status_code == 200
    assert response.context["adminform"].form.errors["axes"] == [
        "Still used, so it cannot be removed: 'toxicity' by flags."
    ]
    application.refresh_from_db()
    assert (application.axes, application.problems) == before


def test_an_axis_no_flag_uses_is_removed_and_another_tenants_flags_do_not_hold_it(admin_client, application):
    FlagFactory(application=ApplicationFactory(slug="other"), problem="offensive", suggested_axis="toxicity")
    axes = [a for a in application.axes if a != "toxicity"]
    problems = [p for p in application.problems if p["axis"] != "toxicity"]
    response = _change(admin_client, application, axes=json.dumps(axes), problems=json.dumps(problems))
    assert response.status_code == 302
    application.refresh_from_db()
    assert application.axes == axes and "offensive" not in application.problem_keys


def test_a_problem_in_use_keeps_its_key_and_may_change_its_wording(admin_client, application):
    FlagFactory(application=application, problem="fabricated")
    problems = [p for p in application.problems if p["key"] != "fabricated"]
    response = _change(admin_client, application, problems=json.dumps(problems))
    assert response.context["adminform"].form.errors["problems"] == [
        "Still used, so it cannot be removed: 'fabricated' by flags."
    ]
    reworded = [{**p, "label": "Invented a fact"} if p["key"] == "fabricated" else p for p in application.problems]
    assert _change(admin_client, application, problems=json.dumps(reworded)).status_code == 302
    application.refresh_from_db()
    assert application.problems == reworded


def test_a_capture_label_or_case_label_in_use_cannot_be_removed(admin_client, application):
    from adjudication.tests.factories import CaseFactory, CaseLabelFactory
    from feedback.tests.factories import CaptureFactory

    CaptureFactory(application=application, status="labelled", capture_label="wrong")
    CaseLabelFactory(case=CaseFactory(application=application), label="contradicted")
    before = (application.capture_labels, application.case_labels)
    response = _change(admin_client, application, capture_labels=_without(application.capture_labels, "wrong"),
                       case_labels=_without(application.case_labels, "contradicted"))
    errors = response.context["adminform"].form.errors
    assert errors["capture_labels"] == ["Still used, so it cannot be removed: 'wrong' by flags."]
    assert errors["case_labels"] == ["Still used, so it cannot be removed: 'contradicted' by case labels."]
    application.refresh_from_db()
    assert (application.capture_labels, application.case_labels) == before
    # A label nobody gave goes.
    response = _change(admin_client, application, capture_labels=_without(application.capture_labels, "correct"))
    assert response.status_code == 302


def test_deleting_a_tenant_with_history_the_admin_does_not_show_is_refused_not_a_500(admin_client):
    from adjudication.tests.factories import CaseFactory

    application = ApplicationFactory()
    CaseFactory(application=application)  # cases and their events have no admin of their own
    page = admin_client.get(f"/admin/consoles/application/{application.pk}/delete/")
    assert page.status_code == 200 and "doesn't have permission to delete" in page.text
    assert admin_client.post(f"/admin/consoles/application/{application.pk}/delete/", {"post": "yes"}).status_code == 403
    assert Application.objects.filter(pk=application.pk).exists()
