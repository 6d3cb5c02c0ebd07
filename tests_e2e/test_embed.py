"""The flag widget in a page of another origin (issue 32).

A small http.server on its own port plays the chat: it serves a host page under a
strict CSP (scripts from itself and the console only, no style source at all) that
loads /embed/flag.js from the console and embeds <curator-flag> with a publishable
key. The widget is driven by keyboard, the flag is then found in the curator's queue.
"""

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from consoles import ratelimit
from consoles.models import Role
from consoles.tests.factories import (
    ApplicationFactory,
    MembershipFactory,
    UserFactory,
    publishable_key,
)
from feedback.models import Flag

from .conftest import login

AXE = Path(__file__).resolve().parent / "vendor" / "axe.min.js"
CONTEXT = "Store hours (Lyon): Monday to Saturday 9:00-19:00; closed on Sundays."
THANKS = "Thanks \u2014 a reviewer will look at it"


class HostPage:
    """A chat on its own origin, serving `/` (the page) and `/host.js` (its script)."""

    def __init__(self, console: str) -> None:
        self.console = console
        self.key = ""
        self.flags: list[dict[str, str]] = []
        host = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 - http.server's name
                if self.path == "/host.js":
                    body, kind = host.script().encode(), "text/javascript"
                else:
                    body, kind = host.page().encode(), "text/html; charset=utf-8"
                self.send_response(200)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Security-Policy", host.csp)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.origin = f"http://127.0.0.1:{self.server.server_address[1]}"
        # Nothing inline, no style source at all: the widget must style itself through CSSOM.
        self.csp = (f"default-src 'none'; script-src 'self' {console}; connect-src {console}; "
                    "style-src 'none'; img-src 'none'; base-uri 'none'; form-action 'none'")
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def page(self) -> str:
        elements = "\n".join(
            f'<li><p>{f["answer"]}</p><curator-flag key="{self.key}" region="answer" '
            f'message-id="{f["message_id"]}" session-id="{f["session_id"]}" end-user-ref="user-9">'
            "</curator-flag></li>" for f in self.flags)
        return (f'<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Host chat</title>'
                f'<script src="{self.console}/embed/flag.js" defer></script>'
                '<script src="/host.js" defer></script></head>'
                f'<body><main><h1>Host chat</h1><ol>{elements}</ol></main></body></html>')

    def script(self) -> str:
        # The host's own script sets the properties (texts are not attributes).
        texts = json.dumps({f["message_id"]: f for f in self.flags})
        return (f"const texts = {texts};\n"
                "document.querySelectorAll('curator-flag').forEach((el) => {\n"
                "  const t = texts[el.getAttribute('message-id')];\n"
                "  el.prompt = t.prompt; el.answer = t.answer; el.context = t.context;\n"
                "  el.detectorScores = {hallucination: 0.18};\n"
                "});\n")

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def flag(n: int, session: str = "sess-e2e") -> dict[str, str]:
    return {"message_id": f"msg-{n}", "session_id": session, "prompt": "When does the Lyon store open on Sundays?",
            "answer": f"The Lyon store opens at 7am on Sundays ({n}).", "context": CONTEXT}


@pytest.fixture
def acme(transactional_db):
    application = ApplicationFactory(slug="acme", name="Acme assistant")
    MembershipFactory(user=UserFactory(username="cora"), application=application, role=Role.CURATOR)
    return application


@pytest.fixture
def hosts(live_server) -> Iterator[callable]:
    made: list[HostPage] = []

    def make() -> HostPage:
        host = HostPage(live_server.url)
        made.append(host)
        return host

    yield make
    for host in made:
        host.close()


@pytest.fixture(autouse=True)
def one_minute(monkeypatch):
    """All of a test's requests in one rate-limit window (the server runs in this process)."""
    monkeypatch.setattr(ratelimit, "_clock", lambda: 1_800_000_020.0)


def open_host(new_page, host: HostPage) -> Page:
    page = new_page()
    page.context.add_init_script(path=str(AXE))  # injected by the browser, outside the page's CSP
    page.context.add_init_script(
        "window.__csp = []; document.addEventListener('securitypolicyviolation', "
        "(e) => window.__csp.push(e.violatedDirective + ' ' + e.blockedURI));")
    page.goto(host.origin + "/")
    return page


def axe_violations(page: Page) -> list:
    return page.evaluate("""async () => {
        const result = await axe.run({include: [["curator-flag"]]}, {resultTypes: ["violations"]});
        return result.violations.map((v) => `${v.id}: ${v.nodes.map((n) => n.target).join(' | ')}`);
    }""")


