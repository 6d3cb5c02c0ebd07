"""Browser tests of the triage queue: keys, decisions, the two-curator conflict, escaping."""

import re
from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.utils import timezone
from playwright.sync_api import expect

from consoles.models import Role
from consoles.tests.factories import ApplicationFactory, MembershipFactory, UserFactory
from feedback.models import Flag
from feedback.services import flag_review
from feedback.tests.factories import FlagFactory

from .conftest import login

User = get_user_model()


@pytest.fixture
def queue(transactional_db):
    app = ApplicationFactory(slug="acme", name="Acme assistant")
    for name in ("cora", "carl"):
        MembershipFactory(user=UserFactory(username=name), application=app, role=Role.CURATOR)
    now = timezone.now()
    flags = [
        FlagFactory(application=app, message_id=f"m{i}", note=f"note {i}", created_at=now - timedelta(hours=10 - i))
        for i in range(3)
    ]
    return app, flags


def _status(flag) -> str:
    return Flag.objects.get(pk=flag.pk).status


def test_approve_by_keyboard_then_the_next_pending_flag_opens(page, queue):
    app, flags = queue
    violations = []
    page.on("console", lambda m: violations.append(m.text) if "Content Security Policy" in m.text else None)
    login(page, "cora")
    page.goto("/a/acme/flags/")
    page.get_by_test_id("next-pending").click()
    detail = page.get_by_test_id("flag-detail")
    expect(detail).to_have_attribute("data-flag-id", flags[2].public_id)  # the list's top: newest first
    page.keyboard.press("?")
    expect(page.locator("#keys-help")).to_be_visible()
    expect(page.locator("#keys-help")).to_contain_text("nothing is recorded until a verdict or label is chosen")
    page.keyboard.press("?")
    expect(page.locator("#keys-help")).to_be_hidden()
    page.keyboard.press("1")
    page.keyboard.press("a")
    expect(page.get_by_role("status").filter(has_text=f"Approved {flags[2].public_id}")).to_be_visible()
    expect(page.get_by_test_id("flag-detail")).to_have_attribute("data-flag-id", flags[1].public_id)  # the row below
    stored = Flag.objects.get(pk=flags[2].pk)
    assert (stored.status, stored.axis, stored.verdict) == ("approved", "hallucination", "false_negative")
    assert violations == []


def test_j_and_k_move_between_flags(page, queue):
    app, flags = queue
    login(page, "cora")
    page.goto("/a/acme/flags/")
    page.keyboard.press("j")  # opens the first row (newest first)
    expect(page.get_by_test_id("flag-detail")).to_have_attribute("data-flag-id", flags[2].public_id)
    page.keyboard.press("j")
    expect(page.get_by_test_id("flag-detail")).to_have_attribute("data-flag-id", flags[1].public_id)
    page.keyboard.press("k")
    expect(page.get_by_test_id("flag-detail")).to_have_attribute("data-flag-id", flags[2].public_id)


def test_reject_then_reopen(page, queue):
    app, flags = queue
    login(page, "cora")
    page.goto(f"/a/acme/flags/{flags[2].public_id}/")
    page.get_by_label("Why reject (optional)").fill("noise")
    page.get_by_role("button", name="Reject r", exact=True).click()
    expect(page.get_by_role("status").filter(has_text=f"Rejected {flags[2].public_id}")).to_be_visible()
    assert _status(flags[2]) == "rejected"
    page.goto(f"/a/acme/flags/{flags[2].public_id}/")
    expect(page.get_by_test_id("flag-status")).to_have_text("Rejected")
    expect(page.get_by_test_id("history")).to_contain_text("noise")
    page.get_by_role("button", name="Re-open").click()
    expect(page.get_by_test_id("flag-status")).to_have_text("Pending")
    assert _status(flags[2]) == "pending"


