"""My tokens: a human creates, sees once, lists and revokes their own personal tokens."""

import re

import pytest
from django.test import Client

from consoles.models import ApiToken, TokenKind
from consoles.testing import bearer
from consoles.tests.factories import UserFactory, personal_token

pytestmark = pytest.mark.django_db


def _secret(response) -> str:
    return re.search(r'data-testid="token-secret">([^<]+)<', response.text).group(1)


def test_the_page_needs_a_login(client):
    response = client.get("/tokens/")
    assert response.status_code == 302 and response["Location"].startswith("/login/")
    assert client.post("/tokens/", {"name": "laptop"}).status_code == 302
    assert not ApiToken.objects.exists()


def test_a_new_token_is_shown_once_and_acts_as_its_user(client, curator):
    client.force_login(curator)
    response = client.post("/tokens/", {"name": "  notebook "})
    assert response.status_code == 201
    secret = _secret(response)
    assert secret.startswith("cc_") and "no-store" in response["Cache-Control"]
    token = ApiToken.objects.get()
    assert (token.kind, token.user, token.name, token.created_by) == (TokenKind.PERSONAL, curator, "notebook", curator)
    assert token.digest != secret and secret not in str(client.session.items())
    assert all(secret not in morsel.value for morsel in response.cookies.values())
    # Listed from now on, by name and prefix only.
    page = client.get("/tokens/")
    assert "notebook" in page.text and token.prefix in page.text and secret not in page.text
    me = Client().get("/api/v1/me", **bearer(secret)).json()
    assert me["kind"] == "personal" and me["applications"] == [{"slug": "acme", "role": "curator"}]


@pytest.mark.parametrize("name", ["", "   ", "x" * 101])
def test_a_bad_name_is_an_error_next_to_the_field_and_nothing_is_made(client, curator, name):
    client.force_login(curator)
    response = client.post("/tokens/", {"name": name})
    assert response.status_code == 422
    assert response.context["form"].errors["name"]
    assert 'aria-invalid="true"' in response.text and "token-secret" not in response.text
    assert not ApiToken.objects.exists()


def test_only_your_own_tokens_are_listed_and_revocable(client, curator):
    other = UserFactory(username="olga")
    personal_token(other, name="olgas-laptop")
    mine_secret = personal_token(curator, name="my-laptop")
    mine, theirs = ApiToken.objects.get(name="my-laptop"), ApiToken.objects.get(name="olgas-laptop")
    client.force_login(curator)
    page = client.get("/tokens/")
    assert "my-laptop" in page.text and "olgas-laptop" not in page.text
    assert client.post(f"/tokens/{theirs.pk}/revoke/").status_code == 404
    assert client.post("/tokens/999999/revoke/").status_code == 404
    theirs.refresh_from_db()
    assert theirs.revoked_at is None
    assert client.get(f"/tokens/{mine.pk}/revoke/").status_code == 405  # a GET changes nothing
    response = client.post(f"/tokens/{mine.pk}/revoke/", follow=True)
    assert response.redirect_chain[-1][0] == "/tokens/" and "revoked" in response.text
    mine.refresh_from_db()
    assert mine.revoked_at is not None
    assert Client().get("/api/v1/me", **bearer(mine_secret)).status_code == 401


def test_creating_and_revoking_need_the_csrf_token(curator):
    client = Client(enforce_csrf_checks=True)
    client.force_login(curator)
    personal_token(curator, name="my-laptop")
    token = ApiToken.objects.get()
    assert client.post("/tokens/", {"name": "x"}).status_code == 403
    assert client.post(f"/tokens/{token.pk}/revoke/").status_code == 403
    token.refresh_from_db()
    assert token.revoked_at is None and ApiToken.objects.count() == 1
    page = client.get("/tokens/")
    csrf = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.text).group(1)
    assert client.post("/tokens/", {"name": "ok", "csrfmiddlewaretoken": csrf}).status_code == 201


def test_the_top_bar_links_to_my_tokens(client, curator):
    client.force_login(curator)
    assert 'href="/tokens/"' in client.get("/a/acme/").text
