"""Browser: the overview over the demo data draws every chart, each with its table.

Saves a full-page screenshot to artifacts/overview.png (the test run's artifact).
"""

from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command
from playwright.sync_api import expect

from .conftest import login

ARTIFACTS = Path(__file__).resolve().parent.parent / "artifacts"
SECTIONS = ["backlog", "decisions", "approvals", "delays", "captures", "gold", "agreement", "sampling", "proposals"]


@pytest.fixture
def demo(transactional_db):
    call_command("load_demo", stdout=StringIO())


def test_the_overview_draws_every_chart_for_the_demo_data(page, demo):
    login(page, "viewer", "demo-pass-2026")
    page.goto("/a/acme-chat/")
    page.get_by_test_id("overview-link").click()
    expect(page.get_by_role("heading", name="Overview")).to_be_visible()
    for key in SECTIONS:
        section = page.get_by_test_id(f"chart-{key}")
        expect(section).to_be_visible()
        expect(section.get_by_test_id(f"empty-{key}")).to_have_count(0)
        svg = section.locator("svg.chart").first
        expect(svg).to_be_visible()
        assert svg.locator(".mark").count() > 0, f"{key}: no mark drawn"
        # The table view is in the page for screen readers; opening it shows data rows.
        section.locator("summary").first.click()
        table = section.get_by_test_id(f"table-{key}").first
        expect(table).to_be_visible()
        assert table.locator("tbody tr").count() > 0, f"{key}: empty table"
    expect(page.get_by_test_id("note-agreement")).to_contain_text("κ =")
    expect(page.get_by_test_id("gate-outcomes")).to_contain_text("regression")
    # A fresh load (tables closed) for the picture: the charts are what a lead reads.
    page.reload()
    ARTIFACTS.mkdir(exist_ok=True)
    path = ARTIFACTS / "overview.png"
    page.set_viewport_size({"width": 1360, "height": 900})
    page.screenshot(path=str(path), full_page=True)
    print(f"screenshot: {path}")
    assert path.stat().st_size > 10_000


def test_a_bad_date_is_a_form_error_and_the_range_stays_in_the_url(page, demo):
    login(page, "viewer", "demo-pass-2026")
    page.goto("/a/acme-chat/overview/?from=2026-02-30")
    expect(page.get_by_test_id("range-error")).to_contain_text("Enter a valid date")
    page.goto("/a/acme-chat/overview/")
    page.get_by_label("From", exact=True).fill("2026-11-01")
    page.get_by_label("To", exact=True).fill("2026-11-15")
    page.get_by_role("button", name="Show").click()
    expect(page).to_have_url("/a/acme-chat/overview/?from=2026-11-01&to=2026-11-15")
    expect(page.get_by_role("heading", name="Overview")).to_contain_text("Nov 1, 2026 – Nov 15, 2026")
