import re

import pytest

from adjudication.models import Case, Evidence, GoldLabelRevision
from adjudication.schemas import CaseIn, EvidenceIn
from adjudication.services import case_import, gold_promote, label_submit
from consoles.testing import assert_api_sealed, bearer
from consoles.tests.factories import personal_token

from .factories import case_payload

pytestmark = pytest.mark.django_db


def post_cases(client, token, body):
    return client.post("/api/v1/cases", data=body, content_type="application/json", **bearer(token))


def test_import_a_batch_with_an_application_token(client, application, app_token):
    body = {"cases": [case_payload("c1"), case_payload("c2", evidence=[])]}
    response = post_cases(client, app_token, body)
    assert response.status_code == 201
    data = response.json()
    assert data["created"] == 2 and [c["status"] for c in data["cases"]] == ["created", "created"]
    assert Case.objects.filter(application=application).count() == 2
    again = post_cases(client, app_token, body)
    assert again.status_code == 200 and again.json()["unchanged"] == 2
    assert Evidence.objects.count() == 3


def test_bad_case_refuses_the_whole_batch_naming_the_field(client, application, app_token):
    bad = case_payload("c2")
    bad["evidence"][0]["relation"] = "maybe"
    response = post_cases(client, app_token, {"cases": [case_payload("c1"), bad]})
    assert response.status_code == 422
    fields = response.json()["error"]["fields"]
    assert any(name.endswith("cases.1.evidence.0.relation") for name in fields), fields
    assert not Case.objects.exists()


def test_a_time_without_a_time_zone_refuses_the_batch_as_the_import_does(client, application, app_token):
    naive = case_payload("c2")
    naive["evidence"][0]["observed_at"] = "2026-11-02T09:00:00"
    response = post_cases(client, app_token, {"cases": [case_payload("c1"), naive]})
    assert response.status_code == 422
    fields = response.json()["error"]["fields"]
    assert "time zone" in fields["cases.1.evidence.0.observed_at"], fields
    assert not Case.objects.exists()


def test_unknown_field_and_duplicate_evidence_ids_are_refused(client, application, app_token):
    typo = case_payload("c1", verdict="x")
    dup = case_payload("c2")
    dup["evidence"][1]["evidence_id"] = "e1"
    assert post_cases(client, app_token, {"cases": [typo]}).status_code == 422
    response = post_cases(client, app_token, {"cases": [dup]})
    assert response.status_code == 422 and "appears twice" in str(response.json()["error"]["fields"])
    assert not Case.objects.exists()


def test_changed_case_is_a_conflict(client, application, app_token):
    post_cases(client, app_token, {"cases": [case_payload("c1")]})
    response = post_cases(client, app_token, {"cases": [case_payload("c1", local_verdict="refuted")]})
    assert response.status_code == 409
    assert response.json()["error"]["code"] == "case_exists"


def test_a_viewer_cannot_import_and_a_curator_must_name_the_application(client, application, viewer, curator):
    assert post_cases(client, personal_token(viewer), {"application_id": "acme", "cases": [case_payload()]}).status_code == 403
    assert post_cases(client, personal_token(curator), {"cases": [case_payload()]}).status_code == 403
    assert post_cases(client, personal_token(curator), {"application_id": "acme", "cases": [case_payload()]}).status_code == 201


def test_case_detail_shows_families_fusion_and_gaps(client, application, app_token, curator):
    post_cases(client, app_token, {"cases": [case_payload("c1")]})
    case = Case.objects.get()
    label = label_submit(application=application, case=case, reviewer=curator, label="unreliable", rationale="host says no")
    gold_promote(application=application, case=case, label=label, adjudicator=curator)
    data = client.get(f"/api/v1/cases/{case.pk}", **bearer(app_token)).json()
    assert [e["source_family"] for e in data["evidence"]] == [1, 1, 2]
    assert data["source_families"] == [
        {"family": 1, "evidence_ids": ["e1", "e2"], "reasons": [["same_agent_event", "evt-1"]]}
    ]
    assert data["fusion"]["supports"] == 1 and data["fusion"]["supports_before_collapse"] == 2
    assert data["fusion"]["band"] == "contested"
    assert data["gaps"] == ["unresolved_conflict"]
    assert data["gold_history"][0]["label"] == "unreliable"


def test_case_list_pages_newest_first_by_cursor(client, application, app_token):
    post_cases(client, app_token, {"cases": [case_payload(f"c{i}") for i in range(5)]})
    pages, cursor = [], ""
    while True:
        data = client.get(f"/api/v1/cases?limit=2&cursor={cursor}", **bearer(app_token)).json()
        pages.append([c["case_id"] for c in data["items"]])
        if not (cursor := data["next_cursor"]):
            break
    newest_first = list(Case.objects.order_by("-created_at", "-id").values_list("case_id", flat=True))
    assert [p for page in pages for p in page] == newest_first and len(pages) == 3 and "count" not in data
    back = client.get(f"/api/v1/cases?limit=2&cursor={data['previous_cursor']}", **bearer(app_token)).json()
    assert [c["case_id"] for c in back["items"]] == pages[1]


@pytest.mark.parametrize("offset", ["0", "40", "-1", str(10**20)])
def test_an_offset_is_a_422_saying_the_list_pages_by_cursor(client, application, app_token, offset):
    """The list paged by offset once: a client still sending one would get the first
    page again and again if the offset were ignored."""
    response = client.get(f"/api/v1/cases?offset={offset}", **bearer(app_token))
    assert response.status_code == 422 and "offset" in response.json()["error"]["fields"]
    assert "cursor" in response.json()["error"]["message"]


