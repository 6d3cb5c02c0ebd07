import pytest
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpResponse
from django.test import RequestFactory
from django.urls import URLPattern, URLResolver, get_resolver, reverse

from consoles.access import member_required
from consoles.models import Role
from consoles.testing import assert_sealed
from consoles.tests.factories import MembershipFactory, UserFactory

pytestmark = pytest.mark.django_db


@member_required(Role.CURATOR)
def curator_only(request):
    return HttpResponse(f"ok {request.application.slug} {request.membership.role}")


def _call(user, slug):
    request = RequestFactory().get("/")
    request.user = user
    return curator_only(request, app_slug=slug)


def test_role_check_refuses_a_viewer_where_a_curator_is_needed(application, viewer):
    with pytest.raises(PermissionDenied):
        _call(viewer, application.slug)


def test_role_check_lets_a_curator_and_an_admin_through(application, curator):
    assert _call(curator, application.slug).content == b"ok acme curator"
    admin = MembershipFactory(application=application, role=Role.ADMIN).user
    assert _call(admin, application.slug).status_code == 200


def test_non_member_gets_404_not_403(application):
    with pytest.raises(Http404):
        _call(UserFactory(), application.slug)


def _app_scoped_urls(resolver=None, prefix=""):
    """Every screen whose only URL argument is the application slug."""
    resolver = resolver or get_resolver()
    for pattern in resolver.url_patterns:
        route = prefix + str(pattern.pattern)
        if isinstance(pattern, URLResolver):
            yield from _app_scoped_urls(pattern, route)
        elif (
            isinstance(pattern, URLPattern)
            and route.startswith("a/<slug:app_slug>/")
            and route.count("<") == 1
        ):
            yield route


def test_every_application_page_is_sealed_from_members_of_other_applications(client, tenant_pair):
    routes = sorted(set(_app_scoped_urls()))
    assert "a/<slug:app_slug>/" in routes and len(routes) >= 5
    for route in routes:
        url = "/" + route.replace("<slug:app_slug>", tenant_pair.b.slug)
        assert_sealed(client, tenant_pair.member_of_a, url)
        # and the same page works for B's own member, so 404 is about the tenant
        client.force_login(tenant_pair.member_of_b)
        assert client.get(url).status_code in (200, 302), url


def test_anonymous_user_is_sent_to_login(client, application):
    response = client.get(reverse("application_home", args=[application.slug]))
    assert response.status_code == 302 and response.url.startswith("/login/")
