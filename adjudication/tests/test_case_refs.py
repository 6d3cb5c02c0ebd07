"""Every case route takes the case's `case_id` (as the pipeline and the screens
name it), and its number where no case has that id."""

import pytest

from consoles.models import Role
from consoles.testing import bearer
from consoles.tests.factories import (
    ApplicationFactory,
    MembershipFactory,
    UserFactory,
    personal_token,
)

from .factories import CaseFactory

pytestmark = pytest.mark.django_db


def _feedback(client, url, token=None, **query):
    suffix = ("?" + "&".join(f"{k}={v}" for k, v in query.items())) if query else ""
    return client.post(url + suffix, data={"disposition": "disagrees", "note": "replay differs"},
                       content_type="application/json", **(bearer(token) if token else {}))


def test_api_takes_the_case_id_and_still_the_number(client, application, app_token):
    case = CaseFactory(application=application, case_id="acme-chat-case-024")
    by_id = client.get("/api/v1/cases/acme-chat-case-024", **bearer(app_token))
    assert by_id.status_code == 200 and by_id.json()["id"] == case.pk
    assert client.get(f"/api/v1/cases/{case.pk}", **bearer(app_token)).json()["case_id"] == "acme-chat-case-024"
    response = _feedback(client, "/api/v1/cases/acme-chat-case-024/feedback", app_token)
    assert response.status_code == 201 and response.json()["case_id"] == "acme-chat-case-024"
    assert client.get("/api/v1/cases/no-such-case", **bearer(app_token)).status_code == 404


def test_a_numeric_case_id_wins_over_another_cases_number(client, application, app_token):
    other = CaseFactory(application=application, case_id="other")
    numbered = CaseFactory(application=application, case_id=str(other.pk))
    assert client.get(f"/api/v1/cases/{other.pk}", **bearer(app_token)).json()["id"] == numbered.pk


def test_the_same_case_id_in_another_tenant_is_not_found(client, tenant_pair):
    CaseFactory(application=tenant_pair.b, case_id="shared-id")
    theirs_by_number = CaseFactory(application=tenant_pair.b, case_id="theirs")
    assert client.get("/api/v1/cases/shared-id", **bearer(tenant_pair.token_a)).status_code == 404
    assert client.get(f"/api/v1/cases/{theirs_by_number.pk}", **bearer(tenant_pair.token_a)).status_code == 404
    assert _feedback(client, "/api/v1/cases/shared-id/feedback", tenant_pair.token_a).status_code == 404
    person = personal_token(tenant_pair.member_of_a)
    assert client.get("/api/v1/cases/shared-id", **bearer(person)).status_code == 404
    assert client.get(f"/api/v1/cases/shared-id?application_id={tenant_pair.b.slug}",
                      **bearer(person)).status_code == 404


def test_a_person_names_the_application_when_two_of_theirs_share_the_case_id(client, application):
    second = ApplicationFactory(slug="second")
    user = UserFactory()
    for app in (application, second):
        MembershipFactory(user=user, application=app, role=Role.VIEWER)
    CaseFactory(application=application, case_id="dup")
    mine = CaseFactory(application=second, case_id="dup")
    CaseFactory(application=second, case_id="only-here")
    token = personal_token(user)
    ambiguous = client.get("/api/v1/cases/dup", **bearer(token))
    assert ambiguous.status_code == 422 and "application_id" in ambiguous.json()["error"]["fields"]
    assert client.get("/api/v1/cases/dup?application_id=second", **bearer(token)).json()["id"] == mine.pk
    assert client.get("/api/v1/cases/only-here", **bearer(token)).status_code == 200  # unique: no need to name it


def test_screens_take_the_case_id_and_link_by_it(client, application, curator):
    case = CaseFactory(application=application, case_id="acme-chat-case-024")
    client.force_login(curator)
    page = client.get("/a/acme/cases/acme-chat-case-024/")
    assert page.status_code == 200 and "acme-chat-case-024" in page.content.decode()
    assert client.get(f"/a/acme/cases/{case.pk}/").status_code == 200
    listing = client.get("/a/acme/cases/").content.decode()
    assert 'href="/a/acme/cases/acme-chat-case-024/"' in listing
    assert client.get("/a/acme/cases/nope/").status_code == 404
    response = client.post("/a/acme/cases/acme-chat-case-024/feedback/", {"disposition": "agrees", "note": ""})
    assert response.status_code == 302 and response["Location"] == "/a/acme/cases/acme-chat-case-024/"


def test_a_case_id_with_a_slash_is_linked_by_its_number(application):
    case = CaseFactory(application=application, case_id="batch/7")
    assert case.ref == str(case.pk)