def test_cases_are_sealed_between_tenants(client, tenant_pair):
    case = case_import(application=tenant_pair.b, data=CaseIn.model_validate(case_payload()), actor=None).case
    assert_api_sealed(client, tenant_pair.token_a, f"/api/v1/cases/{case.pk}")
    assert_api_sealed(client, personal_token(tenant_pair.member_of_a), f"/api/v1/cases/{case.pk}")
    # Naming another application with a token is refused, never served.
    response = client.get("/api/v1/cases?application_id=tenant-b", **bearer(tenant_pair.token_a))
    assert response.status_code == 403
    assert not GoldLabelRevision.objects.exists()


def test_feedback_from_an_agent_and_an_operator_never_touches_labels(client, application, app_token, curator):
    from adjudication.models import CaseLabel
    from feedback.models import CaseFeedback

    post_cases(client, app_token, {"cases": [case_payload("c1")]})
    case = Case.objects.get()
    url = f"/api/v1/cases/{case.pk}/feedback"
    agent = client.post(url, data={"disposition": "disagrees", "note": "looks wrong"}, content_type="application/json", **bearer(app_token))
    assert agent.status_code == 201
    assert agent.json()["author_kind"] == "agent" and agent.json()["bound_manifest"] == case.replay_manifest
    client.force_login(curator)
    operator = client.post(url, data={"disposition": "agrees"}, content_type="application/json")
    assert operator.status_code == 201 and operator.json()["author_kind"] == "operator"
    bad = client.post(url, data={"disposition": "maybe"}, content_type="application/json")
    assert bad.status_code == 422 and "disposition" in bad.json()["error"]["fields"]
    assert CaseFeedback.objects.filter(case_ref="c1").count() == 2
    assert not CaseLabel.objects.exists() and not GoldLabelRevision.objects.exists()
    case.refresh_from_db()
    assert case.local_verdict == "corroborated"


def test_feedback_is_sealed(client, tenant_pair):
    case = case_import(application=tenant_pair.b, data=CaseIn.model_validate(case_payload()), actor=None).case
    assert_api_sealed(client, tenant_pair.token_a, f"/api/v1/cases/{case.pk}/feedback", "post", {"disposition": "agrees"})


def test_an_unknown_status_filter_is_a_422_naming_it(client, application, app_token):
    """It used to be ignored: every case came back as if it matched."""
    post_cases(client, app_token, {"cases": [case_payload("c1")]})
    response = client.get("/api/v1/cases?status=gold-ish", **bearer(app_token))
    assert response.status_code == 422 and "status" in response.json()["error"]["fields"]
    assert client.get("/api/v1/cases?status=gold", **bearer(app_token)).json()["items"] == []
    assert len(client.get("/api/v1/cases?status=unlabelled", **bearer(app_token)).json()["items"]) == 1


def test_the_schema_documents_case_evidence_as_the_import_validates_it(client):
    """A teaching model of the same name (`EvidenceIn`) took its place in the schema:
    a client was told to send cases' evidence as `{source, ref}`."""
    schema = client.get("/api/openapi.json").json()
    components = schema["components"]["schemas"]
    item = components["CaseIn"]["properties"]["evidence"]["items"]["$ref"].rsplit("/", 1)[1]
    assert set(components[item]["properties"]) == set(EvidenceIn.model_fields)


def test_case_detail_is_documented_field_by_field_with_one_timestamp_shape(client, application, app_token, curator):
    """It was declared as a bare object: a client could learn none of its fields."""
    payload = case_payload("c1")
    payload["evidence"][0]["observed_at"] = "2026-11-02T10:00:00.123456+01:00"
    post_cases(client, app_token, {"cases": [payload]})
    case = Case.objects.get()
    label = label_submit(application=application, case=case, reviewer=curator, label="unreliable", rationale="r")
    gold_promote(application=application, case=case, label=label, adjudicator=curator)
    schema = client.get("/api/openapi.json").json()
    declared = schema["paths"]["/api/v1/cases/{case_ref}"]["get"]["responses"]["200"]["content"]["application/json"]
    detail = schema["components"]["schemas"][declared["schema"]["$ref"].rsplit("/", 1)[1]]
    data = client.get(f"/api/v1/cases/{case.pk}", **bearer(app_token)).json()
    assert set(data) == set(detail["properties"]) == set(detail["required"])
    assert data["evidence"][0]["observed_at"] == "2026-11-02T09:00:00+00:00"
    assert re.match(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\+00:00$", data["gold_history"][0]["created_at"])


HUMAN_REVIEWED_CASE = [{"evidence_id": "e1", "relation": "supports", "trust_class": "human_reviewed"}]


def test_an_application_token_cannot_present_evidence_as_human_reviewed(client, application, app_token):
    # The attack: an integration posts its own "human-reviewed" evidence and the case
    # fuses to `verified` with no gaps, as if a person had checked it.
    body = {"cases": [case_payload("c1"), case_payload("c2", evidence=HUMAN_REVIEWED_CASE)]}
    response = post_cases(client, app_token, body)
    assert response.status_code == 422
    error = response.json()["error"]
    assert error["code"] == "human_only"
    assert list(error["fields"]) == ["cases.1.evidence.0.trust_class"]
    assert not Case.objects.exists()


def test_a_curator_may_import_human_reviewed_evidence(client, application, curator):
    body = {"application_id": "acme", "cases": [case_payload("c1", evidence=HUMAN_REVIEWED_CASE)]}
    assert post_cases(client, personal_token(curator), body).status_code == 201
    case = Case.objects.get()
    assert client.get(f"/api/v1/cases/{case.pk}", **bearer(personal_token(curator))).json()["fusion"]["band"] == "verified"
