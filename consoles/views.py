import sys

from django.contrib.auth.decorators import login_required
from django.db import DatabaseError, InterfaceError, OperationalError, connection
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.template import loader
from django.templatetags.static import static
from django.views import defaults
from django.views.decorators.cache import cache_control, never_cache
from django.views.decorators.http import require_GET

from .access import member_required
from .extensions import home_cards
from .selectors import application_list_for_user


@login_required
def home(request: HttpRequest) -> HttpResponse:
    """The user's applications; straight to the only one when there is one."""
    applications = list(application_list_for_user(user=request.user))
    if len(applications) == 1:
        return redirect("application_home", app_slug=applications[0].slug)
    return render(request, "consoles/home.html", {"applications": applications})


@member_required()
def application_home(request: HttpRequest) -> HttpResponse:
    return render(
        request,
        "consoles/application_home.html",
        {"cards": home_cards(request.application)},
    )


@never_cache
@require_GET
def healthz(request: HttpRequest) -> JsonResponse:
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
            cursor.fetchone()
    except DatabaseError as exc:
        return JsonResponse({"status": "unavailable", "database": type(exc).__name__}, status=503)
    return JsonResponse({"status": "ok", "database": "ok"})


@cache_control(max_age=86400, public=True)
@require_GET
def favicon(request: HttpRequest) -> HttpResponse:
    """Browsers ask for /favicon.ico on pages that name no icon (the admin, the API docs)."""
    return redirect(static("consoles/favicon.svg"))


def server_error(request: HttpRequest) -> HttpResponse:
    """handler500: a lost database is 503 (retry later), not a bug; anything else is 500.

    Each write runs in one transaction, so a request that lost its database has
    written nothing; saying so lets clients and load balancers retry. The page is
    rendered without context processors or the layout: they would need the database.
    """
    exc = sys.exc_info()[1]
    if isinstance(exc, OperationalError | InterfaceError):
        message = "The database is unavailable; nothing was saved. Try again in a moment."
        if request.path_info.startswith("/api/"):
            response = JsonResponse(
                {"error": {"code": "unavailable", "message": message, "fields": {}}}, status=503
            )
        else:
            response = HttpResponse(loader.get_template("503.html").render({"message": message}), status=503)
        response["Retry-After"] = "5"
        return response
    if request.path_info.startswith("/api/"):
        return JsonResponse(
            {"error": {"code": "server_error", "message": "Something went wrong on our side.", "fields": {}}},
            status=500,
        )
    return defaults.server_error(request)
