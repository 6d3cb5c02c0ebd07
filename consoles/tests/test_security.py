"""Security settings, proven: login throttling, production cookies, the CSP header on
every page, hashed tokens. (`check --deploy` is test_deploy.py.)"""

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from axes.models import AccessAttempt
from django.contrib import admin
from django.contrib.auth import get_user_model
from django.urls import reverse

from consoles.models import ApiToken
from consoles.services import token_issue
from consoles.testing import url_routes
from consoles.tests.factories import UserFactory
from consoles.tests.test_tenant_sweep import OBJECTS, _target

pytestmark = pytest.mark.django_db
ROOT = Path(__file__).resolve().parents[2]
PASSWORD = "pw-for-tests-1"  # UserFactory's


def _login(client, username: str, password: str, address: str = "203.0.113.7"):
    return client.post(reverse("login"), {"username": username, "password": password}, REMOTE_ADDR=address)


# --- login throttling (django-axes) ------------------------------------------------


def test_five_failed_logins_lock_the_username_with_a_clear_message(client):
    UserFactory(username="nina")
    for _ in range(4):
        response = _login(client, "nina", "wrong")
        assert response.status_code == 200 and "Please enter a correct username and password" in response.text
    response = _login(client, "nina", "wrong")  # the fifth failure locks
    assert response.status_code == 429
    response = _login(client, "nina", PASSWORD)  # even the right password now
    assert response.status_code == 429
    assert "Too many failed log-ins (5)" in response.text and "locked for 15 minutes" in response.text
    assert "_auth_user_id" not in client.session


def test_the_lock_is_for_that_username_from_that_address(client):
    UserFactory(username="nina")
    UserFactory(username="otto")
    for _ in range(5):
        _login(client, "nina", "wrong")
    assert _login(client, "otto", PASSWORD).status_code == 302  # another user, same address
    client.logout()
    assert _login(client, "nina", PASSWORD, address="198.51.100.9").status_code == 302  # another address


def test_password_spraying_from_one_address_is_throttled(client):
    # The attack: one guess at each of many usernames from one address, never five
    # at any one of them.
    UserFactory(username="nina")
    for i in range(19):
        assert _login(client, f"user{i}", "guess").status_code == 200
    assert _login(client, "user19", "guess").status_code == 429  # the twentieth failure locks the address
    sprayed = _login(client, "nina", PASSWORD)  # even a right password, from that address
    assert sprayed.status_code == 429 and "from your address" in sprayed.text
    assert "_auth_user_id" not in client.session
    assert _login(client, "nina", PASSWORD, address="198.51.100.9").status_code == 302  # elsewhere: fine


def test_a_success_before_the_limit_resets_the_count(client):
    UserFactory(username="nina")
    for _ in range(4):
        _login(client, "nina", "wrong")
    assert _login(client, "nina", PASSWORD).status_code == 302
    client.logout()
    for _ in range(4):
        _login(client, "nina", "wrong")
    assert _login(client, "nina", PASSWORD).status_code == 302


def test_an_admin_unlocks_from_the_admin(client):
    UserFactory(username="nina")
    for _ in range(5):
        _login(client, "nina", "wrong")
    assert AccessAttempt in admin.site._registry
    attempt = AccessAttempt.objects.get(username="nina")
    root = get_user_model().objects.create_superuser("root", "root@example.com", "root-pass-2026!")
    staff = client.__class__()
    staff.force_login(root)
    listing = staff.get("/admin/axes/accessattempt/")
    assert listing.status_code == 200 and "nina" in listing.text
    staff.post(f"/admin/axes/accessattempt/{attempt.pk}/delete/", {"post": "yes"})
    assert not AccessAttempt.objects.filter(username="nina").exists()
    assert _login(client, "nina", PASSWORD).status_code == 302


def test_a_revoked_token_stays_revoked_through_the_admin(client, application):
    issued = token_issue(name="leaked", application=application)
    root = get_user_model().objects.create_superuser("root", "root@example.com", "root-pass-2026!")
    client.force_login(root)
    client.post("/admin/consoles/apitoken/", {"action": "revoke_tokens", "_selected_action": [issued.token.pk]})
    revoked_at = ApiToken.objects.get(pk=issued.token.pk).revoked_at
    assert revoked_at is not None
    page = client.get(f"/admin/consoles/apitoken/{issued.token.pk}/change/")
    assert page.status_code == 200 and 'name="revoked_at' not in page.text  # shown, not editable
    client.post(f"/admin/consoles/apitoken/{issued.token.pk}/change/",
                {"name": "leaked", "revoked_at_0": "", "revoked_at_1": ""})
    assert ApiToken.objects.get(pk=issued.token.pk).revoked_at == revoked_at
    assert client.__class__().get("/api/v1/me", HTTP_AUTHORIZATION=f"Bearer {issued.secret}").status_code == 401


# --- production settings ------------------------------------------------------------


