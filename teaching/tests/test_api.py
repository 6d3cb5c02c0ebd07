import re

import pytest

from consoles.models import Role
from consoles.testing import assert_api_sealed, bearer
from consoles.tests.factories import MembershipFactory, UserFactory, personal_token
from teaching.models import Candidate, CorpusEntry, EvalCase, Proposal, ProposalDecision
from teaching.services import Actor, proposal_create
from teaching.tests.factories import CandidateFactory, EvalCaseFactory, candidate_payload

pytestmark = pytest.mark.django_db


def post(client, url, token, json):
    return client.post(url, data=json, content_type="application/json", **bearer(token))


def test_an_application_token_submits_a_candidate_and_sees_its_gates(client, world, app_token):
    response = post(client, "/api/v1/teaching/candidates", app_token, candidate_payload())
    assert response.status_code == 201
    body = response.json()
    assert body["created"] and body["eligible"] and [g["gate"] for g in body["gates"]] == [
        "polarity_decided", "corpus_evidence", "evaluative_allowed", "boundary_clean", "chain_complete",
    ]
    candidate = Candidate.objects.get()
    assert candidate.actor_kind == "token" and candidate.actor_user is None
    again = post(client, "/api/v1/teaching/candidates", app_token, candidate_payload())
    assert again.status_code == 200 and again.json()["created"] is False


def test_an_ineligible_candidate_is_kept_and_its_failing_gate_named(client, world, app_token):
    response = post(client, "/api/v1/teaching/candidates", app_token, candidate_payload(polarity="undetermined"))
    assert response.status_code == 201
    failing = [g for g in response.json()["gates"] if not g["passed"]]
    assert [g["gate"] for g in failing] == ["polarity_decided"]
    refused = post(client, "/api/v1/teaching/proposals", app_token, {"candidate_id": "c-1"})
    assert refused.status_code == 422
    error = refused.json()["error"]
    assert error["code"] == "ineligible" and error["fields"]["gates"] == "polarity_decided"
    assert Candidate.objects.count() == 1 and not Proposal.objects.exists()


def test_bad_candidate_input_is_422_naming_fields_and_writes_nothing(client, world, app_token):
    response = post(client, "/api/v1/teaching/candidates", app_token, candidate_payload(polarity="perhaps", candidate_id="a b"))
    assert response.status_code == 422
    fields = response.json()["error"]["fields"]
    assert "polarity" in fields
    response = post(client, "/api/v1/teaching/candidates", app_token, candidate_payload(candidate_id="a b"))
    assert response.status_code == 422 and "candidate_id" in response.json()["error"]["fields"]
    assert not Candidate.objects.exists()


def test_propose_over_the_api_is_idempotent(client, world, app_token):
    CandidateFactory(application=world, candidate_id="c-1", subject="tokyo", object="japan")
    first = post(client, "/api/v1/teaching/proposals", app_token, {"candidate_id": "c-1"})
    second = post(client, "/api/v1/teaching/proposals", app_token, {"candidate_id": "c-1"})
    assert (first.status_code, second.status_code) == (201, 200)
    assert first.json()["proposal_id"] == second.json()["proposal_id"]
    body = first.json()
    assert body["review_state"] == "pending" and body["replay_evidence"]["replay_equivalent"] is True
    assert body["replay_evidence"]["baseline"]["lookup.coverage.dev"] == 0.0


EVALUATIVE = {"claim_domain": "evaluative", "hedge_tier": "strong", "hedge_surface": "Many would say"}


def test_an_application_token_cannot_set_the_operator_only_allow_evaluative(client, world, app_token, operator):
    # The attack: an integration lets its own evaluative claim through the gate that
    # only an operator may open.
    CandidateFactory(application=world, candidate_id="c-1", subject="tokyo", object="japan", **EVALUATIVE)
    body = {"candidate_id": "c-1", "allow_evaluative": True}
    refused = post(client, "/api/v1/teaching/proposals", app_token, body)
    assert refused.status_code == 403
    assert refused.json()["error"]["fields"] == {"allow_evaluative": "needs a human curator"}
    assert not Proposal.objects.exists()
    by_a_curator = post(client, "/api/v1/teaching/proposals", personal_token(operator), {**body, "application_id": world.slug})
    assert by_a_curator.status_code == 201 and by_a_curator.json()["allow_evaluative"] is True


