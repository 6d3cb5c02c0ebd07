import pytest
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpResponse
from django.test import RequestFactory
from django.urls import reverse

from consoles.access import member_required
from consoles.models import Role
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


# Every page and API operation against another tenant: test_tenant_sweep.py.


def test_anonymous_user_is_sent_to_login(client, application):
    response = client.get(reverse("application_home", args=[application.slug]))
    assert response.status_code == 302 and response.url.startswith("/login/")