def _production_settings(*names: str) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in {"DEBUG", "SECRET_KEY", "ALLOWED_HOSTS"}}
    env.update(DEBUG="0", SECRET_KEY="k" * 50, ALLOWED_HOSTS="console.example.com",
               DJANGO_SETTINGS_MODULE="consoles.settings")
    code = ("import json, django; django.setup(); from django.conf import settings; "
            f"print(json.dumps({{n: getattr(settings, n, None) for n in {list(names)!r}}}, default=str))")
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True,
                            timeout=120, check=True)
    return json.loads(result.stdout.strip().splitlines()[-1])


def test_production_cookies_are_secure_and_https_is_enforced():
    values = _production_settings("SESSION_COOKIE_SECURE", "CSRF_COOKIE_SECURE", "SESSION_COOKIE_HTTPONLY",
                                  "SECURE_SSL_REDIRECT", "SECURE_HSTS_SECONDS", "DEBUG")
    assert values == {"SESSION_COOKIE_SECURE": True, "CSRF_COOKIE_SECURE": True, "SESSION_COOKIE_HTTPONLY": True,
                      "SECURE_SSL_REDIRECT": True, "SECURE_HSTS_SECONDS": 31536000, "DEBUG": False}


# --- CSP on every page ----------------------------------------------------------------


def test_every_page_carries_a_strict_csp_header(demo_loaded, client):
    from consoles.models import Application

    victims = list(Application.objects.order_by("slug"))
    owner = get_user_model().objects.get(username="admin")
    client.force_login(owner)
    pages = ["/login/", "/admin/", "/api/docs"]
    for route in url_routes():
        if route.application_scoped:
            _, values = _target(route.namespace, route.kwargs, victims)
            pages.append(route.url(values))
    assert len(pages) > 25 and OBJECTS
    html_pages = 0
    for url in pages:
        response = client.get(url)
        if response.status_code == 405:
            continue
        header = response.headers.get("Content-Security-Policy", "")
        assert "default-src 'self'" in header and "frame-ancestors 'none'" in header, (url, header)
        if response["Content-Type"].startswith("text/html") and url != "/api/docs":
            html_pages += 1
            assert "script-src 'self'" in header and "unsafe-inline" not in header, (url, header)
            if response.status_code == 200:  # a rendered page: its scripts carry this response's nonce
                assert "script-src 'self' 'nonce-" in header, (url, header)
    assert html_pages >= 15
    client.logout()
    assert "nonce-" in client.get("/login/").headers["Content-Security-Policy"]


# --- tokens ---------------------------------------------------------------------------


def test_tokens_are_stored_as_sha256_digests_only():
    issued = token_issue(name="ci", user=UserFactory())
    row = ApiToken.objects.get(pk=issued.token.pk)
    stored = " ".join(str(getattr(row, f.attname)) for f in ApiToken._meta.concrete_fields)
    assert issued.secret not in stored
    assert row.digest == hashlib.sha256(issued.secret.encode()).hexdigest()


def test_a_token_secret_is_hidden_from_error_reports(rf, monkeypatch):
    import sys

    from django.views.debug import ExceptionReporter

    from consoles import api, services

    def boom(*args, **kwargs):
        raise RuntimeError("the database went away")

    monkeypatch.setattr(services.ApiToken.objects, "select_related", boom)  # the token's lookup
    secret = "cc_app_" + hashlib.sha256(b"never shown").hexdigest()
    try:
        api.BearerTokenAuth().authenticate(rf.get("/api/v1/me"), secret)
    except RuntimeError:
        frames = ExceptionReporter(rf.get("/"), *sys.exc_info()).get_traceback_frames()
    shown = {frame["function"]: repr(frame["vars"]) for frame in frames}
    assert {"authenticate", "token_authenticate"} <= shown.keys()
    assert secret not in shown["authenticate"] and secret not in shown["token_authenticate"]


# --- caching -----------------------------------------------------------------------


def _no_store(response) -> bool:
    directives = {d.strip() for d in response.get("Cache-Control", "").split(",")}
    return {"private", "no-store"} <= directives


def test_pages_and_api_answers_are_private_and_never_stored(client, application, curator, app_token):
    # The attack: a shared proxy or the disk cache keeps a tenant's page after log-out.
    assert _no_store(client.get(reverse("login")))
    assert _no_store(client.get("/api/v1/me", HTTP_AUTHORIZATION=f"Bearer {app_token}"))
    assert _no_store(client.get("/api/v1/flags/fb_0000000000000000", HTTP_AUTHORIZATION=f"Bearer {app_token}"))
    client.force_login(curator)
    assert _no_store(client.get(f"/a/{application.slug}/flags/"))
    assert _no_store(client.get(f"/a/{application.slug}/cases/"))


def test_static_files_keep_their_caching(client):
    response = client.get("/static/consoles/app.css")
    assert response.status_code == 200 and "no-store" not in response.get("Cache-Control", "")
