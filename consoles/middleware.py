"""Project middleware that is not an app's: how screens behave across every app."""

from collections.abc import Callable

from django.conf import settings
from django.contrib.auth.views import redirect_to_login
from django.http import HttpRequest, HttpResponse
from django.shortcuts import resolve_url
from django_htmx.http import HttpResponseClientRedirect


class HtmxLoginRedirectMiddleware:
    """An htmx request from a page whose session ended goes to the login page as a page.

    The login redirect would otherwise be followed inside the request and the
    login form swapped into the part of the page being updated (the queue's
    table, say), with the login URL pushed into the history. Instead htmx is told
    to load the login page, which comes back to the page the user was on.
    Sits after django-htmx's middleware, which sets `request.htmx`.
    """

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        if not request.htmx or response.status_code != 302:
            return response
        login = resolve_url(settings.LOGIN_URL)
        if response["Location"].split("?", 1)[0] != login:
            return response
        here = request.htmx.current_url_abs_path or request.get_full_path()
        return HttpResponseClientRedirect(redirect_to_login(here).url)