def test_a_flag_from_another_origin_by_keyboard_lands_pending_in_the_queue(new_page, hosts, acme):
    host = hosts()
    host.flags = [flag(1)]
    host.key = publishable_key(acme, origins=(host.origin,))
    page = open_host(new_page, host)
    report = page.get_by_role("button", name="Report a problem with this answer")
    expect(report).to_be_visible()
    # Styled under `style-src 'none'`: the shadow root's adopted stylesheet applies.
    assert report.evaluate("(b) => getComputedStyle(b).borderTopColor") == "rgb(89, 89, 89)"
    assert axe_violations(page) == []

    page.keyboard.press("Tab")
    expect(report).to_be_focused()
    page.keyboard.press("Enter")
    expect(report).to_have_attribute("aria-expanded", "true")
    first = page.get_by_role("radio", name="Tried to get around the rules")
    expect(first).to_be_focused()
    assert axe_violations(page) == []  # the open panel too
    page.keyboard.press("ArrowDown")
    page.keyboard.press("ArrowDown")
    expect(page.get_by_role("radio", name="Made something up")).to_be_checked()
    page.keyboard.press("Tab")
    expect(page.get_by_label("Anything to add? (optional)")).to_be_focused()
    page.keyboard.type("Invented Sunday hours.")
    page.keyboard.press("Tab")
    expect(page.get_by_role("button", name="Send report")).to_be_focused()
    page.keyboard.press("Enter")
    expect(page.get_by_role("status")).to_have_text(THANKS)
    expect(page.get_by_role("button", name="Reported")).to_be_focused()
    assert axe_violations(page) == []
    assert page.evaluate("window.__csp") == []

    stored = Flag.objects.get(application=acme, message_id="msg-1")
    assert (stored.status, stored.region, stored.problem, stored.suggested_axis) == (
        "pending", "answer", "fabricated", "hallucination")
    assert (stored.context, stored.note, stored.session_id, stored.end_user_ref, stored.author_kind) == (
        CONTEXT, "Invented Sunday hours.", "sess-e2e", "user-9", "end_user")
    assert stored.detector_scores == {"hallucination": 0.18}

    curator = new_page()
    login(curator, "cora")
    curator.goto("/a/acme/flags/?status=pending")
    curator.get_by_role("link", name=stored.public_id).first.click()
    detail = curator.get_by_test_id("flag-detail")
    expect(detail).to_contain_text("Made something up")
    expect(detail).to_contain_text("hallucination")
    expect(detail).to_contain_text(CONTEXT)
    expect(detail).to_contain_text("The Lyon store opens at 7am on Sundays (1).")


def test_escape_closes_the_panel_and_gives_focus_back(new_page, hosts, acme):
    host = hosts()
    host.flags = [flag(1)]
    host.key = publishable_key(acme, origins=(host.origin,))
    page = open_host(new_page, host)
    report = page.get_by_role("button", name="Report a problem with this answer")
    report.click()
    expect(page.get_by_role("radio", name="Made something up")).to_be_visible()
    page.keyboard.press("Escape")
    expect(page.get_by_role("radio", name="Made something up")).to_be_hidden()
    expect(report).to_be_focused()
    expect(report).to_have_attribute("aria-expanded", "false")


def test_a_page_on_an_unlisted_origin_is_refused_and_the_widget_says_so(new_page, hosts, acme):
    listed, unlisted = hosts(), hosts()
    unlisted.flags = [flag(1)]
    unlisted.key = publishable_key(acme, origins=(listed.origin,))
    page = open_host(new_page, unlisted)
    page.get_by_role("button", name="Report a problem with this answer").click()
    expect(page.get_by_role("status")).to_have_text("This site is not allowed to send reports to the reviewers.")
    expect(page.get_by_role("radio")).to_have_count(0)
    assert axe_violations(page) == []
    assert not Flag.objects.exists()


def test_a_session_past_its_limit_is_told_to_wait(new_page, hosts, acme, settings):
    settings.EMBED_RATE_PER_SESSION = 1
    host = hosts()
    host.flags = [flag(1), flag(2)]
    host.key = publishable_key(acme, origins=(host.origin,))
    page = open_host(new_page, host)
    buttons = page.get_by_role("button", name="Report a problem with this answer")
    for n in (0, 1):
        buttons.nth(0).click()  # a sent flag's button is renamed "Reported"
        page.get_by_role("radio", name="Made something up").check()
        page.get_by_role("button", name="Send report").click()
        if n == 0:
            expect(page.get_by_role("status").nth(0)).to_have_text(THANKS)
    expect(page.get_by_role("status").nth(1)).to_have_text("Too many reports right now. Please try again in 40 seconds.")
    assert axe_violations(page) == []
    assert list(Flag.objects.values_list("message_id", flat=True)) == ["msg-1"]


def test_the_sample_chat_page_sends_a_flag_with_the_demo_key(page, live_server, acme):
    from consoles.management.commands.load_demo import DEMO_PUBLISHABLE_KEY
    from consoles.models import ApiToken, TokenKind
    from consoles.tokens import token_digest, token_display_prefix

    ApiToken.objects.create(kind=TokenKind.PUBLISHABLE, name="demo chat widget", application=acme,
                            digest=token_digest(DEMO_PUBLISHABLE_KEY), prefix=token_display_prefix(DEMO_PUBLISHABLE_KEY),
                            origins=[live_server.url])
    page.goto("/demo/chat/")
    page.get_by_role("button", name="Report a problem with this answer").first.click()
    page.get_by_role("radio", name="Made something up").check()
    page.get_by_role("button", name="Send report").click()
    expect(page.get_by_role("status").first).to_have_text(THANKS)
    stored = Flag.objects.get(application=acme)
    assert stored.answer == "The Lyon store opens at 7am on Sundays." and stored.region == "answer"
    assert stored.context.startswith("Store hours (Lyon)")
