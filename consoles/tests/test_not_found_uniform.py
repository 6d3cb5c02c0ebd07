"""Another tenant's object and a missing one answer the same 404, byte for byte:
flag ids are content hashes, so a different answer would let anyone confirm that a
message was flagged in another tenant."""

import pytest
from django.test import Client

from adjudication.tests.factories import CaseFactory
from consoles.testing import TenantPair, bearer
from consoles.tests.factories import personal_token
from feedback.tests.factories import FlagFactory
from teaching.services import Actor, proposal_create
from teaching.tests.factories import CandidateFactory

pytestmark = pytest.mark.django_db

MISSING_FLAG = "fb_" + "0" * 16


def _foreign_and_missing(pair: TenantPair) -> list[tuple[str, str, str, dict | None]]:
    """(method, url of B's object, url of an absent one, body) for every API route by id."""
    flag = FlagFactory(application=pair.b)
    case = CaseFactory(application=pair.b)
    missing_case = case.pk + 1000
    CandidateFactory(application=pair.b, candidate_id="c-b")
    proposal, _ = proposal_create(application=pair.b, candidate_id="c-b", actor=Actor.system())
    missing_proposal = "0" * len(proposal.proposal_id)
    from exemplars.models import DetectorProfile, Embedder

    DetectorProfile.objects.create(application=pair.b, name="b-detector", axes=["jailbreak"],
                                   embedder=Embedder.EXTERNAL)
    # A person names the application (A, theirs); an application token's is implied.
    bank = f"?application_id={pair.a.slug}"
    vectors = {"dim": 2, "vectors": [{"exemplar_id": "x", "vector": [1.0, 0.0]}]}
    return [
        ("get", f"/api/v1/flags/{flag.public_id}", f"/api/v1/flags/{MISSING_FLAG}", None),
        ("post", f"/api/v1/flags/{flag.public_id}/review", f"/api/v1/flags/{MISSING_FLAG}/review",
         {"status": "rejected", "version": 1}),
        ("get", f"/api/v1/cases/{case.pk}", f"/api/v1/cases/{missing_case}", None),
        ("post", f"/api/v1/cases/{case.pk}/feedback", f"/api/v1/cases/{missing_case}/feedback",
         {"disposition": "agrees"}),
        ("get", f"/api/v1/teaching/proposals/{proposal.proposal_id}",
         f"/api/v1/teaching/proposals/{missing_proposal}", None),
        ("post", f"/api/v1/teaching/proposals/{proposal.proposal_id}/decision",
         f"/api/v1/teaching/proposals/{missing_proposal}/decision", {"decision": "reject"}),
        ("get", f"/api/v1/bank/b-detector/exemplars{bank}", f"/api/v1/bank/no-such-detector/exemplars{bank}", None),
        ("put", f"/api/v1/bank/b-detector/vectors{bank}", f"/api/v1/bank/no-such-detector/vectors{bank}", vectors),
    ]


def _call(client: Client, method: str, url: str, body: dict | None, auth: dict):
    if method == "get":
        return client.get(url, **auth)
    return getattr(client, method)(url, data=body, content_type="application/json", **auth)


@pytest.mark.parametrize("caller", ["application_token", "personal_token", "session"])
def test_a_foreign_object_and_a_missing_one_answer_the_same_bytes(client, tenant_pair, caller):
    routes = _foreign_and_missing(tenant_pair)
    auth: dict = {}
    if caller == "application_token":
        auth = bearer(tenant_pair.token_a)
    elif caller == "personal_token":
        auth = bearer(personal_token(tenant_pair.member_of_a))
    else:
        client.force_login(tenant_pair.member_of_a)
    for method, foreign, missing, body in routes:
        foreign_answer = _call(client, method, foreign, body, auth)
        missing_answer = _call(client, method, missing, body, auth)
        assert foreign_answer.status_code == missing_answer.status_code, (method, foreign)
        assert foreign_answer.status_code in {403, 404}, (method, foreign, foreign_answer.content)
        assert foreign_answer.content == missing_answer.content, (method, foreign, foreign_answer.content, missing_answer.content)


def test_every_api_route_by_id_is_covered(tenant_pair):
    import re

    from consoles.testing import url_routes

    by_id = {r.route for r in url_routes() if r.route.startswith("api/") and r.kwargs}
    covered = {re.sub(r"/(fb_\w+|\d+|[0-9a-f]{16,}|b-detector)(?=/|$)", "/<id>", url.removeprefix("/").split("?")[0])
               for _, url, _, _ in _foreign_and_missing(tenant_pair)}
    assert {re.sub(r"<\w+>", "<id>", route) for route in by_id} == covered
