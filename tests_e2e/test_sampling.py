"""Browser: make a sampling plan with a preview, then enqueue it."""

import re

import pytest
from playwright.sync_api import expect

from adjudication.models import QueueEntry
from consoles.models import Role
from consoles.tests.factories import ApplicationFactory, MembershipFactory, UserFactory
from sampling.tests.factories import make_case

from .conftest import login


@pytest.fixture
def sampling_corpus(transactional_db):
    application = ApplicationFactory(slug="acme", name="Acme assistant")
    MembershipFactory(user=UserFactory(username="cora"), application=application, role=Role.CURATOR)
    make_case(application, "loud", mined_by=("sensor_disagreement", "high_uncertainty"), evidence="conflict")
    for i in (1, 2, 3):
        make_case(application, f"dup-{i}", subject="disk full", mined_by=("sensor_disagreement",),
                  evidence="conflict")
    make_case(application, "quiet")
    return application


def test_make_a_plan_with_preview_and_enqueue_it(page, sampling_corpus):
    login(page, "cora")
    page.goto("/a/acme/sampling/")
    expect(page.get_by_test_id("comparison-gate")).to_contain_text("not enough gold labels (0/20)")
    page.get_by_role("link", name="New plan").click()
    page.get_by_label("Budget").fill("4")
    page.get_by_label("Max per pattern").fill("2")
    page.get_by_role("button", name="Preview").click()
    summary = page.get_by_test_id("preview-summary")
    expect(summary).to_contain_text("4 of 5 cases selected (4 with a signal)")
    expect(summary).to_contain_text("the cap of 2 per pattern left out 1")
    assert page.url.endswith("/a/acme/sampling/new/")  # the preview came in place (htmx)

    page.get_by_role("button", name="Make plan").click()
    expect(page).to_have_url(re.compile(r"/a/acme/sampling/plans/\d+/$"))
    rows = page.get_by_test_id("selections").locator("tbody tr")
    expect(rows).to_have_count(4)
    expect(rows.first).to_contain_text("loud")
    expect(rows.first).to_contain_text("Needs a human (3 signals)")
    expect(page.get_by_test_id("cap-effect")).to_contain_text("left out 1 case")

    page.get_by_role("button", name="Enqueue").click()
    expect(page.get_by_role("status")).to_contain_text("4 cases queued.")
    expect(page.get_by_test_id("enqueued")).not_to_contain_text("not yet")
    expect(page.get_by_role("button", name="Enqueue")).to_have_count(0)
    reasons = dict(QueueEntry.objects.values_list("case__case_id", "selection_reason"))
    assert reasons["loud"].startswith("Needs a human (3 signals)")
    assert len(reasons) == 4
