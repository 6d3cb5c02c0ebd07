"""Browser tests: Playwright driving Debian's Chromium against a live server.

Run with `make e2e`. A failing test leaves a screenshot in test-results/.
"""

import os
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, sync_playwright

from consoles.models import Role
from consoles.tests.factories import ApplicationFactory, MembershipFactory, UserFactory

# Playwright's sync API runs an event loop in this thread; Django's ORM calls
# from test code are still synchronous and safe here.
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")

CHROMIUM = os.environ.get("CHROMIUM_PATH", "/usr/bin/chromium")
RESULTS = Path(__file__).resolve().parent.parent / "test-results"
PASSWORD = "pw-for-tests-1"


@pytest.fixture(scope="session")
def browser() -> Browser:
    with sync_playwright() as p:
        browser = p.chromium.launch(
            executable_path=CHROMIUM,
            headless=True,
            args=[
                "--no-sandbox",
                "--disable-gpu",
                "--disable-quic",
                "--no-first-run",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
            ],
        )
        yield browser
        browser.close()


@pytest.hookimpl(tryfirst=True, hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    setattr(item, f"rep_{report.when}", report)


@pytest.fixture
def new_page(browser, live_server, request):
    """Make pages (one browser context each, i.e. separate sessions); screenshot on failure."""
    contexts = []
    in_flight: set = set()

    def make() -> Page:
        context = browser.new_context(base_url=live_server.url)
        context.set_default_timeout(10_000)
        # Requests the page has sent and not yet seen answered (an htmx claim fired as
        # a pane loads, say): the test's end waits for them, or the live server would
        # still be writing while the database is emptied for the next test.
        context.on("request", lambda request: in_flight.add(request))
        context.on("requestfinished", lambda request: in_flight.discard(request))
        context.on("requestfailed", lambda request: in_flight.discard(request))
        contexts.append(context)
        return context.new_page()

    yield make
    for context in contexts:
        for page in context.pages:
            for _ in range(250):
                if not in_flight:
                    break
                page.wait_for_timeout(20)
    failed = getattr(request.node, "rep_call", None) is not None and request.node.rep_call.failed
    if failed:
        RESULTS.mkdir(exist_ok=True)
        for i, context in enumerate(contexts):
            for j, page in enumerate(context.pages):
                page.screenshot(path=str(RESULTS / f"{request.node.name}-{i}-{j}.png"), full_page=True)
    for context in contexts:
        context.close()


@pytest.fixture
def page(new_page) -> Page:
    return new_page()


@pytest.fixture
def two_apps(transactional_db):
    acme = ApplicationFactory(slug="acme", name="Acme assistant")
    globex = ApplicationFactory(slug="globex", name="Globex verifier")
    ApplicationFactory(slug="initech", name="Initech secret")
    user = UserFactory(username="cora")
    MembershipFactory(user=user, application=acme, role=Role.CURATOR)
    MembershipFactory(user=user, application=globex, role=Role.VIEWER)
    return user


def login(page: Page, username: str, password: str = PASSWORD) -> None:
    page.goto("/login/")
    page.get_by_label("Username").fill(username)
    page.get_by_label("Password").fill(password)
    page.get_by_role("button", name="Log in").click()
