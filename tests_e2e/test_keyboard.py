"""Browser: the queue for people who work from the keyboard or with a screen reader.
Where focus lands after a decision or a swap, single-key shortcuts that can be
turned off, and a switcher menu that does not stay open over the page."""

from datetime import timedelta

import pytest
from django.utils import timezone
from playwright.sync_api import expect

from consoles.models import Role
from consoles.tests.factories import ApplicationFactory, MembershipFactory, UserFactory
from feedback.models import Flag
from feedback.tests.factories import FlagFactory

from .conftest import login


@pytest.fixture
def queue(transactional_db):
    app = ApplicationFactory(slug="acme", name="Acme assistant")
    ApplicationFactory(slug="globex", name="Globex verifier")
    cora = UserFactory(username="cora")
    MembershipFactory(user=cora, application=app, role=Role.CURATOR)
    MembershipFactory(user=cora, application=app.__class__.objects.get(slug="globex"), role=Role.VIEWER)
    now = timezone.now()
    return [FlagFactory(application=app, message_id=f"m{i}", created_at=now - timedelta(hours=10 - i)) for i in range(3)]


def test_after_a_decision_focus_is_on_the_next_flag_and_the_result_is_announced(page, queue):
    login(page, "cora")
    page.goto(f"/a/acme/flags/{queue[1].public_id}/")
    page.keyboard.press("r")
    # the next flag is the row below in the list's order (newest first)
    expect(page.get_by_test_id("flag-detail")).to_have_attribute("data-flag-id", queue[0].public_id)
    expect(page.locator("#flag-title")).to_be_focused()
    expect(page.locator("#queue-status")).to_have_text(f"Rejected {queue[1].public_id}.")  # a live region
    expect(page.locator(f"#row-{queue[1].public_id} .badge")).to_have_text("Rejected")  # the row says so too
    assert Flag.objects.get(pk=queue[1].pk).status == "rejected"


def test_focus_stays_on_next_when_the_pane_is_swapped(page, queue):
    login(page, "cora")
    page.goto(f"/a/acme/flags/{queue[2].public_id}/")
    page.locator("#flag-next").focus()
    page.keyboard.press("Enter")
    expect(page.get_by_test_id("flag-detail")).to_have_attribute("data-flag-id", queue[1].public_id)
    expect(page.locator("#flag-next")).to_be_focused()


def test_the_filters_and_the_approve_form_each_label_their_own_axis(page, queue):
    login(page, "cora")
    page.goto(f"/a/acme/flags/{queue[0].public_id}/")
    approve_axis = page.get_by_test_id("approve-form").get_by_label("Axis")
    expect(approve_axis).to_have_attribute("name", "axis")
    page.get_by_test_id("approve-form").locator("label", has_text="Axis").click()
    expect(approve_axis).to_be_focused()


def test_single_key_shortcuts_can_be_turned_off_and_stay_off(page, queue):
    login(page, "cora")
    page.goto(f"/a/acme/flags/{queue[1].public_id}/")
    page.get_by_role("button", name="Keyboard shortcuts").click()
    page.get_by_label("Use these single-key shortcuts").uncheck()
    page.get_by_role("button", name="Close").click()
    page.reload()
    page.keyboard.press("r")
    page.keyboard.press("j")
    page.keyboard.press("?")
    page.wait_for_timeout(500)
    expect(page.get_by_test_id("flag-detail")).to_have_attribute("data-flag-id", queue[1].public_id)
    expect(page.locator("#keys-help")).to_be_hidden()
    assert Flag.objects.get(pk=queue[1].pk).status == "pending"
    # the buttons still work, and the shortcuts come back from the same switch
    page.get_by_role("button", name="Keyboard shortcuts").click()
    expect(page.get_by_label("Use these single-key shortcuts")).not_to_be_checked()
    page.get_by_label("Use these single-key shortcuts").check()
    page.get_by_role("button", name="Close").click()
    page.keyboard.press("r")
    expect(page.get_by_test_id("flag-detail")).to_have_attribute("data-flag-id", queue[0].public_id)
    assert Flag.objects.get(pk=queue[1].pk).status == "rejected"


def test_the_application_switcher_closes_when_focus_leaves_it(page, queue):
    login(page, "cora")
    page.goto("/a/acme/flags/")
    switcher = page.get_by_test_id("app-switcher")
    summary = switcher.locator("summary")
    summary.focus()
    page.keyboard.press("Enter")
    expect(switcher).to_have_attribute("open", "")
    page.keyboard.press("Tab")  # the first application
    expect(switcher.get_by_role("link").first).to_be_focused()
    page.keyboard.press("Escape")
    expect(switcher).not_to_have_attribute("open", "")
    expect(summary).to_be_focused()
    page.keyboard.press("Enter")
    for _ in range(3):  # past both applications, out of the menu
        page.keyboard.press("Tab")
    expect(switcher).not_to_have_attribute("open", "")
    expect(page.get_by_role("link", name="Overview")).to_be_focused()


CONTRAST = """([fg, bg]) => {
  const rgb = c => c.match(/\\d+(\\.\\d+)?/g).slice(0, 3).map(Number);
  const lum = c => { const [r, g, b] = rgb(c).map(v => { v /= 255; return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4; });
                     return 0.2126 * r + 0.7152 * g + 0.0722 * b; };
  const [a, b] = [lum(fg), lum(bg)].sort((x, y) => y - x);
  return (a + 0.05) / (b + 0.05);
}"""


def test_the_focus_ring_and_the_pending_badge_are_legible(page, queue):
    login(page, "cora")
    page.goto("/a/acme/flags/")
    link = page.locator("#queue-rows a[data-row-link]").first
    link.focus()
    page.keyboard.press("Shift+Tab")
    page.keyboard.press("Tab")  # focus by keyboard: :focus-visible applies
    expect(link).to_be_focused()
    ring = link.evaluate("e => getComputedStyle(e).outlineColor")
    card = page.evaluate("getComputedStyle(document.documentElement).backgroundColor")  # the page, under the table
    assert page.evaluate(CONTRAST, [ring, card]) >= 3  # WCAG 1.4.11, non-text contrast
    badge = page.locator("#queue-rows .badge.pending").first
    colours = badge.evaluate("e => [getComputedStyle(e).color, getComputedStyle(e).backgroundColor]")
    assert page.evaluate(CONTRAST, colours) >= 4.5
