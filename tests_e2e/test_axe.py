"""Browser: axe-core finds no accessibility violation on any main console screen
(the demo data, as `make run` shows it), and the screens fit a 1366 px window.

axe-core is vendored (tests_e2e/vendor/axe.min.js, the npm package `axe-core`,
MPL-2.0): test-only, never served, no CDN. It is injected through the DevTools
protocol (`page.evaluate`), which the pages' CSP does not govern. Screenshots at
1366 px go to artifacts/axe-*.png.
"""

import json
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command
from playwright.sync_api import Page

from .conftest import login

AXE = (Path(__file__).resolve().parent / "vendor" / "axe.min.js").read_text()
ARTIFACTS = Path(__file__).resolve().parent.parent / "artifacts"
WIDTH = 1366


def axe_violations(page: Page) -> list[dict]:
    if not page.evaluate("typeof window.axe !== 'undefined'"):
        page.evaluate(AXE)
    result = page.evaluate(
        "axe.run(document, {resultTypes: ['violations'], runOnly: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa', "
        "'best-practice']})"
    )
    assert result["passes"] or result["violations"] or result["incomplete"] is not None  # axe ran
    return [
        {"id": v["id"], "help": v["help"], "nodes": [n["target"] for n in v["nodes"]][:5]}
        for v in result["violations"]
    ]


def check(page: Page, name: str) -> list[str]:
    page.wait_for_load_state("networkidle")
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"axe-{name}.png"), full_page=True)
    return [f"{name} ({page.url}): {v['id']} – {v['help']} at {json.dumps(v['nodes'])}" for v in axe_violations(page)]


@pytest.fixture
def demo(transactional_db):
    call_command("load_demo", stdout=StringIO())


def test_every_main_screen_has_no_axe_violation(new_page, demo):
    from adjudication.models import Case
    from feedback.models import Flag
    from sampling.models import SamplingPlan
    from teaching.models import Proposal

    page = new_page()
    page.set_viewport_size({"width": WIDTH, "height": 900})
    problems = check(page, "login") if page.goto("/login/") else []
    login(page, "curator", "demo-pass-2026")
    flag = Flag.objects.filter(application__slug="acme-chat", status="pending").order_by("-created_at").first()
    case = Case.objects.get(application__slug="acme-chat", case_id="acme-chat-case-024")
    plan = SamplingPlan.objects.filter(application__slug="acme-chat").first()
    proposal = Proposal.objects.filter(application__slug="acme-chat").first()
    screens = {
        "home": "/",
        "application": "/a/acme-chat/",
        "queue": "/a/acme-chat/flags/?status=pending",
        "queue-empty": "/a/acme-chat/flags/?status=pending&q=nothingmatchesthisword",
        "queue-flag-open": f"/a/acme-chat/flags/{flag.public_id}/?status=pending",
        "cases": "/a/acme-chat/cases/",
        "case-queue": "/a/acme-chat/cases/queue/",
        "case-detail": f"/a/acme-chat/cases/{case.case_id}/",
        "agreement": "/a/acme-chat/cases/agreement/",
        "sampling": "/a/acme-chat/sampling/",
        "sampling-new": "/a/acme-chat/sampling/new/",
        "teaching": "/a/acme-chat/teaching/",
        "teaching-candidates": "/a/acme-chat/teaching/candidates/",
        "teaching-evals": "/a/acme-chat/teaching/evals/",
        "teaching-corpus": "/a/acme-chat/teaching/corpus/",
        "bank": "/a/acme-chat/bank/",
        "overview": "/a/acme-chat/overview/",
        "not-found": "/a/acme-chat/flags/fb_0000000000000000/",
    }
    if plan is not None:
        screens["sampling-plan"] = f"/a/acme-chat/sampling/plans/{plan.pk}/"
    if proposal is not None:
        screens["teaching-proposal"] = f"/a/acme-chat/teaching/proposals/{proposal.proposal_id}/"
    for name, url in screens.items():
        page.goto(url)
        problems += check(page, name)
    # A flash message (the messages list): a download with a bad filter says so.
    page.goto("/a/acme-chat/flags/export.jsonl?status=bogus")
    assert page.locator(".messages li").count() == 1
    problems += check(page, "flash-message")
    assert not problems, "\n".join(problems)
