import re

import pytest

from consoles.models import Role
from consoles.services import token_issue, token_revoke
from consoles.testing import assert_api_sealed, bearer
from consoles.tests.factories import (
    MembershipFactory,
    UserFactory,
    application_token,
    personal_token,
)
from feedback.models import Flag, FlagEvent, FlagReview

from .factories import CaptureFactory, FlagFactory

pytestmark = pytest.mark.django_db

FLAG = {
    "region": "answer",
    "problem": "fabricated",
    "note": "invented a citation",
    "prompt": "Who won the 1923 Paris Review prize?",
    "context": "",
    "answer": "The 1923 Paris Review prize went to ...",
    "detector_scores": {"hallucination": 0.12},
    "message_id": "msg_42",
    "session_id": "sess_7",
}


def _post(client, token, body, url="/api/v1/flags", **extra):
    return client.post(url, data=body, content_type="application/json", **bearer(token), **extra)


def test_create_returns_201_with_id_status_suggested_axis(client, application, app_token):
    response = _post(client, app_token, FLAG)
    assert response.status_code == 201
    body = response.json()
    assert body["id"].startswith("fb_") and len(body["id"]) == 19
    assert body["status"] == "pending" and body["suggested_axis"] == "hallucination"
    assert body["created_at"] and body["author_kind"] == "end_user" and body["version"] == 1


def test_the_same_message_and_region_again_is_200_with_the_existing_flag(client, application, app_token):
    first = _post(client, app_token, FLAG).json()
    again = _post(client, app_token, {**FLAG, "note": "changed"})
    assert again.status_code == 200 and again.json()["id"] == first["id"] and again.json()["note"] == FLAG["note"]
    assert Flag.objects.count() == 1


def test_application_id_must_match_the_token(client, application, app_token, tenant_pair):
    assert _post(client, app_token, {**FLAG, "application_id": "acme"}).status_code == 201
    response = _post(client, app_token, {**FLAG, "message_id": "m2", "application_id": tenant_pair.b.slug})
    assert response.status_code == 403 and response.json()["error"]["fields"] == {
        "application_id": "does not match the token's application"}
    assert Flag.objects.count() == 1


def test_a_curator_flags_as_an_operator_with_a_personal_token(client, application, curator):
    response = _post(client, personal_token(curator), {**FLAG, "application_id": "acme"})
    assert response.status_code == 201 and response.json()["author_kind"] == "operator"


def test_captures_need_the_application_to_opt_in(client, application, app_token):
    capture = {"region": "answer", "prompt": "q", "answer": "I think?", "message_id": "c1",
               "capture_reason": "low_confidence"}
    response = _post(client, app_token, capture)
    assert response.status_code == 403
    assert response.json()["error"]["code"] == "capture_disabled"
    assert "capture is disabled" in response.json()["error"]["message"].lower()
    assert not Flag.objects.exists()
    application.capture_enabled = application.capture_on_low_confidence = True
    application.save()
    response = _post(client, app_token, capture)
    assert response.status_code == 201 and response.json()["author_kind"] == "agent"


def test_malformed_json_is_400(client, application, app_token):
    response = client.post("/api/v1/flags", data="{not json", content_type="application/json", **bearer(app_token))
    assert response.status_code == 400 and set(response.json()["error"]) == {"code", "message", "fields"}
    assert not Flag.objects.exists()


def test_schema_violations_are_422_naming_each_field(client, application, app_token):
    response = _post(client, app_token, {**FLAG, "region": "middle", "detector_scores": {"x": "high"},
                                         "message_id": "", "surprise": 1})
    assert response.status_code == 422
    fields = response.json()["error"]["fields"]
    assert {"region", "message_id", "surprise"} <= set(fields) and any(f.startswith("detector_scores") for f in fields)
    assert not Flag.objects.exists()


def test_domain_violations_are_422_naming_the_field(client, application, app_token):
    response = _post(client, app_token, {**FLAG, "problem": "nonsense", "detector_scores": {"made_up": 0.1}})
    assert response.status_code == 422
    assert set(response.json()["error"]["fields"]) == {"problem", "detector_scores"}


