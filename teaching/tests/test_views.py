import re

import pytest
from django.urls import reverse

from consoles.extensions import home_cards
from consoles.models import Membership
from consoles.testing import assert_sealed
from consoles.tests.factories import UserFactory
from teaching.demo import load_demo
from teaching.models import (
    Candidate,
    CorpusEntry,
    CorpusSupersession,
    EvalCase,
    Proposal,
    ProposalEvent,
)
from teaching.services import Actor, proposal_create
from teaching.tests.factories import CandidateFactory

pytestmark = pytest.mark.django_db


def make(application, candidate_id, subject, obj, **kw) -> Proposal:
    CandidateFactory(application=application, candidate_id=candidate_id, subject=subject, object=obj, **kw)
    return proposal_create(application=application, candidate_id=candidate_id, actor=Actor.system())[0]


@pytest.fixture
def pending(world) -> Proposal:
    return make(world, "c-1", "tokyo", "japan")


@pytest.fixture
def regressed(world) -> Proposal:
    return make(world, "c-lyon", "paris", "lyon")


def test_index_lists_pending_by_default_and_filters_by_state(client, curator, pending, regressed):
    client.force_login(curator)
    url = reverse("teaching:index", args=["acme"])
    page = client.get(url).content.decode()
    assert pending.proposal_id[:12] in page and regressed.proposal_id[:12] not in page
    page = client.get(url, {"state": "rejected"}).content.decode()
    assert regressed.proposal_id[:12] in page and pending.proposal_id[:12] not in page
    page = client.get(url, {"state": "all"}).content.decode()
    assert regressed.proposal_id[:12] in page and pending.proposal_id[:12] in page


def test_index_htmx_swaps_only_the_rows(client, curator, pending):
    client.force_login(curator)
    response = client.get(reverse("teaching:index", args=["acme"]), {"state": "pending"}, HTTP_HX_REQUEST="true")
    body = response.content.decode()
    assert body.lstrip().startswith('<div id="proposal-rows"') and "<html" not in body
    assert pending.proposal_id[:12] in body


def test_index_query_count_does_not_grow_with_proposals(client, curator, world, django_assert_max_num_queries):
    for i in range(30):
        make(world, f"c-{i}", f"city{i}", f"land{i}")
    client.force_login(curator)
    with django_assert_max_num_queries(8):
        response = client.get(reverse("teaching:index", args=["acme"]), {"state": "all"})
    assert response.content.decode().count("data-proposal=") == 30


def test_index_page_size_from_the_url_stays_within_bounds(client, curator, world):
    for i in range(3):
        make(world, f"c-{i}", f"city{i}", f"land{i}")
    client.force_login(curator)
    url = reverse("teaching:index", args=["acme"])
    for asked, shown in (("-1", 1), ("0", 1), ("2", 2), (str(10**9), 3)):
        response = client.get(url, {"state": "all", "per_page": asked})
        assert response.status_code == 200, asked
        assert response.content.decode().count("<tr data-proposal=") == shown, asked


def test_proposal_page_shows_chain_evidence_and_highlights_regressions(client, curator, regressed, django_assert_max_num_queries):
    client.force_login(curator)
    with django_assert_max_num_queries(10):
        response = client.get(reverse("teaching:proposal", args=["acme", regressed.proposal_id]))
    page = response.content.decode()
    assert "paris" in page and "lyon" in page and "entry:1" in page
    assert page.count('data-regressed="true"') == 2  # accuracy.public and precision.public
    assert "auto_rollback_regression" in page and 'name="decision"' not in page  # terminal: no form


def test_accept_from_the_page_appends_an_entry_and_redirects(client, curator, pending):
    client.force_login(curator)
    url = reverse("teaching:decide", args=["acme", pending.proposal_id])
    response = client.post(url, {"decision": "accept", "note": "looks right"})
    assert response.status_code == 302
    pending.refresh_from_db()
    assert pending.state == "accepted" and pending.operator_note == "looks right"
    assert CorpusEntry.objects.get(proposal=pending).operator == curator