def test_an_application_token_can_never_decide(client, world, app_token):
    CandidateFactory(application=world, candidate_id="c-1", subject="tokyo", object="japan")
    proposal, _ = proposal_create(application=world, candidate_id="c-1", actor=Actor.system())
    response = post(client, f"/api/v1/teaching/proposals/{proposal.proposal_id}/decision", app_token, {"decision": "accept"})
    assert response.status_code == 403 and response.json()["error"]["code"] == "human_required"
    assert not ProposalDecision.objects.exists() and CorpusEntry.objects.count() == 2


def test_a_curator_decides_with_a_personal_token(client, world, operator):
    CandidateFactory(application=world, candidate_id="c-1", subject="tokyo", object="japan")
    proposal, _ = proposal_create(application=world, candidate_id="c-1", actor=Actor.system())
    token = personal_token(operator)
    url = f"/api/v1/teaching/proposals/{proposal.proposal_id}/decision"
    response = post(client, url, token, {"decision": "accept", "note": "ok"})
    assert response.status_code == 200
    body = response.json()
    assert body["review_state"] == "accepted" and body["decision"]["operator"] == "olga"
    again = post(client, url, token, {"decision": "reject"})
    assert again.status_code == 409 and again.json()["error"]["current"] == {"state": "accepted"}


def test_accept_of_a_regressed_proposal_is_refused_with_an_explicit_error(client, world, operator):
    CandidateFactory(application=world, candidate_id="c-lyon", subject="paris", object="lyon")
    proposal, _ = proposal_create(application=world, candidate_id="c-lyon", actor=Actor.system())
    response = post(
        client, f"/api/v1/teaching/proposals/{proposal.proposal_id}/decision", personal_token(operator), {"decision": "accept"}
    )
    assert response.status_code == 422 and response.json()["error"]["code"] == "not_replay_equivalent"


def test_a_viewer_cannot_decide(client, world, viewer):
    CandidateFactory(application=world, candidate_id="c-1", subject="tokyo", object="japan")
    proposal, _ = proposal_create(application=world, candidate_id="c-1", actor=Actor.system())
    response = post(
        client, f"/api/v1/teaching/proposals/{proposal.proposal_id}/decision", personal_token(viewer), {"decision": "reject"}
    )
    assert response.status_code == 403 and Proposal.objects.get().state == "pending"


def test_proposals_are_sealed_between_tenants(client, tenant_pair):
    CandidateFactory(application=tenant_pair.b, candidate_id="c-1")
    proposal, _ = proposal_create(application=tenant_pair.b, candidate_id="c-1", actor=Actor.system())
    url = f"/api/v1/teaching/proposals/{proposal.proposal_id}"
    assert_api_sealed(client, tenant_pair.token_a, url)
    assert_api_sealed(client, personal_token(tenant_pair.member_of_a), url)
    assert_api_sealed(client, personal_token(tenant_pair.member_of_a), url + "/decision", "post", {"decision": "reject"})
    assert client.get(url, **bearer(tenant_pair.token_b)).status_code == 200
    # listing with A's token never shows B's proposals
    assert client.get("/api/v1/teaching/proposals?state=pending", **bearer(tenant_pair.token_a)).json()["items"] == []


