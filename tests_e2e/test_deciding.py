"""Browser: deciding in place from the keyboard, keys that cannot mislabel, and every
refused input shown where the curator looks."""

from datetime import timedelta

import pytest
from django.utils import timezone
from playwright.sync_api import expect

from consoles.models import Role
from consoles.tests.factories import ApplicationFactory, MembershipFactory, UserFactory
from feedback.models import Flag, FlagReview
from feedback.services import NOTE_LIMIT
from feedback.tests.factories import CaptureFactory, FlagFactory

from .conftest import PASSWORD, login


@pytest.fixture
def app(transactional_db):
    app = ApplicationFactory(slug="acme", name="Acme assistant")
    MembershipFactory(user=UserFactory(username="cora"), application=app, role=Role.CURATOR)
    return app


def _flags(app, n: int) -> list[Flag]:
    now = timezone.now()
    return [FlagFactory(application=app, message_id=f"m{i}", created_at=now - timedelta(minutes=i)) for i in range(n)]


def _loads(page) -> list[str]:
    """Full page loads of the main frame (an htmx swap and its pushState are not one)."""
    loads: list[str] = []
    page.on("load", lambda: loads.append(page.url))
    return loads


def test_ten_flags_decided_by_keyboard_without_a_page_load(page, app):
    flags = _flags(app, 11)  # newest first: flags[0] is the top row
    login(page, "cora")
    page.goto("/a/acme/flags/?status=pending")
    loads = _loads(page)
    page.keyboard.press("j")  # the first row
    detail = page.get_by_test_id("flag-detail")
    expect(detail).to_have_attribute("data-flag-id", flags[0].public_id)
    expect(page.locator("#flag-title")).to_be_focused()  # j moves focus to the flag
    chosen = {}
    for i in range(10):
        verdict = "1" if i % 2 == 0 else "2"
        if i == 3:
            page.keyboard.press("x")  # the axis, from the keyboard too
        page.keyboard.press(verdict)
        page.keyboard.press("a")
        chosen[flags[i].pk] = {"1": "false_negative", "2": "false_positive"}[verdict]
        expect(detail).to_have_attribute("data-flag-id", flags[i + 1].public_id)  # the row below opens
        expect(page.locator("#flag-title")).to_be_focused()
        expect(page.locator(f"#row-{flags[i].public_id} .badge")).to_have_text("Approved")
    assert loads == []
    assert page.url.endswith(f"/a/acme/flags/{flags[10].public_id}/?status=pending")
    for pk, verdict in chosen.items():
        stored = Flag.objects.get(pk=pk)
        assert (stored.status, stored.verdict) == ("approved", verdict)
    assert Flag.objects.get(pk=flags[3].pk).axis != Flag.objects.get(pk=flags[2].pk).axis
    assert FlagReview.objects.filter(reviewer__username="cora").count() == 10
    assert Flag.objects.get(pk=flags[10].pk).status == "pending"


def test_a_refuses_until_a_verdict_is_chosen(page, app):
    flag = _flags(app, 1)[0]
    login(page, "cora")
    page.goto(f"/a/acme/flags/{flag.public_id}/")
    page.keyboard.press("a")
    form = page.get_by_test_id("approve-form")
    expect(form.get_by_role("alert")).to_have_text(
        "Choose a verdict first: 1 for a miss (false negative), 2 for an over-flag (false positive).")
    page.get_by_role("button", name="Approve a").click()  # a click is refused the same way
    expect(form.get_by_role("alert")).to_be_visible()
    assert Flag.objects.get(pk=flag.pk).status == "pending"
    page.keyboard.press("2")
    expect(form.get_by_label("False positive (an over-flag)")).to_be_checked()
    expect(form.get_by_role("alert")).to_be_hidden()
    page.keyboard.press("a")
    expect(page.locator("#queue-status")).to_have_text(f"Approved {flag.public_id}. No pending flags left here.")
    assert Flag.objects.get(pk=flag.pk).verdict == "false_positive"


def test_a_capture_needs_its_label_chosen_by_number(page, app):
    capture = CaptureFactory(application=app)
    login(page, "cora")
    page.goto(f"/a/acme/flags/{capture.public_id}/")
    page.keyboard.press("a")
    expect(page.get_by_test_id("label-form").get_by_role("alert")).to_contain_text("Choose a label first")
    assert Flag.objects.get(pk=capture.pk).status == "pending"
    page.keyboard.press("3")
    page.keyboard.press("a")
    expect(page.locator("#queue-status")).to_contain_text(f"Labelled {capture.public_id}.")
    assert Flag.objects.get(pk=capture.pk).capture_label == app.capture_labels[2]


