"""Browser: an operator accepts and rejects teaching proposals from the screens."""

import re

from playwright.sync_api import expect

from consoles.models import Role
from consoles.tests.factories import ApplicationFactory, MembershipFactory, UserFactory
from teaching.models import CorpusEntry, Proposal
from teaching.services import Actor, proposal_create
from teaching.tests.factories import CandidateFactory, CorpusEntryFactory, EvalCaseFactory

from .conftest import login


def _setup(transactional_db):
    app = ApplicationFactory(slug="acme", name="Acme assistant")
    MembershipFactory(user=UserFactory(username="olga"), application=app, role=Role.CURATOR)
    CorpusEntryFactory(application=app, subject="paris", object="france")
    EvalCaseFactory(application=app, case_id="e-paris", split="public", subject="paris", expected_object="france")
    EvalCaseFactory(application=app, case_id="e-tokyo", split="dev", subject="tokyo", expected_object="japan")
    proposals = {}
    for cid, subject, obj in (("c-tokyo", "tokyo", "japan"), ("c-oslo", "oslo", "norway"), ("c-lyon", "paris", "lyon")):
        CandidateFactory(application=app, candidate_id=cid, subject=subject, object=obj)
        proposals[cid], _ = proposal_create(application=app, candidate_id=cid, actor=Actor.system())
    return app, proposals


def test_accept_and_reject_from_the_screens(page, transactional_db):
    app, proposals = _setup(transactional_db)
    login(page, "olga")
    page.goto("/a/acme/teaching/")
    rows = page.get_by_test_id("proposal-table")
    expect(rows.locator("tbody tr")).to_have_count(2)  # the regression was auto-rejected

    # accept tokyo (htmx swaps the status panel in place)
    page.locator(f'tr[data-proposal="{proposals["c-tokyo"].proposal_id}"] a').click()
    expect(page.get_by_test_id("chain")).to_contain_text("tokyo")
    page.get_by_label("Note").fill("Checked the atlas")
    page.get_by_role("button", name="Accept").click()
    expect(page.get_by_test_id("state")).to_have_text("Accepted")
    # the buttons went with the swap; focus moves to the new state, not the page's start
    expect(page.locator("#proposal-state")).to_be_focused()
    expect(page.get_by_test_id("events")).to_contain_text("Pending → Accepted")  # history swapped too
    expect(page.get_by_test_id("corpus-entry")).to_contain_text("discovery promoted")
    assert Proposal.objects.get(pk=proposals["c-tokyo"].pk).state == "accepted"
    assert CorpusEntry.objects.filter(application=app).count() == 2

    # reject oslo from the pending list
    page.goto("/a/acme/teaching/")
    page.locator(f'tr[data-proposal="{proposals["c-oslo"].proposal_id}"] a').click()
    page.get_by_label("Note").fill("Not from a clean turn")
    page.get_by_role("button", name="Reject").click()
    expect(page.get_by_test_id("state")).to_have_text("Rejected")
    assert Proposal.objects.get(pk=proposals["c-oslo"].pk).state == "rejected"
    assert CorpusEntry.objects.filter(application=app).count() == 2

    # the rejected tab (htmx) lists the operator's reject and the gate's auto-reject
    page.goto("/a/acme/teaching/")
    page.get_by_test_id("tab-rejected").click()
    expect(page).to_have_url(re.compile(r"state=rejected"))
    expect(page.get_by_test_id("proposal-table").locator("tbody tr")).to_have_count(2)

    # the auto-rejected proposal shows its regressions and offers no accept
    page.locator(f'tr[data-proposal="{proposals["c-lyon"].proposal_id}"] a').click()
    expect(page.locator('tr[data-regressed="true"]')).to_have_count(2)
    expect(page.get_by_role("button", name="Accept")).to_have_count(0)


def test_accept_works_without_javascript(new_page, transactional_db):
    app, proposals = _setup(transactional_db)
    page = new_page()
    page.context.route("**/*.js", lambda route: route.abort())
    login(page, "olga")
    page.goto(f"/a/acme/teaching/proposals/{proposals['c-tokyo'].proposal_id}/")
    page.get_by_role("button", name="Accept").click()
    expect(page.get_by_test_id("state")).to_have_text("Accepted")
    expect(page.get_by_role("status")).to_contain_text("Decision recorded")