def test_two_curators_deciding_the_same_flag_get_a_conflict_not_an_overwrite(new_page, queue):
    app, flags = queue
    cora, carl = new_page(), new_page()
    login(cora, "cora")
    login(carl, "carl")
    url = f"/a/acme/flags/{flags[0].public_id}/"
    with cora.expect_response(lambda r: "/claim/" in r.url):  # the pane claims it by POST as it opens
        cora.goto(url)
    carl.goto(url)
    expect(carl.get_by_role("status").filter(has_text="Open by cora")).to_be_visible()
    cora.get_by_role("button", name="Reject r", exact=True).click()
    expect(cora.get_by_role("status").filter(has_text="Rejected")).to_be_visible()
    carl.keyboard.press("2")
    carl.keyboard.press("a")  # carl still sees the old version
    conflict = carl.get_by_test_id("conflict")
    expect(conflict).to_be_visible()
    expect(conflict).to_contain_text("rejected")
    expect(carl.get_by_text("your decision was not saved")).to_have_count(1)  # said once
    expect(carl.get_by_test_id("flag-status")).to_have_text("Rejected")
    expect(carl).to_have_url(re.compile(re.escape(url) + r"(\?.*)?$"))  # the flag's page, not its form's /review/
    assert _status(flags[0]) == "rejected"


def test_a_prompt_with_a_script_renders_as_text(page, queue):
    app, _ = queue
    evil = FlagFactory(application=app, message_id="evil", prompt="<script>window.__pwned = 1</script>",
                       note="<img src=x onerror=window.__pwned=2>")
    login(page, "cora")
    page.goto(f"/a/acme/flags/{evil.public_id}/")
    expect(page.get_by_test_id("flag-prompt")).to_have_text("<script>window.__pwned = 1</script>")
    expect(page.get_by_test_id("flag-note")).to_have_text("<img src=x onerror=window.__pwned=2>")
    assert page.evaluate("typeof window.__pwned") == "undefined"


def test_filters_swap_the_table_in_place_and_stay_in_the_url(page, queue):
    app, flags = queue
    FlagFactory(application=app, message_id="tox", problem="offensive", suggested_axis="toxicity", note="rude")
    login(page, "cora")
    page.goto("/a/acme/flags/")
    page.evaluate("window.__same_page = true")
    page.get_by_label("Axis").select_option("toxicity")
    expect(page.get_by_test_id("queue-table").locator("tbody tr")).to_have_count(1)
    expect(page.get_by_test_id("queue-table")).to_contain_text("rude")
    assert "axis=toxicity" in page.url
    assert page.evaluate("window.__same_page") is True  # no full reload
    page.go_back()
    expect(page.get_by_test_id("queue-table").locator("tbody tr")).to_have_count(4)


def test_bulk_reject_of_selected_rows(page, queue):
    app, flags = queue
    login(page, "cora")
    page.goto("/a/acme/flags/")
    expect(page.get_by_test_id("bulk-reject")).to_be_hidden()  # nothing selected, nothing to reject
    for flag in flags[:2]:
        page.locator(f'tr[data-flag-id="{flag.public_id}"] input[name="ids"]').check()
    page.get_by_test_id("bulk-reject").click()
    confirm = page.get_by_test_id("bulk-confirm")
    expect(confirm.get_by_role("heading")).to_have_text("Reject 2 flags?")
    expect(confirm).to_contain_text("2 flagged by end users")
    assert [_status(f) for f in flags] == ["pending", "pending", "pending"]  # it asks first
    page.get_by_test_id("bulk-confirm-button").click()
    undo = page.get_by_test_id("bulk-undo")
    expect(undo).to_contain_text("Rejected 2 flags.")
    assert [_status(f) for f in flags] == ["rejected", "rejected", "pending"]
    undo.get_by_role("button", name="Undo: re-open these 2").click()
    expect(page.get_by_role("status").filter(has_text="Re-opened 2 flags")).to_be_visible()
    assert [_status(f) for f in flags] == ["pending", "pending", "pending"]


def test_created_the_sort_key_stays_in_view_beside_an_open_flag(new_page, queue):
    """At a laptop's width the table shares the screen with the detail pane; the
    columns that do not fit scroll inside the table's half, and the creation time
    (what the queue is sorted by) must not be one of them."""
    app, flags = queue
    page = new_page()
    page.set_viewport_size({"width": 1366, "height": 768})
    login(page, "cora")
    page.goto(f"/a/acme/flags/{flags[0].public_id}/")
    expect(page.get_by_test_id("flag-detail")).to_be_visible()
    rows = page.locator("#queue-rows").bounding_box()
    detail = page.locator("#detail").bounding_box()
    header = page.get_by_role("columnheader", name="Created").bounding_box()
    cell = page.locator(f"tr[data-flag-id='{flags[0].public_id}'] td.when")
    expect(cell).to_have_text(timezone.localtime(flags[0].created_at).strftime("%Y-%m-%d %H:%M UTC"))
    for box in (header, cell.bounding_box()):
        assert rows["x"] <= box["x"] and box["x"] + box["width"] <= rows["x"] + rows["width"]
        assert box["x"] + box["width"] <= detail["x"]