def test_htmx_reject_swaps_the_status_panel(client, curator, pending):
    client.force_login(curator)
    url = reverse("teaching:decide", args=["acme", pending.proposal_id])
    response = client.post(url, {"decision": "reject", "note": "<b>no</b>"}, HTTP_HX_REQUEST="true")
    body = response.content.decode()
    assert response.status_code == 200 and body.lstrip().startswith('<section class="card" id="proposal-status"')
    assert 'data-state="rejected"' in body and "&lt;b&gt;no&lt;/b&gt;" in body and "<b>no</b>" not in body
    assert CorpusEntry.objects.count() == 2
    # the history beside the panel is swapped too (out of band), with the new event
    history = body[body.index('id="proposal-history"') - 30:]
    assert 'hx-swap-oob="true"' in history and "→ Rejected" in history
    assert f"Rejected by {curator.get_username()} on " in body  # it said "Reject by"


def test_a_note_too_long_is_refused_on_the_note_not_on_the_decision(client, curator, pending):
    client.force_login(curator)
    url = reverse("teaching:decide", args=["acme", pending.proposal_id])
    body = client.post(url, {"decision": "reject", "note": "x" * 2001}, HTTP_HX_REQUEST="true").content.decode()
    assert "Not recorded: see the note." in body and "Choose accept, reject or withdraw" not in body
    assert "at most 2000 characters" in body


def test_accept_on_a_non_equivalent_proposal_is_refused_with_an_explicit_error(client, curator, regressed):
    client.force_login(curator)
    url = reverse("teaching:decide", args=["acme", regressed.proposal_id])
    response = client.post(url, {"decision": "accept"})
    assert response.status_code == 422 and "not replay-equivalent" in response.content.decode()
    htmx = client.post(url, {"decision": "accept"}, HTTP_HX_REQUEST="true")
    assert 'data-testid="decision-error"' in htmx.content.decode()
    assert CorpusEntry.objects.count() == 2 and ProposalEvent.objects.filter(proposal=regressed).count() == 2


def test_a_viewer_sees_no_decision_form_and_cannot_post(client, viewer, pending):
    client.force_login(viewer)
    page = client.get(reverse("teaching:proposal", args=["acme", pending.proposal_id])).content.decode()
    assert 'name="decision"' not in page and "Waiting for a curator" in page
    response = client.post(reverse("teaching:decide", args=["acme", pending.proposal_id]), {"decision": "accept"})
    assert response.status_code == 403 and Proposal.objects.get().state == "pending"


def test_proposal_pages_are_sealed(client, tenant_pair):
    proposal = make(tenant_pair.b, "c-1", "x", "y")
    assert_sealed(client, tenant_pair.member_of_a, reverse("teaching:proposal", args=["tenant-b", proposal.proposal_id]))
    assert_sealed(
        client, tenant_pair.member_of_a, reverse("teaching:decide", args=["tenant-b", proposal.proposal_id]), "post",
        {"decision": "accept"},
    )
    # the application A's member does belong to does not hold B's proposal either
    client.force_login(tenant_pair.member_of_a)
    assert client.get(reverse("teaching:proposal", args=["tenant-a", proposal.proposal_id])).status_code == 404


def test_candidates_page_shows_gates_and_proposes(client, curator, world, django_assert_max_num_queries):
    CandidateFactory(application=world, candidate_id="c-ok", subject="tokyo", object="japan")
    CandidateFactory(application=world, candidate_id="c-vague", polarity="undetermined", subject="<script>x</script>")
    client.force_login(curator)
    with django_assert_max_num_queries(8):
        page = client.get(reverse("teaching:candidates", args=["acme"])).content.decode()
    assert "polarity is &#x27;undetermined&#x27;" in page and "<script>x</script>" not in page
    response = client.post(reverse("teaching:propose", args=["acme", "c-ok"]))
    proposal = Proposal.objects.get()
    assert response.status_code == 302 and response.url == reverse("teaching:proposal", args=["acme", proposal.proposal_id])
    response = client.post(reverse("teaching:propose", args=["acme", "c-vague"]), follow=True)
    assert "polarity decided" in response.content.decode() and Proposal.objects.count() == 1


