"""HTML and JS posted through the API into every text field render as text in the
browser: nothing runs, nothing breaks the layout (bad-input catalogue, issue #9)."""

import pytest
from playwright.sync_api import expect

from adjudication.models import Case
from adjudication.tests.factories import case_payload
from consoles.models import Role
from consoles.tests.factories import (
    ApplicationFactory,
    MembershipFactory,
    UserFactory,
    application_token,
)

from .conftest import login

PAYLOAD = '<script>window.__pwned=1</script><img src=x onerror="window.__pwned=2">'


@pytest.fixture
def hostile(transactional_db):
    app = ApplicationFactory(slug="acme", name="Acme assistant")
    MembershipFactory(user=UserFactory(username="cora"), application=app, role=Role.CURATOR)
    return app, application_token(app)


def test_html_posted_through_the_api_renders_as_text(page, hostile):
    app, token = hostile
    headers = {"Authorization": f"Bearer {token}"}
    texts = ("note", "prompt", "answer", "context", "session_id", "end_user_ref")
    flag = page.request.post("/api/v1/flags", headers=headers, data={
        **dict.fromkeys(texts, PAYLOAD), "region": "answer", "problem": "fabricated", "message_id": PAYLOAD})
    assert flag.status == 201, flag.text()
    case = case_payload("hostile", claim={"subject": PAYLOAD, "text": PAYLOAD}, context=PAYLOAD)
    case["evidence"][0].update(sensor=PAYLOAD)
    assert page.request.post("/api/v1/cases", headers=headers, data={"cases": [case]}).status == 201

    violations = []
    page.on("console", lambda m: violations.append(m.text))
    login(page, "cora")
    page.goto(f"/a/acme/flags/{flag.json()['id']}/")
    expect(page.get_by_test_id("flag-prompt")).to_have_text(PAYLOAD)
    expect(page.get_by_test_id("flag-note")).to_have_text(PAYLOAD)
    page.goto("/a/acme/flags/")
    page.goto(f"/a/acme/cases/{Case.objects.get(case_id='hostile').pk}/")
    expect(page.get_by_text(PAYLOAD).first).to_be_visible()
    assert page.evaluate("typeof window.__pwned") == "undefined"
    assert not [v for v in violations if "Content Security Policy" in v]
