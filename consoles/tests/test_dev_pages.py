"""What `make run` (DEBUG on) shows and logs for a 404 and a 403."""

import io
import logging

import pytest

from consoles.logfilters import ClientErrorsInOneLine
from consoles.models import Role
from consoles.tests.factories import MembershipFactory, UserFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def member(client, application):
    user = MembershipFactory(user=UserFactory(), application=application, role=Role.VIEWER).user
    client.force_login(user)
    return user


@pytest.mark.parametrize("url", ["/a/acme/flags/fb_0000000000000000/", "/a/acme/cases/no-such-case/",
                                 "/no/such/page/", "/a/nope/flags/"])
def test_debug_404_is_the_projects_page_not_the_url_list(client, settings, member, url):
    settings.DEBUG = True
    response = client.get(url)
    assert response.status_code == 404
    html = response.content.decode()
    assert "<h1>Not found</h1>" in html
    assert "URLconf" not in html and "Using the URLconf" not in html and "Django tried" not in html


def test_debug_api_404_stays_json(client, settings, app_token):
    settings.DEBUG = True
    response = client.get("/api/v1/flags/fb_0000000000000000", HTTP_AUTHORIZATION=f"Bearer {app_token}")
    assert response.status_code == 404 and response.json()["error"]["code"]


def test_a_403_is_logged_once_in_one_line(client, application, member):
    stream = io.StringIO()
    # The console handler of settings.LOGGING (pytest adds capturing handlers of its own).
    handlers = [h for h in logging.getLogger().handlers
                if any(isinstance(f, ClientErrorsInOneLine) for f in h.filters)]
    assert len(handlers) == 1, "the root logger writes to the console"
    saved = [h.setStream(stream) for h in handlers]
    try:
        # A viewer deciding: refused with PermissionDenied (the role check).
        response = client.post("/a/acme/flags/bulk-reject/", {"ids": ["fb_0"]})
    finally:
        for handler, old in zip(handlers, saved, strict=True):
            handler.setStream(old)
    assert response.status_code == 403
    logged = [line for line in stream.getvalue().splitlines() if line.strip()]
    assert len(logged) == 1 and "Forbidden" in logged[0], logged
    assert "Traceback" not in stream.getvalue()


def test_date_inputs_take_and_show_iso_days(application):
    import datetime

    from feedback.forms import FlagFilterForm

    form = FlagFilterForm(initial={"created_from": datetime.date(2026, 11, 2)}, application=application)
    html = str(form["created_from"])
    assert 'type="text"' in html and 'placeholder="YYYY-MM-DD"' in html and 'value="2026-11-02"' in html
    assert 'type="date"' not in html  # the browser's locale (mm/dd/yyyy) beside ISO dates elsewhere