@pytest.mark.parametrize(("width", "open_flag"), [(1280, True), (1280, False), (1366, True), (1366, False),
                                                   (1920, True)])
def test_the_queue_fits_a_laptop_beside_the_pane_without_scrolling_sideways(new_page, queue, width, open_flag):
    """The table's last columns used to scroll out of sight inside its half of a
    laptop screen. Beside an open flag the list keeps the columns that pick the next
    flag (region, author and note are in the pane); with nothing open the pane is
    only its hint; from 1,920 px every column fits beside an open flag."""
    app, flags = queue
    Flag.objects.filter(pk=flags[1].pk).update(note="the assistant invented a citation " * 4)
    page = new_page()
    page.set_viewport_size({"width": width, "height": 800})
    login(page, "cora")
    page.goto(f"/a/acme/flags/{flags[0].public_id}/" if open_flag else "/a/acme/flags/")
    if open_flag:
        expect(page.get_by_test_id("flag-detail")).to_contain_text("Flagged by")
    overflow = page.evaluate("() => { const t = document.querySelector('.queue-table'); "
                             "return t.scrollWidth - t.parentElement.clientWidth; }")
    assert overflow <= 0
    header_names = page.locator(".queue-table th").evaluate_all(
        "ths => ths.filter(th => th.offsetParent !== null).map(th => th.textContent.trim())")
    everything = ["Select", "Flag", "Created ↓", "Status", "Region", "Problem", "Axis", "Flagged by", "Note"]
    if open_flag and width < 1920:
        assert header_names == ["Select", "Flag", "Created ↓", "Status", "Problem", "Axis"]
    else:
        assert header_names == everything
    rows = page.locator("#queue-rows").bounding_box()
    assert rows["x"] + rows["width"] <= page.locator("#detail").bounding_box()["x"]


def test_a_long_note_keeps_its_row_to_one_line(new_page, queue):
    """A note of many words wrapped in its narrow column and made its row several
    lines tall; it is cut to one line, and the note is the cell's tooltip."""
    app, flags = queue
    long_note = "the assistant invented a citation and then " * 6 + "<b>kept going</b>"
    Flag.objects.filter(pk=flags[1].pk).update(note=long_note)
    page = new_page()
    page.set_viewport_size({"width": 1366, "height": 768})
    login(page, "cora")
    page.goto("/a/acme/flags/")
    row = page.locator(f"tr[data-flag-id='{flags[1].public_id}']")
    note = row.locator("td.note .clip")
    expect(note).to_have_attribute("title", long_note)
    one_line = row.locator("td.flag-id a").bounding_box()["height"]
    assert note.bounding_box()["height"] < 1.5 * one_line
    short_row = page.locator(f"tr[data-flag-id='{flags[0].public_id}']").bounding_box()["height"]
    assert row.bounding_box()["height"] <= short_row + 1


def test_an_open_flag_fits_a_phone_without_scrolling_sideways(new_page, queue):
    app, flags = queue
    # A decided flag: its history and a long unbroken word are what widen the pane.
    flag = Flag.objects.get(pk=flags[0].pk)
    flag.answer = "See https://example.com/" + "very-long-path-segment-" * 8
    flag.save(update_fields=["answer"])
    flag_review(flag=flag, reviewer=User.objects.get(username="cora"), status="approved", version=flag.version,
                axis="hallucination", verdict="false_positive", note="checked_against_the_product_catalogue")
    page = new_page()
    page.set_viewport_size({"width": 390, "height": 844})
    login(page, "cora")
    page.goto(f"/a/acme/flags/{flags[0].public_id}/")
    expect(page.get_by_test_id("flag-detail")).to_be_visible()
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
