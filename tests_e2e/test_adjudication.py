"""Browser tests for adjudication: claim next, label (independently), promote to gold."""

import re

import pytest
from django.contrib.auth import get_user_model
from playwright.sync_api import expect

from adjudication.schemas import CaseIn
from adjudication.services import case_import, gold_promote, label_submit, queue_enqueue
from adjudication.tests.factories import case_payload
from consoles.models import Role
from consoles.tests.factories import ApplicationFactory, MembershipFactory, UserFactory

from .conftest import login

User = get_user_model()


@pytest.fixture
def queued_case(transactional_db):
    app = ApplicationFactory(slug="acme", name="Acme assistant")
    cora = UserFactory(username="cora")
    dan = UserFactory(username="dan")
    MembershipFactory(user=cora, application=app, role=Role.CURATOR)
    MembershipFactory(user=dan, application=app, role=Role.CURATOR)
    case = case_import(application=app, data=CaseIn.model_validate(case_payload("mined-42")), actor=None).case
    queue_enqueue(application=app, case=case, selection_reason="plan 3: sensor_disagreement", actor=None)
    # dan labelled first: cora must not see it before she submits hers.
    label_submit(application=app, case=case, reviewer=dan, label="contradicted", rationale="dan's hidden reasoning")
    return case


def test_claim_label_and_promote_to_gold(page, queued_case):
    violations: list[str] = []
    page.on("console", lambda msg: violations.append(msg.text) if "Content Security Policy" in msg.text else None)
    login(page, "cora")
    page.goto("/a/acme/cases/queue/")
    expect(page.get_by_role("cell", name="plan 3: sensor_disagreement")).to_be_visible()
    page.get_by_role("button", name="Claim next").click()

    expect(page.get_by_role("heading", name="Case mined-42")).to_be_visible()
    expect(page.get_by_test_id("claim")).to_contain_text("You hold this case")
    expect(page.get_by_test_id("families")).to_contain_text("family 1 — 2 records, counted as ONE source: same agent turn (event evt-1)")
    labels = page.get_by_test_id("labels")
    expect(labels).to_contain_text("1 other label hidden until you submit yours")
    expect(labels).not_to_contain_text("dan's hidden reasoning")

    labels.get_by_label("unreliable").check()
    labels.get_by_label("Rationale").fill("The host working tree shows no commit.")
    labels.get_by_role("button", name="Submit label").click()

    expect(page.get_by_text("Label saved")).to_be_visible()
    expect(labels).to_contain_text("Your label: unreliable")
    expect(labels).to_contain_text("dan's hidden reasoning")
    expect(page.get_by_test_id("claim")).to_have_count(0)  # two labels: the entry is done

    labels.get_by_role("button", name="Promote “unreliable” to gold").click()
    gold = page.get_by_test_id("gold")
    expect(gold).to_contain_text("Current: unreliable (revision 1)")
    labels.get_by_label("Why promote “contradicted” (optional)").fill("dan found the host log")
    labels.get_by_role("button", name="Promote “contradicted” to gold").click()
    expect(gold).to_contain_text("Current: contradicted (revision 2)")
    expect(gold).to_contain_text("dan found the host log")
    expect(gold.get_by_role("row")).to_have_count(4)  # header + two revisions + the second one's reason
    assert violations == []


def test_two_curators_claim_different_cases(new_page, queued_case):
    app = queued_case.application
    for i in range(2):
        extra = case_import(application=app, data=CaseIn.model_validate(case_payload(f"extra-{i}")), actor=None).case
        queue_enqueue(application=app, case=extra, selection_reason="manual", actor=None)
    ed = UserFactory(username="ed")
    MembershipFactory(user=ed, application=app, role=Role.CURATOR)
    first, second = new_page(), new_page()
    login(first, "cora")
    login(second, "ed")
    for page in (first, second):
        page.goto("/a/acme/cases/queue/")
        page.get_by_role("button", name="Claim next").click()
        expect(page.get_by_test_id("claim")).to_contain_text("You hold this case")
    assert first.url != second.url


def test_agreement_page_shows_the_gate(page, queued_case):
    login(page, "cora")
    page.goto("/a/acme/cases/agreement/")
    expect(page.get_by_test_id("kappa")).to_have_text("not enough data (0/20)")


# Cells that stick out of their card and are still drawn there (hit-tested just
# past the card's right edge): a wide table must scroll inside its card instead.
DRAWN_OUTSIDE_THEIR_CARD = """() => {
  const drawn = [];
  for (const card of document.querySelectorAll('.card')) {
    const edge = card.getBoundingClientRect().right;
    for (const cell of card.querySelectorAll('th, td')) {
      const box = cell.getBoundingClientRect();
      if (box.right <= edge + 1) continue;
      const hit = document.elementFromPoint(Math.min(box.right - 1, edge + 4), box.top + box.height / 2);
      if (hit && cell.contains(hit)) drawn.push(cell.textContent.trim());
    }
  }
  return drawn;
}"""


def test_wide_tables_scroll_inside_their_cards_at_a_laptop_width(new_page, queued_case):
    app, dan = queued_case.application, User.objects.get(username="dan")
    label = label_submit(application=app, case=queued_case, reviewer=User.objects.get(username="cora"),
                         label="insufficient_evidence", rationale="no host record either way")
    gold_promote(application=app, case=queued_case, label=label, adjudicator=dan)
    page = new_page()
    page.set_viewport_size({"width": 1366, "height": 2400})  # the whole page in view, for the hit test
    login(page, "cora")
    page.goto(f"/a/acme/cases/{queued_case.pk}/")
    expect(page.get_by_test_id("gold")).to_contain_text("Current: insufficient evidence (revision 1)")
    assert page.evaluate(DRAWN_OUTSIDE_THEIR_CARD) == []


@pytest.mark.parametrize("path", ["/a/acme/cases/", "/a/acme/cases/queue/"])
def test_the_case_lists_fit_a_phone_and_their_tables_scroll_in_place(new_page, queued_case, path):
    page = new_page()
    page.set_viewport_size({"width": 390, "height": 844})
    login(page, "cora")
    page.goto(path)
    table = page.get_by_role("region").locator("table")
    expect(table).to_contain_text("mined-42")
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    region = page.get_by_role("region").first
    assert region.evaluate("r => r.scrollWidth > r.clientWidth")  # the table scrolls inside its region


def test_enter_in_the_search_box_makes_one_request_and_one_history_entry(page, queued_case):
    login(page, "cora")
    page.goto("/a/acme/cases/")
    answered = []
    page.on("response", lambda r: answered.append(r.url) if "/cases/?" in r.url else None)
    box = page.locator("form.filters input[name=q]")
    box.fill("mined")
    box.press("Enter")  # fires both "change" and "submit"
    expect(page).to_have_url(re.compile(r"q=mined"))
    page.wait_for_timeout(500)
    assert len(answered) == 1, answered
    page.go_back()
    expect(page).to_have_url(re.compile(r"/cases/$"))