def test_eval_cases_import_and_list(client, application, app_token):
    cases = [
        {"case_id": "e1", "split": "public", "subject": "a", "intent": "b", "expected_object": "c", "expected_polarity": "affirms"},
        {"case_id": "e2", "split": "holdout", "subject": "d", "intent": "b", "expected_object": "e", "expected_polarity": "falsifies"},
    ]
    response = post(client, "/api/v1/teaching/eval-cases", app_token, {"cases": cases})
    assert response.status_code == 200 and response.json() == {"created": 2, "updated": 0, "unchanged": 0}
    listed = client.get("/api/v1/teaching/eval-cases?split=holdout", **bearer(app_token)).json()
    assert [c["case_id"] for c in listed["items"]] == ["e2"] and listed["next_cursor"] is None
    bad = post(client, "/api/v1/teaching/eval-cases", app_token, {"cases": [{**cases[0], "split": "train"}]})
    assert bad.status_code == 422


def test_corpus_export_streams_the_active_corpus(client, world, app_token):
    response = client.get("/api/v1/teaching/corpus", **bearer(app_token))
    assert response.status_code == 200
    lines = b"".join(response.streaming_content).decode().splitlines()
    assert len(lines) == 2 and '"source": "seed"' in lines[0]


def test_a_human_finds_a_proposal_by_id_and_names_the_application_to_submit(client, world):
    user = UserFactory(username="multi")
    MembershipFactory(user=user, application=world, role=Role.CURATOR)
    CandidateFactory(application=world, candidate_id="c-1", subject="tokyo", object="japan")
    proposal, _ = proposal_create(application=world, candidate_id="c-1", actor=Actor.system())
    token = personal_token(user)
    assert client.get(f"/api/v1/teaching/proposals/{proposal.proposal_id}", **bearer(token)).status_code == 200
    response = post(client, "/api/v1/teaching/candidates", token, candidate_payload("c-new"))
    assert response.status_code == 403 and response.json()["error"]["code"] == "application_required"
    response = post(client, "/api/v1/teaching/candidates", token, {**candidate_payload("c-new"), "application_id": world.slug})
    assert response.status_code == 201 and Candidate.objects.get(candidate_id="c-new").actor_user == user


@pytest.mark.parametrize("url", ["/api/v1/teaching/candidates", "/api/v1/teaching/proposals",
                                 "/api/v1/teaching/eval-cases"])
@pytest.mark.parametrize("limit", ["0", "-5", "501", "99999999999999999999999"])
def test_a_list_limit_out_of_its_documented_bounds_is_a_422_naming_it(client, world, app_token, url, limit):
    """Like the flags' and the cases' limits (it was silently clamped)."""
    response = client.get(f"{url}?limit={limit}", **bearer(app_token))
    assert response.status_code == 422 and "limit" in response.json()["error"]["fields"]
    schema = client.get("/api/openapi.json").json()
    param = next(p for p in schema["paths"][url]["get"]["parameters"] if p["name"] == "limit")
    assert (param["schema"]["minimum"], param["schema"]["maximum"]) == (1, 500) and param["description"]


def test_an_unknown_eval_split_filter_is_a_422_naming_it(client, world, app_token):
    """It used to answer an empty list, as if the split held no cases."""
    response = client.get("/api/v1/teaching/eval-cases?split=train", **bearer(app_token))
    assert response.status_code == 422 and "split" in response.json()["error"]["fields"]
    assert len(client.get("/api/v1/teaching/eval-cases?split=dev", **bearer(app_token)).json()["items"]) == 1


def test_a_proposal_is_documented_field_by_field_with_one_timestamp_shape(client, world, operator):
    """It was declared as a bare object, and its times had microseconds where every other
    time of the API has whole seconds."""
    CandidateFactory(application=world, candidate_id="c-1", subject="tokyo", object="japan")
    proposal, _ = proposal_create(application=world, candidate_id="c-1", actor=Actor.system())
    url = f"/api/v1/teaching/proposals/{proposal.proposal_id}"
    decided = post(client, url + "/decision?application_id=acme", personal_token(operator), {"decision": "accept"})
    assert decided.status_code == 200
    schema = client.get("/api/openapi.json").json()
    declared = schema["paths"]["/api/v1/teaching/proposals/{proposal_id}"]["get"]["responses"]["200"]
    component = schema["components"]["schemas"][declared["content"]["application/json"]["schema"]["$ref"].rsplit("/", 1)[1]]
    body = decided.json()
    assert set(body) == set(component["properties"]) == set(component["required"])
    stamp = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\+00:00$")
    assert stamp.match(body["created_at"]) and stamp.match(body["decision"]["decided_at"])


