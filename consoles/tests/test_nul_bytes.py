"""A NUL byte (%00) in a URL id is a 404 on both databases, never a 500:
PostgreSQL refuses NUL in text, so an unguarded lookup raised DataError there."""

import pytest
from django.test import Client

from consoles.models import Role
from consoles.testing import bearer, url_routes
from consoles.tests.factories import MembershipFactory, UserFactory, personal_token

pytestmark = pytest.mark.django_db

NUL_ID = "fb_%00"


def _nul_urls(app_slug: str) -> list[str]:
    urls = []
    for route in url_routes():
        ids = [k for k in route.kwargs if k != "app_slug"]
        if not ids or "(?P" in route.route:  # regex routes (admin's catch-all) take no converter
            continue
        values = {k: NUL_ID for k in ids} | {"app_slug": app_slug}
        urls.append(route.url(values))
    return urls


def test_every_route_answers_a_nul_id_with_404(client: Client, application, app_token):
    admin = MembershipFactory(user=UserFactory(username="ada", is_staff=True, is_superuser=True),
                              application=application, role=Role.ADMIN).user
    urls = _nul_urls(application.slug)
    assert any("/flags/" in u for u in urls) and any("/teaching/proposals/" in u for u in urls)
    client.force_login(admin)
    for url in urls:
        for method in ("get", "post"):
            response = getattr(client, method)(url)
            assert response.status_code in {404, 405}, (method, url, response.status_code)
    api_urls = [u for u in urls if u.startswith("/api/")]
    for url in api_urls:
        response = client.get(url, **bearer(personal_token(admin)))
        assert response.status_code in {404, 405}, url
        if response.status_code == 404:
            assert response.json()["error"]["code"] == "not_found"


def test_a_nul_id_in_a_form_or_a_query_is_refused_not_a_500(client: Client, application, curator):
    client.force_login(curator)
    bulk = client.post(f"/a/{application.slug}/flags/bulk-reject/", {"ids": ["fb_\x00"]})
    assert bulk.status_code in {302, 400}
    assert client.get(f"/a/{application.slug}/flags/", {"q": "a\x00b"}).status_code == 400
    api = client.get("/api/v1/flags", {"application_id": application.slug, "problem": "\x00"})
    assert api.status_code == 422 and "problem" in api.json()["error"]["fields"]