def test_a_body_over_the_limit_is_413(client, application, app_token, settings):
    settings.API_MAX_BODY_BYTES = 1000
    response = _post(client, app_token, {**FLAG, "prompt": "x" * 2000})
    assert response.status_code == 413 and response.json()["error"]["code"] == "too_large"
    assert not Flag.objects.exists()


def test_unknown_or_revoked_token_is_401(client, application):
    assert _post(client, "cc_app_nope", FLAG).status_code == 401
    issued = token_issue(name="old", application=application)
    token_revoke(token=issued.token)
    response = _post(client, issued.secret, FLAG)
    assert response.status_code == 401 and response.json()["error"]["code"] == "unauthorized"


def test_list_filters_and_pages_by_cursor(client, application, app_token):
    for i in range(5):
        FlagFactory(application=application, message_id=f"m{i}")
    CaptureFactory(application=application, message_id="c")
    response = client.get("/api/v1/flags?status=pending&author_kind=end_user&limit=3", **bearer(app_token))
    assert response.status_code == 200
    first = response.json()
    assert len(first["items"]) == 3 and first["next_cursor"] and first["previous_cursor"] is None
    second = client.get(f"/api/v1/flags?status=pending&author_kind=end_user&limit=3&cursor={first['next_cursor']}",
                        **bearer(app_token)).json()
    assert len(second["items"]) == 2 and second["next_cursor"] is None
    ids = {f["id"] for f in first["items"] + second["items"]}
    assert len(ids) == 5 and all(i.startswith("fb_") for i in ids)


def test_list_with_bad_filters_is_422(client, application, app_token):
    response = client.get("/api/v1/flags?status=done&created_from=yesterday", **bearer(app_token))
    assert response.status_code == 422
    assert "created_from" in response.json()["error"]["fields"]
    response = client.get("/api/v1/flags?axis=nope", **bearer(app_token))
    assert response.status_code == 422 and "axis" in response.json()["error"]["fields"]
    # a day so far out that the day arithmetic would overflow (it was a 500)
    response = client.get("/api/v1/flags?created_to=9999-12-31", **bearer(app_token))
    assert response.status_code == 422
    assert response.json()["error"]["fields"]["created_to"].startswith("Choose a day from 1970-01-01 to ")


def test_list_by_a_human_needs_membership(client, application, curator, tenant_pair):
    token = personal_token(curator)
    assert client.get("/api/v1/flags?application_id=acme", **bearer(token)).status_code == 200
    assert client.get(f"/api/v1/flags?application_id={tenant_pair.b.slug}", **bearer(token)).status_code == 404
    assert client.get("/api/v1/flags", **bearer(token)).status_code == 403


def test_detail_includes_the_history(client, application, app_token, curator):
    flag = FlagFactory(application=application)
    client.force_login(curator)
    client.post(f"/api/v1/flags/{flag.public_id}/review", data={"status": "rejected", "version": 1},
                content_type="application/json")
    body = client.get(f"/api/v1/flags/{flag.public_id}", **bearer(app_token)).json()
    assert body["status"] == "rejected"
    assert [(e["action"], e["from_status"], e["to_status"], e["actor"]) for e in body["events"]] == [
        ("rejected", "pending", "rejected", "user:cora")]


def test_another_tenants_flag_is_404(client, tenant_pair):
    flag = FlagFactory(application=tenant_pair.b)
    assert_api_sealed(client, tenant_pair.token_a, f"/api/v1/flags/{flag.public_id}")
    assert_api_sealed(client, personal_token(tenant_pair.member_of_a), f"/api/v1/flags/{flag.public_id}/review",
                      method="post", json={"status": "rejected", "version": 1})
    assert_api_sealed(client, tenant_pair.token_a, "/api/v1/flags/fb_0000000000000000")
    assert Flag.objects.get(pk=flag.pk).status == "pending"


def test_a_curator_approves_with_defaults(client, application, curator):
    flag = FlagFactory(application=application)
    response = _post(client, personal_token(curator), {"status": "approved", "version": 1},
                     url=f"/api/v1/flags/{flag.public_id}/review")
    assert response.status_code == 200
    body = response.json()
    assert (body["status"], body["axis"], body["verdict"], body["version"]) == (
        "approved", "hallucination", "false_negative", 2)
    assert FlagReview.objects.get().reviewer == curator


