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


def axe_violations(page: Page, stock: dict[str, list[str]] | None = None) -> list[dict]:
    """axe's violations on the page; `stock` maps a rule to the CSS selectors of elements
    whose violation of that rule (and that rule only) is Django's markup, not the project's."""
    if not page.evaluate("typeof window.axe !== 'undefined'"):
        page.evaluate(AXE)
    result = page.evaluate(
        "axe.run(document, {resultTypes: ['violations'], runOnly: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa', "
        "'best-practice']})"
    )
    assert result["passes"] or result["violations"] or result["incomplete"] is not None  # axe ran
    found = []
    for v in result["violations"]:
        nodes = [n["target"] for n in v["nodes"]]
        if stock and v["id"] in stock:
            nodes = [t for t in nodes if not page.evaluate(
                "([target, selectors]) => selectors.some(s => document.querySelector(target).matches(s))",
                [t[-1], stock[v["id"]]])]
        if nodes:
            found.append({"id": v["id"], "help": v["help"], "nodes": nodes[:5]})
    return found


def check(page: Page, name: str, stock: dict[str, list[str]] | None = None) -> list[str]:
    page.wait_for_load_state("networkidle")
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"axe-{name}.png"), full_page=True)
    return [f"{name} ({page.url}): {v['id']} – {v['help']} at {json.dumps(v['nodes'])}"
            for v in axe_violations(page, stock)]


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


# --- the Django admin pages the project customises ----------------------------------

PROJECT_APPS = ("consoles", "feedback", "exemplars", "teaching", "adjudication", "sampling", "overview", "reliability")


def _admin_pages() -> dict[str, str]:
    """Every project ModelAdmin's list, add form (where it may add) and first object's page,
    and the admin index; the library admins the project only re-scopes (auth, axes, tasks)
    keep Django's stock pages and are covered by the index alone."""
    from django.contrib import admin
    from django.urls import reverse

    pages = {"admin-index": reverse("admin:index")}
    for model, model_admin in admin.site._registry.items():
        if model._meta.app_label not in PROJECT_APPS:
            continue
        info = f"admin:{model._meta.app_label}_{model._meta.model_name}"
        name = f"admin-{model._meta.app_label}-{model._meta.model_name}"
        pages[f"{name}-list"] = reverse(f"{info}_changelist")
        if model_admin.has_add_permission(_SuperuserRequest()):
            pages[f"{name}-add"] = reverse(f"{info}_add")
        first = model._default_manager.order_by("pk").first()
        if first is not None:
            pages[f"{name}-change"] = reverse(f"{info}_change", args=[first.pk])
    return pages


class _SuperuserRequest:
    """Enough of a request for `has_add_permission` (a superuser may add what anyone may)."""

    class user:  # noqa: N801 - stands for request.user
        is_active = is_staff = is_superuser = True

        @staticmethod
        def has_perm(perm, obj=None) -> bool:
            return True


# Violations of Django's own admin markup, which the project does not draw (copying a stock
# template to change it would drift from Django's on every upgrade). Each is one rule on
# exactly the elements named; the project's own inputs in the same places are labelled
# (consoles.admin.LabelledInlineFormSet) and checked.
ADMIN_STOCK = {
    # admin/edit_inline/tabular.html: the first column's header (over each row's object name)
    # is always empty, and so is the last one (over the delete boxes) when rows cannot be deleted.
    "empty-table-header": [".inline-group thead th.original", ".inline-group thead th:last-child:empty"],
    # The autocomplete widget (Django's vendored select2): its combobox is labelled by its own
    # rendering of the choice, empty until one is chosen; the <select> it stands for has a label.
    "aria-input-field-name": [".select2-container .select2-selection[role=combobox]",
                              ".select2-container .select2-selection__rendered[role=textbox]"],
}


def test_the_project_admin_pages_have_no_axe_violation(new_page, demo):
    from consoles.models import Application

    page = new_page()
    page.set_viewport_size({"width": WIDTH, "height": 900})
    # The console's login (the admin's own login page is Django's, uncustomised).
    login(page, "admin", "demo-pass-2026")
    problems = []
    for name, url in _admin_pages().items():
        page.goto(url)
        problems += check(page, name, ADMIN_STOCK)
    # The two pages the project's own admin templates draw: a token issued, an endpoint created.
    acme = Application.objects.get(slug="acme-chat")
    page.goto("/admin/consoles/apitoken/add/")
    page.get_by_label("Name").fill("axe token")
    page.locator("#id_application").evaluate(
        "(el, pk) => { el.append(new Option('acme', pk, true, true)); }", str(acme.pk))
    page.get_by_role("button", name="Save", exact=True).click()
    page.get_by_test_id("token-secret").wait_for()
    problems += check(page, "admin-token-issued", ADMIN_STOCK)
    assert not problems, "\n".join(problems)
