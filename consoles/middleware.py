"""Project middleware that is not an app's: how screens behave across every app."""

from collections.abc import Callable

from django.conf import settings
from django.contrib.auth.views import redirect_to_login
from django.core.exceptions import BadRequest
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse, QueryDict
from django.shortcuts import resolve_url
from django.utils.cache import patch_cache_control
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


class NulGuardMiddleware:
    """A NUL byte (U+0000, `%00`) in a URL, a query or a form is refused before any view runs.

    No id, slug or text of the console can hold NUL (the API's schemas already refuse it
    in bodies), and PostgreSQL cannot even compare text with one: a lookup by such an id
    raised DataError there (a 500) while SQLite just found nothing. One guard for every
    route, so a new route cannot forget it: in the path the object cannot exist (404, as
    on SQLite); in a query or a form it is bad input (API: 422 naming the parameter;
    screens: 400). JSON bodies are left to the schemas, which name the field.
    """

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        api = request.path_info.startswith("/api/")
        if "\x00" in request.path_info:
            if api:
                return _api_error(404, "not_found", "Not found.", {})
            raise Http404("Not found.")
        names = _names_with_nul(request.GET)
        if request.content_type in {"application/x-www-form-urlencoded", "multipart/form-data"}:
            names += _names_with_nul(request.POST)
        if names:
            if api:
                return _api_error(422, "validation_error", "The request does not match the schema.",
                                  {name: "Must not contain NUL (\\u0000) characters." for name in names})
            raise BadRequest("A NUL character is not allowed in " + ", ".join(names) + ".")
        return self.get_response(request)


def _names_with_nul(data: QueryDict) -> list[str]:
    return [key.replace("\x00", "\\u0000") for key, values in data.lists()
            if "\x00" in key or any("\x00" in v for v in values)]


def _api_error(status: int, code: str, message: str, fields: dict[str, str]) -> JsonResponse:
    # The shape of consoles.api.error_response, built here so the middleware does not
    # import (and so build) the NinjaAPI.
    return JsonResponse({"error": {"code": code, "message": message, "fields": fields}}, status=status)


class PrivateNoStoreMiddleware:
    """Every answer the console computes says `Cache-Control: private, no-store`.

    Pages and API answers hold one tenant's data for one signed-in caller: a shared
    proxy or the browser's disk cache must not keep them (the back button after
    log-out, a shared machine). Sits below WhiteNoise, whose static files keep their
    long-lived caching; an answer that says `public` itself is left as it is.
    """

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        if "public" not in response.get("Cache-Control", ""):
            patch_cache_control(response, private=True, no_store=True)
        return response


class ProjectNotFoundPageMiddleware:
    """In development (`make run`, DEBUG on) a 404 is the project's own page, as
    in production, rather than Django's debug page listing every URL pattern:
    an unknown id or a mistyped link then looks as it will for real. DEBUG keeps
    its tracebacks for real errors. The API answers its own JSON 404s.

    Two ways Django reaches its debug 404: a view raising Http404 (an unknown
    id; answered in process_exception) and a URL nothing resolves (no
    `resolver_match` on the request; the debug page is replaced on the way out).
    """

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        if settings.DEBUG and response.status_code == 404 and getattr(request, "resolver_match", None) is None:
            return self._page(request, None)
        return response

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        if settings.DEBUG and isinstance(exception, Http404):
            return self._page(request, exception)
        return None

    @staticmethod
    def _page(request: HttpRequest, exception: Exception | None) -> HttpResponse:
        from django.views.defaults import page_not_found

        return page_not_found(request, exception or Http404())