def test_a_session_review_works_with_csrf(application, curator):
    from django.test import Client

    flag = FlagFactory(application=application)
    client = Client(enforce_csrf_checks=True)
    client.force_login(curator)
    url = f"/api/v1/flags/{flag.public_id}/review"
    refused = client.post(url, data={"status": "rejected", "version": 1}, content_type="application/json")
    assert refused.status_code == 403
    token = "k" * 32  # a CSRF secret, as a page would have set in the cookie
    client.cookies["csrftoken"] = token
    ok = client.post(url, data={"status": "rejected", "version": 1}, content_type="application/json",
                     HTTP_X_CSRFTOKEN=token)
    assert ok.status_code == 200


def test_an_application_token_cannot_review(client, application, app_token):
    flag = FlagFactory(application=application)
    response = _post(client, app_token, {"status": "approved", "version": 1},
                     url=f"/api/v1/flags/{flag.public_id}/review")
    assert response.status_code == 403 and response.json()["error"]["code"] == "human_required"
    assert not FlagReview.objects.exists() and Flag.objects.get(pk=flag.pk).status == "pending"


def test_a_viewer_cannot_review(client, application, viewer):
    flag = FlagFactory(application=application)
    response = _post(client, personal_token(viewer), {"status": "rejected", "version": 1},
                     url=f"/api/v1/flags/{flag.public_id}/review")
    assert response.status_code == 403 and Flag.objects.get(pk=flag.pk).status == "pending"


def test_the_axis_must_be_one_of_the_applications(client, application, curator):
    flag = FlagFactory(application=application)
    response = _post(client, personal_token(curator), {"status": "approved", "axis": "vibes", "version": 1},
                     url=f"/api/v1/flags/{flag.public_id}/review")
    assert response.status_code == 422 and "axis" in response.json()["error"]["fields"]
    response = _post(client, personal_token(curator), {"status": "approved", "version": 0, "weight": 7},
                     url=f"/api/v1/flags/{flag.public_id}/review")
    assert response.status_code == 422 and {"version", "weight"} <= set(response.json()["error"]["fields"])
    assert not FlagEvent.objects.exists()


def test_a_stale_version_is_409_with_the_current_state(client, application, curator):
    other = MembershipFactory(user=UserFactory(username="carl"), application=application, role=Role.CURATOR).user
    flag = FlagFactory(application=application)
    url = f"/api/v1/flags/{flag.public_id}/review"
    assert _post(client, personal_token(other), {"status": "rejected", "version": 1, "note": "spam"},
                 url=url).status_code == 200
    response = _post(client, personal_token(curator), {"status": "approved", "version": 1}, url=url)
    assert response.status_code == 409
    error = response.json()["error"]
    assert error["code"] == "conflict" and error["current"]["status"] == "rejected" and error["current"]["version"] == 2
    assert error["message"].startswith("Someone else changed this flag meanwhile (now rejected, version 2)")
    assert Flag.objects.get(pk=flag.pk).status == "rejected" and FlagReview.objects.count() == 1
    # A version the flag never had is not blamed on someone else.
    response = _post(client, personal_token(curator), {"status": "approved", "version": 7}, url=url)
    assert response.status_code == 422 and response.json()["error"]["message"].startswith(
        "Version 7 is not one this flag has had (it is rejected, version 2)")
    assert list(response.json()["error"]["fields"]) == ["version"]
    assert Flag.objects.get(pk=flag.pk).version == 2 and FlagReview.objects.count() == 1


def test_reopen_and_label_a_capture(client, application, curator):
    token = personal_token(curator)
    flag = FlagFactory(application=application)
    url = f"/api/v1/flags/{flag.public_id}/review"
    _post(client, token, {"status": "rejected", "version": 1}, url=url)
    response = _post(client, token, {"status": "pending", "version": 2}, url=url)
    assert response.status_code == 200 and response.json()["status"] == "pending"
    capture = CaptureFactory(application=application)
    response = _post(client, token, {"status": "labelled", "label": "wrong", "version": 1},
                     url=f"/api/v1/flags/{capture.public_id}/review")
    assert response.status_code == 200 and response.json()["capture_label"] == "wrong"


