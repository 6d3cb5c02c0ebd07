"""Browser test: the queue's download button exports what the filters show, after an htmx swap."""

import json
import re
from pathlib import Path

import pytest
from playwright.sync_api import expect

from consoles.models import Role
from consoles.tests.factories import ApplicationFactory, MembershipFactory, UserFactory
from feedback.services import flag_review
from feedback.tests.factories import FlagFactory

from .conftest import login


@pytest.fixture
def flags(transactional_db):
    app = ApplicationFactory(slug="acme", name="Acme assistant")
    cora = UserFactory(username="cora")
    MembershipFactory(user=cora, application=app, role=Role.CURATOR)
    approved = FlagFactory(application=app, message_id="m-approved", prompt='say "hi" <b>')
    approved = flag_review(flag=approved, reviewer=cora, status="approved", version=approved.version)
    pending = FlagFactory(application=app, message_id="m-pending")
    return approved, pending


def test_download_after_changing_the_filters(page, flags, tmp_path: Path):
    approved, pending = flags
    login(page, "cora")
    page.goto("/a/acme/flags/?status=pending")
    link = page.get_by_test_id("export-jsonl")
    expect(link).to_have_attribute("href", "/a/acme/flags/export.jsonl?status=pending")
    # The filter form swaps the rows region by htmx; the link follows the filters.
    page.get_by_label("Status").select_option("approved")
    expect(page.get_by_test_id("export-jsonl")).to_have_attribute(
        "href", re.compile(r"^/a/acme/flags/export\.jsonl\?(?:q=&)?status=approved&")  # the search box comes first
    )
    with page.expect_download() as info:
        page.get_by_test_id("export-jsonl").click()
    target = tmp_path / "flags.jsonl"
    info.value.save_as(target)
    assert info.value.suggested_filename.startswith("acme-flags-approved-")
    rows = [json.loads(line) for line in target.read_text(encoding="utf-8").splitlines()]
    assert [(r["id"], r["label"], r["prompt"]) for r in rows] == [(approved.public_id, 1, 'say "hi" <b>')]