def test_a_bad_eval_case_is_named_by_its_place_in_the_body(client, application, app_token):
    """Not by the line of a file the client never sent (`line 2.subject`)."""
    case = {"case_id": "e1", "split": "public", "subject": "a", "intent": "b", "expected_object": "c",
            "expected_polarity": "affirms"}
    response = post(client, "/api/v1/teaching/eval-cases", app_token,
                    {"cases": [case, {**case, "case_id": "e2", "subject": "   "}]})
    assert response.status_code == 422 and set(response.json()["error"]["fields"]) == {"cases.1.subject"}
    response = post(client, "/api/v1/teaching/eval-cases", app_token, {"cases": [case, case]})
    assert response.status_code == 422 and response.json()["error"]["fields"] == {"cases.1.case_id": "duplicate"}
    response = post(client, "/api/v1/teaching/eval-cases", app_token, {"cases": [{**case, "case_id": "a b"}]})
    assert response.status_code == 422 and set(response.json()["error"]["fields"]) == {"cases.0.case_id"}


LISTS = {
    # url: (the item's key in the answer, the list's order in the database)
    "/api/v1/teaching/candidates": ("candidate_id", lambda app: Candidate.objects.filter(application=app)
                                    .order_by("-created_at", "-id").values_list("candidate_id", flat=True)),
    "/api/v1/teaching/proposals": ("proposal_id", lambda app: Proposal.objects.filter(application=app)
                                   .order_by("-created_at", "-id").values_list("proposal_id", flat=True)),
    "/api/v1/teaching/eval-cases": ("case_id", lambda app: EvalCase.objects.filter(application=app)
                                    .order_by("split", "case_id").values_list("case_id", flat=True)),
}


@pytest.mark.parametrize("url", LISTS)
def test_a_teaching_list_pages_by_cursor_through_every_item_once(client, world, app_token, url):
    """They answered one page of at most 500 with no way to the next (and the eval
    cases every case at once)."""
    for i in range(7):
        CandidateFactory(application=world, candidate_id=f"c-{i}")
        proposal_create(application=world, candidate_id=f"c-{i}", actor=Actor.system())
        EvalCaseFactory(application=world, case_id=f"e-{i}", split=["public", "dev", "holdout"][i % 3])
    # Ties on the first key are ordered by the second.
    Candidate.objects.filter(application=world).update(created_at=Candidate.objects.first().created_at)
    Proposal.objects.filter(application=world).update(created_at=Proposal.objects.first().created_at)
    key, ordered = LISTS[url]
    pages, cursor = [], ""
    while True:
        body = client.get(f"{url}?limit=3&cursor={cursor}", **bearer(app_token)).json()
        pages.append([item[key] for item in body["items"]])
        if not (cursor := body["next_cursor"]):
            break
    assert [k for page in pages for k in page] == list(ordered(world))
    assert [len(page) for page in pages[:-1]] == [3] * (len(pages) - 1)
    back = client.get(f"{url}?limit=3&cursor={body['previous_cursor']}", **bearer(app_token)).json()
    assert [item[key] for item in back["items"]] == pages[-2]


@pytest.mark.parametrize("url", LISTS)
def test_a_cursor_that_is_not_one_of_ours_is_a_422_naming_it(client, world, app_token, url):
    response = client.get(f"{url}?cursor=not-a-cursor", **bearer(app_token))
    assert response.status_code == 422 and response.json()["error"]["fields"] == {"cursor": "invalid"}