def test_candidates_page_pages_newest_first_by_cursor(client, viewer, world, monkeypatch):
    """It showed the newest 200 and pointed to the API for the rest."""
    monkeypatch.setattr("teaching.views.CANDIDATE_PAGE", 2)
    for i in range(5):
        CandidateFactory(application=world, candidate_id=f"c-{i}")
    client.force_login(viewer)
    url = reverse("teaching:candidates", args=["acme"])

    def shown(html: str) -> list[str]:
        return re.findall(r'data-candidate="([^"]+)"', html)

    pages, link = [], ""
    while True:
        html = client.get(url + link).content.decode()
        pages.append(shown(html))
        if not (found := re.search(r'href="(\?cursor=[^"]+)" rel="next"', html)):
            break
        link = found.group(1)
    assert pages == [["c-4", "c-3"], ["c-2", "c-1"], ["c-0"]]
    back = re.search(r'href="(\?cursor=[^"]+)" rel="prev"', html).group(1)
    assert shown(client.get(url + back).content.decode()) == ["c-2", "c-1"]
    # A hand-edited cursor says so and shows the newest, not a 500.
    response = client.get(url + "?cursor=garbage")
    assert response.status_code == 200 and "Invalid cursor." in response.content.decode()
    assert shown(response.content.decode()) == ["c-4", "c-3"]


def test_proposing_another_applications_candidate_is_404(client, tenant_pair):
    """Candidate ids are the pipeline's own, so two applications may hold the same one
    (the demo's do): a candidate only B holds, named under A's URL, does not exist."""
    CandidateFactory(application=tenant_pair.b, candidate_id="only-in-b", subject="tokyo", object="japan")
    client.force_login(tenant_pair.member_of_a)
    response = client.post(reverse("teaching:propose", args=[tenant_pair.a.slug, "only-in-b"]))
    assert response.status_code == 404 and not Proposal.objects.exists()
    assert_sealed(client, tenant_pair.member_of_a, reverse("teaching:propose", args=[tenant_pair.b.slug, "only-in-b"]),
                  "post")


def test_evals_page_lists_cases_per_split_and_current_metrics(client, viewer, world):
    client.force_login(viewer)
    page = client.get(reverse("teaching:evals", args=["acme"])).content.decode()
    assert "e-paris" in page and "e-tokyo" in page and "e-rome" in page
    assert 'data-testid="lane-lookup"' in page and "accuracy" in page and "0.000" in page  # dev: tokyo unanswered


def test_corpus_page_supersedes_as_a_separate_action(client, curator, viewer, world):
    first, second = CorpusEntry.objects.order_by("id")
    url = reverse("teaching:corpus", args=["acme"])
    client.force_login(viewer)
    assert client.post(url, {"entry": first.number, "superseded_by": second.number}).status_code == 403
    client.force_login(curator)
    bad = client.post(url, {"entry": first.number, "superseded_by": first.number})
    assert bad.status_code == 422 and "cannot supersede itself" in bad.content.decode()
    assert client.post(url, {"entry": first.number, "superseded_by": second.number, "note": "dup"}).status_code == 302
    assert CorpusSupersession.objects.get().operator == curator
    assert "retired, superseded by #" in client.get(url).content.decode()


def test_home_card_counts_pending_proposals(world, pending, regressed):
    card = next(c for c in home_cards(world) if c.title == "Teaching proposals")
    assert card.count == 1 and card.url == reverse("teaching:index", args=["acme"])


def test_demo_loader_is_idempotent(application):
    users = {name: UserFactory(username=f"demo-{name}") for name in ("admin", "curator", "curator2", "viewer")}
    Membership.objects.create(user=users["curator"], application=application, role="curator")
    load_demo(application=application, users=users)
    counts = [m.objects.count() for m in (Candidate, Proposal, ProposalEvent, CorpusEntry, EvalCase)]
    load_demo(application=application, users=users)
    assert [m.objects.count() for m in (Candidate, Proposal, ProposalEvent, CorpusEntry, EvalCase)] == counts
    assert set(Proposal.objects.values_list("state", flat=True)) == {"pending", "accepted", "rejected", "withdrawn"}
    # The replay gate's rejection of a regression is among them.
    assert Proposal.objects.filter(state="rejected", replay_equivalent=False).exists()


def test_admin_shows_teaching_history_read_only(client, pending):
    admin_user = UserFactory(username="root", is_staff=True, is_superuser=True)
    client.force_login(admin_user)
    assert client.get("/admin/teaching/proposal/").status_code == 200
    assert client.get(f"/admin/teaching/proposal/{pending.pk}/delete/").status_code == 403
    assert client.get("/admin/teaching/corpusentry/add/").status_code == 403
    assert Proposal.objects.filter(pk=pending.pk).exists()