def test_the_openapi_schema_documents_the_flag_endpoints(client):
    schema = client.get("/api/openapi.json").json()
    assert {"/api/v1/flags", "/api/v1/flags/{flag_id}", "/api/v1/flags/{flag_id}/review"} <= set(schema["paths"])
    review = schema["paths"]["/api/v1/flags/{flag_id}/review"]["post"]
    assert {"200", "403", "409", "422"} <= set(review["responses"])


def test_a_second_application_token_of_another_tenant_is_not_a_member(client, tenant_pair):
    FlagFactory(application=tenant_pair.b)
    body = client.get("/api/v1/flags", **bearer(application_token(tenant_pair.a, name="x"))).json()
    assert body["items"] == []


TIMESTAMP = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\+00:00$")


def test_every_timestamp_is_utc_in_whole_seconds_with_an_offset(client, application, app_token, curator):
    """The shape the exports write (`2026-06-26T10:14:33+00:00`), not `...14:33.304Z`."""
    created = _post(client, app_token, FLAG).json()
    assert TIMESTAMP.match(created["created_at"]) and TIMESTAMP.match(created["updated_at"])
    detail = client.get(f"/api/v1/flags/{created['id']}", **bearer(app_token)).json()
    assert detail["created_at"] == created["created_at"] and all(TIMESTAMP.match(e["at"]) for e in detail["events"])
    listed = client.get("/api/v1/flags", **bearer(app_token)).json()["items"][0]
    assert listed["created_at"] == created["created_at"]
    token = personal_token(curator)
    url = f"/api/v1/flags/{created['id']}/review?application_id=acme"
    _post(client, token, {"status": "rejected", "version": 1}, url=url)
    stale = _post(client, token, {"status": "approved", "version": 1}, url=url).json()["error"]["current"]
    assert TIMESTAMP.match(stale["updated_at"])


def test_the_lists_enum_filters_are_listed_in_the_schema_and_checked(client, application, app_token):
    schema = client.get("/api/openapi.json").json()
    params = {p["name"]: p for p in schema["paths"]["/api/v1/flags"]["get"]["parameters"]}
    assert set(params["status"]["schema"]["enum"]) == {"", "pending", "approved", "rejected", "labelled", "dropped"}
    assert set(params["region"]["schema"]["enum"]) == {"", "prompt", "answer"}
    assert set(params["author_kind"]["schema"]["enum"]) == {"", "end_user", "operator", "agent"}
    assert all(p.get("description") for p in params.values())
    for name in ("status", "region", "author_kind"):
        response = client.get(f"/api/v1/flags?{name}=bogus", **bearer(app_token))
        assert response.status_code == 422 and name in response.json()["error"]["fields"]
    assert client.get("/api/v1/flags?status=&region=", **bearer(app_token)).status_code == 200


@pytest.mark.parametrize("raw", [b"", b"[]", b'"text"'])
def test_a_body_that_is_not_an_object_is_named_as_the_body_not_an_internal_name(client, application, app_token, raw):
    response = client.post("/api/v1/flags", data=raw, content_type="application/json", **bearer(app_token))
    assert response.status_code == 422
    assert response.json()["error"]["fields"] == {"__all__": "The body must be a JSON object."}


@pytest.mark.parametrize("score", [-5, 1.5, 1e300, "0.5", True, None])
@pytest.mark.parametrize("capture", [False, True])
def test_a_detector_score_is_a_number_from_0_to_1_and_nothing_else(client, application, app_token, score, capture):
    # The attack: scores out of range or coerced ("0.5" -> 0.5, true -> 1.0) were stored
    # as if a detector had produced them.
    application.capture_enabled = application.capture_on_low_confidence = True
    application.save()
    body = {"region": "answer", "prompt": "q", "answer": "a", "message_id": "m1",
            "detector_scores": {"hallucination": score}}
    body |= {"capture_reason": "low_confidence"} if capture else {"problem": "fabricated"}
    response = _post(client, app_token, body)
    assert response.status_code == 422
    assert list(response.json()["error"]["fields"]) == ["detector_scores.hallucination"]
    assert not Flag.objects.exists()


def test_the_edges_of_a_score_are_scores(client, application, app_token):
    body = {"region": "answer", "problem": "fabricated", "prompt": "q", "answer": "a", "message_id": "m1",
            "detector_scores": {"hallucination": 0, "toxicity": 1}}
    assert _post(client, app_token, body).status_code == 201