def test_an_invalid_twin_weight_opens_its_section_and_takes_focus(page, app):
    flag = _flags(app, 1)[0]
    login(page, "cora")
    page.goto(f"/a/acme/flags/{flag.public_id}/")
    twin = page.get_by_test_id("approve-form").locator("details.twin")
    twin.locator("summary").click()
    page.get_by_label("Weight").fill("5")
    twin.locator("summary").click()  # closed again: the error must still be found
    expect(twin).not_to_have_attribute("open", "")
    page.locator("#flag-title").focus()
    page.keyboard.press("1")
    page.keyboard.press("a")
    expect(twin).to_have_attribute("open", "")
    expect(page.get_by_label("Weight")).to_be_focused()
    assert Flag.objects.get(pk=flag.pk).status == "pending"
    # the server's refusal (the browser's check bypassed) opens the section the same way
    page.get_by_test_id("approve-form").evaluate("f => f.noValidate = true")
    twin.locator("summary").click()
    page.keyboard.press("a")
    expect(page.locator("#review_weight-error")).to_contain_text("less than or equal to 1")
    expect(page.get_by_test_id("approve-form").locator("details.twin")).to_have_attribute("open", "")
    expect(page.get_by_label("Weight")).to_be_focused()
    assert Flag.objects.get(pk=flag.pk).status == "pending"


@pytest.mark.parametrize(("selector", "value", "error", "message"), [
    ("#review_note", "n" * (NOTE_LIMIT + 1), "#review_note-error", f"at most {NOTE_LIMIT} characters"),
    ("#review_attack_family", "x" * 101, "#review_attack_family-error", "at most 100 characters"),
    ("[data-testid=approve-form] input[name=version]", "abc", "[data-testid=decide-error]",
     "Version: Enter a whole number."),
])
def test_every_server_side_form_error_is_shown_beside_its_field(page, app, selector, value, error, message):
    flag = _flags(app, 1)[0]
    login(page, "cora")
    page.goto(f"/a/acme/flags/{flag.public_id}/")
    # past the browser's own limits, as a stale page or another client would send it
    page.locator(selector).evaluate("(e, v) => { e.removeAttribute('maxlength'); e.value = v; }", value)
    page.keyboard.press("1")
    page.keyboard.press("a")
    expect(page.locator(error)).to_contain_text(message)
    expect(page.locator(error)).to_be_visible()
    assert Flag.objects.get(pk=flag.pk).status == "pending"


def test_an_empty_password_says_so(page, app):
    login(page, "cora", "")
    expect(page.locator("#password-error")).to_have_text("This field is required.")
    login(page, "cora", PASSWORD)
    expect(page.get_by_role("button", name="Log out")).to_be_visible()


def test_a_bad_cursor_shows_the_newest_flags_and_says_so(page, app):
    flags = _flags(app, 2)
    login(page, "cora")
    page.goto("/a/acme/flags/?status=pending&cursor=not-a-cursor")
    expect(page.get_by_test_id("cursor-error")).to_have_text("Invalid cursor. Showing the newest flags.")
    expect(page.get_by_test_id("queue-table").locator("tbody tr")).to_have_count(len(flags))


def test_a_bad_date_is_a_form_error_on_flags_and_overview(page, app):
    login(page, "cora")
    response = page.goto("/a/acme/flags/?created_from=2026-02-31")
    assert response.status == 200
    expect(page.get_by_test_id("filters")).to_contain_text("Enter a valid date.")
    response = page.goto("/a/acme/overview/?from=2026-02-31")
    assert response.status == 200
    expect(page.get_by_test_id("range-error")).to_contain_text("Enter a valid date")


def test_without_javascript_forms_still_decide_and_long_texts_fold(browser, live_server, app):
    flags = _flags(app, 2)
    Flag.objects.filter(pk=flags[0].pk).update(prompt="a very long prompt line\n" * 2_000)
    context = browser.new_context(base_url=live_server.url, java_script_enabled=False)
    try:
        page = context.new_page()
        login(page, "cora")
        page.goto(f"/a/acme/flags/{flags[0].public_id}/?status=pending")
        prompt = page.get_by_test_id("flag-prompt")
        assert prompt.bounding_box()["height"] < 400  # folded: the pane is not metres tall
        page.get_by_test_id("fold-prompt").locator("summary").click()
        assert prompt.bounding_box()["height"] > 10_000
        page.get_by_test_id("approve-form").get_by_label("False negative (a miss)").check()
        page.get_by_role("button", name="Approve a").click()
        expect(page.get_by_role("status").filter(has_text=f"Approved {flags[0].public_id}")).to_be_visible()
        expect(page.get_by_test_id("flag-detail")).to_have_attribute("data-flag-id", flags[1].public_id)
        page.get_by_role("button", name="Approve a").click()  # no verdict: the server says so
        expect(page.locator("#review_verdict-error")).to_contain_text("Choose a verdict")
        assert Flag.objects.get(pk=flags[1].pk).status == "pending"
    finally:
        context.close()
