"""What operators read on the teaching screens: states, sources, polarities and
gates by their labels (keys stay in classes, URLs and exports), times that say
UTC, and refusals of a repeated action that say what exists."""

import pytest
from django.urls import reverse

from consoles.timestamps import on_screen
from teaching.models import CorpusEntry, CorpusSupersession, Proposal, ProposalDecision
from teaching.services import Actor, proposal_create, proposal_decide
from teaching.tests.factories import CandidateFactory, EvalCaseFactory

pytestmark = pytest.mark.django_db


def make(application, candidate_id, subject, obj, **kw) -> Proposal:
    CandidateFactory(application=application, candidate_id=candidate_id, subject=subject, object=obj, **kw)
    return proposal_create(application=application, candidate_id=candidate_id, actor=Actor.system())[0]


@pytest.fixture
def accepted(world, curator) -> Proposal:
    proposal = make(world, "c-1", "tokyo", "japan", claim_domain="common_knowledge")
    proposal_decide(application=world, proposal_id=proposal.proposal_id, decision="accept", operator=curator)
    proposal.refresh_from_db()
    return proposal


def test_the_proposal_page_names_states_and_sources_in_words_with_utc_times(client, curator, accepted):
    client.force_login(curator)
    page = client.get(reverse("teaching:proposal", args=["acme", accepted.proposal_id])).content.decode()
    decided = ProposalDecision.objects.get(proposal=accepted)
    assert f"Accepted by cora on {on_screen(decided.decided_at)}.</p>" in page
    assert "appended (discovery promoted, reviewed" in page and "discovery_promoted" not in page
    events = page.split('data-testid="events"', 1)[1]
    assert "— → Pending" in events and "Pending → Accepted" in events and "pending →" not in events
    assert events.count(" UTC") == 2
    assert '<span class="badge">Affirms</span>' in page and "<dd>common knowledge" in page


def test_the_corpus_page_names_sources_and_polarities_in_words(client, viewer, accepted):
    client.force_login(viewer)
    page = client.get(reverse("teaching:corpus", args=["acme"])).content.decode()
    assert '<span class="badge">Discovery promoted</span> accepted by cora' in page
    assert '<span class="badge">Seed</span>' in page and '<span class="badge">Affirms</span>' in page
    assert "discovery_promoted" not in page and ">affirms<" not in page


def test_the_proposal_list_says_utc_and_names_the_polarity(client, viewer, world):
    proposal = make(world, "c-1", "tokyo", "japan")
    client.force_login(viewer)
    page = client.get(reverse("teaching:index", args=["acme"])).content.decode()
    assert f">{on_screen(proposal.created_at)}</td>" in page
    assert '<span class="badge">Affirms</span>' in page


def test_the_candidates_page_names_gates_and_states_in_words(client, viewer, world):
    make(world, "c-1", "tokyo", "japan")
    CandidateFactory(application=world, candidate_id="c-2", claim_domain="common_knowledge")
    client.force_login(viewer)
    page = client.get(reverse("teaching:candidates", args=["acme"])).content.decode()
    assert '<th scope="col" class="gate">polarity decided</th>' in page and "polarity_decided" not in page
    assert '<span class="badge pending">Pending</span>' in page
    assert "<td>common knowledge</td>" in page


def test_the_evals_page_names_the_expected_polarity(client, viewer, world):
    EvalCaseFactory(application=world, case_id="e-neg", expected_polarity="falsifies")
    client.force_login(viewer)
    page = client.get(reverse("teaching:evals", args=["acme"])).content.decode()
    assert "<td>Falsifies</td>" in page and "<td>falsifies</td>" not in page


def test_proposing_a_candidate_again_says_when_and_what_became_of_it(client, curator, world):
    proposal = make(world, "c-1", "tokyo", "japan")
    client.force_login(curator)
    response = client.post(reverse("teaching:propose", args=["acme", "c-1"]), follow=True)
    assert (f"This candidate was already proposed on {on_screen(proposal.created_at)} (now pending); "
            "a candidate is proposed once, so here is that proposal.") in response.content.decode()
    assert Proposal.objects.count() == 1


def test_an_ineligible_candidate_names_its_gates_in_words(client, curator, world):
    CandidateFactory(application=world, candidate_id="c-vague", polarity="undetermined")
    client.force_login(curator)
    response = client.post(reverse("teaching:propose", args=["acme", "c-vague"]), follow=True)
    assert "is not eligible: polarity decided (polarity is" in response.content.decode()


def test_deciding_a_decided_proposal_says_who_decided_it_and_when(client, curator, accepted, world):
    client.force_login(curator)
    url = reverse("teaching:decide", args=["acme", accepted.proposal_id])
    response = client.post(url, {"decision": "withdraw"})
    decided = ProposalDecision.objects.get(proposal=accepted)
    assert response.status_code == 422
    assert (f"is already accepted by cora on {on_screen(decided.decided_at)}; "
            "decisions are final, so nothing was changed.") in response.content.decode()
    regressed = make(world, "c-lyon", "paris", "lyon")  # rejected by the replay gate
    response = client.post(reverse("teaching:decide", args=["acme", regressed.proposal_id]), {"decision": "reject"})
    assert "is already rejected by the replay gate; decisions are final" in response.content.decode()


def test_retiring_a_retired_entry_says_what_superseded_it(client, curator, world):
    first, second = CorpusEntry.objects.order_by("id")
    url = reverse("teaching:corpus", args=["acme"])
    client.force_login(curator)
    client.post(url, {"entry": first.number, "superseded_by": second.number})
    retired = CorpusSupersession.objects.get()
    response = client.post(url, {"entry": first.number, "superseded_by": second.number})
    assert response.status_code == 422
    assert (f"Entry {first.number} is already retired: superseded by #{second.number} (cora, {on_screen(retired.created_at)}); "
            "nothing was changed. Only an active entry can be retired.") in response.content.decode()
