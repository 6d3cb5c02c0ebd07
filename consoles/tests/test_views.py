from unittest import mock

import pytest
from django.db import OperationalError
from django.urls import reverse

from consoles.models import Role
from consoles.tests.factories import ApplicationFactory, MembershipFactory

pytestmark = pytest.mark.django_db


def test_login_then_logout(client, curator):
    response = client.post(reverse("login"), {"username": "cora", "password": "pw-for-tests-1"})
    assert response.status_code == 302
    assert client.get(reverse("application_home", args=["acme"])).status_code == 200
    client.post(reverse("logout"))
    assert client.get(reverse("application_home", args=["acme"])).status_code == 302


def test_an_htmx_request_after_the_session_ended_loads_the_login_page_whole(client, curator):
    # Followed inside the request, the redirect would swap the login form into the table.
    htmx = {"HTTP_HX_REQUEST": "true", "HTTP_HX_CURRENT_URL": "http://testserver/a/acme/flags/?status=pending"}
    response = client.get("/a/acme/flags/?status=approved", **htmx)
    assert response.status_code == 200
    assert response["HX-Redirect"] == "/login/?next=/a/acme/flags/%3Fstatus%3Dpending"  # back to where they were
    assert not response.has_header("Location")
    # Without htmx, the plain redirect; with a session, htmx requests are untouched.
    assert client.get("/a/acme/flags/?status=approved")["Location"].startswith("/login/?next=")
    client.force_login(curator)
    assert client.get("/a/acme/flags/?status=approved", **htmx).status_code == 200
    assert not client.get("/a/acme/flags/?status=approved", **htmx).has_header("HX-Redirect")
    moved = client.get("/a/acme/flags/next/", **htmx)  # a redirect that is not to the login page
    assert moved.status_code == 302 and not moved.has_header("HX-Redirect")


def test_login_with_a_wrong_password_shows_an_error(client, curator):
    response = client.post(reverse("login"), {"username": "cora", "password": "nope"})
    assert response.status_code == 200
    assert b"Please enter a correct username and password" in response.content


def test_home_goes_straight_to_the_only_application(client, curator):
    client.force_login(curator)
    response = client.get(reverse("home"))
    assert response.status_code == 302 and response.url == "/a/acme/"


def test_switcher_lists_only_the_users_applications(client, curator):
    other = ApplicationFactory(slug="secret-app", name="Secret app")
    mine = ApplicationFactory(slug="second", name="Second app")
    MembershipFactory(user=curator, application=mine, role=Role.VIEWER)
    client.force_login(curator)
    html = client.get(reverse("home")).content.decode()
    assert "Second app" in html and "Acme" in html
    assert other.name not in html


def test_pages_carry_csp_with_a_nonce_and_the_csrf_header_for_htmx(client, curator):
    client.force_login(curator)
    response = client.get(reverse("application_home", args=["acme"]))
    csp = response.headers["Content-Security-Policy"]
    nonce = csp.split("'nonce-")[1].split("'")[0]
    html = response.content.decode()
    assert f'nonce="{nonce}"' in html
    assert "X-CSRFToken" in html and "hx-headers" in html
    assert "/static/consoles/htmx.min.js" in html
    assert "https://" not in html.split("<body")[0]  # nothing from a CDN


def test_healthz_reports_the_database(client):
    response = client.get("/healthz")
    assert response.status_code == 200 and response.json()["database"] == "ok"


def test_favicon_ico_leads_to_the_console_icon(client):
    # The admin and the API docs name no icon; browsers then ask for /favicon.ico.
    response = client.get("/favicon.ico")
    assert response.status_code == 302 and response["Location"].endswith("consoles/favicon.svg")
    assert "max-age=86400" in response["Cache-Control"]
    assert client.get(response["Location"]).status_code == 200


def test_healthz_is_503_when_the_database_is_unreachable(client):
    with mock.patch("consoles.views.connection.cursor", side_effect=OperationalError("down")):
        response = client.get("/healthz")
    assert response.status_code == 503
    assert response.json()["status"] == "unavailable"


def test_vendored_htmx_is_served(client):
    response = client.get("/static/consoles/htmx.min.js")
    assert response.status_code == 200


def test_a_refusal_is_a_page_of_the_console_that_says_why(client, viewer, application):
    client.force_login(viewer)
    response = client.get(reverse("sampling:plan_new", args=[application.slug]))
    html = response.content.decode()
    assert response.status_code == 403
    assert "This needs the curator role." in html  # the reason, not a bare "403 Forbidden"
    assert 'class="topbar"' in html and f'href="/a/{application.slug}/"' in html  # navigation kept


def test_not_found_is_a_page_of_the_console_that_names_nothing(client, viewer, application):
    other = ApplicationFactory(slug="initech", name="Initech secret")
    client.force_login(viewer)
    response = client.get(f"/a/{other.slug}/flags/")
    html = response.content.decode()
    assert response.status_code == 404 and "Not found" in html and 'class="topbar"' in html
    assert "Initech" not in html


@pytest.mark.parametrize(("url_name", "section"), [("feedback:queue", "Flags"), ("adjudication:index", "Cases"),
                                                   ("overview:index", "Overview"), ("exemplars:bank", "Bank")])
def test_the_top_bar_marks_the_section_the_user_is_in(client, curator, application, url_name, section):
    client.force_login(curator)
    html = client.get(reverse(url_name, args=[application.slug]), follow=True).content.decode()
    # the section the page is in (the sub-navigation and the switcher mark their own "page")
    assert html.count('aria-current="true"') == 1 and f'aria-current="true">{section}</a>' in html
